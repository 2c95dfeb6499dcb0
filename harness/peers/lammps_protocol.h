/* lammps_protocol.h - the requests lammps_neighbor.cpp sends to nsb-lammps
 * (lammps_server.c) over their socket, and the replies. Both ends are built
 * together from this tree, so the layout needs no versioning. */
#ifndef NSB_LAMMPS_PROTOCOL_H
#define NSB_LAMMPS_PROTOCOL_H

#include <stdint.h>

enum {
    NSB_LAMMPS_LOAD = 1, /* a new box with n atoms; 3n doubles follow */
    NSB_LAMMPS_BUILD,    /* one neighbour build: "run 0 post no" */
    NSB_LAMMPS_PAIRS,    /* the last list's pairs into the pairs file */
    NSB_LAMMPS_MEMORY,   /* LAMMPS's own count of the bytes it holds */
    NSB_LAMMPS_CLEAR,    /* the atoms and lists freed ("clear") */
};

/* The most neighbours one atom may have (LAMMPS's neigh_modify one). */
#define NSB_LAMMPS_ONE 10000

typedef struct nsb_lammps_request {
    uint32_t op;
    uint32_t sorted;     /* LOAD: 1 = LAMMPS sorts the atoms spatially first */
    uint64_t n;          /* LOAD: the atoms */
    double cutoff;       /* LOAD: the pair cutoff (the reach) */
    double lo[3], hi[3]; /* LOAD: the box */
} nsb_lammps_request;

typedef struct nsb_lammps_reply {
    int32_t status; /* 0, or -1 when the request failed */
    uint32_t unused;
    uint64_t value; /* PAIRS: the pairs written; MEMORY: bytes; at start: LAMMPS's version */
} nsb_lammps_reply;

#endif /* NSB_LAMMPS_PROTOCOL_H */

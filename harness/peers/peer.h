/* peer.h - the other libraries' neighbour searches that nsearch-bench times
 * beside the kernels ("peers"): nanoflann's k-d tree, Boost.Geometry's
 * R-tree, CGAL's box intersection, scipy's cKDTree, LAMMPS's neighbour
 * list. Each is an adapter of a few dozen lines in C++, built only when its
 * library was found (peers.cmake), and
 * measured exactly like a kernel: the same particles, validated against the
 * same reference before it is timed, build and query timed apart.
 *
 * Every adapter asks its library for candidate pairs within a reach
 * slightly larger than the contact distance (radii inflated by 2^-10, so the
 * library's own float or double distance sums can only return more pairs,
 * never fewer), then decides each candidate i < j with ns_contact_between,
 * the predicate every kernel uses: the contacts are bit-identical to the
 * kernels' when the library finds every candidate. */
#ifndef NSB_PEER_H
#define NSB_PEER_H

#include "nsearch.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nsb_peer {
    const char *name;        /* the configuration's name, e.g. nanoflann_kdtree */
    const char *description; /* one line: what is built and queried */
    const char *library;     /* the library and its version, e.g. "nanoflann 1.4.3" */
    const char *tuning;      /* what was tried and what this adapter uses */
    bool parallel;           /* queries split over OpenMP threads; else serial */
    bool domain_memory;      /* its index grows with the domain's volume, so it may
                                refuse a vast one (NS_ERR_TOO_LARGE), like grid_dense */
    /* A new adapter state (NULL when out of memory). */
    void *(*create)(void);
    /* Untimed, once per particle set before its first build: the particles
     * copied into the library's own storage where it keeps them apart from
     * the index (LAMMPS's atoms); NULL for none. */
    ns_status (*prepare)(void *state, const ns_particles *p, ns_error *err);
    /* The library's index over p's particles (after prepare, when there is one). */
    ns_status (*build)(void *state, const ns_particles *p, int threads, ns_error *err);
    /* The contacts of the last build into out (emptied first, any order);
     * *candidates = the pairs given to the predicate. */
    ns_status (*query)(void *state, const ns_particles *p, int threads, ns_contact_list *out,
                       size_t *candidates, ns_error *err);
    /* The bytes of the index, or -1 when the library does not tell. */
    double (*bytes)(const void *state);
    void (*destroy)(void *state);
} nsb_peer;

/* The peers this build has, in the order the tools list them. */
size_t nsb_peer_count(void);
const nsb_peer *nsb_peer_at(size_t k); /* NULL when k >= count */
const nsb_peer *nsb_peer_find(const char *name);
/* The peers this build lacks, with the package that would bring each
 * ("cgal_box_intersection (libcgal-dev)", comma-separated), or "". */
const char *nsb_peers_missing(void);

#ifdef __cplusplus
}
#endif

#endif /* NSB_PEER_H */

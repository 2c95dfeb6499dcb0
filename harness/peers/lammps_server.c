/* lammps_server.c - nsb-lammps, the process in which the lammps_neighbor
 * peers run LAMMPS (lammps_neighbor.cpp starts it and talks to it).
 *
 * LAMMPS ends its process on any error of its own (Debian's build has no C++
 * exceptions, so the library interface cannot return one): a search it
 * cannot do - too many bins for a sparse domain, say - must end this
 * process, not nsearch-bench. The adapter sees the socket close, reads the
 * error line LAMMPS wrote to its screen file, and records a refusal.
 *
 * File descriptors, set up by the adapter:
 *   3  a stream socket: requests in, replies out (lammps_protocol.h)
 *   4  LAMMPS's screen output (a memory file the adapter reads)
 *   5  the pairs of the last neighbour list (a memory file both map)
 *
 * The particles become LAMMPS atoms (atom_style atomic, ID = index + 1,
 * one type) in a non-periodic box around them; pair_style zero with the
 * reach as its cutoff asks for LAMMPS's default half neighbour list
 * (binned, Newton on), skin 0, rebuilt on every run. */
#include "lammps_protocol.h"

#include <library.h>
#include <mpi.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

enum { SOCKET_FD = 3, SCREEN_FD = 4, PAIRS_FD = 5 };

/* LAMMPS's neighbour indices carry special-bond bits above these. */
#define NEIGHBOUR_MASK 0x1FFFFFFF

static void *lmp;
static uint32_t *pairs;
static size_t pairs_capacity; /* pairs (i, j) the mapping holds */

static int receive(void *buf, size_t size)
{
    char *at = buf;
    while (size > 0) {
        ssize_t got = recv(SOCKET_FD, at, size, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        at += got, size -= (size_t)got;
    }
    return 0;
}

static int send_all(const void *buf, size_t size)
{
    const char *at = buf;
    while (size > 0) {
        ssize_t put = send(SOCKET_FD, at, size, MSG_NOSIGNAL);
        if (put < 0 && errno == EINTR)
            continue;
        if (put <= 0)
            return -1;
        at += put, size -= (size_t)put;
    }
    return 0;
}

/* The process ends with an error line at the end of the screen file, where
 * the adapter reads it (after LAMMPS's own output, wherever LAMMPS's offset
 * is). */
static _Noreturn void fail(const char *what)
{
    char line[600];
    int len = snprintf(line, sizeof line, "\nERROR: %s\n", what);
    fflush(NULL);
    off_t end = lseek(SCREEN_FD, 0, SEEK_END);
    if (len > 0 && end >= 0 && pwrite(SCREEN_FD, line, (size_t)len, end) < 0)
        _exit(3); /* only the message is lost */
    _exit(1);
}

static void command(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void command(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    lammps_command(lmp, line);
    /* a LAMMPS built with exceptions returns its errors instead of ending
     * the process (Debian 12's ends it): end it here the same way */
    if (lammps_has_error(lmp)) {
        char message[512];
        lammps_get_last_error_message(lmp, message, sizeof message);
        fail(message);
    }
}

/* LAMMPS ends the process through MPI_Abort on an error one rank finds
 * (Error::one), and Open MPI's MPI_Abort does not flush stdio: the error
 * line would be lost in LAMMPS's screen buffer. This definition takes the
 * place of Open MPI's (an executable's symbols come first), so the line
 * reaches the screen file, and the process ends with LAMMPS's code. */
int MPI_Abort(MPI_Comm comm, int code)
{
    (void)comm;
    fflush(NULL);
    _exit(code ? code : 1);
}

/* The screen file emptied, so the adapter finds the last command's output
 * (and an error) at its end; LAMMPS keeps writing at its own offset, which
 * leaves a hole that takes no memory. */
static void empty_screen(void)
{
    if (ftruncate(SCREEN_FD, 0) != 0)
        return; /* only the screen's size: harmless */
}

/* A new box holding the particles, with the settings above. */
static int load(const nsb_lammps_request *rq)
{
    size_t n = (size_t)rq->n;
    double *x = malloc(3 * n * sizeof *x + 1);
    int *id = malloc(n * sizeof *id + 1), *type = malloc(n * sizeof *type + 1);
    if (!x || !id || !type) /* the atoms' bytes are still on the socket: no way on */
        fail("nsb-lammps: out of memory for the atoms");
    if (receive(x, 3 * n * sizeof *x) != 0)
        _exit(0); /* the adapter is gone */
    empty_screen();
    command("clear");
    command("units lj");
    command("atom_style atomic");
    command("atom_modify map array");
    command("boundary f f f");
    command("region box block %.17g %.17g %.17g %.17g %.17g %.17g", rq->lo[0], rq->hi[0], rq->lo[1],
            rq->hi[1], rq->lo[2], rq->hi[2]);
    command("create_box 1 box");
    command("mass 1 1.0");
    command("pair_style zero %.17g", rq->cutoff);
    command("pair_coeff * *");
    command("neighbor 0.0 bin");
    command("neigh_modify delay 0 every 1 check no one %d page %d", NSB_LAMMPS_ONE,
            10 * NSB_LAMMPS_ONE);
    command("thermo_style custom step");
    for (size_t i = 0; i < n; i++)
        id[i] = (int)i + 1, type[i] = 1;
    int made = lammps_create_atoms(lmp, (int)n, id, type, x, NULL, NULL, 0);
    free(x), free(id), free(type);
    if (made != (int)n) {
        char what[100];
        snprintf(what, sizeof what, "nsb-lammps: LAMMPS created %d of %zu atoms", made, n);
        fail(what);
    }
    /* The first run sorts the atoms spatially (LAMMPS's default) or not;
     * later runs keep that order. */
    command("atom_modify sort %s", rq->sorted ? "1 0.0" : "0 0.0");
    command("run 0 post no");
    command("atom_modify sort 0 0.0");
    return 0;
}

static void unmap_pairs(void)
{
    if (pairs)
        munmap(pairs, 2 * pairs_capacity * sizeof *pairs);
    pairs = NULL, pairs_capacity = 0;
}

/* The half list of the last run as pairs of particle indices into fd 5. */
static int write_pairs(uint64_t *count)
{
    int list = lammps_find_pair_neighlist(lmp, "zero", 1, 0, 0);
    if (list < 0)
        return -1;
    int elements = lammps_neighlist_num_elements(lmp, list);
    const int *tag = lammps_extract_atom(lmp, "id");
    size_t total = 0;
    for (int e = 0; e < elements; e++) {
        int i, many, *near;
        lammps_neighlist_element_neighbors(lmp, list, e, &i, &many, &near);
        total += (size_t)many;
    }
    if (total > pairs_capacity) {
        size_t capacity = total + total / 2 + 1024;
        unmap_pairs();
        if (ftruncate(PAIRS_FD, (off_t)(2 * capacity * sizeof *pairs)) != 0)
            return -1;
        void *m = mmap(NULL, 2 * capacity * sizeof *pairs, PROT_READ | PROT_WRITE, MAP_SHARED,
                       PAIRS_FD, 0);
        if (m == MAP_FAILED)
            return -1;
        pairs = m, pairs_capacity = capacity;
    }
    uint32_t *at = pairs;
    for (int e = 0; e < elements; e++) {
        int i, many, *near;
        lammps_neighlist_element_neighbors(lmp, list, e, &i, &many, &near);
        for (int k = 0; k < many; k++) {
            *at++ = (uint32_t)(tag[i] - 1);
            *at++ = (uint32_t)(tag[near[k] & NEIGHBOUR_MASK] - 1);
        }
    }
    *count = total;
    return 0;
}

int main(void)
{
    char *args[] = {"nsb-lammps", "-log", "none", "-screen", "/proc/self/fd/4", "-nocite", NULL};
    lmp = lammps_open_no_mpi(6, args, NULL);
    if (!lmp)
        return 2;
    nsb_lammps_reply hello = {.status = 0, .value = (uint64_t)lammps_version(lmp)};
    if (send_all(&hello, sizeof hello) != 0)
        return 0;
    nsb_lammps_request rq;
    while (receive(&rq, sizeof rq) == 0) {
        nsb_lammps_reply rp = {0, 0, 0};
        switch (rq.op) {
        case NSB_LAMMPS_LOAD: rp.status = load(&rq); break;
        case NSB_LAMMPS_BUILD:
            empty_screen();
            lammps_command(lmp, "run 0 post no");
            break;
        case NSB_LAMMPS_PAIRS: rp.status = write_pairs(&rp.value); break;
        case NSB_LAMMPS_CLEAR: /* the atoms, the lists and the pairs file freed */
            command("clear");
            unmap_pairs();
            rp.status = ftruncate(PAIRS_FD, 0);
            break;
        case NSB_LAMMPS_MEMORY: {
            /* [0]: the sum of LAMMPS's memory_usage() estimates (atoms,
             * neighbour lists, bins, ...) in MiB, as its run setup prints */
            double mib[3] = {0, 0, 0};
            lammps_memory_usage(lmp, mib);
            rp.value = (uint64_t)(mib[0] * 1024.0 * 1024.0);
            break;
        }
        default: rp.status = -1;
        }
        if (send_all(&rp, sizeof rp) != 0)
            break;
    }
    lammps_close(lmp);
    lammps_mpi_finalize();
    return 0;
}

/* workload_cache.h - the costly workloads' particles kept between runs.
 *
 * A workload whose table entry has cache_version > 0 (settled: it runs a
 * simulation) is kept as a particle file DIR/<name>-v<version>-n<n>-seed<seed>.csv
 * (x,y,z,r). Both tools use it: nsearch-bench --cache-dir and
 * nsearch sim --cache-dir, so a pile made by one is read by the other.
 *
 * The file proves what it holds. Its first line is a comment (particle files
 * skip it, so `nsearch pairs --input` and `nsearch sim --input` read the file
 * as it is):
 *
 *   # nsearch-cache workload=settled version=3 n=2000 seed=1 fnv1a64=<16 hex digits>
 *
 * naming the workload, its cache_version, n and seed, and the 64-bit FNV-1a
 * hash of the particles' float32 bits, each float's 4 bytes least significant
 * first: the 3n coordinates (x0,y0,z0,x1,...) then the n radii, computed on
 * the generated arrays. A file is used only when that line is there and names
 * this workload, version, n and seed, the file parses with exactly n particles
 * with radii, and the hash of the parsed values equals the recorded one (so
 * the text gave back every float bit for bit). Any other file there fails its
 * check: the particles are generated again and written over it, and the
 * caller is told why (reason). */
#ifndef NS_WORKLOAD_CACHE_H
#define NS_WORKLOAD_CACHE_H

#include "nsearch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What became of the cache in one call. */
typedef enum workload_cache_outcome {
    CACHE_UNUSED,   /* no dir, or w is not costly: generated */
    CACHE_READ,     /* read from the cache file, which passed its check */
    CACHE_STORED,   /* no file there: generated, then written to the cache */
    CACHE_REMADE,   /* the file there failed its check (reason): generated, then
                       written over it */
    CACHE_NOT_KEPT, /* generated, but the cache could not be written (reason set
                       too when a file there failed its check) */
} workload_cache_outcome;

enum { WORKLOAD_CACHE_PATH_MAX = 4096, WORKLOAD_CACHE_REASON_MAX = 320 };

/* One call's report. */
typedef struct workload_cache_result {
    workload_cache_outcome outcome;
    char path[WORKLOAD_CACHE_PATH_MAX]; /* the cache file; "" when unused or the
                                           path is too long */
    /* why the file at path failed its check, e.g. "its checksum differs", "it
       has no checksum line", "it holds 1999 particles, not 2000", "line 17: x
       'abc' is not a number"; "" when it passed, was not there, or unused */
    char reason[WORKLOAD_CACHE_REASON_MAX];
} workload_cache_result;

/* Fills pos (3n) and radius (n) with workload w's particles. With dir set
 * and w costly: read from the cache file when it passes its check (above);
 * otherwise generated, then written there through a temporary file renamed
 * into place, never over anything but a regular file (a cache that cannot be
 * written is not an error: CACHE_NOT_KEPT). A missing file is no failure
 * (CACHE_STORED); one that fails its check is CACHE_REMADE with
 * result->reason. Returns the generator's status (err filled) when it fails. */
ns_status workload_cache_generate(const ns_workload *w, size_t n, uint64_t seed, int threads,
                                  const char *dir, float *pos, float *radius,
                                  workload_cache_result *result, ns_error *err);

#endif /* NS_WORKLOAD_CACHE_H */

/* workload_cache.h - the costly workloads' particles kept between runs.
 *
 * A workload whose table entry has cache_version > 0 (settled: it runs a
 * simulation) is kept as a particle file DIR/<name>-v<version>-n<n>-seed<seed>.csv
 * (x,y,z,r). Both tools use it: nsearch-bench --cache-dir and
 * nsearch sim --cache-dir, so a pile made by one is read by the other. */
#ifndef NS_WORKLOAD_CACHE_H
#define NS_WORKLOAD_CACHE_H

#include "nsearch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What became of the cache in one call. */
typedef enum workload_cache_outcome {
    CACHE_UNUSED,   /* no dir, or w is not costly: generated */
    CACHE_READ,     /* read from the cache file */
    CACHE_STORED,   /* generated, then written to the cache */
    CACHE_NOT_KEPT, /* generated, but the cache could not be written */
} workload_cache_outcome;

/* Fills pos (3n) and radius (n) with workload w's particles. With dir set
 * and w costly: read from the cache file when it holds exactly n particles
 * with radii; otherwise generated, then written there through a temporary
 * file renamed into place, never over anything but a regular file (a cache
 * that cannot be written is not an error: CACHE_NOT_KEPT). Returns the
 * generator's status (err filled) when it fails. */
ns_status workload_cache_generate(const ns_workload *w, size_t n, uint64_t seed, int threads,
                                  const char *dir, float *pos, float *radius,
                                  workload_cache_outcome *outcome, ns_error *err);

#endif /* NS_WORKLOAD_CACHE_H */

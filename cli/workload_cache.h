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

/* Fills pos (3n) and radius (n) with workload w's particles. With dir set
 * and w costly: read from the cache file when it holds exactly n particles
 * with radii (*cached true); otherwise generated, then written there through
 * a temporary file renamed into place, never over anything but a regular
 * file (a cache that cannot be written is not an error: *stored false).
 * Returns the generator's status (err filled) when it fails. */
ns_status workload_cache_generate(const ns_workload *w, size_t n, uint64_t seed, int threads,
                                  const char *dir, float *pos, float *radius, bool *cached,
                                  bool *stored, ns_error *err);

#endif /* NS_WORKLOAD_CACHE_H */

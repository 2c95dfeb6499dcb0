/* data.h - the data layer's private interface: the workload generators
 * (workloads.c), particle and contact files (io.c), float formatting
 * (format.c). It uses only the core; the workload table, which also lists
 * the simulated workloads, is assembled above the simulation. */
#ifndef NS_DATA_H
#define NS_DATA_H

#include "core.h"

/* The generated workloads (ns_workload.generate), deterministic from
 * (n, seed): only the integer RNG and IEEE basic operations, so bit-identical
 * on every machine. threads is not used. */
ns_status ns__workload_uniform(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                               ns_error *err);
ns_status ns__workload_dambreak(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                                ns_error *err);
ns_status ns__workload_clusters(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                                ns_error *err);
ns_status ns__workload_polydisperse(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                                    ns_error *err);
ns_status ns__workload_powder(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                              ns_error *err);
ns_status ns__workload_sheet(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                             ns_error *err);

#endif /* NS_DATA_H */

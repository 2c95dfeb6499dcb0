/* sim.h - the simulation layer's private interface (for the tests too). */
#ifndef NS_SIM_H
#define NS_SIM_H

#include "search.h"
#include "data.h"

/* The release positions of ns_sim_spawn for a layout not at rest: pos
 * spread out by (2, 2, 8), and a box around them with room of two largest
 * radii on every side. */
void ns__sim_spread(size_t n, float *pos, const float *radius, float box_lo[3], float box_hi[3]);

/* ns_sim_settled with piles of at most `block` particles (the tests use
 * small piles to reach the tiling cheaply). */
ns_status ns__sim_settled_piles(size_t n, uint64_t seed, int threads, size_t block, float *pos,
                                float *radius, ns_error *err);

#endif /* NS_SIM_H */

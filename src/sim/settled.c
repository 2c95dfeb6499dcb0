/* settled.c - the settled workload: uniform spheres dropped into a box and
 * simulated until at rest, in piles side by side beyond NS_SETTLED_BLOCK
 * particles (nsearch.h). */
#include "sim.h"

#include <string.h>

/* One pile of n uniform spheres, at rest; box_lo/box_hi receive its box. */
static ns_status settle(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                        float box_lo[3], float box_hi[3], ns_error *err)
{
    ns_status st = ns__workload_uniform(n, seed, threads, pos, radius, err);
    if (st != NS_OK)
        return st;
    ns__sim_spread(n, pos, radius, box_lo, box_hi);
    ns_sim_params p = ns_sim_params_default();
    memcpy(p.box_lo, box_lo, sizeof p.box_lo);
    memcpy(p.box_hi, box_hi, sizeof p.box_hi);
    ns_config c = ns_config_default();
    c.threads = threads;
    ns_sim *sim;
    st = ns_sim_create(ns_sim_default_kernel(), &c, &p, n, pos, radius, &sim, err);
    if (st != NS_OK)
        return st;
    double start = ns_sim_potential_energy(sim);
    for (int f = 0; f < NS_SETTLE_MAX_FRAMES && st == NS_OK; f++) {
        st = ns_sim_step(sim, NULL, err);
        if (f >= 100 && ns_sim_kinetic_energy(sim) <= 1e-3 * (start - ns_sim_potential_energy(sim)))
            break;
    }
    if (st == NS_OK && n)
        memcpy(pos, ns_sim_positions(sim), 3 * n * sizeof(float));
    ns_sim_destroy(sim);
    return st;
}

ns_status ns_sim_settled(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                         ns_error *err)
{
    return ns__sim_settled_piles(n, seed, threads, NS_SETTLED_BLOCK, pos, radius, err);
}

ns_status ns__sim_settled_piles(size_t n, uint64_t seed, int threads, size_t block, float *pos,
                                float *radius, ns_error *err)
{
    float lo[3], hi[3];
    if (n && (!pos || !radius))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "pos or radius is NULL");
    int resolved; /* refused before any pile is made */
    ns_status st = ns__resolve_threads(threads, &resolved, err);
    if (st != NS_OK)
        return st;
    if (n <= block) {
        st = settle(n, seed, threads, pos, radius, lo, hi, err);
        if (st == NS_OK)
            ns__ok(err);
        return st;
    }
    /* k piles: the first n % k of q + 1 particles, the others of q */
    size_t k = (n + block - 1) / block, q = n / k, big = n % k;
    size_t columns = 1;
    while (columns * columns < k)
        columns++;
    float *pile_pos[2] = {NULL, NULL}, *pile_r[2] = {NULL, NULL}, plo[2][3], phi[2][3];
    for (int b = 0; b < 2 && st == NS_OK; b++) {
        size_t m = q + (b == 0);
        if (b == 0 && big == 0)
            continue;
        pile_pos[b] = ns__malloc_array(3 * m, sizeof(float));
        pile_r[b] = ns__malloc_array(m, sizeof(float));
        st = pile_pos[b] && pile_r[b]
                 ? settle(m, seed, threads, pile_pos[b], pile_r[b], plo[b], phi[b], err)
                 : ns__fail_oom(err, "a settled pile");
    }
    if (st == NS_OK) {
        float width[2] = {0.0f, 0.0f};
        for (int b = 0; b < 2; b++)
            for (int a = 0; a < 2; a++)
                if (pile_pos[b] && phi[b][a] - plo[b][a] > width[a])
                    width[a] = phi[b][a] - plo[b][a];
        size_t at = 0;
        for (size_t t = 0; t < k; t++) {
            int b = t < big ? 0 : 1;
            size_t m = q + (b == 0);
            float ox = (float)(t % columns) * width[0] - plo[b][0];
            float oy = (float)(t / columns) * width[1] - plo[b][1];
            for (size_t i = 0; i < m; i++, at++) {
                pos[3 * at + 0] = pile_pos[b][3 * i + 0] + ox;
                pos[3 * at + 1] = pile_pos[b][3 * i + 1] + oy;
                pos[3 * at + 2] = pile_pos[b][3 * i + 2] - plo[b][2];
                radius[at] = pile_r[b][i];
            }
        }
    }
    for (int b = 0; b < 2; b++) {
        ns__free(pile_pos[b]);
        ns__free(pile_r[b]);
    }
    if (st == NS_OK)
        ns__ok(err);
    return st;
}

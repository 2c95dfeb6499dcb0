/* registration.c - the sweep (docs/harness.md, "The default sweep"): which
 * configurations the options ask for, kernel x workload x n x threads, the
 * peers beside them and bound, write and oneshot after them, each
 * registered with Google Benchmark under its name with run_config
 * (runner.c) as its function. The configurations are the run's
 * (bench.configs); each points back to the run, the one thing Google
 * Benchmark gives run_config being its registered argument. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernels the table marks quadratic run to REFERENCE_MAX_N on the
 * headline workload (uniform: the O(n^2) curve) and to QUADRATIC_OTHER_MAX_N
 * on the others: they test every pair, so their time hardly depends on the
 * layout, and one search of 100,000 particles takes seconds. */
#define QUADRATIC_OTHER_MAX_N 10000
/* The peers (other libraries) run to OTHER_MAX_N on the workloads the
 * table does not mark bulk, and to --max-n on the bulk ones. On a workload
 * marked wide_radii the kernels without radius_levels and the peers stop at
 * OTHER_MAX_N: the largest radius sets their cells or search radius, and one
 * search of a million particles takes them seconds to a minute. */
#define OTHER_MAX_N 100000

static const size_t headline_sizes[] = {100,  200,   500,   1000,  2000,
                                        5000, 10000, 20000, 50000, 100000};
static const size_t other_sizes[] = {1000, 10000, 100000};
static const size_t large_sizes[] = {200000, 500000, 1000000, 2000000, 5000000, 10000000};

const char *config_search_name(const config *c)
{
    switch (c->kind) {
    case KIND_PEER: return c->peer->name;
    case KIND_BOUND: return BOUND_NAME;
    case KIND_WRITE: return WRITE_NAME;
    case KIND_ONESHOT: return ONESHOT_NAME;
    default: return c->kernel->name;
    }
}

static void add_config(bench *b, const ns_kernel *k, const nsb_peer *peer, config_kind kind,
                       const char *w, size_t n, int threads)
{
    config_set *set = &b->configs;
    if (set->count == set->capacity) {
        set->capacity = set->capacity ? 2 * set->capacity : 256;
        set->items = realloc(set->items, set->capacity * sizeof *set->items);
        if (!set->items)
            die("out of memory");
    }
    config *c = &set->items[set->count++];
    *c = (config){.kernel = k,
                  .peer = peer,
                  .kind = kind,
                  .workload = w,
                  .n = n,
                  .threads = threads,
                  .bench = b};
    snprintf(c->name, sizeof c->name, "%s/%s/n:%zu/threads:%d", config_search_name(c), w, n,
             threads);
}

/* Whether the serial kernels run: --serial-kernels, or with auto, when the
 * thread counts include 1 (a process of all-core configurations leaves them
 * to the 1-thread process, so they are measured once). */
static bool serial_kernels_run(const options *o, const int *threads, int n_threads)
{
    if (strcmp(o->serial_kernels, "auto") != 0)
        return strcmp(o->serial_kernels, "yes") == 0;
    for (int t = 0; t < n_threads; t++)
        if (threads[t] == 1)
            return true;
    return false;
}

/* Grouped by workload and n, so each reference is computed once: the
 * kernels (serial ones with 1 thread, parallel ones at each thread count),
 * then bound and write at each thread count. */
void register_sweep(bench *b)
{
    const options *o = &b->opt;
    int cores = b->start.cores;
    int threads[16], n_threads;
    if (o->threads) {
        n_threads = parse_threads(o->threads, threads, 16);
    } else {
        threads[0] = 1;
        threads[1] = cores;
        n_threads = cores > 1 ? 2 : 1;
    }
    bool serial = serial_kernels_run(o, threads, n_threads);
    const ns_kernel *bound = NULL; /* the table's bound kernel */
    for (size_t k = 0; k < ns_kernel_count(); k++)
        if (ns_kernel_at(k)->bound)
            bound = ns_kernel_at(k);
    for (size_t w = 0; w < ns_workload_count(); w++) {
        const ns_workload *W = ns_workload_at(w);
        const char *wl = W->name;
        if (!in_list(o->workloads, wl))
            continue;
        bool headline = W->headline, bulk = W->bulk, wide = W->wide_radii;
        const size_t *sizes = headline ? headline_sizes : other_sizes;
        size_t n_sizes = headline ? sizeof headline_sizes / sizeof *headline_sizes
                                  : sizeof other_sizes / sizeof *other_sizes;
        size_t all[32], count = 0;
        for (size_t s = 0; s < n_sizes; s++)
            if (sizes[s] <= o->max_n)
                all[count++] = sizes[s];
        for (size_t s = 0; s < sizeof large_sizes / sizeof *large_sizes; s++)
            if (large_sizes[s] <= o->max_n)
                all[count++] = large_sizes[s];
        if (o->max_n_given && (count == 0 || all[count - 1] < o->max_n))
            all[count++] = o->max_n; /* the largest n asked for is always measured */
        for (size_t s = 0; s < count; s++) {
            for (size_t k = 0; k < ns_kernel_count(); k++) {
                const ns_kernel *ker = ns_kernel_at(k);
                size_t most = headline ? REFERENCE_MAX_N : QUADRATIC_OTHER_MAX_N;
                if (!in_list(o->kernels, ker->name) || (ker->quadratic && all[s] > most) ||
                    (wide && !ker->radius_levels && all[s] > OTHER_MAX_N) ||
                    (!ker->parallel && !serial))
                    continue;
                for (int t = 0; t < (ker->parallel ? n_threads : 1); t++)
                    add_config(b, ker, NULL, KIND_KERNEL, wl, all[s],
                               ker->parallel ? threads[t] : 1);
            }
            char size[24];
            snprintf(size, sizeof size, "%zu", all[s]);
            bool peers_here = in_list(o->peer_workloads, wl) && in_list(o->peer_sizes, size);
            for (size_t k = 0; k < nsb_peer_count() && peers_here; k++) {
                const nsb_peer *peer = nsb_peer_at(k);
                if (!in_list(o->kernels, peer->name) || ((!bulk || wide) && all[s] > OTHER_MAX_N) ||
                    (!peer->parallel && !serial))
                    continue;
                for (int t = 0; t < (peer->parallel ? n_threads : 1); t++)
                    add_config(b, NULL, peer, KIND_PEER, wl, all[s],
                               peer->parallel ? threads[t] : 1);
            }
            if (bound && in_list(o->kernels, BOUND_NAME))
                for (int t = 0; t < n_threads; t++)
                    add_config(b, bound, NULL, KIND_BOUND, wl, all[s], threads[t]);
            if (in_list(o->kernels, WRITE_NAME))
                for (int t = 0; t < n_threads; t++)
                    add_config(b, NULL, NULL, KIND_WRITE, wl, all[s], threads[t]);
            if (bound && in_list(o->kernels, ONESHOT_NAME))
                for (int t = 0; t < n_threads; t++)
                    add_config(b, bound, NULL, KIND_ONESHOT, wl, all[s], threads[t]);
        }
    }
    for (size_t c = 0; c < b->configs.count; c++)
        nsb_register(b->configs.items[c].name, run_config, &b->configs.items[c], NULL);
}

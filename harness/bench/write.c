/* write.c - the write configuration (write/workload/n:N/threads:T): the
 * reference's number of contacts, 24 bytes each, streamed into an
 * allocated, already written buffer with T threads, the output every
 * kernel must produce at this machine's memory bandwidth (docs/harness.md,
 * "Configurations that are not kernels"). run_config (runner.c) calls
 * run_write once the (workload, n)'s reference is prepared; it checks the
 * write once, then times it in its own loop, write_contacts kept beside
 * that loop in this file. Its counters: n, contacts, bytes_written,
 * gb_per_s, omp_threads and the disturbances. */
#include "bench.h"

#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WRITE_PATTERN 64 /* contacts repeated by write (a power of two) */

/* write: out[k] = pattern[k mod WRITE_PATTERN] for every k, plain stores with
 * `threads` threads, statically scheduled so each thread writes the pages it
 * wrote before. */
static void write_contacts(ns_contact *out, size_t count, const ns_contact *pattern, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t k = 0; k < count; k++)
        out[k] = pattern[k & (WRITE_PATTERN - 1)];
}

void run_write(bench *b, nsb_state *st, config *c)
{
    const reference_cache *cache = &b->cache;
    size_t count = cache->reference.count;
    ns_contact pattern[WRITE_PATTERN];
    for (size_t k = 0; k < WRITE_PATTERN; k++) /* the reference's first contacts, if any */
        pattern[k] = count ? cache->reference.items[k % count]
                           : (ns_contact){(uint32_t)k, (uint32_t)k + 1, 0.0f, 1.0f, 0.0f, 0.0f};
    ns_contact *out = malloc(count ? count * sizeof *out : 1);
    if (!out) {
        snprintf(c->verdict, sizeof c->verdict,
                 "refused: no memory for %zu contacts (%zu bytes) (out of memory)", count,
                 count * sizeof *out);
        fail_config(st, &b->tally, c, REFUSED);
        return;
    }
    /* a first, untimed write: touches every page with the threads that will
     * write it, and is the check that exactly count contacts were written */
    write_contacts(out, count, pattern, c->threads);
    if (!c->checked) {
        size_t k = 0;
        while (k < count && memcmp(&out[k], &pattern[k & (WRITE_PATTERN - 1)], sizeof *out) == 0)
            k++;
        if (k != count) {
            snprintf(c->verdict, sizeof c->verdict,
                     "INVALID: write of %zu contacts differs at contact %zu", count, k);
            fail_config(st, &b->tally, c, INVALID);
            free(out);
            return;
        }
        b->tally.n_valid++;
        c->checked = 1;
        snprintf(c->verdict, sizeof c->verdict, "VALID: writes %zu contacts", count);
    }
    nsb_set_label(st, c->verdict);

    double seconds = 0.0;
    int64_t iterations = 0;
    disturbance before = disturbance_now();
    while (nsb_keep_running(st)) {
        double t0 = tool_seconds();
        write_contacts(out, count, pattern, c->threads);
        double t1 = tool_seconds();
        nsb_set_iteration_time(st, t1 - t0);
        seconds += t1 - t0;
        iterations++;
    }
    disturbance after = disturbance_now();
    /* a read of the last byte written: the stores are observed */
    static volatile unsigned char sink;
    sink = count ? ((const unsigned char *)out)[count * sizeof *out - 1] : 0;
    (void)sink;
    free(out);
    if (iterations > 0) {
        double bytes = (double)count * (double)sizeof(ns_contact);
        double per_iteration = seconds / (double)iterations;
        nsb_set_counter(st, "n", (double)c->n, NSB_PLAIN);
        nsb_set_counter(st, "contacts", (double)count, NSB_PLAIN);
        nsb_set_counter(st, "bytes_written", bytes, NSB_PLAIN);
        nsb_set_counter(st, "gb_per_s", per_iteration > 0 ? bytes / per_iteration * 1e-9 : 0.0,
                        NSB_PLAIN);
        nsb_set_counter(st, "omp_threads", c->threads, NSB_PLAIN);
        set_disturbance_counters(st, &b->probe, &before, &after);
        nsb_set_counter(st, "peak_rss_bytes", (double)peak_rss_bytes(), NSB_PLAIN);
    }
}

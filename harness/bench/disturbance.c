/* disturbance.c - what the harness reads about the machine and the process
 * around each repetition, outside its timed iterations (docs/harness.md,
 * "Counters"; comparing.md, "Disturbances"): steal time and context
 * switches (disturbance_now before and after the timed loop, the
 * difference set as counters), the memory probe (run right behind every
 * repetition's timed loop, its buffer the run's mem_probe), and the
 * process's peak resident memory. runner.c and write.c set these counters
 * after their timed loops; context.c describes the probe and borrows
 * compare_double for the witness's medians. */
#include "bench.h"

#include "clock.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

/* peak_rss_bytes: the process's peak resident memory so far. */
size_t peak_rss_bytes(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? (size_t)u.ru_maxrss * 1024 : 0;
}

/* What disturbs a repetition (bench.h's disturbance): the steal time of
 * all CPUs together (the steal column of /proc/stat's cpu line, in clock
 * ticks; 0 where it is not visible) and the process's context switches (all
 * its threads: RUSAGE_SELF). */
disturbance disturbance_now(void)
{
    disturbance d = {0, 0, 0};
    FILE *f = fopen("/proc/stat", "r");
    unsigned long long v[8];
    if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                    &v[4], &v[5], &v[6], &v[7]) == 8)
        d.steal_ticks = v[7];
    if (f)
        fclose(f);
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) == 0) {
        d.involuntary = u.ru_nivcsw;
        d.voluntary = u.ru_nvcsw;
    }
    return d;
}

int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The memory probe: what the witness (context.c) cannot see, measured after
 * every repetition's timed loop. On a virtual machine memory can be far
 * slower for seconds at a time (a neighbour on the shared cache or the
 * memory bus, or the two vCPUs placed apart: the guest cannot tell which),
 * and a build that streams and permutes arrays then takes two to three times
 * as long, while the witness, in L1, does not change. The probe is such
 * work, fixed: each thread of the process writes its slice of PROBE_WORDS
 * words, then, after a barrier, reads the next thread's slice (its own with
 * one thread) in a scattered order, PROBE_REPS times; mem_probe_ms is the
 * median (docs/harness.md, "Counters"). It runs outside the timed loop, so it adds to
 * the sweep's time, never to a repetition's. */
#define PROBE_VERSION 1
#define PROBE_WORDS (1u << 20) /* 4 MiB: beyond the private caches, within a shared one */
#define PROBE_REPS 5

void mem_probe_describe(char *buf, size_t size)
{
    snprintf(buf, size,
             "v%d: each thread writes its slice of %u words, then reads the next thread's "
             "slice in a scattered order, %d times, median; after every repetition",
             PROBE_VERSION, PROBE_WORDS, PROBE_REPS);
}

/* The probe's median time in ms, or a negative number when it cannot run
 * (no memory). Its words are probe->words, allocated on the first probe and
 * kept for the process. */
/* The probe's reads are used: summed into here (file scope: a function's
 * static that is only written is a warning of its own to clang). */
static volatile uint32_t probe_sink;

static double probe_memory(mem_probe *probe)
{
    if (!probe->words && !(probe->words = malloc(PROBE_WORDS * sizeof *probe->words)))
        return -1.0;
    uint32_t *probe_words = probe->words;
    double times[PROBE_REPS];
    for (int r = 0; r < PROBE_REPS; r++) {
        double t0 = tool_seconds();
#pragma omp parallel
        {
            int t = omp_get_thread_num(), team = omp_get_num_threads();
            size_t slice = PROBE_WORDS;
            while (slice * (size_t)team > PROBE_WORDS)
                slice /= 2; /* a power of two: i * odd mod slice is a permutation */
            uint32_t *mine = probe_words + (size_t)t * slice,
                     *next = probe_words + (size_t)((t + 1) % team) * slice, sum = 0;
            for (size_t i = 0; i < slice; i++)
                mine[i] = (uint32_t)(i + (size_t)r);
#pragma omp barrier
            for (size_t i = 0; i < slice; i++)
                sum += next[(i * 2654435761u) & (slice - 1)];
#pragma omp atomic
            probe_sink += sum;
        }
        times[r] = tool_seconds() - t0;
    }
    qsort(times, PROBE_REPS, sizeof *times, compare_double);
    return 1e3 * times[PROBE_REPS / 2];
}

void set_disturbance_counters(nsb_state *st, mem_probe *memory, const disturbance *before,
                              const disturbance *after)
{
    double probe = probe_memory(memory);
    if (probe >= 0.0)
        nsb_set_counter(st, "mem_probe_ms", probe, NSB_PLAIN);
    long ticks_per_s = sysconf(_SC_CLK_TCK);
    unsigned long long steal =
        after->steal_ticks >= before->steal_ticks ? after->steal_ticks - before->steal_ticks : 0;
    nsb_set_counter(st, "steal_ms",
                    ticks_per_s > 0 ? 1e3 * (double)steal / (double)ticks_per_s : 0.0, NSB_PLAIN);
    nsb_set_counter(st, "invol_csw", (double)(after->involuntary - before->involuntary), NSB_PLAIN);
    nsb_set_counter(st, "vol_csw", (double)(after->voluntary - before->voluntary), NSB_PLAIN);
}

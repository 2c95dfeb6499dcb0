/* bench_shim.h - Google Benchmark for C, in the spirit of IREE's
 * iree/testing/benchmark.h: register a C function as a benchmark, run its
 * timing loop with manually measured time, report counters, skip with an
 * error. The only C++ of the harness is behind this header (bench_shim.cc). */
#ifndef NSB_BENCH_SHIM_H
#define NSB_BENCH_SHIM_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nsb_state nsb_state; /* a running benchmark (benchmark::State) */
typedef void (*nsb_function)(nsb_state *state, void *arg);

/* Options of a registered benchmark. */
typedef struct nsb_options {
    int repetitions; /* 0: Google Benchmark's default or --benchmark_repetitions */
    double min_time; /* seconds; 0: the default or --benchmark_min_time */
} nsb_options;

/* Registers fn(state, arg) under name. Time is manual (nsb_set_iteration_time),
 * in milliseconds, with min and max statistics beside mean, median, stddev
 * and cv. */
void nsb_register(const char *name, nsb_function fn, void *arg, const nsb_options *options);

/* Takes Google Benchmark's flags out of argc/argv (the caller parses the rest). */
void nsb_initialize(int *argc, char **argv);
/* Runs the benchmarks selected by --benchmark_filter; returns how many ran. */
size_t nsb_run(void);
void nsb_shutdown(void);

/* A key/value pair for the "context" of the results. */
void nsb_add_context(const char *key, const char *value);

/* How Google Benchmark's own library was compiled, as its JSON context's
 * library_build_type says ("release" or "debug"; "unknown" if it says
 * nothing): a property of Google Benchmark, not of the code it times. */
const char *nsb_library_build_type(void);

/* The timing loop: while (nsb_keep_running(s)) { ...; nsb_set_iteration_time(s, t); } */
bool nsb_keep_running(nsb_state *state);
void nsb_set_iteration_time(nsb_state *state, double seconds);

/* Counters. NSB_PLAIN: the value as given. NSB_PER_ITERATION_RATE: an
 * amount done once per iteration, reported per second of (manual) time. */
typedef enum nsb_counter_kind { NSB_PLAIN, NSB_PER_ITERATION_RATE } nsb_counter_kind;
void nsb_set_counter(nsb_state *state, const char *name, double value, nsb_counter_kind kind);
void nsb_set_label(nsb_state *state, const char *label);

/* Marks the run as failed (or refused) with a message; the timing loop must
 * not be entered afterwards. */
void nsb_skip_with_error(nsb_state *state, const char *message);

/* After nsb_run: the benchmarks whose repetitions' coefficient of variation
 * exceeded the threshold given to nsb_watch_noise (before nsb_run). */
void nsb_watch_noise(double cv_threshold);
size_t nsb_noisy_count(void);
const char *nsb_noisy_name(size_t k, double *cv);

#ifdef __cplusplus
}
#endif

#endif /* NSB_BENCH_SHIM_H */

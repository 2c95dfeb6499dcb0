/* nsearch-bench - the benchmark harness: every kernel x workload x n x
 * threads on Google Benchmark (through bench_shim.h), each configuration
 * validated exactly against a reference before it is timed.
 *
 * Names: kernel/workload/n:N/threads:T, T the threads asked for (a parallel
 * kernel runs on fewer at small n: its omp_threads counter says how many).
 * Timed per iteration (manual time): ns_index_build + ns_index_query,
 * i.e. from the caller's particle arrays to the complete contact list, on an
 * index and a contact list reused across iterations as a simulation reuses
 * them across frames. Not timed: generating the particles, the reference,
 * validation, sorting.
 *
 * The peers (harness/peers/peer.h: other libraries' searches, built in when
 * their library was found) are configurations like the kernels,
 * peer/workload/n:N/threads:T, validated and timed the same way (their
 * build, then their query into the contact list), to 100,000 particles on
 * the workloads the table does not mark bulk or marks wide_radii.
 *
 * Three configurations are not kernels; they are registered beside the
 * kernels of every workload and n, at every thread count of the run:
 *  - bound/workload/n:N/threads:T times grid_sorted's build (its binning into
 *    sorted cells) plus ns_index_count, its vectorised count of the contacts,
 *    with no output. It is exactly that: one kernel's work minus writing the
 *    contacts, a floor for that kernel, not a bound on what this machine can
 *    do. The summary and the figures divide every kernel's time by it. It is
 *    checked against the reference's contact count.
 *  - write/workload/n:N/threads:T times streaming the reference's number of
 *    contacts (24 bytes each) into an allocated, already written buffer with
 *    T threads: the output every kernel must produce, at this machine's
 *    memory bandwidth. It is checked by writing exactly that many contacts.
 *  - oneshot/workload/n:N/threads:T times one call of ns_find_contacts with
 *    the same kernel as bound (grid_sorted): a new index and a new contact
 *    list in every iteration, so the first touch of their memory is timed,
 *    the one configuration where it is. The last iteration's list is freed
 *    before each iteration (untimed), so each call starts, like a program's
 *    single search, from memory given back to the system. Validated like a
 *    kernel.
 *
 * Every repetition also records what disturbed it, read before its first and
 * after its last timed iteration: steal_ms (CPU steal time of the whole
 * machine, from /proc/stat), invol_csw and vol_csw (the process's involuntary
 * and voluntary context switches, from getrusage). What neither shows (a
 * neighbour on the host's core) the witness does: a fixed piece of work timed
 * on every thread at the start of the process (witness_ms in the context).
 *
 * The results' context records the build and the machine (add_context).
 * Google Benchmark's own library_build_type key says how Google Benchmark's
 * library was compiled, not this harness or nsearch: build_type is ours,
 * benchmark_library_build_type repeats Google Benchmark's under a clear name.
 *
 * The parts (bench.h declares what they share, the run's state included):
 *   main.c         this: main, the flags given to Google Benchmark, the
 *                  restart for OMP_WAIT_POLICY, the end of the run
 *   options.c      the options, --help, the comma lists
 *   registration.c the sweep's configurations, registered with Google Benchmark
 *   reference.c    the particles, the references, their files
 *   runner.c       a configuration's run: the searcher, validation, the timed
 *                  loop, its counters, the peers' kept states
 *   write.c        the write configuration and its timed loop
 *   disturbance.c  what disturbed a repetition, the memory probe, peak memory
 *   context.c      the results' context: the machine, the build, the witness
 *   results.c      the results file, renamed complete or partial (signals) */
#define _GNU_SOURCE /* sched_setaffinity */

#include "bench.h"

#include <omp.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nsearch-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* Starts the harness again with the same arguments, for an environment
 * variable that libgomp reads only when it is loaded (before main). exec
 * keeps the CPU affinity, and libgomp binds the loading thread to the first
 * place when OMP_PROC_BIND or OMP_PLACES is set: the restarted runtime would
 * find one place only. So this thread is first allowed every CPU of every
 * place again (the places lie within the affinity the process started
 * with). Returns only when exec fails, with the affinity as it was. */
static void restart(char **argv)
{
    /* the processors of every place, in one list */
    int places = omp_get_num_places(), total = 0, *ids = NULL;
    for (int p = 0; p < places; p++)
        total += omp_get_place_num_procs(p);
    if (total > 0 && !(ids = malloc((size_t)total * sizeof *ids)))
        die("out of memory");
    for (int p = 0, at = 0; p < places && total > 0; p++) {
        omp_get_place_proc_ids(p, ids + at);
        at += omp_get_place_num_procs(p);
    }
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    int cpus = conf > CPU_SETSIZE ? (int)conf : CPU_SETSIZE;
    for (int k = 0; k < total; k++)
        cpus = ids[k] >= cpus ? ids[k] + 1 : cpus;
    size_t size = CPU_ALLOC_SIZE(cpus);
    cpu_set_t *was = CPU_ALLOC(cpus), *wide = CPU_ALLOC(cpus);
    bool widened = false;
    if (was && wide && total > 0 && sched_getaffinity(0, size, was) == 0) {
        CPU_OR_S(size, wide, was, was);
        for (int k = 0; k < total; k++)
            if (ids[k] >= 0)
                CPU_SET_S((size_t)ids[k], size, wide);
        widened = !CPU_EQUAL_S(size, wide, was) && sched_setaffinity(0, size, wide) == 0;
    }
    execv("/proc/self/exe", argv);
    if (widened)
        sched_setaffinity(0, size, was);
    CPU_FREE(was);
    CPU_FREE(wide);
    free(ids);
}

/* Appends a Google Benchmark flag to args unless the user gave it. */
static void default_flag(int *argc, char **args, const char *flag)
{
    size_t len = strcspn(flag, "=");
    for (int a = 1; a < *argc; a++)
        if (strncmp(args[a], flag, len) == 0)
            return;
    args[(*argc)++] = (char *)flag;
    args[*argc] = NULL;
}

static bool has_flag(int argc, char **argv, const char *prefix)
{
    for (int a = 1; a < argc; a++)
        if (strncmp(argv[a], prefix, strlen(prefix)) == 0)
            return true;
    return false;
}

/* Whether Google Benchmark's boolean flag is on, as it reads it: the last
 * --flag or --flag=VALUE, off for 0, f, n, false, no or off (any case). */
static bool flag_on(int argc, char **argv, const char *flag)
{
    bool on = false;
    size_t len = strlen(flag);
    for (int a = 1; a < argc; a++) {
        if (strncmp(argv[a], flag, len) != 0 || (argv[a][len] && argv[a][len] != '='))
            continue;
        const char *v = argv[a][len] ? argv[a] + len + 1 : "";
        static const char *const off[] = {"0", "f", "n", "false", "no", "off"};
        on = true;
        for (size_t k = 0; k < sizeof off / sizeof off[0]; k++)
            on = on && strcasecmp(v, off[k]) != 0;
    }
    return on;
}

/* What the run says at its end on standard error; the exit status. */
static int finish(bench *b)
{
    const tally *t = &b->tally;
    results_finish(&b->results);
    for (size_t k = 0; k < nsb_noisy_count(); k++) {
        double cv;
        const char *name = nsb_noisy_name(k, &cv);
        fprintf(stderr,
                "nsearch-bench: NOISY: %s: repetitions spread %.1f%% (coefficient of variation "
                "above 5%%); rerun on a quieter machine\n",
                name, 100.0 * cv);
    }
    fprintf(stderr, "nsearch-bench: %zu configurations VALID, %zu refused, %zu INVALID", t->n_valid,
            t->n_refused, t->n_invalid);
    if (t->n_failed)
        fprintf(stderr, ", %zu failed (an error, not a documented refusal)", t->n_failed);
    fputc('\n', stderr);
    if (t->n_skipped)
        fprintf(stderr, "nsearch-bench: %zu VALID peers not timed (over --peer-limit)\n",
                t->n_skipped);
    if (t->any_invalid)
        fprintf(stderr, "nsearch-bench: FAILED: some contacts differ from the reference\n");
    if (t->n_failed)
        fprintf(stderr, "nsearch-bench: FAILED: some configurations failed with an error\n");
    return t->any_invalid || t->n_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    /* The run's state, passed from here to what needs it. Static storage,
     * as each part had when it was a file's variable: zeroed, tens of
     * kilobytes, and alive until the process ends (the signal handler may
     * read the results file's names during exit). */
    static bench b;
    start_info_read(&b.start);
    /* before Google Benchmark takes its flags out of argv (and answers
     * --help with its own flags only) */
    for (int a = 1; a < argc; a++)
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0)
            print_help();
    bool listing = flag_on(argc, argv, "--benchmark_list_tests");
    bool user_out = has_flag(argc, argv, "--benchmark_out=");
    char **original_argv = argv;
    char **args = malloc((size_t)(argc + 3) * sizeof *args);
    if (!args)
        die("out of memory");
    memcpy(args, argv, (size_t)(argc + 1) * sizeof *args);
    default_flag(&argc, args, "--benchmark_repetitions=5");
    default_flag(&argc, args, "--benchmark_display_aggregates_only=true");
    argv = args;
    nsb_initialize(&argc, argv);
    b.opt = parse_options(argc, argv);
    const options *o = &b.opt;
    /* Thread wake-up: see docs/harness.md ("Thread wake-up"). libgomp reads the
     * environment when it is loaded, before main, so the policy is set and
     * the harness starts again with it (same process, same arguments);
     * libomp would read it at the first OpenMP call, but the restart serves
     * both. It happens once: the second start finds the policy set. */
    const char *policy = o->wait_policy ? o->wait_policy : "active";
    if (!getenv("OMP_WAIT_POLICY") && strcmp(policy, "default") != 0) {
        setenv("OMP_WAIT_POLICY", policy, 1);
        restart(original_argv);
        b.start.wait_policy_late = true; /* no /proc: the policy is recorded as unapplied */
    }

    if (!listing && !o->no_results && !user_out)
        results_to(&b.results, argv[0], o->out_dir);
    if (!listing)
        warn_load(&b.start);
        /* a first parallel region, so the thread pool exists before any timing */
#pragma omp parallel
    {
        (void)0;
    }
    register_sweep(&b);
    add_context(o, &b.start);
    nsb_watch_noise(0.05);
    nsb_run();
    kept_release_all(&b.kept); /* before the configurations they point to are freed */
    nsb_shutdown();

    free(args);
    free(b.configs.items);
    return listing ? 0 : finish(&b);
}

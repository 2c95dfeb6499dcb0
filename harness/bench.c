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
 * benchmark_library_build_type repeats Google Benchmark's under a clear name. */
#define _GNU_SOURCE /* dl_iterate_phdr, sched_setaffinity */

#include "bench_shim.h"
#include "peer.h"
#include "provenance.h" /* NS_GIT_COMMIT, NS_GIT_MODIFIED: generated at build time */
#include "atomic_file.h"
#include "clock.h"
#include "table_json.h"
#include "workload_cache.h"

#include <nsearch.h>

#include <errno.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <sched.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define RESULTS_FORMAT_VERSION "1"
#define REFERENCE_MAX_N 100000 /* naive is the reference up to here */
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
#define SEED 1
#define BOUND_NAME "bound"     /* the bound kernel's binning + count, no output */
#define WRITE_NAME "write"     /* streaming the reference's contacts to memory */
#define ONESHOT_NAME "oneshot" /* the bound kernel's one-call search, fresh memory */
#define WRITE_PATTERN 64       /* contacts repeated by write (a power of two) */

static const size_t headline_sizes[] = {100,  200,   500,   1000,  2000,
                                        5000, 10000, 20000, 50000, 100000};
static const size_t other_sizes[] = {1000, 10000, 100000};
static const size_t large_sizes[] = {200000, 500000, 1000000, 2000000, 5000000, 10000000};

/* What a configuration times. */
typedef enum config_kind {
    KIND_KERNEL, /* build + query */
    KIND_PEER,   /* another library's build + query (peer.h) */
    KIND_BOUND,  /* the bound kernel's build + count, no contacts written */
    KIND_WRITE,  /* the reference's contacts streamed into memory, no search */
    KIND_ONESHOT /* the bound kernel's ns_find_contacts: new index and list each time */
} config_kind;

/* One benchmark configuration. */
typedef struct config {
    const ns_kernel *kernel; /* for bound and oneshot: the table's bound kernel; for write,
                                a peer: NULL */
    const nsb_peer *peer;    /* for a peer */
    config_kind kind;
    const char *workload;
    size_t n;
    int threads;
    char name[160];
    int checked;        /* 0: not yet; 1: VALID; -1: INVALID, refused or failed */
    bool timed_checked; /* a timed iteration's contacts checked too (see run_search) */
    char verdict[600];  /* the label, or the reason it was skipped */
} config;

static bool any_invalid = false;
/* Each configuration ends in one of VALID, refused, INVALID or failed (an
 * error that is neither a difference nor a documented refusal). */
static size_t n_valid = 0, n_invalid = 0, n_refused = 0, n_failed = 0, n_skipped = 0;

/* A peer whose first (untimed) search takes longer than this is not timed
 * at that size: its repetitions over the rounds would take many minutes. */
static double peer_limit_s = 15.0;

/* Particles and the reference contacts of the last (workload, n). */
static struct {
    const char *workload;
    size_t n;
    float *pos, *radius;
    ns_contact_list reference;  /* sorted */
    const char *reference_name; /* "naive", "hash_serial (checked against grid_dense)" */
    ns_status reference_status;
    char reference_error[300];
    unsigned generation; /* counts the particles made: a kept peer's state is of one */
} cache;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nsearch-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}


static ns_status search_once(const ns_kernel *k, const ns_particles *p, int threads,
                             ns_contact_list *out, ns_error *err)
{
    ns_config c = ns_config_default();
    c.threads = threads;
    ns_status s = ns_find_contacts(k, p, &c, out, err);
    if (s == NS_OK)
        ns_contact_list_sort(out);
    return s;
}

/* Index of the first difference of two sorted lists, or SIZE_MAX. */
static size_t first_difference(const ns_contact_list *a, const ns_contact_list *b)
{
    size_t n = a->count < b->count ? a->count : b->count;
    for (size_t k = 0; k < n; k++)
        if (memcmp(&a->items[k], &b->items[k], sizeof(ns_contact)) != 0)
            return k;
    return a->count == b->count ? SIZE_MAX : n;
}

static void format_contact(char *buf, size_t size, const ns_contact_list *list, size_t k)
{
    if (k >= list->count) {
        snprintf(buf, size, "(none)");
        return;
    }
    const ns_contact *c = &list->items[k];
    snprintf(buf, size, "(%u,%u,%.9g,%.9g,%.9g,%.9g)", (unsigned)c->i, (unsigned)c->j,
             (double)c->overlap, (double)c->nx, (double)c->ny, (double)c->nz);
}

static void describe_difference(char *buf, size_t size, const char *ref_name,
                                const ns_contact_list *ref, const char *name,
                                const ns_contact_list *got, size_t k)
{
    char a[120], b[120];
    format_contact(a, sizeof a, ref, k);
    format_contact(b, sizeof b, got, k);
    snprintf(buf, size,
             "INVALID vs %s: %zu contacts, reference %zu; first difference at sorted contact "
             "%zu: %s %s, %s %s",
             ref_name, got->count, ref->count, k, ref_name, a, name, b);
}

/* --cache-dir: where the costly workloads' particles (cache_version > 0:
 * settled) are kept between runs. */
static const char *cache_dir = NULL;
/* --reference-dir: where naive references are kept for the other processes
 * of one sweep (the sweep gives a folder of its run and removes it). */
static const char *reference_dir = NULL;

/* The particles of workload name: a costly one comes from the cache when
 * there is one that passes its check (workload_cache.h); one that fails it is
 * made again, with a warning. */
static void generate(const char *name, size_t n, float *pos, float *radius)
{
    const ns_workload *w = ns_workload_find(name);
    double t0 = omp_get_wtime();
    workload_cache_result kept;
    ns_error err;
    if (workload_cache_generate(w, n, SEED, 0, cache_dir, pos, radius, &kept, &err) != NS_OK)
        die("workload %s n=%zu: %s", w->name, n, err.message);
    /* the sweep relays lines starting "nsearch-bench: warning:" to its console */
    if (kept.reason[0])
        fprintf(stderr, "nsearch-bench: warning: %s failed its check (%s): made again\n",
                kept.path, kept.reason);
    if (w->cache_version > 0 && kept.outcome != CACHE_READ)
        fprintf(stderr, "nsearch-bench: %s %zu particles in %.1f s\n", w->name, n,
                omp_get_wtime() - t0);
    if (kept.outcome == CACHE_NOT_KEPT)
        fprintf(stderr, "nsearch-bench: cannot keep them in %s (continuing)\n", cache_dir);
}

/* The identity of this executable (its size and modification time), so a
 * reference file written by another build is never taken for this one's. */
static void executable_identity(char *buf, size_t size)
{
    struct stat st;
    if (stat("/proc/self/exe", &st) == 0)
        snprintf(buf, size, "%lld:%lld.%09ld", (long long)st.st_size, (long long)st.st_mtim.tv_sec,
                 st.st_mtim.tv_nsec);
    else
        snprintf(buf, size, "unknown");
}

/* The header line of a reference file: what it was computed from. */
static void reference_header(char *buf, size_t size, const char *w, size_t n)
{
    char exe[80];
    executable_identity(exe, sizeof exe);
    snprintf(buf, size, "nsearch-bench reference 1 exe %s workload %s n %zu seed %d contact %zu\n",
             exe, w, n, SEED, sizeof(ns_contact));
}

static void reference_path(char *buf, size_t size, const char *w, size_t n)
{
    snprintf(buf, size, "%s/%s-n%zu.ref", reference_dir, w, n);
}

/* Reads the naive reference of (w, n) from --reference-dir: true when this
 * build wrote one there for the same particles (then it is in cache.reference). */
static bool read_reference(const char *w, size_t n)
{
    char path[PATH_MAX], header[300], line[300];
    reference_path(path, sizeof path, w, n);
    reference_header(header, sizeof header, w, n);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    unsigned long long count = 0;
    char *end = NULL;
    bool ok = fgets(line, sizeof line, f) && strcmp(line, header) == 0 &&
              fgets(line, sizeof line, f) && (count = strtoull(line, &end, 10), *end == '\n') &&
              count <= (unsigned long long)n * (n - (n > 0)) / 2 &&
              ns_contact_list_reserve(&cache.reference, (size_t)count, NULL) == NS_OK &&
              fread(cache.reference.items, sizeof(ns_contact), (size_t)count, f) == count &&
              fgetc(f) == EOF;
    fclose(f);
    cache.reference.count = ok ? (size_t)count : 0;
    return ok;
}

/* Writes it through a temporary, so another process never reads half. */
static void write_reference(const char *w, size_t n)
{
    char path[PATH_MAX], header[300];
    reference_path(path, sizeof path, w, n);
    reference_header(header, sizeof header, w, n);
    mkdir(reference_dir, 0777);
    atomic_file a;
    FILE *f = atomic_file_open(&a, path);
    bool ok = f && fputs(header, f) >= 0 && fprintf(f, "%zu\n", cache.reference.count) > 0 &&
              fwrite(cache.reference.items, sizeof(ns_contact), cache.reference.count, f) ==
                  cache.reference.count;
    if (ok)
        ok = atomic_file_commit(&a);
    else if (f)
        atomic_file_discard(&a);
    if (!ok)
        fprintf(stderr, "nsearch-bench: cannot write the reference file %s (continuing)\n", path);
}

/* A search for the reference: a parallel kernel with OpenMP's default
 * thread count, a serial one with one thread. */
static ns_status reference_search(const ns_kernel *k, const ns_particles *p, ns_contact_list *out,
                                  ns_error *err)
{
    return search_once(k, p, k->parallel ? 0 : 1, out, err);
}

/* Above REFERENCE_MAX_N: the kernel of reference rank 2, checked against the
 * first of ranks 3, 4, ... that succeeds (the table's chain). */
static void checked_reference(const ns_particles *p, ns_error *err)
{
    const ns_kernel *first = ns_kernel_with_reference(2);
    cache.reference_name = first->name;
    cache.reference_status = reference_search(first, p, &cache.reference, err);
    if (cache.reference_status != NS_OK)
        return;
    ns_contact_list second;
    ns_contact_list_init(&second);
    const ns_kernel *other = NULL;
    ns_status s = NS_ERR_INVALID_ARGUMENT;
    for (int rank = 3; (other = ns_kernel_with_reference(rank)) != NULL; rank++)
        if ((s = reference_search(other, p, &second, err)) == NS_OK)
            break;
    size_t k = s == NS_OK ? first_difference(&cache.reference, &second) : SIZE_MAX;
    if (s != NS_OK) {
        cache.reference_status = s;
    } else if (k != SIZE_MAX) {
        char what[1024]; /* the whole description, then as much as the message holds */
        describe_difference(what, sizeof what, first->name, &cache.reference, other->name, &second,
                            k);
        snprintf(err->message, sizeof err->message, "%.*s", (int)sizeof err->message - 1, what);
        cache.reference_status = NS_ERR_INVALID_INPUT; /* the reference is in doubt */
        any_invalid = true;
    } else {
        static char name[128];
        snprintf(name, sizeof name, "%s (checked against %s)", first->name, other->name);
        cache.reference_name = name;
    }
    ns_contact_list_free(&second);
}

/* The particles and reference for (workload, n), computed once and shared by
 * every kernel: the table's reference (naive) up to REFERENCE_MAX_N, above
 * it the checked chain (hash_serial against grid_dense, or hash_parallel
 * where the grid is refused). */
static void prepare(const char *w, size_t n)
{
    if (cache.workload == w && cache.n == n && cache.pos)
        return;
    free(cache.pos);
    free(cache.radius);
    cache.workload = w;
    cache.n = n;
    cache.generation++;
    cache.pos = malloc(3 * n * sizeof(float) + 1);
    cache.radius = malloc(n * sizeof(float) + 1);
    if (!cache.pos || !cache.radius)
        die("out of memory for %zu particles", n);
    generate(w, n, cache.pos, cache.radius);
    ns_particles p = {n, cache.pos, cache.radius, 0.0f};
    ns_error err;
    fprintf(stderr, "nsearch-bench: reference for %s n=%zu ...", w, n);
    double t0 = tool_seconds();
    if (n <= REFERENCE_MAX_N) {
        const ns_kernel *ref = ns_kernel_with_reference(1);
        cache.reference_name = ref->name;
        if (reference_dir && read_reference(w, n)) {
            cache.reference_status = NS_OK;
            fprintf(stderr, " (read from %s)", reference_dir);
        } else {
            cache.reference_status = reference_search(ref, &p, &cache.reference, &err);
            if (reference_dir && cache.reference_status == NS_OK)
                write_reference(w, n);
        }
    } else {
        checked_reference(&p, &err);
    }
    if (cache.reference_status != NS_OK) {
        snprintf(cache.reference_error, sizeof cache.reference_error, "reference %s failed: %s",
                 cache.reference_name, err.message);
        fprintf(stderr, " failed: %s (%.1f s)\n", err.message, tool_seconds() - t0);
    } else {
        fprintf(stderr, " %zu contacts by %s (%.1f s)\n", cache.reference.count,
                cache.reference_name, tool_seconds() - t0);
    }
}

static size_t peak_rss_bytes(void)
{
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? (size_t)u.ru_maxrss * 1024 : 0;
}

static bool is_refusal(ns_status s)
{
    return s == NS_ERR_TOO_LARGE || s == NS_ERR_TOO_MANY_CONTACTS || s == NS_ERR_OUT_OF_MEMORY;
}

/* What disturbs a repetition, read outside its timed iterations: the steal
 * time of all CPUs together (the steal column of /proc/stat's cpu line, in
 * clock ticks; 0 where it is not visible) and the process's context switches
 * (all its threads: RUSAGE_SELF). */
typedef struct disturbance {
    unsigned long long steal_ticks;
    long involuntary, voluntary;
} disturbance;

static disturbance disturbance_now(void)
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

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The memory probe: what the witness (below) cannot see, measured after
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

static uint32_t *probe_words;        /* allocated on the first probe, kept for the process */
static volatile uint32_t probe_sink; /* the probe's reads are used */

/* The probe's median time in ms, or a negative number when it cannot run (no memory). */
static double probe_memory(void)
{
    if (!probe_words && !(probe_words = malloc(PROBE_WORDS * sizeof *probe_words)))
        return -1.0;
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

static void set_disturbance_counters(nsb_state *st, const disturbance *before,
                                     const disturbance *after)
{
    double probe = probe_memory();
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

/* How a configuration that cannot be timed ended. */
typedef enum failure { REFUSED, INVALID, FAILED } failure;

/* A configuration that cannot be timed: refused (documented in
 * docs/design.md), wrong (INVALID) or failed with another error. Its later
 * repetitions are skipped with the same message; one that was VALID until
 * then counts only as what ended it. */
static void fail_config(nsb_state *st, config *c, failure why)
{
    if (c->checked == 1)
        n_valid--;
    if (why == REFUSED)
        n_refused++;
    else if (why == INVALID)
        any_invalid = true, n_invalid++;
    else
        n_failed++;
    c->checked = -1;
    nsb_skip_with_error(st, c->verdict);
}

static failure failure_of(ns_status s)
{
    return is_refusal(s) ? REFUSED : FAILED;
}

/* write: out[k] = pattern[k mod WRITE_PATTERN] for every k, plain stores with
 * `threads` threads, statically scheduled so each thread writes the pages it
 * wrote before. */
static void write_contacts(ns_contact *out, size_t count, const ns_contact *pattern, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t k = 0; k < count; k++)
        out[k] = pattern[k & (WRITE_PATTERN - 1)];
}

static void run_write(nsb_state *st, config *c)
{
    size_t count = cache.reference.count;
    ns_contact pattern[WRITE_PATTERN];
    for (size_t k = 0; k < WRITE_PATTERN; k++) /* the reference's first contacts, if any */
        pattern[k] = count ? cache.reference.items[k % count]
                           : (ns_contact){(uint32_t)k, (uint32_t)k + 1, 0.0f, 1.0f, 0.0f, 0.0f};
    ns_contact *out = malloc(count ? count * sizeof *out : 1);
    if (!out) {
        snprintf(c->verdict, sizeof c->verdict,
                 "refused: no memory for %zu contacts (%zu bytes) (out of memory)", count,
                 count * sizeof *out);
        fail_config(st, c, REFUSED);
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
            fail_config(st, c, INVALID);
            free(out);
            return;
        }
        n_valid++;
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
        set_disturbance_counters(st, &before, &after);
        nsb_set_counter(st, "peak_rss_bytes", (double)peak_rss_bytes(), NSB_PLAIN);
    }
}

/* What a configuration searches with: the library's index (a kernel, or
 * bound's count) or a peer's state. */
typedef struct searcher {
    const config *c;
    const ns_particles *p;
    ns_index *index;
    void *peer;
    size_t candidates; /* a peer's, of the last query */
} searcher;

static ns_status searcher_create(searcher *s, ns_error *err)
{
    if (s->c->kind == KIND_PEER) {
        s->peer = s->c->peer->create();
        if (s->peer)
            return s->c->peer->prepare ? s->c->peer->prepare(s->peer, s->p, err) : NS_OK;
        *err = (ns_error){.status = NS_ERR_OUT_OF_MEMORY, .particle = NS_NO_PARTICLE};
        snprintf(err->message, sizeof err->message, "out of memory for %s's state",
                 s->c->peer->name);
        return NS_ERR_OUT_OF_MEMORY;
    }
    if (s->c->kind == KIND_ONESHOT)
        return NS_OK; /* ns_find_contacts makes its own index */
    ns_config cfg = ns_config_default();
    cfg.threads = s->c->threads;
    return ns_index_create(s->c->kernel, &cfg, &s->index, err);
}

/* oneshot: nothing (the query is the whole search) */
static ns_status searcher_build(searcher *s, ns_error *err)
{
    if (s->c->kind == KIND_PEER)
        return s->c->peer->build(s->peer, s->p, s->c->threads, err);
    if (s->c->kind == KIND_ONESHOT)
        return NS_OK;
    return ns_index_build(s->index, s->p, err);
}

/* The contacts into out, or for bound only their number into *counted. */
static ns_status searcher_query(searcher *s, ns_contact_list *out, size_t *counted, ns_error *err)
{
    if (s->c->kind == KIND_PEER)
        return s->c->peer->query(s->peer, s->p, s->c->threads, out, &s->candidates, err);
    if (s->c->kind == KIND_BOUND)
        return ns_index_count(s->index, counted, err);
    if (s->c->kind == KIND_ONESHOT) {
        ns_config cfg = ns_config_default();
        cfg.threads = s->c->threads;
        return ns_find_contacts(s->c->kernel, s->p, &cfg, out, err);
    }
    return ns_index_query(s->index, out, err);
}

static void searcher_destroy(searcher *s)
{
    if (s->peer)
        s->c->peer->destroy(s->peer);
    ns_index_destroy(s->index);
}

static const char *config_search_name(const config *c)
{
    switch (c->kind) {
    case KIND_PEER: return c->peer->name;
    case KIND_BOUND: return BOUND_NAME;
    case KIND_WRITE: return WRITE_NAME;
    case KIND_ONESHOT: return ONESHOT_NAME;
    default: return c->kernel->name;
    }
}

/* Whether a search's result is the reference's: bound's by its count, the
 * others' sorted contacts (sorted here) byte for byte; else the verdict says
 * how, `which` naming the search. */
static bool matches_reference(config *c, size_t counted, ns_contact_list *contacts,
                              const char *which)
{
    if (c->kind == KIND_BOUND) {
        if (counted == cache.reference.count)
            return true;
        snprintf(c->verdict, sizeof c->verdict, "INVALID%s: %s counts %zu contacts, %s found %zu",
                 which, c->kernel->name, counted, cache.reference_name, cache.reference.count);
        return false;
    }
    ns_contact_list_sort(contacts);
    size_t k = first_difference(&cache.reference, contacts);
    if (k == SIZE_MAX)
        return true;
    describe_difference(c->verdict, sizeof c->verdict, cache.reference_name, &cache.reference,
                        config_search_name(c), contacts, k);
    size_t len = strlen(c->verdict);
    snprintf(c->verdict + len, sizeof c->verdict - len, "%s", which);
    return false;
}

/* The index and the first, untimed search of a configuration: its
 * validation (once, before any timing) and warm memory for the timed loop;
 * *seconds = its build and query. False when the configuration fails
 * (refused, an error, INVALID): its verdict says why. */
static bool first_search(nsb_state *st, config *c, searcher *se, ns_contact_list *contacts,
                         double *seconds)
{
    char *msg = c->verdict;
    size_t msg_size = sizeof c->verdict;
    bool bound = c->kind == KIND_BOUND;
    size_t counted = 0;
    ns_error err;
    ns_status s = searcher_create(se, &err);
    double t0 = tool_seconds();
    if (s == NS_OK)
        s = searcher_build(se, &err);
    if (s == NS_OK)
        s = searcher_query(se, contacts, &counted, &err);
    *seconds = tool_seconds() - t0;
    if (s != NS_OK) {
        snprintf(msg, msg_size, "%s: %s (%s)", is_refusal(s) ? "refused" : "error", err.message,
                 ns_status_str(s));
        fail_config(st, c, failure_of(s));
        return false;
    }
    if (!c->checked && !matches_reference(c, counted, contacts, "")) {
        fail_config(st, c, INVALID);
        return false;
    }
    if (!c->checked) {
        n_valid++;
        c->checked = 1;
        snprintf(msg, msg_size, "VALID vs %s%s", cache.reference_name,
                 bound ? " (contact count)" : "");
    }
    nsb_set_label(st, msg);
    return true;
}

/* The timed loop's sums. */
typedef struct timed {
    double build, query; /* seconds over all iterations */
    int64_t iterations;
    size_t found; /* contacts of the last iteration (counted, for bound) */
    disturbance before, after;
} timed;

/* The counters of a timed configuration (docs/harness.md, "Counters"). */
static void set_counters(nsb_state *st, const config *c, const searcher *se, const timed *t)
{
    ns_index_info info = {0};
    if (se->index)
        ns_index_get_info(se->index, &info);
    else
        info.candidates = se->candidates;
    /* oneshot keeps no index to ask */
    double bytes = se->index ? (double)info.bytes : c->peer ? c->peer->bytes(se->peer) : -1.0;
    double seconds = (t->build + t->query) / (double)t->iterations;
    double per = c->n ? 1.0 / (double)c->n : 0.0;
    double found = (double)t->found;
    nsb_set_counter(st, "n", (double)c->n, NSB_PLAIN);
    nsb_set_counter(st, "contacts", found, NSB_PLAIN);
    nsb_set_counter(st, "contacts_per_particle", 2.0 * found * per, NSB_PLAIN);
    nsb_set_counter(st, "contacts_per_s", found, NSB_PER_ITERATION_RATE);
    nsb_set_counter(st, "ns_per_particle", seconds * 1e9 * per, NSB_PLAIN);
    nsb_set_counter(st, "build_ms", t->build / (double)t->iterations * 1e3, NSB_PLAIN);
    nsb_set_counter(st, "query_ms", t->query / (double)t->iterations * 1e3, NSB_PLAIN);
    if (bytes >= 0.0) /* a peer's library may not tell */
        nsb_set_counter(st, "index_bytes", bytes, NSB_PLAIN);
    /* the threads the search ran on: fewer than asked for at small n */
    nsb_set_counter(st, "omp_threads",
                    se->index   ? info.threads
                    : c->kernel ? ns_kernel_threads(c->kernel, c->n, c->threads)
                                : c->threads,
                    NSB_PLAIN);
    if (c->kind != KIND_BOUND && c->kind != KIND_ONESHOT)
        nsb_set_counter(st, "candidates_per_contact",
                        t->found ? (double)info.candidates / found : 0.0, NSB_PLAIN);
    if (c->kernel && c->kernel->uses_table_size) {
        nsb_set_counter(st, "table_size", (double)info.table_size, NSB_PLAIN);
        nsb_set_counter(st, "nonempty_bucket_fraction",
                        info.table_size ? (double)info.nonempty_buckets / (double)info.table_size
                                        : 0.0,
                        NSB_PLAIN);
    }
    set_disturbance_counters(st, &t->before, &t->after);
    nsb_set_counter(st, "peak_rss_bytes", (double)peak_rss_bytes(), NSB_PLAIN);
}

/* What one configuration's repetition searches with. */
typedef struct search_run {
    ns_particles p;
    searcher se;
    ns_contact_list contacts;
} search_run;

/* A peer's search state lives from one repetition of its configuration to
 * the next (in this process): its untimed first search - validation, warm
 * memory and, for LAMMPS, starting it and loading the atoms - is made once
 * per process, not before every repetition, as a peer's search can take
 * seconds. The repetitions of a process are interleaved (the sweep asks
 * for Google Benchmark's random interleaving), so every peer's state of the
 * current particles is kept at once, while their contact lists and indexes
 * (as far as a peer tells) take at most KEPT_BYTES together (past that, the
 * next peer to start releases the others first). A kernel keeps the
 * protocol of a new index per repetition. */
enum { KEPT_MAX = 64 };
#define KEPT_BYTES ((size_t)1 << 30)
static struct kept_run {
    const config *c;     /* NULL: a free place */
    unsigned generation; /* of the particles it searched (cache.generation) */
    search_run run;
} kept[KEPT_MAX];

static void search_run_free(search_run *r)
{
    searcher_destroy(&r->se);
    ns_contact_list_free(&r->contacts);
}

static void kept_release(struct kept_run *k)
{
    if (k->c)
        search_run_free(&k->run);
    k->c = NULL;
}

static void kept_release_all(void)
{
    for (int i = 0; i < KEPT_MAX; i++)
        kept_release(&kept[i]);
}

/* Releases the states of particles made before the current ones. */
static void kept_release_stale(void)
{
    for (int i = 0; i < KEPT_MAX; i++)
        if (kept[i].c && kept[i].generation != cache.generation)
            kept_release(&kept[i]);
}

static struct kept_run *kept_find(const config *c)
{
    for (int i = 0; i < KEPT_MAX; i++)
        if (kept[i].c == c)
            return &kept[i];
    return NULL;
}

/* A place for c's state (not yet filled), within the limits above. */
static struct kept_run *kept_add(const config *c)
{
    size_t bytes = 0;
    struct kept_run *free_place = NULL;
    for (int i = 0; i < KEPT_MAX; i++) {
        if (kept[i].c) {
            const search_run *r = &kept[i].run;
            double index = r->se.peer ? kept[i].c->peer->bytes(r->se.peer) : -1.0;
            bytes += r->contacts.capacity * sizeof(ns_contact) + (index > 0.0 ? (size_t)index : 0);
        } else if (!free_place)
            free_place = &kept[i];
    }
    if (!free_place || bytes > KEPT_BYTES) {
        kept_release_all();
        free_place = &kept[0];
    }
    free_place->c = c;
    free_place->generation = cache.generation;
    return free_place;
}

/* A kernel, bound or a peer: build + query (or count), timed. */
static void run_search(nsb_state *st, config *c)
{
    bool bound = c->kind == KIND_BOUND, peer = c->kind == KIND_PEER;
    ns_error err;
    struct kept_run *k = peer ? kept_find(c) : NULL;
    bool fresh = !k;
    if (peer && fresh)
        k = kept_add(c); /* kept from here on; released on failure */
    search_run local, *r = peer ? &k->run : &local;
    ns_status s = NS_OK;
    if (fresh) {
        *r = (search_run){.p = {c->n, cache.pos, cache.radius, 0.0f}};
        r->se = (searcher){.c = c, .p = &r->p};
        ns_contact_list_init(&r->contacts);
        double first_s;
        if (!first_search(st, c, &r->se, &r->contacts, &first_s)) {
            s = NS_ERR_INVALID_ARGUMENT; /* the verdict says why */
            goto done;
        }
        if (peer && first_s > peer_limit_s) {
            snprintf(c->verdict, sizeof c->verdict,
                     "skipped: VALID, but one search took %.3g s, over --peer-limit %g s", first_s,
                     peer_limit_s);
            n_skipped++;
            c->checked = -1;
            nsb_skip_with_error(st, c->verdict);
            s = NS_ERR_INVALID_ARGUMENT;
            goto done;
        }
    } else {
        nsb_set_label(st, c->verdict); /* a later repetition of a kept peer */
    }

    /* the timed loop */
    timed t = {.build = 0.0};
    size_t counted = 0;
    t.before = disturbance_now();
    while (nsb_keep_running(st)) {
        if (c->kind == KIND_ONESHOT)
            ns_contact_list_free(&r->contacts); /* untimed: the call starts from nothing */
        double t0 = tool_seconds();
        s = searcher_build(&r->se, &err);
        double t1 = tool_seconds();
        if (s == NS_OK)
            s = searcher_query(&r->se, &r->contacts, &counted, &err);
        double t2 = tool_seconds();
        nsb_set_iteration_time(st, t2 - t0);
        t.build += t1 - t0;
        t.query += t2 - t1;
        t.iterations++;
        if (s != NS_OK) {
            snprintf(c->verdict, sizeof c->verdict, "%s while timing: %s (%s)",
                     is_refusal(s) ? "refused" : "error", err.message, ns_status_str(s));
            fail_config(st, c, failure_of(s));
            break;
        }
    }
    t.after = disturbance_now();
    t.found = bound ? counted : r->contacts.count;
    if (s == NS_OK && t.iterations > 0)
        set_counters(st, c, &r->se, &t);
    /* The timed iterations may run another path than the first search
     * (grid_sorted records its counting pass from an index's second query
     * on), so the last one's contacts are checked too: once per
     * configuration, untimed, after the counters (the memory probe stays
     * right behind the timed loop). */
    if (s == NS_OK && t.iterations > 0 && !c->timed_checked) {
        c->timed_checked = true;
        if (getenv("NSEARCH_BENCH_TEST_CORRUPT_TIMED")) { /* smoke/bench_timed_check: a
                                                           * kernel wrong only when timed */
            if (bound)
                counted++;
            else if (r->contacts.count)
                r->contacts.items[0].overlap = nextafterf(r->contacts.items[0].overlap, INFINITY);
        }
        if (!matches_reference(c, counted, &r->contacts, " (in a timed search)")) {
            fail_config(st, c, INVALID);
            s = NS_ERR_INVALID_INPUT; /* a peer's kept state goes too */
        }
    }
done:
    if (!peer)
        search_run_free(r);
    else if (s != NS_OK)
        kept_release(k);
}

static void run_config(nsb_state *st, void *arg)
{
    config *c = arg;
    if (c->checked < 0) { /* a later repetition of a configuration that failed */
        nsb_skip_with_error(st, c->verdict);
        return;
    }
    prepare(c->workload, c->n);
    kept_release_stale();
    if (cache.reference_status != NS_OK) { /* nothing to check the configuration against */
        snprintf(c->verdict, sizeof c->verdict, "%s", cache.reference_error);
        fail_config(st, c, failure_of(cache.reference_status));
        return;
    }
    if (c->kind == KIND_WRITE)
        run_write(st, c);
    else
        run_search(st, c);
}

/* Options */

typedef struct options {
    size_t max_n;
    bool max_n_given;
    char *kernels, *workloads, *threads; /* comma lists, NULL = all / default */
    char *peer_workloads, *peer_sizes;   /* where the peers run (comma lists, NULL = all) */
    const char *out_dir;                 /* results folder */
    const char *wait_policy;             /* active, passive or default */
    const char *serial_kernels;          /* auto, yes or no */
    bool no_results;
} options;

static bool in_list(const char *list, const char *name)
{
    if (!list)
        return true;
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t l = comma ? (size_t)(comma - p) : strlen(p);
        if (l == len && strncmp(p, name, len) == 0)
            return true;
        p += l + (comma ? 1 : 0);
    }
    return false;
}

/* The comma list of OPTION: known names (WHAT: a kernel, a workload, ...),
 * none empty ("", "a,", "a,,b" name nothing somewhere: refused rather than
 * read as fewer names). */
static void check_list(const char *list, const char *option, const char *what,
                       bool (*known)(const char *))
{
    if (!list)
        return;
    for (const char *p = list;; p++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0)
            die("%s '%s' has an empty entry", option, list);
        if (!end)
            break;
        p = end;
    }
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        die("out of memory");
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (!known(t))
            die("unknown %s '%s' in %s", what, t, option);
    free(copy);
}

static bool known_kernel(const char *s)
{
    return ns_kernel_find(s) != NULL || nsb_peer_find(s) != NULL || strcmp(s, BOUND_NAME) == 0 ||
           strcmp(s, WRITE_NAME) == 0 || strcmp(s, ONESHOT_NAME) == 0;
}
static bool known_workload(const char *s)
{
    return ns_workload_find(s) != NULL;
}
static bool known_size(const char *s) /* a particle count, written as the sweep writes it */
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    return s[0] >= '1' && s[0] <= '9' && !*end && !errno && n <= NS_MAX_PARTICLES;
}

static const char help[] =
    "Usage: nsearch-bench [OPTIONS] [--benchmark_* flags of Google Benchmark]\n"
    "Times every kernel x workload x n x threads, each validated exactly first.\n"
    "\n"
    "  --kernels A,B      only these kernels (default: all); the peers (other libraries'\n"
    "                     searches built in, where found: nanoflann_kdtree, boost_rtree,\n"
    "                     cgal_box_intersection, scipy_ckdtree, lammps_neighbor,\n"
    "                     lammps_neighbor_sorted) are selected the same way,\n"
    "                     to 100,000 particles on the workloads not marked bulk and\n"
    "                     on those marked wide_radii (powder); three\n"
    "                     names select a configuration that is not a kernel: bound\n"
    "                     (grid_sorted's binning plus its count of the contacts, with no\n"
    "                     output), write (the reference's contacts, 24 bytes each,\n"
    "                     streamed into an allocated buffer: the output's cost at memory\n"
    "                     bandwidth) and oneshot (grid_sorted through ns_find_contacts,\n"
    "                     a new index and contact list per search: first touch timed)\n"
    "  --workloads A,B    only these workloads (default: all, settled included)\n"
    "  --peer-workloads A,B  the peers only on these workloads (default: all)\n"
    "  --peer-sizes N,M   the peers only at these n (default: every n)\n"
    "  --cache-dir DIR    keep the settled workload's particles in DIR (settled-v<V>-n<N>-\n"
    "                     seed<S>.csv) and reuse them: settling runs a simulation, seconds\n"
    "                     per 20,000 particles (default: no cache)\n"
    "  --reference-dir DIR keep each naive reference (the contacts of up to 100,000\n"
    "                     particles, found once) in DIR for the other processes of a\n"
    "                     sweep; a file is used only by the executable that wrote it\n"
    "                     (default: each process computes its own)\n"
    "  --threads 1,2      thread counts for the parallel kernels and peers, bound, write\n"
    "                     and oneshot (default: 1 and all cores)\n"
    "  --serial-kernels S auto (the default), yes or no: whether the serial kernels run\n"
    "                     (with 1 thread); auto runs them when --threads includes 1, so a\n"
    "                     sweep split into --threads 1 and --threads N processes measures\n"
    "                     them once\n"
    "  --max-n N          largest n: below 100000 it trims the sweep (and N itself is\n"
    "                     measured too); above, it extends the sweep of the non-quadratic\n"
    "                     kernels (200k, 500k, 1M, ...);\n"
    "                     the quadratic ones stop at 100000 on uniform, 10000 elsewhere,\n"
    "                     those without radius_levels at 100000 on wide_radii workloads\n"
    "  --out DIR          results folder (default results/<host>/<UTC timestamp>); the JSON\n"
    "                     is written as DIR/bench.json when complete, DIR/bench.partial.json\n"
    "                     when interrupted\n"
    "  --no-results       write no results file (console only)\n"
    "  --peer-limit S     a peer whose first, untimed search at a size takes longer than\n"
    "                     S seconds is not timed there: skipped, with the time it took\n"
    "                     (default 15; the repetitions of every round would take\n"
    "                     many minutes)\n"
    "  --wait-policy P    OMP_WAIT_POLICY for the run: active (the default: idle threads\n"
    "                     spin, so small-n times measure the search, not thread wake-up),\n"
    "                     passive, or default (leave OpenMP's own); OMP_WAIT_POLICY in the\n"
    "                     environment takes precedence\n"
    "\n"
    "Defaults passed to Google Benchmark unless given: --benchmark_repetitions=5\n"
    "--benchmark_display_aggregates_only=true. Exit status 1 when any configuration's\n"
    "contacts differ from its reference (in the first search or a timed one) or a\n"
    "configuration fails with an error (documented refusals do not count).\n";

static char *take_value(int *a, int argc, char **argv, const char *name)
{
    const char *arg = argv[*a];
    size_t len = strlen(name);
    if (arg[len] == '=')
        return (char *)arg + len + 1;
    if (*a + 1 >= argc)
        die("%s needs a value", name);
    return argv[++*a];
}

static int parse_threads(const char *list, int *out, int max);

static options parse_options(int argc, char **argv)
{
    options o = {0};
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
#define IS(opt)                                                                                    \
    (strncmp(arg, opt, strlen(opt)) == 0 && (arg[strlen(opt)] == 0 || arg[strlen(opt)] == '='))
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(help, stdout);
            exit(0);
        } else if (IS("--kernels")) {
            o.kernels = take_value(&a, argc, argv, "--kernels");
        } else if (IS("--workloads")) {
            o.workloads = take_value(&a, argc, argv, "--workloads");
        } else if (IS("--peer-workloads")) {
            o.peer_workloads = take_value(&a, argc, argv, "--peer-workloads");
        } else if (IS("--peer-sizes")) {
            o.peer_sizes = take_value(&a, argc, argv, "--peer-sizes");
        } else if (IS("--threads")) {
            o.threads = take_value(&a, argc, argv, "--threads");
        } else if (IS("--max-n")) {
            char *v = take_value(&a, argc, argv, "--max-n"), *end;
            errno = 0;
            unsigned long long n = strtoull(v, &end, 10);
            if (v[0] < '0' || v[0] > '9' || *end || errno || n < 1 || n > NS_MAX_PARTICLES)
                die("--max-n '%s' is not a whole number from 1 to %zu", v, NS_MAX_PARTICLES);
            o.max_n = (size_t)n;
            o.max_n_given = true;
        } else if (IS("--cache-dir")) {
            cache_dir = take_value(&a, argc, argv, "--cache-dir");
        } else if (IS("--reference-dir")) {
            reference_dir = take_value(&a, argc, argv, "--reference-dir");
        } else if (IS("--out")) {
            o.out_dir = take_value(&a, argc, argv, "--out");
        } else if (IS("--wait-policy")) {
            o.wait_policy = take_value(&a, argc, argv, "--wait-policy");
            if (strcmp(o.wait_policy, "active") && strcmp(o.wait_policy, "passive") &&
                strcmp(o.wait_policy, "default"))
                die("--wait-policy '%s' is not active, passive or default", o.wait_policy);
        } else if (IS("--serial-kernels")) {
            o.serial_kernels = take_value(&a, argc, argv, "--serial-kernels");
            if (strcmp(o.serial_kernels, "auto") && strcmp(o.serial_kernels, "yes") &&
                strcmp(o.serial_kernels, "no"))
                die("--serial-kernels '%s' is not auto, yes or no", o.serial_kernels);
        } else if (IS("--peer-limit")) {
            char *v = take_value(&a, argc, argv, "--peer-limit"), *end;
            errno = 0;
            peer_limit_s = strtod(v, &end);
            if (end == v || *end || errno || !(peer_limit_s > 0.0))
                die("--peer-limit '%s' is not a positive number of seconds", v);
        } else if (strcmp(arg, "--no-results") == 0) {
            o.no_results = true;
        } else {
            die("unknown option '%s' (see nsearch-bench --help)", arg);
        }
#undef IS
    }
    check_list(o.kernels, "--kernels", "kernel", known_kernel);
    check_list(o.workloads, "--workloads", "workload", known_workload);
    check_list(o.peer_workloads, "--peer-workloads", "workload", known_workload);
    check_list(o.peer_sizes, "--peer-sizes", "particle count", known_size);
    if (o.threads) { /* checked here, before the restart and the results folder */
        int threads[16];
        parse_threads(o.threads, threads, 16);
    }
    if (!o.max_n_given)
        o.max_n = REFERENCE_MAX_N;
    if (!o.serial_kernels)
        o.serial_kernels = "auto";
    return o;
}

/* Registration */

static config *configs;
static size_t n_configs, configs_capacity;

static void add_config(const ns_kernel *k, const nsb_peer *peer, config_kind kind, const char *w,
                       size_t n, int threads)
{
    if (n_configs == configs_capacity) {
        configs_capacity = configs_capacity ? 2 * configs_capacity : 256;
        configs = realloc(configs, configs_capacity * sizeof *configs);
        if (!configs)
            die("out of memory");
    }
    config *c = &configs[n_configs++];
    *c = (config){
        .kernel = k, .peer = peer, .kind = kind, .workload = w, .n = n, .threads = threads};
    snprintf(c->name, sizeof c->name, "%s/%s/n:%zu/threads:%d", config_search_name(c), w, n,
             threads);
}

static int parse_threads(const char *list, int *out, int max)
{
    int count = 0;
    const char *p = list;
    do { /* at least one number, and one after every comma */
        char *end;
        long t = strtol(p, &end, 10);
        if (end == p || t < 1 || t > ns_max_threads() || (*end && *end != ','))
            die("--threads '%s' is not a comma list of whole numbers from 1 to %d (8 per "
                "processor)",
                list, ns_max_threads());
        bool repeated = false; /* "2,2" measures 2 threads once */
        for (int k = 0; k < count; k++)
            repeated = repeated || out[k] == (int)t;
        if (!repeated)
            out[count++] = (int)t;
        if (!*end)
            break;
        p = end + 1;
    } while (count < max);
    return count;
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
static void register_sweep(const options *o, int cores)
{
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
                    add_config(ker, NULL, KIND_KERNEL, wl, all[s], ker->parallel ? threads[t] : 1);
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
                    add_config(NULL, peer, KIND_PEER, wl, all[s], peer->parallel ? threads[t] : 1);
            }
            if (bound && in_list(o->kernels, BOUND_NAME))
                for (int t = 0; t < n_threads; t++)
                    add_config(bound, NULL, KIND_BOUND, wl, all[s], threads[t]);
            if (in_list(o->kernels, WRITE_NAME))
                for (int t = 0; t < n_threads; t++)
                    add_config(NULL, NULL, KIND_WRITE, wl, all[s], threads[t]);
            if (bound && in_list(o->kernels, ONESHOT_NAME))
                for (int t = 0; t < n_threads; t++)
                    add_config(bound, NULL, KIND_ONESHOT, wl, all[s], threads[t]);
        }
    }
    for (size_t c = 0; c < n_configs; c++)
        nsb_register(configs[c].name, run_config, &configs[c], NULL);
}

/* Context: what a reader of the results needs to trust or compare them.
 * Every value is a string; what this process cannot read is "not visible". */

#define NOT_VISIBLE "not visible"

/* The load average ("1m 5m 15m") when the process started, and whether
 * OMP_WAIT_POLICY was set too late for the OpenMP runtime to read it. */
static char start_load[64] = NOT_VISIBLE;
static bool wait_policy_late = false;

/* The first line of a file without its newline; false when unreadable. */
static bool read_line(const char *path, char *out, size_t size)
{
    FILE *f = fopen(path, "r");
    bool ok = f && fgets(out, (int)size, f);
    if (f)
        fclose(f);
    if (ok)
        out[strcspn(out, "\n")] = 0;
    return ok;
}

/* The value of the first /proc/cpuinfo line whose key is exactly key. */
static bool cpuinfo_field(const char *key, char *out, size_t size)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    bool found = false;
    while (f && !found && fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (!colon)
            continue;
        size_t len = (size_t)(colon - line);
        while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t'))
            len--;
        if (len == strlen(key) && strncmp(line, key, len) == 0) {
            const char *v = colon + 1 + (colon[1] == ' ');
            snprintf(out, size, "%.*s", (int)strcspn(v, "\n"), v);
            found = true;
        }
    }
    if (f)
        fclose(f);
    return found;
}

/* Whether word is one of the space-separated words of list. */
static bool has_word(const char *list, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word))
        if ((p == list || p[-1] == ' ') && (p[len] == ' ' || p[len] == 0))
            return true;
    return false;
}

/* cpu_model and cpu_signature */
static void context_cpu_identity(void)
{
    char buf[512];
    if (!cpuinfo_field("model name", buf, sizeof buf))
        snprintf(buf, sizeof buf, NOT_VISIBLE);
    nsb_add_context("cpu_model", buf);

    /* a hypervisor may give different CPUs one name ("AMD EPYC" is Zen 3 one
     * day, Zen 4 the next): the signature tells them apart */
    char family[32], model[32], stepping[32];
    if (cpuinfo_field("cpu family", family, sizeof family) &&
        cpuinfo_field("model", model, sizeof model) &&
        cpuinfo_field("stepping", stepping, sizeof stepping))
        snprintf(buf, sizeof buf, "family %s model %s stepping %s", family, model, stepping);
    else if (cpuinfo_field("CPU implementer", family, sizeof family) &&
             cpuinfo_field("CPU part", model, sizeof model))
        snprintf(buf, sizeof buf, "implementer %s part %s", family, model);
    else
        snprintf(buf, sizeof buf, NOT_VISIBLE);
    nsb_add_context("cpu_signature", buf);
}

/* isa: the extensions the harness is compiled for (with NS_NATIVE, the
 * library's -march=native), then what the processor reports; isa_path: the
 * kernels' code path */
static void context_isa(void)
{
    char buf[512], flags[4096];
    char isa[256] = "build:";
    size_t base = strlen(isa);
#ifdef __AVX512F__
    strcat(isa, " avx512f");
#endif
#ifdef __AVX2__
    strcat(isa, " avx2");
#endif
#ifdef __AVX__
    strcat(isa, " avx");
#endif
#ifdef __SSE4_2__
    strcat(isa, " sse4.2");
#endif
#ifdef __ARM_NEON
    strcat(isa, " neon");
#endif
    if (strlen(isa) == base)
        strcat(isa, " none of avx512f avx2 avx sse4.2 neon");
    if (cpuinfo_field("flags", flags, sizeof flags))
        snprintf(buf, sizeof buf, "%s; cpu: avx2 %s, avx512f %s", isa,
                 has_word(flags, "avx2") ? "yes" : "no", has_word(flags, "avx512f") ? "yes" : "no");
    else if (cpuinfo_field("Features", flags, sizeof flags))
        snprintf(buf, sizeof buf, "%s; cpu: asimd %s, sve %s", isa,
                 has_word(flags, "asimd") ? "yes" : "no", has_word(flags, "sve") ? "yes" : "no");
    else
        snprintf(buf, sizeof buf, "%s; cpu: " NOT_VISIBLE, isa);
    nsb_add_context("isa", buf);

    /* the kernels' code path in use (the library's choice, or NS_ISA's) */
    ns_error err;
    const char *path = ns_isa(&err);
    snprintf(buf, sizeof buf, "%s (paths of this build: %s)", path ? path : err.message,
             ns_isa_paths());
    nsb_add_context("isa_path", buf);
}

/* smt: threads per core, from cpu0's siblings in the topology, else
 * /proc/cpuinfo */
static void context_smt(void)
{
    char buf[512], list[256], active[32], siblings[32], cores[32];
    int per_core = 0;
    if (read_line("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list", list,
                  sizeof list)) {
        for (const char *p = list; *p;) { /* "0", "0,64" or "0-1" */
            char *end;
            long a = strtol(p, &end, 10), b = a;
            if (end == p)
                break;
            if (*end == '-')
                b = strtol(end + 1, &end, 10);
            per_core += (int)(b - a + 1);
            p = *end == ',' ? end + 1 : end + strlen(end);
        }
    }
    bool have_active = read_line("/sys/devices/system/cpu/smt/active", active, sizeof active);
    bool have_ratio = cpuinfo_field("siblings", siblings, sizeof siblings) &&
                      cpuinfo_field("cpu cores", cores, sizeof cores);
    if (per_core <= 0 && have_ratio && atoi(cores) > 0)
        per_core = atoi(siblings) / atoi(cores);
    if (per_core > 0)
        snprintf(buf, sizeof buf, "%d thread%s per core", per_core, per_core == 1 ? "" : "s");
    else
        snprintf(buf, sizeof buf, NOT_VISIBLE);
    if (have_active)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "; smt/active %s", active);
    if (have_ratio)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "; cpuinfo siblings %s, cpu cores %s",
                 siblings, cores);
    nsb_add_context("smt", buf);
}

/* cache_sizes: the data and unified caches seen by cpu0 (Google Benchmark's
 * context has its own caches, a list, and one key must not appear twice) */
static void context_caches(void)
{
    char buf[512] = "";
    for (int k = 0; k < 16; k++) {
        char path[128], level[16], type[32], size[32];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/", k);
        size_t len = strlen(path);
        bool ok = (strcpy(path + len, "level"), read_line(path, level, sizeof level)) &&
                  (strcpy(path + len, "type"), read_line(path, type, sizeof type)) &&
                  (strcpy(path + len, "size"), read_line(path, size, sizeof size));
        if (!ok || strcmp(type, "Instruction") == 0)
            continue;
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%sL%s%s %s", buf[0] ? ", " : "",
                 level, strcmp(type, "Data") == 0 ? "d" : "", size);
    }
    nsb_add_context("cache_sizes", buf[0] ? buf : NOT_VISIBLE);
}

static void context_cpu(void)
{
    context_cpu_identity();
    context_isa();
    context_smt();
    context_caches();
}

static void context_system(void)
{
    char buf[256];
    struct utsname u;
    nsb_add_context("kernel_release", uname(&u) == 0 ? u.release : NOT_VISIBLE);
    if (read_line("/sys/kernel/mm/transparent_hugepage/enabled", buf, sizeof buf)) {
        const char *lb = strchr(buf, '['), *rb = lb ? strchr(lb, ']') : NULL;
        if (lb && rb) { /* "always [madvise] never": the one in force */
            memmove(buf, lb + 1, (size_t)(rb - lb - 1));
            buf[rb - lb - 1] = 0;
        }
        nsb_add_context("transparent_hugepages", buf);
    } else {
        nsb_add_context("transparent_hugepages", NOT_VISIBLE);
    }
    nsb_add_context(
        "cpu_governor",
        read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", buf, sizeof buf)
            ? buf
            : NOT_VISIBLE);
    nsb_add_context("load_average", start_load);
}

/* The loaded OpenMP runtime: the first shared object named lib*omp*. */
static int find_openmp_runtime(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    if (strncmp(base, "libgomp", 7) != 0 && strncmp(base, "libomp", 6) != 0 &&
        strncmp(base, "libiomp", 7) != 0)
        return 0;
    char *path = data;
    if (!realpath(info->dlpi_name, path))
        snprintf(path, PATH_MAX, "%s", info->dlpi_name);
    return 1;
}

/* The compiler of this harness and the library, and its OpenMP runtime. */
#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)
#if defined(__clang__)
#define COMPILED_BY "Clang " STRINGIFY(__clang_major__.__clang_minor__.__clang_patchlevel__)
#define DEFAULT_RUNTIME "libomp"
#elif defined(__GNUC__)
#define COMPILED_BY "GCC " __VERSION__
#define DEFAULT_RUNTIME "libgomp"
#else
#define COMPILED_BY NS_COMPILER
#define DEFAULT_RUNTIME "unknown"
#endif

/* The OpenMP specification a _OPENMP date stands for. */
static const char *openmp_spec(long date)
{
    static const struct {
        long date;
        const char *version;
    } specs[] = {{200505, "2.5"}, {200805, "3.0"}, {201107, "3.1"},
                 {201307, "4.0"}, {201511, "4.5"}, {201811, "5.0"},
                 {202011, "5.1"}, {202111, "5.2"}, {202411, "6.0"}};
    for (size_t k = 0; k < sizeof specs / sizeof *specs; k++)
        if (specs[k].date == date)
            return specs[k].version;
    return "?";
}

/* Which runtime, the OpenMP version compiled against, and the loaded file.
 * Neither libgomp nor libomp reports its own version through the OpenMP API.
 * libgomp comes with GCC: the GCC recorded is the compiler's, and the loaded
 * libgomp.so.1 is whichever the system provides (normally the same or a
 * newer GCC's). For libomp the loaded file's path is what there is (e.g.
 * /usr/lib/llvm-14/lib/libomp.so.5). */
static void context_openmp(void)
{
    char path[PATH_MAX] = "", buf[PATH_MAX + 256];
    dl_iterate_phdr(find_openmp_runtime, path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *runtime = strncmp(base, "libgomp", 7) == 0   ? "libgomp"
                          : strncmp(base, "libomp", 6) == 0  ? "libomp"
                          : strncmp(base, "libiomp", 7) == 0 ? "libiomp5"
                                                             : NULL;
    if (!runtime) /* linked statically: the compiler's own runtime */
        runtime = DEFAULT_RUNTIME " (assumed from the compiler: no shared runtime loaded)";
    snprintf(buf, sizeof buf, "%s; _OPENMP %ld (OpenMP %s); compiled by %s%s%s", runtime,
             (long)_OPENMP, openmp_spec((long)_OPENMP), COMPILED_BY, path[0] ? "; loaded " : "",
             path);
    nsb_add_context("openmp", buf);

    /* the environment, then what the runtime made of it */
    static const char *const bind_names[] = {"false", "true", "primary", "close", "spread"};
    const char *env = getenv("OMP_PROC_BIND");
    int bind = (int)omp_get_proc_bind();
    if (bind >= 0 && bind < 5)
        snprintf(buf, sizeof buf, "OMP_PROC_BIND %s; omp_get_proc_bind() %s", env ? env : "unset",
                 bind_names[bind]);
    else
        snprintf(buf, sizeof buf, "OMP_PROC_BIND %s; omp_get_proc_bind() %d", env ? env : "unset",
                 bind);
    nsb_add_context("omp_proc_bind", buf);
    env = getenv("OMP_PLACES");
    int places = omp_get_num_places();
    snprintf(buf, sizeof buf, "OMP_PLACES %s; omp_get_num_places() %d", env ? env : "unset",
             places);
    if (places > 0)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), ", %d processors in the first",
                 omp_get_place_num_procs(0));
    nsb_add_context("omp_places", buf);
}

/* The witness: one fixed piece of work timed on every thread of the process
 * at once, before any benchmark, each thread on the place the kernels'
 * thread of the same number will use. Its times tell two runs' machine
 * states apart where steal time cannot: another guest on the same physical
 * core slows it too. It is a snapshot of the process's first milliseconds. (Its data stay in L1: a
 * neighbour that only takes memory bandwidth or the shared cache it does not see; the memory
 * probe, above, does, after every repetition.) The work: every
 * pair of WITNESS_N points tested against a distance, as the quadratic kernels test them,
 * WITNESS_REPS times in step (a barrier before each). The context records each thread's median
 * (witness_ms, thread 0 first) and what was timed (witness: its version and work), which compare.py
 * requires to match, with the compiler and flags, before it sets two runs' witnesses side by side.
 */
#define WITNESS_VERSION 1
#define WITNESS_N 1024
#define WITNESS_REPS 31
#define WITNESS_STRIDE 32 /* doubles per thread's row of times: rows on their own cache lines */

static unsigned witness_pairs(const float *x)
{
    unsigned hits = 0;
    for (int i = 0; i < WITNESS_N; i++)
        for (int j = i + 1; j < WITNESS_N; j++) {
            float dx = x[3 * i] - x[3 * j], dy = x[3 * i + 1] - x[3 * j + 1],
                  dz = x[3 * i + 2] - x[3 * j + 2];
            hits += dx * dx + dy * dy + dz * dz < 0.01f;
        }
    return hits;
}

static void context_witness(void)
{
    char what[160];
    snprintf(what, sizeof what,
             "v%d: every pair of %d points against a distance, %d times "
             "per thread in step, median",
             WITNESS_VERSION, WITNESS_N, WITNESS_REPS);
    nsb_add_context("witness", what);
    int threads = omp_get_max_threads(), team = 0;
    double *times = malloc((size_t)threads * WITNESS_STRIDE * sizeof *times);
    unsigned *hits = malloc((size_t)threads * sizeof *hits);
    char *buf = malloc((size_t)threads * 24 + 1);
    bool same = true;
    if (times && hits && buf) {
        buf[0] = 0;
#pragma omp parallel num_threads(threads)
        {
            int t = omp_get_thread_num();
#pragma omp single
            team = omp_get_num_threads(); /* the runtime may give fewer than asked */
            float x[3 * WITNESS_N];
            uint32_t state = 12345u; /* the same points on every thread and run */
            for (int k = 0; k < 3 * WITNESS_N; k++) {
                state = state * 1664525u + 1013904223u;
                x[k] = (float)(state >> 8) * (1.0f / 16777216.0f);
            }
            /* x's address escapes through a volatile: the calls between
             * repetitions might change x, so no repetition can be elided */
            float *volatile escaped = x;
            unsigned first = witness_pairs(escaped); /* warm: code and data */
            for (int r = 0; r < WITNESS_REPS; r++) {
#pragma omp barrier
                double t0 = tool_seconds();
                unsigned h = witness_pairs(escaped);
                times[t * WITNESS_STRIDE + r] = tool_seconds() - t0;
                if (h != first)
                    first = 0; /* cannot happen: the work is deterministic */
            }
            hits[t] = first;
        }
        size_t len = 0;
        for (int t = 0; t < team; t++) {
            same = same && hits[t] != 0 && hits[t] == hits[0];
            qsort(times + t * WITNESS_STRIDE, WITNESS_REPS, sizeof *times, compare_double);
            len += (size_t)sprintf(buf + len, "%s%.4g", t ? " " : "",
                                   1e3 * times[t * WITNESS_STRIDE + WITNESS_REPS / 2]);
        }
    }
    nsb_add_context("witness_ms", !(times && hits && buf) ? "not measured (out of memory)"
                                  : same                  ? buf
                                         : "not measured (the threads counted different pairs)");
    free(times);
    free(hits);
    free(buf);
}

/* The library's tables (table_json.h), so the reports read the kernels'
 * order and roles from the run instead of knowing them. */
/* The peers of this build as JSON: every field of nsb_peer but its functions. */
static void peer_table_json(FILE *f)
{
    fputc('[', f);
    for (size_t k = 0; k < nsb_peer_count(); k++) {
        const nsb_peer *P = nsb_peer_at(k);
        table_json_open(f, k, P->name, P->description);
        fputs(", \"library\": ", f);
        table_json_string(f, P->library);
        fputs(", \"tuning\": ", f);
        table_json_string(f, P->tuning);
        fprintf(f, ", \"parallel\": %s, \"domain_memory\": %s}", P->parallel ? "true" : "false",
                P->domain_memory ? "true" : "false");
    }
    fputs("]\n", f);
}

static void context_tables(void)
{
    void (*const write[3])(FILE *) = {table_json_kernels, table_json_workloads, peer_table_json};
    const char *key[3] = {"kernel_table", "workload_table", "peer_table"};
    for (int t = 0; t < 3; t++) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
            die("out of memory for the context");
        write[t](f);
        if (fclose(f) != 0 || !text)
            die("out of memory for the context");
        nsb_add_context(key[t], text);
        free(text);
    }
}

static void add_context(const options *o, int cores)
{
    char buf[512];
    nsb_add_context("nsearch_version", NS_VERSION_STRING);
    context_tables();
    nsb_add_context("peers_missing", nsb_peers_missing());
    nsb_add_context("results_format_version", RESULTS_FORMAT_VERSION);
    context_cpu();
    context_system();
    snprintf(buf, sizeof buf, "%d", cores);
    nsb_add_context("cores_online", buf);
    snprintf(buf, sizeof buf, "%ld", sysconf(_SC_NPROCESSORS_CONF));
    nsb_add_context("hardware_threads", buf);
    snprintf(buf, sizeof buf, "%d", omp_get_max_threads());
    nsb_add_context("omp_max_threads", buf);
    static const char *env[] = {"OMP_NUM_THREADS", "OMP_PROC_BIND", "OMP_PLACES",
                                "OMP_WAIT_POLICY"};
    for (size_t k = 0; k < sizeof env / sizeof *env; k++) {
        const char *v = getenv(env[k]);
        snprintf(buf, sizeof buf, "%s%s", v ? v : "unset",
                 wait_policy_late && strcmp(env[k], "OMP_WAIT_POLICY") == 0
                     ? " (set after the OpenMP runtime started: libgomp ignores it)"
                     : "");
        nsb_add_context(env[k], buf);
    }
    context_openmp();
    context_witness();
    snprintf(buf, sizeof buf,
             "v%d: each thread writes its slice of %u words, then reads the next thread's "
             "slice in a scattered order, %d times, median; after every repetition",
             PROBE_VERSION, PROBE_WORDS, PROBE_REPS);
    nsb_add_context("mem_probe", buf);
    nsb_add_context("compiler", NS_COMPILER);
    nsb_add_context("compile_flags", NS_COMPILE_FLAGS);
    nsb_add_context("path_flags", NS_PATH_FLAGS); /* each path's kernels: compile_flags + these */
    nsb_add_context("march_native", NS_NATIVE_ON ? "ON" : "OFF");
    nsb_add_context("build_type", NS_BUILD_TYPE[0] ? NS_BUILD_TYPE : "none");
    nsb_add_context("benchmark_version",
                    NS_BENCHMARK_VERSION[0] ? NS_BENCHMARK_VERSION : "unknown");
    nsb_add_context("benchmark_library_build_type", nsb_library_build_type());
    /* the source of this executable, recorded when it was built */
    nsb_add_context("git_commit", NS_GIT_COMMIT);
    nsb_add_context("git_modified", NS_GIT_MODIFIED);
    snprintf(buf, sizeof buf,
             "kernels=%s workloads=%s threads=%s serial_kernels=%s max_n=%zu seed=%d",
             o->kernels ? o->kernels : "all", o->workloads ? o->workloads : "all",
             o->threads ? o->threads : "1,cores", o->serial_kernels, o->max_n, SEED);
    nsb_add_context("sweep", buf);
}

/* Warn when the machine is busy: results would not be trustworthy. */
static void warn_load(int cores)
{
    double load = 0.0;
    if (sscanf(start_load, "%lf", &load) == 1 && load > 0.5 * cores)
        fprintf(stderr,
                "nsearch-bench: WARNING: load average %.2f is above half the %d cores; "
                "other work will disturb the timings\n",
                load, cores);
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

/* Results: written by Google Benchmark into an atomic_file's temporary,
 * renamed over bench.json when complete, or to a name that says "partial"
 * when interrupted. */
static atomic_file results;
static char results_partial[1024];

static void on_interrupt(int sig)
{
    if (results.temp[0])
        rename(results.temp, results_partial);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void make_dirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0777);
            *p = '/';
        }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        die("cannot create %s: %s", path, strerror(errno));
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

/* The results file: written as DIR/.bench.json.tmp.XXXXXX and renamed to
 * DIR/bench.json when complete (DIR/bench.partial.json when interrupted);
 * DIR is out_dir, or results/<host>/<UTC timestamp>. */
static void results_to(char *program, const char *out_dir)
{
    static char out_flag[sizeof results.temp + 32];
    char dir[700], host[256] = "unknown", stamp[32];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    time_t t = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&t));
    if (out_dir)
        snprintf(dir, sizeof dir, "%s", out_dir);
    else
        snprintf(dir, sizeof dir, "results/%s/%s", host, stamp);
    make_dirs(dir);
    char final[1024];
    snprintf(final, sizeof final, "%s/bench.json", dir);
    snprintf(results_partial, sizeof results_partial, "%s/bench.partial.json", dir);
    if (!atomic_file_open(&results, final))
        die("cannot create a file in %s: %s", dir, strerror(errno));
    fclose(results.f); /* Google Benchmark writes it, by name */
    results.f = NULL;
    snprintf(out_flag, sizeof out_flag, "--benchmark_out=%s", results.temp);
    char *extra[] = {program, out_flag, (char *)"--benchmark_out_format=json", NULL};
    int extra_argc = 3;
    nsb_initialize(&extra_argc, extra);
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
}

/* What the run says at its end on standard error; the exit status. */
static int finish(void)
{
    if (results.temp[0]) { /* renamed here, not by atomic_file_commit: a failure keeps it */
        if (rename(results.temp, results.target) != 0)
            die("cannot rename %s: %s", results.temp, strerror(errno));
        fprintf(stderr, "nsearch-bench: results in %s\n", results.target);
    }
    for (size_t k = 0; k < nsb_noisy_count(); k++) {
        double cv;
        const char *name = nsb_noisy_name(k, &cv);
        fprintf(stderr,
                "nsearch-bench: NOISY: %s: repetitions spread %.1f%% (coefficient of variation "
                "above 5%%); rerun on a quieter machine\n",
                name, 100.0 * cv);
    }
    fprintf(stderr, "nsearch-bench: %zu configurations VALID, %zu refused, %zu INVALID", n_valid,
            n_refused, n_invalid);
    if (n_failed)
        fprintf(stderr, ", %zu failed (an error, not a documented refusal)", n_failed);
    fputc('\n', stderr);
    if (n_skipped)
        fprintf(stderr, "nsearch-bench: %zu VALID peers not timed (over --peer-limit)\n",
                n_skipped);
    if (any_invalid)
        fprintf(stderr, "nsearch-bench: FAILED: some contacts differ from the reference\n");
    if (n_failed)
        fprintf(stderr, "nsearch-bench: FAILED: some configurations failed with an error\n");
    return any_invalid || n_failed ? 1 : 0;
}

int main(int argc, char **argv)
{
    char loadavg[128];
    double load[3];
    if (read_line("/proc/loadavg", loadavg, sizeof loadavg) &&
        sscanf(loadavg, "%lf %lf %lf", &load[0], &load[1], &load[2]) == 3)
        snprintf(start_load, sizeof start_load, "%.2f %.2f %.2f", load[0], load[1], load[2]);
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    /* before Google Benchmark takes its flags out of argv (and answers
     * --help with its own flags only) */
    for (int a = 1; a < argc; a++)
        if (strcmp(argv[a], "--help") == 0 || strcmp(argv[a], "-h") == 0) {
            fputs(help, stdout);
            exit(0);
        }
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
    options o = parse_options(argc, argv);
    /* Thread wake-up: see docs/harness.md ("Thread wake-up"). libgomp reads the
     * environment when it is loaded, before main, so the policy is set and
     * the harness starts again with it (same process, same arguments);
     * libomp would read it at the first OpenMP call, but the restart serves
     * both. It happens once: the second start finds the policy set. */
    const char *policy = o.wait_policy ? o.wait_policy : "active";
    if (!getenv("OMP_WAIT_POLICY") && strcmp(policy, "default") != 0) {
        setenv("OMP_WAIT_POLICY", policy, 1);
        restart(original_argv);
        wait_policy_late = true; /* no /proc: the policy is recorded as unapplied */
    }

    if (!listing && !o.no_results && !user_out)
        results_to(argv[0], o.out_dir);
    if (!listing)
        warn_load(cores);
        /* a first parallel region, so the thread pool exists before any timing */
#pragma omp parallel
    {
        (void)0;
    }
    register_sweep(&o, cores);
    add_context(&o, cores);
    nsb_watch_noise(0.05);
    nsb_run();
    kept_release_all(); /* before the configurations they point to are freed */
    nsb_shutdown();

    free(args);
    free(configs);
    return listing ? 0 : finish();
}

/* bench.h - what the parts of nsearch-bench (harness/bench/) share: the
 * run's state and the functions one part calls in another. main.c says what
 * the program does and which file holds what.
 *
 * The state of a run is one struct, bench (at the end), made of named parts,
 * each owned by one file: options (options.c), start_info (context.c), the
 * configurations (registration.c), the particles and their reference
 * (reference.c), the tally of verdicts and the kept peer runs (runner.c),
 * the memory probe's buffer (disturbance.c) and the results file
 * (results.c). main holds the one bench of the process and passes it, or
 * the part a function needs, to the functions; a configuration points back
 * to it, since Google Benchmark hands its callback the configuration alone.
 * The one file-level variable is results.c's, for its signal handler. */
#ifndef NSB_BENCH_BENCH_H
#define NSB_BENCH_BENCH_H

#include "../bench_shim.h"
#include "atomic_file.h"
#include "peer.h"

#include <nsearch.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REFERENCE_MAX_N 100000 /* naive is the reference up to here */
#define SEED 1
#define BOUND_NAME "bound"     /* the bound kernel's binning + count, no output */
#define WRITE_NAME "write"     /* streaming the reference's contacts to memory */
#define ONESHOT_NAME "oneshot" /* the bound kernel's one-call search, fresh memory */

struct bench;

/* main.c: "nsearch-bench: " and the message on standard error; exits 2. */
_Noreturn void die(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* options.c */

typedef struct options {
    size_t max_n;
    bool max_n_given;
    char *kernels, *workloads, *threads; /* comma lists, NULL = all / default */
    char *peer_workloads, *peer_sizes;   /* where the peers run (comma lists, NULL = all) */
    const char *out_dir;                 /* results folder */
    const char *wait_policy;             /* active, passive or default */
    const char *serial_kernels;          /* auto, yes or no */
    bool no_results;
    /* --cache-dir: where the costly workloads' particles (cache_version > 0:
     * settled) are kept between runs. */
    const char *cache_dir;
    /* --reference-dir: where naive references are kept for the other
     * processes of one sweep (the sweep gives a folder of its run and
     * removes it). */
    const char *reference_dir;
    /* --peer-limit: a peer whose first (untimed) search takes longer than
     * this is not timed at that size: its repetitions over the rounds would
     * take many minutes (default 15). */
    double peer_limit_s;
} options;

options parse_options(int argc, char **argv);
/* --help: the help on standard output; exits 0. */
_Noreturn void print_help(void);
/* Whether name is in the comma list (NULL: every name is). */
bool in_list(const char *list, const char *name);
/* --threads' list into out (at most max, each once); dies when it is not one. */
int parse_threads(const char *list, int *out, int max);

/* registration.c */

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
    int checked;         /* 0: not yet; 1: VALID; -1: INVALID, refused or failed */
    bool timed_checked;  /* a timed iteration's contacts checked too (see run_search) */
    char verdict[600];   /* the label, or the reason it was skipped */
    struct bench *bench; /* the run it belongs to (run_config's way to it) */
} config;

/* The configurations of the run, in registration order. */
typedef struct config_set {
    config *items;
    size_t count, capacity;
} config_set;

/* Registers the sweep the options ask for with Google Benchmark. */
void register_sweep(struct bench *b);
/* The first part of a configuration's name: the kernel's, the peer's, bound ... */
const char *config_search_name(const config *c);

/* reference.c */

/* Particles and the reference contacts of the last (workload, n). */
typedef struct reference_cache {
    const char *workload;
    size_t n;
    float *pos, *radius;
    ns_contact_list reference;  /* sorted */
    const char *reference_name; /* "naive", "hash_serial (checked against grid_dense)" */
    ns_status reference_status;
    char reference_error[300];
    unsigned generation;    /* counts the particles made: a kept peer's state is of one */
    char checked_name[128]; /* the checked chain's reference_name */
} reference_cache;

/* How the configurations ended (runner.c counts them, main reports them):
 * each ends in one of VALID, refused, INVALID or failed (an error that is
 * neither a difference nor a documented refusal). */
typedef struct tally {
    bool any_invalid;
    size_t n_valid, n_invalid, n_refused, n_failed, n_skipped;
} tally;

/* The particles and reference for (w, n) into cache, unless they are there. */
void prepare(reference_cache *cache, const options *o, tally *t, const char *w, size_t n);
/* Index of the first difference of two sorted lists, or SIZE_MAX. */
size_t first_difference(const ns_contact_list *a, const ns_contact_list *b);
/* "INVALID vs REF_NAME: ...": the counts and the k-th contact of each. */
void describe_difference(char *buf, size_t size, const char *ref_name, const ns_contact_list *ref,
                         const char *name, const ns_contact_list *got, size_t k);

/* disturbance.c */

/* What disturbs a repetition, read outside its timed iterations. */
typedef struct disturbance {
    unsigned long long steal_ticks;
    long involuntary, voluntary;
} disturbance;

/* The memory probe's words: allocated on the first probe, kept for the process. */
typedef struct mem_probe {
    uint32_t *words;
} mem_probe;

disturbance disturbance_now(void);
/* mem_probe_ms (the probe runs here), steal_ms, invol_csw and vol_csw. */
void set_disturbance_counters(nsb_state *st, mem_probe *probe, const disturbance *before,
                              const disturbance *after);
/* The context's description of the probe (mem_probe). */
void mem_probe_describe(char *buf, size_t size);
size_t peak_rss_bytes(void);
int compare_double(const void *a, const void *b); /* qsort's, for medians */

/* runner.c */

/* What a configuration searches with: the library's index (a kernel, or
 * bound's count) or a peer's state. */
typedef struct searcher {
    const config *c;
    const ns_particles *p;
    ns_index *index;
    void *peer;
    size_t candidates; /* a peer's, of the last query */
} searcher;

/* What one configuration's repetition searches with. */
typedef struct search_run {
    ns_particles p;
    searcher se;
    ns_contact_list contacts;
} search_run;

/* The peers' search states kept from one repetition to the next (runner.c). */
enum { KEPT_MAX = 64 };
typedef struct kept_runs {
    struct kept_run {
        const config *c;     /* NULL: a free place */
        unsigned generation; /* of the particles it searched (reference_cache.generation) */
        search_run run;
    } place[KEPT_MAX];
} kept_runs;

/* How a configuration that cannot be timed ended. */
typedef enum failure { REFUSED, INVALID, FAILED } failure;

/* Google Benchmark's callback of every configuration (arg: the config). */
void run_config(nsb_state *st, void *arg);
/* Ends c with its verdict (see runner.c), counted in t. */
void fail_config(nsb_state *st, tally *t, config *c, failure why);
void kept_release_all(kept_runs *kept);

/* write.c: the write configuration. */
void run_write(struct bench *b, nsb_state *st, config *c);

/* context.c */

/* What the process found when it started, for the context and the warning. */
typedef struct start_info {
    int cores;             /* online, at least 1 */
    char load[64];         /* the load average, "1m 5m 15m" */
    bool wait_policy_late; /* main set OMP_WAIT_POLICY too late for the OpenMP runtime */
} start_info;

/* The load average and the cores, read first thing. */
void start_info_read(start_info *s);
/* Warns when the machine is busy. */
void warn_load(const start_info *s);
/* The results' context: the build, the machine, the witness, the sweep. */
void add_context(const options *o, const start_info *s);

/* results.c */

/* The results file: Google Benchmark writes file.temp, renamed to
 * file.target when complete, to partial when interrupted. */
typedef struct results_file {
    atomic_file file;
    char partial[1024];
    char out_flag[sizeof((atomic_file *)0)->temp + 32]; /* --benchmark_out=file.temp */
} results_file;

/* Makes the folder and the temporary, hands it to Google Benchmark, and
 * sets the signal handlers. */
void results_to(results_file *r, char *program, const char *out_dir);
/* Renames a complete file into place (nothing when there is none). */
void results_finish(const results_file *r);

/* The run. */
typedef struct bench {
    options opt;
    start_info start;
    config_set configs;
    reference_cache cache;
    tally tally;
    kept_runs kept;
    mem_probe probe;
    results_file results;
} bench;

#endif /* NSB_BENCH_BENCH_H */

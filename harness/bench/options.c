/* options.c - nsearch-bench's own options (docs/harness.md, "Options"):
 * --help, the option parser (what Google Benchmark leaves of argv after
 * nsb_initialize took its --benchmark_* flags) and the comma lists, checked
 * here before anything runs (an unknown name or an empty entry exits 2).
 * main parses them into the run's options; registration.c reads the lists
 * with in_list and parse_threads. */
#define _GNU_SOURCE /* strdup, strtok_r */

#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool in_list(const char *list, const char *name)
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

void print_help(void)
{
    fputs(help, stdout);
    exit(0);
}

int parse_threads(const char *list, int *out, int max)
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

options parse_options(int argc, char **argv)
{
    options o = {.peer_limit_s = 15.0};
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
#define IS(opt)                                                                                    \
    (strncmp(arg, opt, strlen(opt)) == 0 && (arg[strlen(opt)] == 0 || arg[strlen(opt)] == '='))
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            print_help();
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
            o.cache_dir = take_value(&a, argc, argv, "--cache-dir");
        } else if (IS("--reference-dir")) {
            o.reference_dir = take_value(&a, argc, argv, "--reference-dir");
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
            o.peer_limit_s = strtod(v, &end);
            if (end == v || *end || errno || !(o.peer_limit_s > 0.0))
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

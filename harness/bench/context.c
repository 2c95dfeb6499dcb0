/* context.c - the results' context (docs/harness.md, "The results file"),
 * as Google Benchmark's sysinfo.cc is its own: what a reader of the results
 * needs to trust or compare them. The machine (CPU, ISA, SMT, caches, the
 * system, OpenMP), the build and its provenance (the commit, recorded at
 * build time), the library's and the peers' tables, the witness (a fixed
 * piece of work timed on every thread at the start), and the sweep. Also
 * what the process found when it started (start_info: the load average and
 * the cores, read first thing in main) and the warning of a busy machine.
 * main calls add_context once the sweep is registered. */
#define _GNU_SOURCE /* dl_iterate_phdr */

#include "bench.h"

#include "clock.h"
#include "provenance.h" /* NS_GIT_COMMIT, NS_GIT_MODIFIED: generated at build time */
#include "table_json.h"

#include <limits.h>
#include <link.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#define RESULTS_FORMAT_VERSION "1"

/* Context: what a reader of the results needs to trust or compare them.
 * Every value is a string; what this process cannot read is "not visible". */

#define NOT_VISIBLE "not visible"

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

/* The load average ("1m 5m 15m") when the process started, and the cores online. */
void start_info_read(start_info *s)
{
    snprintf(s->load, sizeof s->load, NOT_VISIBLE);
    char loadavg[128];
    double load[3];
    if (read_line("/proc/loadavg", loadavg, sizeof loadavg) &&
        sscanf(loadavg, "%lf %lf %lf", &load[0], &load[1], &load[2]) == 3)
        snprintf(s->load, sizeof s->load, "%.2f %.2f %.2f", load[0], load[1], load[2]);
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1)
        cores = 1;
    s->cores = cores;
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

static void context_system(const start_info *s)
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
    nsb_add_context("load_average", s->load);
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
 * probe (disturbance.c) does, after every repetition.) The work: every
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

void add_context(const options *o, const start_info *s)
{
    int cores = s->cores;
    char buf[512];
    nsb_add_context("nsearch_version", NS_VERSION_STRING);
    context_tables();
    nsb_add_context("peers_missing", nsb_peers_missing());
    nsb_add_context("results_format_version", RESULTS_FORMAT_VERSION);
    context_cpu();
    context_system(s);
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
                 s->wait_policy_late && strcmp(env[k], "OMP_WAIT_POLICY") == 0
                     ? " (set after the OpenMP runtime started: libgomp ignores it)"
                     : "");
        nsb_add_context(env[k], buf);
    }
    context_openmp();
    context_witness();
    mem_probe_describe(buf, sizeof buf);
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
void warn_load(const start_info *s)
{
    int cores = s->cores;
    double load = 0.0;
    if (sscanf(s->load, "%lf", &load) == 1 && load > 0.5 * cores)
        fprintf(stderr,
                "nsearch-bench: WARNING: load average %.2f is above half the %d cores; "
                "other work will disturb the timings\n",
                load, cores);
}

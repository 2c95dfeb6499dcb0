/* nsearch - the command-line tool: contacts of a user's own particles, from
 * any kernel, and particle files from the workload generators.
 *
 * Exit status: 0 success, 1 a failure that is not the input's fault (out of
 * memory, a kernel's refusal, a write error), 2 a usage error or invalid
 * input, 3 when --check finds a difference from naive. An existing output
 * file is replaced only by a complete new one (written to a temporary file
 * in the same folder, then renamed); an interrupted run removes it. */
#define _POSIX_C_SOURCE 200809L

#include <nsearch.h>

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_INVALID = 3 };

static const char *command = NULL; /* for messages: "nsearch pairs" */

static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nsearch: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* A usage error: the message and where to find help; exits 2. */
static void usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nsearch: ", stderr);
    if (command)
        fprintf(stderr, "%s: ", command);
    vfprintf(stderr, fmt, ap);
    if (command)
        fprintf(stderr, " (see 'nsearch %s --help')\n", command);
    else
        fputs(" (see 'nsearch --help')\n", stderr);
    va_end(ap);
    exit(EXIT_USAGE);
}

/* Output files: a temporary beside the target, renamed when complete. */

static char temp_path[PATH_MAX + 32];
static volatile sig_atomic_t temp_active = 0;
static sigset_t exit_signals; /* SIGINT, SIGTERM, SIGHUP: remove the temporary, then die */

static void on_signal(int sig)
{
    if (temp_active)
        unlink(temp_path);
    signal(sig, SIG_DFL);
    raise(sig);
}

typedef struct output {
    const char *path; /* NULL: standard output */
    FILE *f;
} output;

static void open_output(output *o, const char *path)
{
    o->path = path;
    if (!path) {
        o->f = stdout;
        return;
    }
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    if (snprintf(temp_path, sizeof temp_path, "%.*s.%s.tmp.XXXXXX", dir_len, path,
                 slash ? slash + 1 : path) >= (int)sizeof temp_path) {
        say("%s: the path is too long", path);
        exit(EXIT_USAGE);
    }
    /* A signal between mkstemp and temp_active = 1 would leave the file
     * behind: it waits until both are done. */
    sigset_t previous;
    sigprocmask(SIG_BLOCK, &exit_signals, &previous);
    int fd = mkstemp(temp_path);
    int saved = errno;
    temp_active = fd >= 0;
    sigprocmask(SIG_SETMASK, &previous, NULL);
    if (fd < 0) {
        say("%s: cannot create a file in its folder: %s", path, strerror(saved));
        exit(EXIT_FAIL);
    }
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        say("%s: %s", path, strerror(errno));
        unlink(temp_path);
        exit(EXIT_FAIL);
    }
}

/* Drops a partial output; the original file stays as it was. */
static void discard_output(output *o)
{
    if (o->path && o->f) {
        fclose(o->f);
        unlink(temp_path);
        temp_active = 0;
        o->f = NULL;
    }
}

static bool commit_output(output *o)
{
    if (!o->path) {
        if (fflush(stdout) == 0 && !ferror(stdout))
            return true;
        say("standard output: cannot write: %s", strerror(errno));
        return false;
    }
    int failed = fflush(o->f) != 0 || ferror(o->f);
    int saved = errno;
    failed |= fclose(o->f) != 0;
    o->f = NULL;
    if (!failed && rename(temp_path, o->path) == 0) {
        temp_active = 0;
        return true;
    }
    say("%s: cannot write: %s", o->path, strerror(failed ? saved : errno));
    unlink(temp_path);
    temp_active = 0;
    return false;
}

/* Options */

typedef struct option {
    const char *name; /* "--kernel" */
    bool has_value;
    const char *value; /* set when given; "" for flags */
} option;

static void parse_options(int argc, char **argv, option *opts, int nopts, const char *help)
{
    for (int a = 0; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(help, stdout);
            exit(0);
        }
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        option *o = NULL;
        for (int k = 0; k < nopts; k++)
            if (strlen(opts[k].name) == len && strncmp(opts[k].name, arg, len) == 0)
                o = &opts[k];
        if (!o)
            usage_error("unknown %s '%s'", arg[0] == '-' ? "option" : "argument", arg);
        if (o->value)
            usage_error("%s is given twice", o->name);
        if (!o->has_value) {
            if (eq)
                usage_error("%s takes no value", o->name);
            o->value = "";
        } else if (eq) {
            o->value = eq + 1;
        } else if (a + 1 < argc) {
            o->value = argv[++a];
        } else {
            usage_error("%s needs a value", o->name);
        }
    }
}

static unsigned long long parse_count(const char *name, const char *s, unsigned long long lo,
                                      unsigned long long hi)
{
    char *end;
    errno = 0;
    unsigned long long v = s[0] >= '0' && s[0] <= '9' ? strtoull(s, &end, 10) : 0;
    if (!(s[0] >= '0' && s[0] <= '9') || *end || errno || v < lo || v > hi)
        usage_error("%s '%s' is not a whole number from %llu to %llu", name, s, lo, hi);
    return v;
}

static float parse_radius(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= 0.0 && v <= FLT_MAX))
        usage_error("--radius '%s' is not a finite non-negative number", s);
    return (float)v;
}

static const ns_kernel *find_kernel(const char *name)
{
    const ns_kernel *k = ns_kernel_find(name);
    if (!k) {
        char names[512] = "";
        for (size_t i = 0; i < ns_kernel_count(); i++) {
            strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
            strncat(names, ns_kernel_at(i)->name, sizeof names - strlen(names) - 1);
        }
        usage_error("unknown kernel '%s' (kernels: %s)", name, names);
    }
    return k;
}

/* Commands */

static const char main_help[] =
    "Usage: nsearch COMMAND [OPTIONS]\n"
    "Contacts of particles (|p_j - p_i| < r_i + r_j) with any of nsearch's kernels.\n"
    "\n"
    "Commands:\n"
    "  kernels     list the kernels: name, then a one-line description\n"
    "  workloads   list the workload generators\n"
    "  gen         write a particle file from a workload generator\n"
    "  pairs       read a particle file, write its contacts\n"
    "  sim         simulate spheres falling into a box; frame times, frame files\n"
    "\n"
    "  nsearch COMMAND --help   the options of a command\n"
    "  nsearch --version        the version\n"
    "\n"
    "Exit status: 0 success; 1 a failure that is not the input's fault (out of memory,\n"
    "a kernel's refusal, a write error); 2 a usage error or invalid input; 3 --check\n"
    "found a difference.\n";

static const char gen_help[] =
    "Usage: nsearch gen --workload NAME --n N [--seed S] [--output FILE]\n"
    "Writes N particles of a workload (see 'nsearch workloads') as a particle file:\n"
    "the header x,y,z,r, then one particle per line, numbers as %.9g.\n"
    "\n"
    "  --workload NAME  the generator\n"
    "  --n N            the number of particles (0 to 4294967295)\n"
    "  --seed S         the generator's seed (default 1); the same (N, S) gives the same file\n"
    "  --output FILE    write to FILE (replaced only when complete) instead of standard output\n";

static const char pairs_help[] =
    "Usage: nsearch pairs --kernel NAME --input FILE [--radius R] [--threads T]\n"
    "                     [--table-size M] [--max-contacts C] [--output FILE]\n"
    "                     [--format csv|bin] [--check] [--stats]\n"
    "Reads particles, finds every contact with a kernel, writes the contacts.\n"
    "\n"
    "  --kernel NAME     the kernel (see 'nsearch kernels')\n"
    "  --input FILE      the particle file: lines x,y,z or x,y,z,r (commas, spaces allowed\n"
    "                    around fields); blank and # lines skipped; an optional first line\n"
    "                    x,y,z or x,y,z,r; particles numbered from 0 in file order\n"
    "  --radius R        every particle's radius: required for a 3-column file, an error\n"
    "                    for a 4-column one\n"
    "  --threads T       threads for parallel kernels (T >= 1; default: OpenMP's, i.e.\n"
    "                    OMP_NUM_THREADS)\n"
    "  --table-size M    buckets of the hash kernels' table (M >= 1; default 2n); accepted\n"
    "                    and ignored by the other kernels\n"
    "  --max-contacts C  stop with exit 1 when there are more than C contacts (C >= 1;\n"
    "                    default: a quarter of the machine's memory in contacts of 24 bytes,\n"
    "                    at most 2^31); kernels that count first (grid_sorted) stop before\n"
    "                    writing any\n"
    "  --output FILE     write to FILE (replaced only when complete) instead of standard output\n"
    "  --format csv|bin  csv (default): the line i,j,overlap,nx,ny,nz then one contact per\n"
    "                    line, i<j, sorted by i then j, numbers as %.9g. bin: little-endian,\n"
    "                    a 24-byte header (the 8 bytes NSCONTAC, uint32 version 1, uint32\n"
    "                    record size 24, uint64 record count), then per contact uint32 i,\n"
    "                    uint32 j, float overlap, nx, ny, nz\n"
    "  --check           also run naive and compare: prints VALID or INVALID (and the first\n"
    "                    differences) on standard error; exit 3 when they differ\n"
    "  --stats           print counts, times (ms) and the index's memory on standard error\n";

static void list_kernels(void)
{
    for (size_t k = 0; k < ns_kernel_count(); k++)
        printf("%-15s %s\n", ns_kernel_at(k)->name, ns_kernel_at(k)->description);
}

static void list_workloads(void)
{
    for (size_t k = 0; k < ns_workload_count(); k++)
        printf("%-15s %s\n", ns_workload_at(k)->name, ns_workload_at(k)->description);
    printf("%-15s %s\n", NS_SETTLED_NAME, NS_SETTLED_DESCRIPTION);
}

static int cmd_gen(int argc, char **argv)
{
    option opts[] = {{"--workload", true, NULL},
                     {"--n", true, NULL},
                     {"--seed", true, NULL},
                     {"--output", true, NULL}};
    parse_options(argc, argv, opts, 4, gen_help);
    if (!opts[0].value || !opts[1].value)
        usage_error("%s is required", opts[0].value ? "--n" : "--workload");
    const char *workload = opts[0].value;
    if (!ns_workload_find(workload) && strcmp(workload, NS_SETTLED_NAME) != 0)
        usage_error("unknown workload '%s' (see 'nsearch workloads')", workload);
    size_t n = (size_t)parse_count("--n", opts[1].value, 0, NS_MAX_PARTICLES);
    uint64_t seed = opts[2].value ? parse_count("--seed", opts[2].value, 0, ULLONG_MAX) : 1;

    float *pos = malloc(n ? 3 * n * sizeof(float) : 1), *radius = malloc(n ? n * sizeof(float) : 1);
    if (!pos || !radius) {
        say("gen: out of memory for %zu particles", n);
        free(pos);
        free(radius);
        return EXIT_FAIL;
    }
    ns_error err;
    if (ns_workload_generate(workload, n, seed, 0, pos, radius, &err) != NS_OK) {
        say("%s: %s", workload, err.message);
        free(pos);
        free(radius);
        return EXIT_FAIL;
    }
    ns_particles p = {n, pos, radius, 0.0f};
    output out;
    open_output(&out, opts[3].value);
    int rc = 0;
    if (ns_particles_write(out.f, &p, &err) != NS_OK) {
        say("%s: %s", out.path ? out.path : "standard output", err.message);
        discard_output(&out);
        rc = EXIT_FAIL;
    } else if (!commit_output(&out)) {
        rc = EXIT_FAIL;
    }
    free(pos);
    free(radius);
    return rc;
}

/* The whole file in memory ("-": standard input). */
static char *read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        say("%s: cannot read: %s", path, strerror(errno));
        exit(EXIT_USAGE);
    }
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            say("%s: out of memory reading the file", path);
            exit(EXIT_FAIL);
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *bigger = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
        if (!bigger)
            free(buf);
        buf = bigger;
        cap *= 2;
    }
    if (ferror(f)) {
        say("%s: cannot read: %s", path, strerror(errno));
        exit(EXIT_USAGE);
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

/* A particle file that does not parse: says where and what; the exit status. */
static int parse_failure(const char *path, const ns_error *err)
{
    if (err->line)
        say("%s:%zu: %s", path, err->line, err->message);
    else
        say("%s: %s", path, err->message);
    return err->status == NS_ERR_OUT_OF_MEMORY ? EXIT_FAIL : EXIT_USAGE;
}

static double now_ms(void)
{
    return omp_get_wtime() * 1e3;
}

/* Runs a kernel; on failure says why (with the particle's line) and returns
 * the exit status, else 0. */
static int search(const ns_kernel *k, const ns_particles *p, const ns_config *cfg,
                  ns_contact_list *contacts, const char *path, const char *text, size_t len,
                  double *build_ms, double *query_ms, size_t *index_bytes)
{
    ns_error err;
    ns_index *index;
    ns_status s = ns_index_create(k, cfg, &index, &err);
    double t0 = now_ms();
    if (s == NS_OK)
        s = ns_index_build(index, p, &err);
    double t1 = now_ms();
    if (s == NS_OK)
        s = ns_index_query(index, contacts, &err);
    double t2 = now_ms();
    if (s == NS_OK) {
        ns_index_info info;
        ns_index_get_info(index, &info);
        if (build_ms)
            *build_ms = t1 - t0, *query_ms = t2 - t1, *index_bytes = info.bytes;
        ns_index_destroy(index);
        return 0;
    }
    ns_index_destroy(index);
    size_t line =
        err.particle != NS_NO_PARTICLE ? ns_particle_file_line(text, len, err.particle) : 0;
    char where[64] = "";
    if (line)
        snprintf(where, sizeof where, ":%zu", line);
    say("%s%s: %s: %s (%s)", path, where, k->name, err.message, ns_status_str(s));
    return s == NS_ERR_INVALID_INPUT || s == NS_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_FAIL;
}

static void print_contact(const char *label, const ns_contact *c)
{
    fprintf(stderr, "  %s: %u,%u,%.9g,%.9g,%.9g,%.9g\n", label, (unsigned)c->i, (unsigned)c->j,
            (double)c->overlap, (double)c->nx, (double)c->ny, (double)c->nz);
}

/* --check: exact comparison of sorted lists; prints VALID or INVALID. */
static bool same_contacts(const char *kernel, const ns_contact_list *ref,
                          const ns_contact_list *got)
{
    size_t shown = 0, differ = 0;
    size_t a = 0, b = 0;
    while (a < ref->count || b < got->count) {
        const ns_contact *x = a < ref->count ? &ref->items[a] : NULL;
        const ns_contact *y = b < got->count ? &got->items[b] : NULL;
        bool x_first = x && (!y || x->i < y->i || (x->i == y->i && x->j < y->j));
        bool y_first = y && (!x || y->i < x->i || (y->i == x->i && y->j < x->j));
        if (!x_first && !y_first && memcmp(x, y, sizeof *x) == 0) {
            a++, b++;
            continue;
        }
        if (differ++ == 0)
            fprintf(stderr, "INVALID: %s differs from naive\n", kernel);
        if (shown++ < 5) {
            if (!y_first)
                print_contact("naive   ", x);
            if (!x_first)
                print_contact(kernel, y);
        }
        a += !y_first;
        b += !x_first;
    }
    if (differ)
        fprintf(stderr, "INVALID: %zu differences (naive %zu contacts, %s %zu)\n", differ,
                ref->count, kernel, got->count);
    else
        fprintf(stderr, "VALID: %s matches naive exactly (%zu contacts)\n", kernel, ref->count);
    return differ == 0;
}

static int cmd_pairs(int argc, char **argv)
{
    enum {
        KERNEL,
        INPUT,
        RADIUS,
        THREADS,
        TABLE,
        MAX_CONTACTS,
        OUTPUT,
        FORMAT,
        CHECK,
        STATS,
        NOPTS
    };
    option opts[NOPTS] = {{"--kernel", true, NULL},     {"--input", true, NULL},
                          {"--radius", true, NULL},     {"--threads", true, NULL},
                          {"--table-size", true, NULL}, {"--max-contacts", true, NULL},
                          {"--output", true, NULL},     {"--format", true, NULL},
                          {"--check", false, NULL},     {"--stats", false, NULL}};
    parse_options(argc, argv, opts, NOPTS, pairs_help);
    if (!opts[KERNEL].value || !opts[INPUT].value)
        usage_error("%s is required", opts[KERNEL].value ? "--input" : "--kernel");
    const ns_kernel *kernel = find_kernel(opts[KERNEL].value);
    ns_config cfg = ns_config_default();
    if (opts[THREADS].value) {
        cfg.threads = (int)parse_count("--threads", opts[THREADS].value, 1, 4096);
        omp_set_num_threads(cfg.threads);
    }
    if (opts[TABLE].value)
        cfg.table_size = (size_t)parse_count("--table-size", opts[TABLE].value, 1, UINT32_MAX);
    if (opts[MAX_CONTACTS].value)
        cfg.max_contacts =
            (size_t)parse_count("--max-contacts", opts[MAX_CONTACTS].value, 1, NS_MAX_CONTACTS);
    ns_format format = NS_FORMAT_CSV;
    if (opts[FORMAT].value && strcmp(opts[FORMAT].value, "bin") == 0)
        format = NS_FORMAT_BIN;
    else if (opts[FORMAT].value && strcmp(opts[FORMAT].value, "csv") != 0)
        usage_error("--format '%s' is neither csv nor bin", opts[FORMAT].value);
    float radius = opts[RADIUS].value ? parse_radius(opts[RADIUS].value) : 0.0f;
    const char *path = opts[INPUT].value;

    /* read */
    double t0 = now_ms();
    size_t len;
    char *text = read_file(path, &len);
    ns_particle_file file;
    ns_contact_list contacts;
    ns_contact_list_init(&contacts);
    ns_error err;
    int rc = 0;
    if (ns_particle_file_parse(text, len, &file, &err) != NS_OK) {
        free(text);
        return parse_failure(path, &err);
    }
    double read_ms = now_ms() - t0;
    if (file.columns == 3 && !opts[RADIUS].value) {
        say("%s: the particles have no radius column (x,y,z): give --radius R", path);
        rc = EXIT_USAGE;
        goto done;
    }
    if (file.columns == 4 && opts[RADIUS].value) {
        say("%s: the particles have radii (x,y,z,r): --radius is only for x,y,z files", path);
        rc = EXIT_USAGE;
        goto done;
    }
    ns_particles p = {file.n, file.pos, file.radius, radius};

    /* search */
    double build_ms, query_ms;
    size_t index_bytes;
    rc = search(kernel, &p, &cfg, &contacts, path, text, len, &build_ms, &query_ms, &index_bytes);
    if (rc)
        goto done;
    double t1 = now_ms();
    ns_contact_list_sort(&contacts);
    double sort_ms = now_ms() - t1;

    bool valid = true;
    if (opts[CHECK].value) {
        ns_contact_list ref;
        ns_contact_list_init(&ref);
        rc = search(ns_kernel_find("naive"), &p, &cfg, &ref, path, text, len, NULL, NULL, NULL);
        if (rc == 0) {
            ns_contact_list_sort(&ref);
            valid = same_contacts(kernel->name, &ref, &contacts);
        }
        ns_contact_list_free(&ref);
        if (rc)
            goto done;
    }

    /* write */
    double t2 = now_ms();
    output out;
    open_output(&out, opts[OUTPUT].value);
    rc = valid ? 0 : EXIT_INVALID;
    if (ns_contacts_write(out.f, &contacts, format, &err) != NS_OK) {
        say("%s: %s", out.path ? out.path : "standard output", err.message);
        discard_output(&out);
        rc = EXIT_FAIL;
    } else if (!commit_output(&out)) {
        rc = EXIT_FAIL;
    }
    double write_ms = now_ms() - t2;

    if (opts[STATS].value) {
        fprintf(stderr,
                "particles          %zu\n"
                "contacts           %zu\n"
                "contacts/particle  %.3f\n"
                "read ms            %.3f\n"
                "build ms           %.3f\n"
                "query ms           %.3f\n"
                "sort ms            %.3f\n"
                "write ms           %.3f\n"
                "index bytes        %zu\n"
                "kernel             %s (%d threads)\n",
                p.n, contacts.count, p.n ? 2.0 * (double)contacts.count / (double)p.n : 0.0,
                read_ms, build_ms, query_ms, sort_ms, write_ms, index_bytes, kernel->name,
                kernel->parallel ? (cfg.threads ? cfg.threads : omp_get_max_threads()) : 1);
    }
done:
    ns_contact_list_free(&contacts);
    ns_particle_file_free(&file);
    free(text);
    return rc;
}

static const char sim_help[] =
    "Usage: nsearch sim (--n N [--layout NAME] [--seed S] | --input FILE) [--kernel NAME]\n"
    "                   [--frames F]\n"
    "                   [--dt DT] [--iterations K] [--skin D] [--threads T]\n"
    "                   [--output-dir DIR] [--every K] [--stats]\n"
    "Simulates N spheres under gravity (9.81 along -z) in a closed box: each frame\n"
    "predicts positions (integrate), finds the contacts with a kernel (search), pushes\n"
    "overlapping pairs apart and clamps centres to the box (resolve; position-based\n"
    "dynamics). The same input gives bit-identical frames with any kernel and any\n"
    "thread count.\n"
    "\n"
    "  --n N            particles (1 to 100000000)\n"
    "  --layout NAME    where they start: a workload (see 'nsearch workloads') at twice its\n"
    "                   spacing in x and y and 8 times in z, in a box with room of two radii\n"
    "                   around it (default uniform); 'settled' starts from a resting pile\n"
    "  --seed S         the layout's seed (default 1)\n"
    "  --input FILE     start from a particle file with radii (x,y,z,r), e.g. a frame or\n"
    "                   'nsearch gen --workload settled', in a box around the spheres with\n"
    "                   room of four radii above them\n"
    "  --kernel NAME    the search (default grid_sorted; see 'nsearch kernels')\n"
    "  --frames F       frames to run (default 100)\n"
    "  --dt DT          seconds per frame (default 0.01)\n"
    "  --iterations K   projection passes per frame (default 10)\n"
    "  --skin D         reuse each search across frames with a skin of D length units,\n"
    "                   rebuilt when a particle has moved 0.45 D (default 0: search every\n"
    "                   frame)\n"
    "  --threads T      threads for the parallel kernels and the simulation (T >= 1;\n"
    "                   default OpenMP's)\n"
    "  --output-dir DIR write frames 0, K, 2K, ... and the last as DIR/frame-NNNNNN.csv\n"
    "                   (particle files x,y,z,r; 'nsearch pairs' reads them) and the box as\n"
    "                   DIR/box.csv (lo_x,lo_y,lo_z,hi_x,hi_y,hi_z); DIR must exist\n"
    "  --every K        with --output-dir: every K-th frame (default 1)\n"
    "  --stats          print per-frame times (ms, means over the frames), fps and the state\n"
    "                   at the end on standard error\n";

static double parse_number(const char *name, const char *s, double lo, double hi)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi))
        usage_error("%s '%s' is not a number from %g to %g", name, s, lo, hi);
    return v;
}

/* Writes one particle file (or the box) through a temporary; false on failure. */
static bool write_frame(const char *dir, size_t frame, const ns_particles *p)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/frame-%06zu.csv", dir, frame) >= (int)sizeof path) {
        say("%s: the path is too long", dir);
        return false;
    }
    output out;
    open_output(&out, path);
    ns_error err;
    if (ns_particles_write(out.f, p, &err) != NS_OK) {
        say("%s: %s", path, err.message);
        discard_output(&out);
        return false;
    }
    return commit_output(&out);
}

static bool write_box(const char *dir, const ns_sim_params *prm)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/box.csv", dir) >= (int)sizeof path) {
        say("%s: the path is too long", dir);
        return false;
    }
    output out;
    open_output(&out, path);
    fprintf(out.f, "lo_x,lo_y,lo_z,hi_x,hi_y,hi_z\n%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n",
            (double)prm->box_lo[0], (double)prm->box_lo[1], (double)prm->box_lo[2],
            (double)prm->box_hi[0], (double)prm->box_hi[1], (double)prm->box_hi[2]);
    return commit_output(&out);
}

/* The largest overlap of any pair as a share of its smaller radius. */
static double worst_overlap(size_t n, const float *pos, const float *radius)
{
    ns_particles p = {.n = n, .pos = pos, .radius = radius};
    ns_contact_list c;
    ns_contact_list_init(&c);
    double worst = 0.0;
    if (ns_find_contacts(ns_kernel_find("grid_sorted"), &p, NULL, &c, NULL) != NS_OK)
        worst = NAN;
    for (size_t k = 0; k < c.count; k++) {
        float a = radius[c.items[k].i], b = radius[c.items[k].j], smaller = a < b ? a : b;
        double share = smaller > 0.0f ? (double)c.items[k].overlap / smaller : 0.0;
        worst = share > worst ? share : worst;
    }
    ns_contact_list_free(&c);
    return worst;
}

static int cmd_sim(int argc, char **argv)
{
    enum {
        N,
        INPUT,
        LAYOUT,
        SEED,
        KERNEL,
        FRAMES,
        DT,
        ITERATIONS,
        SKIN,
        THREADS,
        DIR,
        EVERY,
        STATS,
        NOPTS
    };
    option opts[NOPTS] = {
        {"--n", true, NULL},       {"--input", true, NULL},      {"--layout", true, NULL},
        {"--seed", true, NULL},    {"--kernel", true, NULL},     {"--frames", true, NULL},
        {"--dt", true, NULL},      {"--iterations", true, NULL}, {"--skin", true, NULL},
        {"--threads", true, NULL}, {"--output-dir", true, NULL}, {"--every", true, NULL},
        {"--stats", false, NULL}};
    parse_options(argc, argv, opts, NOPTS, sim_help);
    const char *input = opts[INPUT].value;
    if (!opts[N].value == !input)
        usage_error(input ? "--n and --input exclude each other" : "--n or --input is required");
    if (input && opts[LAYOUT].value)
        usage_error("--layout and --input exclude each other");
    const char *layout = opts[LAYOUT].value ? opts[LAYOUT].value : "uniform";
    const ns_workload *w = input ? NULL : ns_workload_find(layout);
    bool settled = !input && strcmp(layout, NS_SETTLED_NAME) == 0;
    if (!input && !w && !settled)
        usage_error("unknown layout '%s' (see 'nsearch workloads')", layout);
    ns_particle_file file = {0};
    size_t n;
    if (input) {
        size_t len;
        char *text = read_file(input, &len);
        ns_error perr;
        ns_status parsed = ns_particle_file_parse(text, len, &file, &perr);
        free(text);
        if (parsed != NS_OK)
            return parse_failure(input, &perr);
        if (file.columns != 4 || file.n == 0) {
            say("%s: the simulation needs particles with radii (x,y,z,r)", input);
            ns_particle_file_free(&file);
            return EXIT_USAGE;
        }
        n = file.n;
    } else {
        n = (size_t)parse_count("--n", opts[N].value, 1, 100000000);
    }
    uint64_t seed = opts[SEED].value ? parse_count("--seed", opts[SEED].value, 0, ULLONG_MAX) : 1;
    const ns_kernel *kernel = find_kernel(opts[KERNEL].value ? opts[KERNEL].value : "grid_sorted");
    size_t frames = opts[FRAMES].value
                        ? (size_t)parse_count("--frames", opts[FRAMES].value, 0, 100000000)
                        : 100;
    ns_sim_params prm = ns_sim_params_default();
    if (opts[DT].value)
        prm.dt = (float)parse_number("--dt", opts[DT].value, 1e-6, 1.0);
    if (opts[ITERATIONS].value)
        prm.iterations = (int)parse_count("--iterations", opts[ITERATIONS].value, 1, 10000);
    if (opts[SKIN].value)
        prm.skin = (float)parse_number("--skin", opts[SKIN].value, 0.0, 1e6);
    ns_config cfg = ns_config_default();
    if (opts[THREADS].value) {
        cfg.threads = (int)parse_count("--threads", opts[THREADS].value, 1, 4096);
        omp_set_num_threads(cfg.threads);
    }
    const char *dir = opts[DIR].value;
    size_t every =
        opts[EVERY].value ? (size_t)parse_count("--every", opts[EVERY].value, 1, 100000000) : 1;
    if (opts[EVERY].value && !dir)
        usage_error("--every needs --output-dir");
    if (dir) {
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            usage_error("--output-dir '%s' is not a folder", dir);
    }

    float *pos = malloc(3 * n * sizeof(float)), *radius = malloc(n * sizeof(float));
    ns_sim *sim = NULL;
    ns_error err;
    int rc = 0;
    if (!pos || !radius) {
        say("out of memory for %zu particles", n);
        rc = EXIT_FAIL;
        goto done;
    }
    if (settled) {
        if (ns_sim_settled(n, seed, cfg.threads, pos, radius, &err) != NS_OK) {
            say("layout settled: %s", err.message);
            rc = EXIT_FAIL;
            goto done;
        }
        ns_sim_box_around(n, pos, radius, 0.0f, 4.0f, prm.box_lo, prm.box_hi);
    } else if (w) {
        ns_sim_spawn(w, n, seed, pos, radius, prm.box_lo, prm.box_hi);
    } else {
        memcpy(pos, file.pos, 3 * n * sizeof(float));
        memcpy(radius, file.radius, n * sizeof(float));
        ns_sim_box_around(n, pos, radius, 0.0f, 4.0f, prm.box_lo, prm.box_hi);
    }
    if (ns_sim_create(kernel, &cfg, &prm, n, pos, radius, &sim, &err) != NS_OK) {
        say("%s: %s (%s)", kernel->name, err.message, ns_status_str(err.status));
        rc = err.status == NS_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_FAIL;
        goto done;
    }
    ns_particles state = {.n = n, .pos = ns_sim_positions(sim), .radius = ns_sim_radii(sim)};
    if (dir && (!write_box(dir, &prm) || !write_frame(dir, 0, &state))) {
        rc = EXIT_FAIL;
        goto done;
    }
    double released0 = ns_sim_potential_energy(sim);
    double search_s = 0.0, resolve_s = 0.0, integrate_s = 0.0;
    size_t contacts = 0, rebuilds = 0;
    for (size_t f = 1; f <= frames; f++) {
        ns_sim_frame fr;
        if (ns_sim_step(sim, &fr, &err) != NS_OK) {
            say("frame %zu: %s: %s (%s)", f, kernel->name, err.message, ns_status_str(err.status));
            rc = EXIT_FAIL;
            goto done;
        }
        search_s += fr.search_s, resolve_s += fr.resolve_s, integrate_s += fr.integrate_s;
        contacts += fr.contacts;
        rebuilds += fr.rebuilt;
        if (dir && (f % every == 0 || f == frames) && !write_frame(dir, f, &state)) {
            rc = EXIT_FAIL;
            goto done;
        }
    }
    if (opts[STATS].value) {
        double per = frames ? 1e3 / (double)frames : 0.0,
               total = search_s + resolve_s + integrate_s;
        double released = released0 - ns_sim_potential_energy(sim);
        fprintf(stderr,
                "particles          %zu\n"
                "kernel             %s (%d threads)\n"
                "frames             %zu\n"
                "contacts/frame     %.1f\n"
                "search ms          %.4f\n"
                "resolve ms         %.4f\n"
                "integrate ms       %.4f\n"
                "frame ms           %.4f\n"
                "fps                %.2f\n"
                "search share       %.3f\n"
                "searches rebuilt   %zu\n"
                "kinetic/released   %.3g\n"
                "max overlap/r      %.4f\n",
                n, kernel->name, cfg.threads ? cfg.threads : omp_get_max_threads(), frames,
                frames ? (double)contacts / (double)frames : 0.0, search_s * per, resolve_s * per,
                integrate_s * per, total * per, total > 0.0 ? (double)frames / total : 0.0,
                total > 0.0 ? search_s / total : 0.0, rebuilds,
                released > 0.0 ? ns_sim_kinetic_energy(sim) / released : 0.0,
                worst_overlap(n, state.pos, state.radius));
    }
done:
    ns_sim_destroy(sim);
    ns_particle_file_free(&file);
    free(pos);
    free(radius);
    return rc;
}

/* Fault injection for the tests (tests/cli): NSEARCH_FAIL_ALLOC=K makes the
 * library's K-th allocation and every later one fail, as on a machine out
 * of memory; the tool must then exit 1 with a message and leave no file. */
static atomic_long alloc_calls;
static long alloc_fail_at;

static bool alloc_fails(void)
{
    return alloc_fail_at > 0 && atomic_fetch_add(&alloc_calls, 1) + 1 >= alloc_fail_at;
}

static void *failing_malloc(size_t size, void *ctx)
{
    (void)ctx;
    return alloc_fails() ? NULL : malloc(size);
}

static void *failing_realloc(void *ptr, size_t size, void *ctx)
{
    (void)ctx;
    return alloc_fails() ? NULL : realloc(ptr, size);
}

static void plain_free(void *ptr, void *ctx)
{
    (void)ctx;
    free(ptr);
}

static void install_fault_injection(void)
{
    const char *k = getenv("NSEARCH_FAIL_ALLOC");
    if (!k || !*k)
        return;
    alloc_fail_at = strtol(k, NULL, 10);
    static const ns_allocator hooks = {failing_malloc, failing_realloc, plain_free, NULL};
    ns_set_allocator(&hooks);
}

int main(int argc, char **argv)
{
    install_fault_injection(); /* before any other library call */
    sigemptyset(&exit_signals);
    sigaddset(&exit_signals, SIGINT);
    sigaddset(&exit_signals, SIGTERM);
    sigaddset(&exit_signals, SIGHUP);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    if (argc < 2)
        usage_error("no command");
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        fputs(main_help, stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("nsearch %s\n", NS_VERSION_STRING);
        return 0;
    }
    static char name[64];
    snprintf(name, sizeof name, "%s", cmd);
    command = name;
    if (strcmp(cmd, "kernels") == 0 || strcmp(cmd, "workloads") == 0) {
        parse_options(argc - 2, argv + 2, NULL, 0,
                      cmd[0] == 'k' ? "Usage: nsearch kernels\nLists the kernels: name, then "
                                      "a one-line description.\n"
                                    : "Usage: nsearch workloads\nLists the workload generators: "
                                      "name, then a one-line description.\n");
        cmd[0] == 'k' ? list_kernels() : list_workloads();
        output out = {NULL, stdout};
        return commit_output(&out) ? 0 : EXIT_FAIL;
    }
    if (strcmp(cmd, "gen") == 0)
        return cmd_gen(argc - 2, argv + 2);
    if (strcmp(cmd, "pairs") == 0)
        return cmd_pairs(argc - 2, argv + 2);
    if (strcmp(cmd, "sim") == 0)
        return cmd_sim(argc - 2, argv + 2);
    command = NULL;
    usage_error("unknown command '%s'", cmd);
    return EXIT_USAGE;
}

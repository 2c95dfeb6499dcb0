/* nsearch-ab: two builds of the library timed side by side in one process.
 *
 *     nsearch-ab --a LIB.so --b LIB.so [--kernel K] [--workload W] [--n N]
 *                [--threads T] [--rounds R] [--repetitions M] [--min-time S]
 *
 * On a shared VM a process's times can settle a fifth apart from the next
 * process's (a neighbour on the cache or the memory, the vCPUs placed
 * apart: docs/comparing.md, "What a shared VM can and cannot tell"), more
 * than a kernel change of a few percent: two builds measured in
 * separate processes compare the processes, not the builds. Here both
 * libraries are loaded (dlopen, each with its own symbols) into one process
 * and alternate: in each round an index of each, then their repetitions
 * interleaved a, b, a, b ... (b first in every other round), each
 * repetition the same search repeated until it has run at least S seconds
 * (build + query of the reused index, as the sweep times it). Whatever state
 * the machine is in, both builds meet it. Each round's indexes and contact
 * lists are new, so where their memory lands (and whether on huge pages)
 * is drawn again each round rather than fixed for one build for the whole
 * process. harness/ab.py turns the rounds
 * into a ratio with its interval.
 *
 * Both libraries must be built from the same public header (run_all.sh --ab
 * checks it): the configuration and the lists cross from one to the other.
 * Both searches must give the same contacts, bit for bit, or nothing is
 * timed (exit 1).
 *
 * Output: one JSON object on stdout (the options, the searches per
 * repetition, the contacts, and per round which library went first and each
 * library's repetitions in ms). Exit status: 0 done, 1 a library failed or
 * the two disagree, 2 a usage error or a library that cannot be loaded. */
#define _POSIX_C_SOURCE 200809L
#include "clock.h"
#include "nsearch.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The functions a side needs, found in its library. */
typedef struct side {
    const char *path;
    const ns_kernel *(*kernel_find)(const char *);
    ns_config (*config_default)(void);
    ns_status (*index_create)(const ns_kernel *, const ns_config *, ns_index **, ns_error *);
    ns_status (*index_build)(ns_index *, const ns_particles *, ns_error *);
    ns_status (*index_query)(ns_index *, ns_contact_list *, ns_error *);
    void (*index_destroy)(ns_index *);
    void (*list_sort)(ns_contact_list *);
    void (*list_free)(ns_contact_list *);
    ns_status (*workload_generate)(const char *, size_t, uint64_t, int, float *, float *,
                                   ns_error *);
    const ns_kernel *kernel;
    ns_index *index;
    ns_contact_list list;
} side;

typedef struct options {
    const char *a, *b, *kernel, *workload;
    size_t n;
    int threads, rounds, repetitions;
    double min_time;
} options;

static void usage_error(const char *fmt, const char *what)
{
    fprintf(stderr, "nsearch-ab: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n");
    exit(2);
}

/* A symbol of the library as a function pointer (through memcpy: ISO C has
 * no cast from an object pointer to a function pointer). */
static void find(void *lib, const char *path, const char *name, void *fn, size_t size)
{
    void *p = dlsym(lib, name);
    if (!p) {
        fprintf(stderr, "nsearch-ab: %s has no %s\n", path, name);
        exit(2);
    }
    memcpy(fn, &p, size);
}

#define FIND(s, lib, field, name) find(lib, (s)->path, name, &(s)->field, sizeof(s)->field)

static void load(side *s, const char *path)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "nsearch-ab: cannot load %s: %s\n", path, dlerror());
        exit(2);
    }
    FIND(s, lib, kernel_find, "ns_kernel_find");
    FIND(s, lib, config_default, "ns_config_default");
    FIND(s, lib, index_create, "ns_index_create");
    FIND(s, lib, index_build, "ns_index_build");
    FIND(s, lib, index_query, "ns_index_query");
    FIND(s, lib, index_destroy, "ns_index_destroy");
    FIND(s, lib, list_sort, "ns_contact_list_sort");
    FIND(s, lib, list_free, "ns_contact_list_free");
    FIND(s, lib, workload_generate, "ns_workload_generate");
}

static void fail(const side *s, const char *what, const ns_error *err)
{
    fprintf(stderr, "nsearch-ab: %s: %s failed: %s\n", s->path, what, err->message);
    exit(1);
}


static void open_index(side *s, const options *o)
{
    ns_config cfg = s->config_default();
    cfg.threads = o->threads;
    ns_error err;
    if (s->index_create(s->kernel, &cfg, &s->index, &err) != NS_OK)
        fail(s, "ns_index_create", &err);
}

/* One search: the index built and queried (the list reused). */
static void search(side *s, const ns_particles *p)
{
    ns_error err;
    if (s->index_build(s->index, p, &err) != NS_OK)
        fail(s, "ns_index_build", &err);
    if (s->index_query(s->index, &s->list, &err) != NS_OK)
        fail(s, "ns_index_query", &err);
}

/* The mean ms of k searches. */
static double repetition(side *s, const ns_particles *p, long k)
{
    double t = tool_seconds();
    for (long i = 0; i < k; i++)
        search(s, p);
    return (tool_seconds() - t) * 1e3 / (double)k;
}

static long whole(const char *name, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || end == v || *end || x < lo || x > hi) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s '%%s' is not a whole number in [%ld, %ld]", name, lo, hi);
        usage_error(msg, v);
    }
    return x;
}

static options parse(int argc, char **argv)
{
    options o = {NULL, NULL, "grid_sorted", "uniform", 100000, 1, 12, 5, 0.02};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc)
            usage_error("%s needs a value (or is unknown)", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--a"))
            o.a = v;
        else if (!strcmp(a, "--b"))
            o.b = v;
        else if (!strcmp(a, "--kernel"))
            o.kernel = v;
        else if (!strcmp(a, "--workload"))
            o.workload = v;
        else if (!strcmp(a, "--n"))
            o.n = (size_t)whole(a, v, 2, 1L << 31);
        else if (!strcmp(a, "--threads"))
            o.threads = (int)whole(a, v, 1, 4096);
        else if (!strcmp(a, "--rounds"))
            o.rounds = (int)whole(a, v, 2, 100000);
        else if (!strcmp(a, "--repetitions"))
            o.repetitions = (int)whole(a, v, 1, 100000);
        else if (!strcmp(a, "--min-time")) {
            char *end;
            o.min_time = strtod(v, &end);
            if (end == v || *end || !(o.min_time >= 0.0 && o.min_time <= 60.0))
                usage_error("--min-time '%s' is not a number of seconds in [0, 60]", v);
        } else
            usage_error("unknown option %s", a);
    }
    if (!o.a || !o.b)
        usage_error("%s", "--a and --b (the two libraries) are needed");
    return o;
}

/* A JSON string (a path may hold any byte but NUL). */
static void print_string(const char *v)
{
    putchar('"');
    for (const unsigned char *c = (const unsigned char *)v; *c; c++)
        if (*c == '"' || *c == '\\')
            printf("\\%c", *c);
        else if (*c < 0x20)
            printf("\\u%04x", *c);
        else
            putchar(*c);
    putchar('"');
}

static void print_times(const char *name, const double *t, int m)
{
    printf("\"%s\": [", name);
    for (int k = 0; k < m; k++)
        printf("%s%.6f", k ? ", " : "", t[k]);
    printf("]");
}

int main(int argc, char **argv)
{
    options o = parse(argc, argv);
    side s[2];
    load(&s[0], o.a);
    load(&s[1], o.b);
    for (int k = 0; k < 2; k++)
        if (!(s[k].kernel = s[k].kernel_find(o.kernel)))
            usage_error("no kernel %s in one of the libraries", o.kernel);

    float *pos = malloc(3 * o.n * sizeof *pos), *radius = malloc(o.n * sizeof *radius);
    double *times = malloc(2 * (size_t)o.repetitions * sizeof *times);
    if (!pos || !radius || !times) {
        fprintf(stderr, "nsearch-ab: out of memory for %zu particles\n", o.n);
        return 1;
    }
    ns_error err;
    if (s[0].workload_generate(o.workload, o.n, 1, o.threads, pos, radius, &err) != NS_OK)
        usage_error("%s", err.message);
    ns_particles p = {.n = o.n, .pos = pos, .radius = radius};

    /* the same contacts from both, bit for bit, and how many searches make
     * a repetition of at least min_time */
    long k = 1;
    for (int i = 0; i < 2; i++) {
        open_index(&s[i], &o);
        search(&s[i], &p);
        double t = repetition(&s[i], &p, 1) / 1e3;
        if (t > 0.0 && o.min_time / t > (double)k)
            k = (long)ceil(o.min_time / t);
        s[i].list_sort(&s[i].list);
    }
    if (s[0].list.count != s[1].list.count ||
        (s[0].list.count &&
         memcmp(s[0].list.items, s[1].list.items, s[0].list.count * sizeof(ns_contact)))) {
        fprintf(stderr, "nsearch-ab: the two libraries' contacts differ (%zu and %zu)\n",
                s[0].list.count, s[1].list.count);
        return 1;
    }
    size_t contacts = s[0].list.count;
    for (int i = 0; i < 2; i++)
        s[i].index_destroy(s[i].index);

    printf("{\"tool\": \"nsearch-ab\", \"a\": ");
    print_string(o.a);
    printf(", \"b\": ");
    print_string(o.b);
    printf(", \"kernel\": \"%s\", \"workload\": \"%s\", \"n\": %zu, \"threads\": %d, "
           "\"min_time\": %g, \"searches_per_repetition\": %ld, \"contacts\": %zu, "
           "\"rounds\": [",
           o.kernel, o.workload, o.n, o.threads, o.min_time, k, contacts);
    for (int r = 0; r < o.rounds; r++) {
        int first = r % 2;
        for (int i = 0; i < 2; i++) {
            open_index(&s[i], &o);
            search(&s[i], &p); /* untimed: the index's and the list's memory */
        }
        for (int m = 0; m < o.repetitions; m++)
            for (int j = 0; j < 2; j++) {
                int i = j ? 1 - first : first;
                times[(size_t)i * (size_t)o.repetitions + (size_t)m] = repetition(&s[i], &p, k);
            }
        for (int i = 0; i < 2; i++) { /* each round's memory placed anew */
            s[i].index_destroy(s[i].index);
            s[i].list_free(&s[i].list);
        }
        printf("%s\n  {\"first\": \"%s\", ", r ? "," : "", first ? "b" : "a");
        print_times("a_ms", times, o.repetitions);
        printf(", ");
        print_times("b_ms", times + o.repetitions, o.repetitions);
        printf("}");
        fflush(stdout);
    }
    printf("]}\n");
    for (int i = 0; i < 2; i++)
        s[i].list_free(&s[i].list);
    free(pos);
    free(radius);
    free(times);
    return 0;
}

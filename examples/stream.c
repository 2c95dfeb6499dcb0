/* stream.c - a search too large to list: the contacts of n particles
 * consumed as they are found (here, the sum of their overlaps), through the
 * streaming query, so the list of contacts is never in memory.
 *
 *     stream [N [THREADS]] [--check]
 *
 * N uniform particles (default 1,000,000; the uniform workload: about 29
 * contacts per particle). Prints the contacts, the sum of overlaps, the
 * time of the build and of the streamed query, and the process's peak
 * memory per particle. --check also runs the ordinary query into a list and
 * requires the same contacts in the same order (the same count and sum, bit
 * for bit). */
#define _DEFAULT_SOURCE /* getrusage, clock_gettime */
#include <nsearch.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct consumer {
    size_t contacts;
    double overlap_sum;
} consumer;

/* Called with each block of contacts, in the query's order. */
static bool consume(const ns_contact *c, size_t count, void *user)
{
    consumer *s = user;
    for (size_t k = 0; k < count; k++)
        s->overlap_sum += c[k].overlap;
    s->contacts += count;
    return true; /* false would end the query here */
}

static void fail(const char *what, const ns_error *err)
{
    fprintf(stderr, "stream: %s: %s\n", what, err->message);
    exit(1);
}

int main(int argc, char **argv)
{
    size_t n = 1000000;
    int threads = 0; /* OpenMP's default */
    bool check = false;
    for (int a = 1, at = 0; a < argc; a++) {
        if (strcmp(argv[a], "--check") == 0)
            check = true;
        else if (at++ == 0)
            n = strtoull(argv[a], NULL, 10);
        else
            threads = atoi(argv[a]);
    }
    float *pos = malloc(3 * n * sizeof(float) + 1), *radius = malloc(n * sizeof(float) + 1);
    ns_error err;
    if (!pos || !radius) {
        fprintf(stderr, "stream: out of memory for %zu particles\n", n);
        return 1;
    }
    if (ns_workload_generate("uniform", n, 1, threads, pos, radius, &err) != NS_OK)
        fail("generate", &err);
    ns_particles particles = {.n = n, .pos = pos, .radius = radius};

    ns_config config = ns_config_default();
    config.threads = threads;
    ns_index *index;
    if (ns_index_create(ns_kernel_find("grid_sorted"), &config, &index, &err) != NS_OK)
        fail("index", &err);
    double t0 = now();
    if (ns_index_build(index, &particles, &err) != NS_OK)
        fail("build", &err);
    double t1 = now();
    consumer sum = {0, 0.0};
    if (ns_index_query_stream(index, consume, &sum, &err) != NS_OK)
        fail("query", &err);
    double t2 = now();
    ns_index_info info;
    ns_index_get_info(index, &info);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("particles          %zu\n"
           "contacts           %zu\n"
           "overlap sum        %.17g\n"
           "build s            %.3f\n"
           "streamed query s   %.3f\n"
           "threads            %d\n"
           "index bytes        %zu\n"
           "peak bytes         %.0f (%.1f per particle)\n",
           n, sum.contacts, sum.overlap_sum, t1 - t0, t2 - t1, info.threads, info.bytes,
           (double)usage.ru_maxrss * 1024.0, (double)usage.ru_maxrss * 1024.0 / (double)n);

    int status = 0;
    if (check) { /* the ordinary query: the same contacts, in the same order */
        ns_contact_list list;
        ns_contact_list_init(&list);
        if (ns_index_query(index, &list, &err) != NS_OK)
            fail("query into a list", &err);
        consumer whole = {0, 0.0};
        consume(list.items, list.count, &whole);
        bool same = whole.contacts == sum.contacts && whole.overlap_sum == sum.overlap_sum;
        printf("check              %s (the list: %zu contacts, sum %.17g)\n",
               same ? "same" : "DIFFERENT", whole.contacts, whole.overlap_sum);
        status = same ? 0 : 1;
        ns_contact_list_free(&list);
    }
    ns_index_destroy(index);
    free(pos);
    free(radius);
    return status;
}

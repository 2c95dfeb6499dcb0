/* reference.c - the particles and the references every configuration is
 * checked against (docs/harness.md, "Validation before timing"): the
 * particles of a (workload, n), from the workload cache for the costly
 * ones; naive's contacts up to REFERENCE_MAX_N, kept in --reference-dir
 * for the other processes of a sweep (a file per workload and n, used only
 * by the executable that wrote it); above it the table's checked chain.
 * The last (workload, n) is the run's reference_cache, computed once and
 * shared by every configuration of it (run_config calls prepare); the
 * difference of two sorted contact lists, described, is shared with the
 * runner's validation. */
#define _GNU_SOURCE /* st_mtim */

#include "bench.h"

#include "clock.h"
#include "workload_cache.h"

#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
size_t first_difference(const ns_contact_list *a, const ns_contact_list *b)
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

void describe_difference(char *buf, size_t size, const char *ref_name, const ns_contact_list *ref,
                         const char *name, const ns_contact_list *got, size_t k)
{
    char a[120], b[120];
    format_contact(a, sizeof a, ref, k);
    format_contact(b, sizeof b, got, k);
    snprintf(buf, size,
             "INVALID vs %s: %zu contacts, reference %zu; first difference at sorted contact "
             "%zu: %s %s, %s %s",
             ref_name, got->count, ref->count, k, ref_name, a, name, b);
}

/* The particles of workload name: a costly one comes from the cache when
 * there is one that passes its check (workload_cache.h); one that fails it is
 * made again, with a warning. */
static void generate(const char *cache_dir, const char *name, size_t n, float *pos, float *radius)
{
    const ns_workload *w = ns_workload_find(name);
    double t0 = omp_get_wtime();
    workload_cache_result kept;
    ns_error err;
    if (workload_cache_generate(w, n, SEED, 0, cache_dir, pos, radius, &kept, &err) != NS_OK)
        die("workload %s n=%zu: %s", w->name, n, err.message);
    /* the sweep relays lines starting "nsearch-bench: warning:" to its console */
    if (kept.reason[0])
        fprintf(stderr, "nsearch-bench: warning: %s failed its check (%s): made again\n", kept.path,
                kept.reason);
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

static void reference_path(char *buf, size_t size, const char *reference_dir, const char *w,
                           size_t n)
{
    snprintf(buf, size, "%s/%s-n%zu.ref", reference_dir, w, n);
}

/* Reads the naive reference of (w, n) from --reference-dir: true when this
 * build wrote one there for the same particles (then it is in cache->reference). */
static bool read_reference(reference_cache *cache, const char *reference_dir, const char *w,
                           size_t n)
{
    char path[PATH_MAX], header[300], line[300];
    reference_path(path, sizeof path, reference_dir, w, n);
    reference_header(header, sizeof header, w, n);
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    unsigned long long count = 0;
    char *end = NULL;
    bool ok = fgets(line, sizeof line, f) && strcmp(line, header) == 0 &&
              fgets(line, sizeof line, f) && (count = strtoull(line, &end, 10), *end == '\n') &&
              count <= (unsigned long long)n * (n - (n > 0)) / 2 &&
              ns_contact_list_reserve(&cache->reference, (size_t)count, NULL) == NS_OK &&
              fread(cache->reference.items, sizeof(ns_contact), (size_t)count, f) == count &&
              fgetc(f) == EOF;
    fclose(f);
    cache->reference.count = ok ? (size_t)count : 0;
    return ok;
}

/* Writes it through a temporary, so another process never reads half. */
static void write_reference(const reference_cache *cache, const char *reference_dir, const char *w,
                            size_t n)
{
    char path[PATH_MAX], header[300];
    reference_path(path, sizeof path, reference_dir, w, n);
    reference_header(header, sizeof header, w, n);
    mkdir(reference_dir, 0777);
    atomic_file a;
    FILE *f = atomic_file_open(&a, path);
    bool ok = f && fputs(header, f) >= 0 && fprintf(f, "%zu\n", cache->reference.count) > 0 &&
              fwrite(cache->reference.items, sizeof(ns_contact), cache->reference.count, f) ==
                  cache->reference.count;
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
static void checked_reference(reference_cache *cache, tally *t, const ns_particles *p,
                              ns_error *err)
{
    const ns_kernel *first = ns_kernel_with_reference(2);
    cache->reference_name = first->name;
    cache->reference_status = reference_search(first, p, &cache->reference, err);
    if (cache->reference_status != NS_OK)
        return;
    ns_contact_list second;
    ns_contact_list_init(&second);
    const ns_kernel *other = NULL;
    ns_status s = NS_ERR_INVALID_ARGUMENT;
    for (int rank = 3; (other = ns_kernel_with_reference(rank)) != NULL; rank++)
        if ((s = reference_search(other, p, &second, err)) == NS_OK)
            break;
    size_t k = s == NS_OK ? first_difference(&cache->reference, &second) : SIZE_MAX;
    if (s != NS_OK) {
        cache->reference_status = s;
    } else if (k != SIZE_MAX) {
        char what[1024]; /* the whole description, then as much as the message holds */
        describe_difference(what, sizeof what, first->name, &cache->reference, other->name, &second,
                            k);
        snprintf(err->message, sizeof err->message, "%.*s", (int)sizeof err->message - 1, what);
        cache->reference_status = NS_ERR_INVALID_INPUT; /* the reference is in doubt */
        t->any_invalid = true;
    } else {
        snprintf(cache->checked_name, sizeof cache->checked_name, "%s (checked against %s)",
                 first->name, other->name);
        cache->reference_name = cache->checked_name;
    }
    ns_contact_list_free(&second);
}

/* The particles and reference for (workload, n), computed once and shared by
 * every kernel: the table's reference (naive) up to REFERENCE_MAX_N, above
 * it the checked chain (hash_serial against grid_dense, or hash_parallel
 * where the grid is refused). */
void prepare(reference_cache *cache, const options *o, tally *t, const char *w, size_t n)
{
    if (cache->workload == w && cache->n == n && cache->pos)
        return;
    free(cache->pos);
    free(cache->radius);
    cache->workload = w;
    cache->n = n;
    cache->generation++;
    cache->pos = malloc(3 * n * sizeof(float) + 1);
    cache->radius = malloc(n * sizeof(float) + 1);
    if (!cache->pos || !cache->radius)
        die("out of memory for %zu particles", n);
    generate(o->cache_dir, w, n, cache->pos, cache->radius);
    ns_particles p = {n, cache->pos, cache->radius, 0.0f};
    ns_error err;
    fprintf(stderr, "nsearch-bench: reference for %s n=%zu ...", w, n);
    double t0 = tool_seconds();
    if (n <= REFERENCE_MAX_N) {
        const ns_kernel *ref = ns_kernel_with_reference(1);
        cache->reference_name = ref->name;
        if (o->reference_dir && read_reference(cache, o->reference_dir, w, n)) {
            cache->reference_status = NS_OK;
            fprintf(stderr, " (read from %s)", o->reference_dir);
        } else {
            cache->reference_status = reference_search(ref, &p, &cache->reference, &err);
            if (o->reference_dir && cache->reference_status == NS_OK)
                write_reference(cache, o->reference_dir, w, n);
        }
    } else {
        checked_reference(cache, t, &p, &err);
    }
    if (cache->reference_status != NS_OK) {
        snprintf(cache->reference_error, sizeof cache->reference_error, "reference %s failed: %s",
                 cache->reference_name, err.message);
        fprintf(stderr, " failed: %s (%.1f s)\n", err.message, tool_seconds() - t0);
    } else {
        fprintf(stderr, " %zu contacts by %s (%.1f s)\n", cache->reference.count,
                cache->reference_name, tool_seconds() - t0);
    }
}

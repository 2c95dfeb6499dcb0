/* core.c - statuses and errors, allocation hooks, input validation,
 * configuration and the contact list. */
/* sysconf(_SC_PHYS_PAGES) for the default contact limit, madvise */
#define _DEFAULT_SOURCE

#include "core.h"

#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#if !defined(MADV_POPULATE_WRITE)
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; C libraries before glibc 2.35 lack the name */
#endif
#endif

/* Statuses and errors */

const char *ns_status_str(ns_status status)
{
    switch (status) {
    case NS_OK: return "ok";
    case NS_ERR_INVALID_ARGUMENT: return "invalid argument";
    case NS_ERR_INVALID_INPUT: return "invalid input";
    case NS_ERR_OUT_OF_MEMORY: return "out of memory";
    case NS_ERR_TOO_LARGE: return "too large";
    case NS_ERR_TOO_MANY_CONTACTS: return "too many contacts";
    case NS_ERR_IO: return "I/O error";
    }
    return "unknown status";
}

ns_status ns__fail(ns_error *err, ns_status status, size_t particle, const char *fmt, ...)
{
    if (err) {
        err->status = status;
        err->particle = particle;
        err->line = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

ns_status ns__fail_oom(ns_error *err, const char *what)
{
    return ns__fail(err, NS_ERR_OUT_OF_MEMORY, NS_NO_PARTICLE, "out of memory allocating %s", what);
}

void ns__ok(ns_error *err)
{
    if (err) {
        err->status = NS_OK;
        err->particle = NS_NO_PARTICLE;
        err->line = 0;
        err->message[0] = '\0';
    }
}

/* Allocation hooks */

/* A large block (a contact list, an index's arrays) is first touched by the
 * search that fills it: one page fault per 4 KiB page, each a trap into the
 * kernel (and out of a virtual machine's guest), which takes a fresh list of
 * a million particles' contacts (352 MB) about as long as the search itself.
 * Advising the kernel to back the block with transparent huge pages (2 MiB)
 * cuts the faults 512-fold where the system allows them ("madvise" or
 * "always" in /sys/kernel/mm/transparent_hugepage/enabled); elsewhere the
 * advice is refused or ignored and nothing changes. Only blocks of at least
 * HUGE_MIN, which malloc maps on their own, are advised: the advice applies
 * to the whole pages inside the block, never to memory beyond it. */
enum { HUGE_MIN = 2u << 20 };

/* The whole pages inside a block [p, p + size) of at least HUGE_MIN:
 * [*lo, *hi), and the page size; 0 when there are none (or the block is
 * smaller, or NULL). */
static uintptr_t whole_pages(const void *p, size_t size, uintptr_t *lo, uintptr_t *hi)
{
    long page = sysconf(_SC_PAGESIZE);
    if (!p || size < HUGE_MIN || page <= 0)
        return 0;
    uintptr_t mask = ~((uintptr_t)page - 1);
    *lo = ((uintptr_t)p + (uintptr_t)page - 1) & mask;
    *hi = ((uintptr_t)p + size) & mask;
    return *hi > *lo ? (uintptr_t)page : 0;
}

static void *advise_huge(void *p, size_t size)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    uintptr_t lo, hi;
    if (whole_pages(p, size, &lo, &hi))
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE); /* advice: a refusal is fine */
#else
    (void)size;
#endif
    return p;
}

static void *libc_malloc(size_t size, void *ctx)
{
    (void)ctx;
    return advise_huge(malloc(size), size);
}
static void *libc_realloc(void *ptr, size_t size, void *ctx)
{
    (void)ctx;
    return advise_huge(realloc(ptr, size), size);
}
static void libc_free(void *ptr, void *ctx)
{
    (void)ctx;
    free(ptr);
}

static ns_allocator allocator = {libc_malloc, libc_realloc, libc_free, NULL};

/* Pages [a, b) made present and writable: MADV_POPULATE_WRITE (Linux 5.14
 * on), one call the kernel fills in bulk; where the kernel does not know it
 * (EINVAL), or on another system, a byte written on each page. Any other
 * refusal (the memory not there) leaves the pages to the writes that
 * follow, which fault them in as they would have. */
static void touch_pages(uintptr_t a, uintptr_t b, uintptr_t page)
{
#if defined(__linux__)
    int saved = errno; /* the caller's, left as it was */
    bool done = madvise((void *)a, b - a, MADV_POPULATE_WRITE) == 0 || errno != EINVAL;
    errno = saved;
    if (done)
        return;
#endif
    for (uintptr_t q = a; q < b; q += page)
        *(volatile char *)q = 0;
}

/* The whole pages inside [p, p + bytes) made present, the threads sharing
 * them; their contents left undefined. Blocks under HUGE_MIN are left alone
 * (the heap's, mostly touched already). */
static void first_touch(void *p, size_t bytes, int threads)
{
    uintptr_t lo, hi, size = whole_pages(p, bytes, &lo, &hi);
    if (!size || threads < 1)
        return;
    uintptr_t pages = (hi - lo) / size;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < threads; t++) {
        uintptr_t a = lo + pages * (uintptr_t)t / (uintptr_t)threads * size;
        uintptr_t b = lo + pages * (uintptr_t)(t + 1) / (uintptr_t)threads * size;
        if (b > a)
            touch_pages(a, b, size);
    }
}

void ns_set_allocator(const ns_allocator *a)
{
    if (a && a->malloc_fn && a->realloc_fn && a->free_fn)
        allocator = *a;
    else
        allocator = (ns_allocator){libc_malloc, libc_realloc, libc_free, NULL};
}

void *ns__malloc(size_t size)
{
    return allocator.malloc_fn(size ? size : 1, allocator.ctx);
}

void *ns__realloc(void *ptr, size_t size)
{
    return allocator.realloc_fn(ptr, size ? size : 1, allocator.ctx);
}

void ns__free(void *ptr)
{
    if (ptr)
        allocator.free_fn(ptr, allocator.ctx);
}

void *ns__malloc_array(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return ns__malloc(n * size);
}

bool ns__buf_reserve(ns__buf *b, size_t wanted, size_t elem)
{
    if (wanted <= b->capacity)
        return true;
    void *a = ns__malloc_array(wanted, elem);
    if (!a)
        return false;
    ns__free(b->a);
    b->a = a;
    b->capacity = wanted;
    return true;
}

/* n and an eighth more, or n when that would pass most (or overflow): the
 * room a buffer or list grows to (ns__buf_grow, ns__contact_list_grow). */
static size_t with_room(size_t n, size_t most)
{
    size_t more = n + n / 8;
    return more >= n && more <= most ? more : n;
}

bool ns__buf_grow(ns__buf *b, size_t wanted, size_t elem)
{
    return wanted <= b->capacity || ns__buf_reserve(b, with_room(wanted, SIZE_MAX), elem);
}

void ns__buf_free(ns__buf *b)
{
    ns__free(b->a);
    b->a = NULL;
    b->capacity = 0;
}

bool ns__u32s_reserve(ns__u32s *v, size_t wanted)
{
    ns__buf b = {v->a, v->capacity};
    if (!ns__buf_reserve(&b, wanted, sizeof(uint32_t)))
        return false;
    v->a = b.a;
    v->capacity = b.capacity;
    return true;
}

bool ns__u32s_grow(ns__u32s *v, size_t wanted)
{
    return wanted <= v->capacity || ns__u32s_reserve(v, with_room(wanted, SIZE_MAX));
}

void ns__u32s_free(ns__u32s *v)
{
    ns__free(v->a);
    v->a = NULL;
    v->capacity = 0;
}

/* Validation */

ns_status ns__radius_out_of_range(ns_error *err, size_t particle, const char *who, float r)
{
    return ns__fail(err, NS_ERR_INVALID_INPUT, particle,
                    "%s %.9g is outside [%.9g, %.9g] (0 or 2^-60 to 2^60), the range where "
                    "contacts are computed exactly; change the length unit",
                    who, (double)r, (double)NS__RADIUS_MIN, (double)NS__RADIUS_MAX);
}

ns_status ns_particles_validate(const ns_particles *p, ns_error *err)
{
    if (!p)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "particles is NULL");
    if (p->n > NS_MAX_PARTICLES)
        return ns__fail(err, NS_ERR_TOO_LARGE, NS_MAX_PARTICLES,
                        "%zu particles is more than the %zu a uint32_t index can number", p->n,
                        NS_MAX_PARTICLES);
    if (p->n > 0 && !p->pos)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "positions are NULL");
    if (!p->radius && !(isfinite(p->radius_uniform) && p->radius_uniform >= 0.0f))
        return ns__fail(err, NS_ERR_INVALID_INPUT, NS_NO_PARTICLE, /* no one particle's */
                        "uniform radius %g is %s", (double)p->radius_uniform,
                        isfinite(p->radius_uniform) ? "negative" : "not finite");
    if (!p->radius && !ns__radius_in_range(p->radius_uniform))
        return ns__radius_out_of_range(err, NS_NO_PARTICLE, "uniform radius", p->radius_uniform);
    static const char axis[3] = {'x', 'y', 'z'};
    for (size_t i = 0; i < p->n; i++) {
        for (int k = 0; k < 3; k++) {
            float v = p->pos[3 * i + (size_t)k];
            if (!isfinite(v))
                return ns__fail(err, NS_ERR_INVALID_INPUT, i,
                                "particle %zu: coordinate %c = %g is not finite", i, axis[k],
                                (double)v);
        }
        if (p->radius) {
            float r = p->radius[i];
            if (!isfinite(r))
                return ns__fail(err, NS_ERR_INVALID_INPUT, i,
                                "particle %zu: radius %g is not finite", i, (double)r);
            if (r < 0.0f)
                return ns__fail(err, NS_ERR_INVALID_INPUT, i, "particle %zu: radius %g is negative",
                                i, (double)r);
            if (!ns__radius_in_range(r)) {
                char who[48];
                snprintf(who, sizeof who, "particle %zu: radius", i);
                return ns__radius_out_of_range(err, i, who, r);
            }
        }
    }
    ns__ok(err);
    return NS_OK;
}

/* Threads */

int ns_max_threads(void)
{
    int procs = omp_get_num_procs();
    if (procs < 1)
        procs = 1;
    return procs > INT_MAX / NS_THREADS_PER_CORE ? INT_MAX : procs * NS_THREADS_PER_CORE;
}

ns_status ns__resolve_threads(int requested, int *threads, ns_error *err)
{
    int cap = ns_max_threads();
    if (requested < 0)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "threads = %d is negative",
                        requested);
    if (requested > cap)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "threads = %d is more than the %d this machine allows (%d per processor)",
                        requested, cap, NS_THREADS_PER_CORE);
    if (requested == 0) {
        /* OMP_NUM_THREADS beyond INT_MAX reads as 0 or negative */
        int deflt = omp_get_max_threads();
        if (deflt < 1 || deflt > cap)
            return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                            "OpenMP's default of %d threads (OMP_NUM_THREADS) is not between 1 and "
                            "the %d this machine allows (%d per processor); lower OMP_NUM_THREADS "
                            "or set threads",
                            deflt, cap, NS_THREADS_PER_CORE);
        requested = deflt;
    }
    *threads = requested;
    return NS_OK;
}

/* Configuration */

size_t ns_default_max_contacts(void)
{
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) {
        double contacts = (double)pages * (double)page / 4.0 / (double)sizeof(ns_contact);
        if (contacts < (double)NS_MAX_CONTACTS)
            return contacts < 1.0 ? 1 : (size_t)contacts;
    }
#endif
    return NS_MAX_CONTACTS;
}

size_t ns__resolve_max_contacts(size_t configured)
{
    if (configured == 0)
        return ns_default_max_contacts();
    return configured < NS_MAX_CONTACTS ? configured : NS_MAX_CONTACTS;
}

ns_config ns_config_default(void)
{
    ns_config c = {0, 0, NS_DEFAULT_GRID_MAX_BYTES, 0, NULL, false};
    return c;
}

/* Contact list */

bool ns_contact_between(const ns_particles *p, uint32_t i, uint32_t j, ns_contact *out)
{
    if (i > j) {
        uint32_t t = i;
        i = j, j = t;
    }
    const float *pi = p->pos + 3 * (size_t)i, *pj = p->pos + 3 * (size_t)j;
    float dx = pj[0] - pi[0], dy = pj[1] - pi[1], dz = pj[2] - pi[2];
    float d2 = ns__distance2(dx, dy, dz);
    float s = p->radius ? p->radius[i] + p->radius[j] : p->radius_uniform + p->radius_uniform;
    if (!ns__touching(d2, s))
        return false;
    ns__contact_fill(i, j, dx, dy, dz, d2, s, out);
    return true;
}

void ns_contact_list_init(ns_contact_list *list)
{
    if (!list)
        return;
    list->items = NULL;
    list->count = 0;
    list->capacity = 0;
}

void ns_contact_list_free(ns_contact_list *list)
{
    if (!list)
        return;
    ns__free(list->items);
    ns_contact_list_init(list);
}

ns_status ns_contact_list_reserve(ns_contact_list *list, size_t wanted, ns_error *err)
{
    if (!list)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "contact list is NULL");
    if (wanted <= list->capacity) {
        ns__ok(err);
        return NS_OK;
    }
    if (wanted > SIZE_MAX / sizeof(ns_contact))
        return ns__fail(err, NS_ERR_TOO_LARGE, NS_NO_PARTICLE, "%zu contacts do not fit in memory",
                        wanted);
    ns_contact *items = ns__realloc(list->items, wanted * sizeof(ns_contact));
    if (!items)
        return ns__fail(err, NS_ERR_OUT_OF_MEMORY, NS_NO_PARTICLE,
                        "out of memory growing the contact list to %zu contacts (%zu bytes)",
                        wanted, wanted * sizeof(ns_contact));
    list->items = items;
    list->capacity = wanted;
    ns__ok(err);
    return NS_OK;
}

/* A fresh contact list's pages, faulted in by the search's own parallel
 * writes, cost about three times what the kernel takes to hand them out in
 * bulk beforehand (docs/harness.md, "What is timed"): the part of the list that
 * growing it brought, up to the filled contacts about to be written, is
 * made present first. A list with room already (a reused one) is left as
 * it is. */
ns_status ns__contact_list_grow(ns_contact_list *list, size_t filled, size_t max_contacts,
                                int threads, ns_error *err)
{
    size_t had = list ? list->capacity : 0;
    ns_status st =
        ns_contact_list_reserve(list, filled <= had ? filled : with_room(filled, max_contacts), err);
    if (st != NS_OK)
        return st;
    size_t end = filled < list->capacity ? filled : list->capacity;
    if (end > had)
        first_touch(list->items + had, (end - had) * sizeof(ns_contact), threads);
    return NS_OK;
}

static int compare_contacts(const void *a, const void *b)
{
    const ns_contact *x = a, *y = b;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    if (x->j != y->j)
        return x->j < y->j ? -1 : 1;
    return 0;
}

/* One bucket's contacts (one i) put in j order: by insertion when short,
 * by qsort otherwise (a crowded pile gives a particle thousands). */
static void sort_bucket(ns_contact *c, size_t count)
{
    if (count > 32) {
        qsort(c, count, sizeof *c, compare_contacts);
        return;
    }
    for (size_t k = 1; k < count; k++) {
        ns_contact x = c[k];
        size_t m = k;
        for (; m > 0 && c[m - 1].j > x.j; m--)
            c[m] = c[m - 1];
        c[m] = x;
    }
}

/* A radix sort by i in two passes that each write to at most 256 places
 * at once (a scatter to one place per particle misses the TLB on almost
 * every contact once there are thousands of particles): by i's high bits
 * into a copy, then each of those parts, a few hundred kilobytes at most
 * for a few million contacts, by i back into the list; each particle's
 * contacts then put in j order where they lie. O(count + n) when it can
 * have the memory (the copy); qsort otherwise. */
enum { SORT_WAYS = 256 };

/* A counting sort of src[0 .. count) by the key (i - base) >> shift (<
 * keys) into dst; start has room for keys + 1, and afterwards start[key] is
 * where key's contacts end in dst (and key + 1's begin). */
static void scatter_by_i(const ns_contact *src, ns_contact *dst, size_t count, uint32_t base,
                         int shift, size_t keys, size_t *start)
{
    memset(start, 0, (keys + 1) * sizeof *start);
    for (size_t k = 0; k < count; k++)
        start[((src[k].i - base) >> shift) + 1]++;
    for (size_t key = 1; key <= keys; key++)
        start[key] += start[key - 1];
    for (size_t k = 0; k < count; k++)
        dst[start[(src[k].i - base) >> shift]++] = src[k];
}

/* src[0 .. count), whose i are base .. base + keys - 1, into dst in (i, j)
 * order; start has room for keys + 1. */
static void sort_part(const ns_contact *src, ns_contact *dst, size_t count, uint32_t base,
                      size_t keys, size_t *start)
{
    scatter_by_i(src, dst, count, base, 0, keys, start);
    for (size_t key = 0, lo = 0; key < keys; key++) {
        sort_bucket(dst + lo, start[key] - lo);
        lo = start[key];
    }
}

void ns_contact_list_sort(ns_contact_list *list)
{
    if (!list || list->count < 2)
        return;
    uint32_t max_index = 0; /* of i and j: a caller's list need not have i < j */
    for (size_t k = 0; k < list->count; k++) {
        const ns_contact *c = &list->items[k];
        uint32_t m = c->i > c->j ? c->i : c->j;
        max_index = m > max_index ? m : max_index;
    }
    size_t keys = (size_t)max_index + 1;
    int shift = 0; /* the parts: i >> shift, fewer than SORT_WAYS */
    while ((max_index >> shift) >= SORT_WAYS)
        shift++;
    size_t part_keys = (size_t)1 << shift;
    size_t *start = list->count >= 256 && keys <= 4 * list->count
                        ? ns__malloc_array(part_keys + 1, sizeof *start)
                        : NULL;
    ns_contact *tmp = start ? ns__malloc_array(list->count, sizeof *tmp) : NULL;
    if (tmp) {
        size_t part[SORT_WAYS + 1];
        scatter_by_i(list->items, tmp, list->count, 0, shift, SORT_WAYS, part);
        for (size_t w = 0, lo = 0; w < SORT_WAYS; w++) {
            if (part[w] > lo)
                sort_part(tmp + lo, list->items + lo, part[w] - lo, (uint32_t)(w << shift),
                          part_keys, start);
            lo = part[w];
        }
    } else {
        qsort(list->items, list->count, sizeof(ns_contact), compare_contacts);
    }
    ns__free(tmp);
    ns__free(start);
}

ns_status ns__too_many_contacts(ns_error *err, size_t max_contacts)
{
    return ns__fail(err, NS_ERR_TOO_MANY_CONTACTS, NS_NO_PARTICLE,
                    "more than %zu contacts (the max_contacts limit)", max_contacts);
}

ns_status ns__list_push_slow(ns_contact_list *list, const ns_contact *c, size_t max_contacts,
                             ns_error *err)
{
    if (list->count >= max_contacts)
        return ns__too_many_contacts(err, max_contacts);
    if (list->count == list->capacity) {
        size_t want = list->capacity < 512 ? 1024 : 2 * list->capacity;
        ns_status s = ns_contact_list_reserve(list, want < max_contacts ? want : max_contacts, err);
        if (s != NS_OK)
            return s;
    }
    list->items[list->count++] = *c;
    return NS_OK;
}

int ns__grid_set_cells(ns__grid *g)
{
    g->cell = 2.0 * (double)g->max_radius * (1.0 + 0x1p-20);
    g->inv_cell = 1.0 / g->cell;
    for (int k = 0; k < 3; k++) {
        double clo = floor((double)g->lo[k] * g->inv_cell);
        double chi = floor((double)g->hi[k] * g->inv_cell);
        if (!(ns__cell_in_range(clo) && ns__cell_in_range(chi)))
            return k;
        g->cell_lo[k] = (int64_t)clo;
        g->cell_hi[k] = (int64_t)chi;
    }
    return -1;
}

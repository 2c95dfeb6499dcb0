/* core.h - the core layer's private interface (ns__ prefix): errors,
 * allocation, the contact predicate, the search grid and cell hashing,
 * contact lists and per-thread buffers, counting sort. Every layer of the
 * library may use it; it knows no kernel, index, workload or simulation. */
#ifndef NS_CORE_H
#define NS_CORE_H

#include "nsearch.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>

/* Allocation, through the hooks of ns_set_allocator(). */
void *ns__malloc(size_t size);
void *ns__realloc(void *ptr, size_t size);
void ns__free(void *ptr);
/* n * size with overflow check; NULL on overflow or failure. */
void *ns__malloc_array(size_t n, size_t size);

/* A buffer that grows only when needed, so rebuilds reuse memory; capacity
 * counts elements of the size the caller passes. */
typedef struct ns__buf {
    void *a;
    size_t capacity;
} ns__buf;
/* Ensures capacity >= wanted elements of elem bytes (old content is not
 * kept); false when out of memory (the old block is kept). */
bool ns__buf_reserve(ns__buf *b, size_t wanted, size_t elem);
/* The same with room to grow: short of wanted, b grows to wanted and an
 * eighth, so that a buffer sized at every search by a count that creeps up
 * (the contacts of a simulation's frames) is not reallocated every time. */
bool ns__buf_grow(ns__buf *b, size_t wanted, size_t elem);
void ns__buf_free(ns__buf *b);

/* The same for index arrays, typed. */
typedef struct ns__u32s {
    uint32_t *a;
    size_t capacity;
} ns__u32s;
/* Ensures capacity >= wanted (old content is not kept); false when out of memory. */
bool ns__u32s_reserve(ns__u32s *v, size_t wanted);
bool ns__u32s_grow(ns__u32s *v, size_t wanted);
void ns__u32s_free(ns__u32s *v);

/* The range of radii where the float predicate below is exact: 0, or
 * [NS__RADIUS_MIN, NS__RADIUS_MAX] = [2^-60, 2^60] (see nsearch.h). Then
 * s = r_i + r_j <= 2^61, so s * s <= 2^122 is finite, and s * s >= 2^-120 is
 * a normal float (no underflow). */
#define NS__RADIUS_MIN 0x1p-60f
#define NS__RADIUS_MAX 0x1p60f
static inline bool ns__radius_in_range(float r)
{
    return r == 0.0f || (r >= NS__RADIUS_MIN && r <= NS__RADIUS_MAX);
}
/* Fills err with the refusal of a radius outside that range; who is
 * "particle 3: radius" or "uniform radius" (particle: the one to name in
 * err). */
ns_status ns__radius_out_of_range(ns_error *err, size_t particle, const char *who, float r);

/* The thread count a call uses: requested (config.threads) when positive,
 * else OpenMP's default (omp_get_max_threads(), i.e. OMP_NUM_THREADS).
 * Refuses (NS_ERR_INVALID_ARGUMENT) a negative count and one above
 * ns_max_threads(), including a default above it, so no parallel region is
 * ever started with more threads than the cap. */
ns_status ns__resolve_threads(int requested, int *threads, ns_error *err);

/* config.max_contacts as a search uses it: 0 is ns_default_max_contacts(),
 * more than NS_MAX_CONTACTS is NS_MAX_CONTACTS. */
size_t ns__resolve_max_contacts(size_t configured);

/* Fills err (when non-NULL) and returns status. */
ns_status ns__fail(ns_error *err, ns_status status, size_t particle, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
ns_status ns__fail_oom(ns_error *err, const char *what);
/* Marks err (when non-NULL) as NS_OK with an empty message. */
void ns__ok(ns_error *err);

/* The grid every kernel searches on, computed once per build for all
 * kernels alike so that refusals are identical: the largest radius, the cell
 * edge, the bounding box and the range of cell coordinates. */
typedef struct ns__grid {
    float max_radius;
    double cell;     /* 2 * max_radius, widened by 2^-20 (see ns__grid_set_cells) */
    double inv_cell; /* 1 / cell */
    float lo[3], hi[3];
    int64_t cell_lo[3], cell_hi[3]; /* floor(lo * inv_cell), floor(hi * inv_cell) */
} ns__grid;

/* The one contact predicate (docs/design.md, "The predicate"), in three pieces so a
 * kernel that keeps positions in its own order (grid_sorted) computes
 * exactly the same values: the squared distance, the test, and the contact.
 * d2 does not depend on the sign of dx, dy, dz, so testing x_i - x_j and
 * then filling from x_j - x_i gives bit-identical results. */
static inline float ns__distance2(float dx, float dy, float dz)
{
    return dx * dx + dy * dy + dz * dz;
}

static inline bool ns__touching(float d2, float s)
{
    return d2 < s * s;
}

/* The contact of particles i < j with dx = x_j - x_i (likewise y, z),
 * d2 = ns__distance2(dx, dy, dz) and s = r_i + r_j, when they touch. */
static inline void ns__contact_fill(uint32_t i, uint32_t j, float dx, float dy, float dz, float d2,
                                    float s, ns_contact *c)
{
    float d = sqrtf(d2);
    c->i = i;
    c->j = j;
    c->overlap = s - d;
    /* Coincident: d2 below the smallest normal float (2^-126, centres closer
     * than about 1.1e-19), where d2 has lost precision (it is subnormal or 0)
     * and (dx, dy, dz) / d would not have unit length. + 0.0f turns a
     * negative zero into +0 and changes nothing else; the selects (not a
     * branch) let a loop of these be vectorised. */
    bool coincident = d2 < FLT_MIN;
    c->nx = coincident ? 0.0f : dx / d + 0.0f;
    c->ny = coincident ? 0.0f : dy / d + 0.0f;
    c->nz = coincident ? 0.0f : dz / d + 0.0f;
}

/* Whether a cell coordinate (floor(x / cell), in double) is within the
 * range the grids accept, where converting it to int64_t is exact. */
static inline bool ns__cell_in_range(double c)
{
    return fabs(c) <= NS_MAX_CELL_COORD;
}

/* Sets g's cell edge from its max_radius (2 * max_radius widened by a
 * relative 2^-20: a contact accepted by the float predicate has
 * |x_j - x_i| < 2 * max_radius exactly, rounding being monotone, and the
 * widening absorbs the rounding of floor(x / cell) in double, so touching
 * particles are never more than one cell apart), its inverse and the range
 * of cell coordinates of its box lo..hi. Returns -1, or the first axis whose
 * cell coordinates would be beyond NS_MAX_CELL_COORD (cell_lo and cell_hi
 * are then not all set). */
int ns__grid_set_cells(ns__grid *g);

/* Integer cell coordinate of x; the grid's range check makes it exact. */
static inline int64_t ns__cell_coord(const ns__grid *g, float x)
{
    return (int64_t)floor((double)x * g->inv_cell);
}

/* Hash of an integer cell into [0, table_size): products with large 64-bit
 * primes in unsigned arithmetic (wrap-around is defined, negative cells
 * included), folded so the low bits reach the high ones, then mapped onto
 * the table by a multiply and shift rather than a division (table_size is at
 * most 2^32 - 1, so the product fits in 64 bits). */
static inline uint32_t ns__hash_cell(int64_t cx, int64_t cy, int64_t cz, size_t table_size)
{
    uint64_t h = (uint64_t)cx * UINT64_C(0x9E3779B185EBCA87) ^
                 (uint64_t)cy * UINT64_C(0xC2B2AE3D27D4EB4F) ^
                 (uint64_t)cz * UINT64_C(0x165667B19E3779F9);
    h ^= h << 29;
    return (uint32_t)(((h >> 32) * (uint64_t)table_size) >> 32);
}

/* Room in list for the filled contacts a search is about to write with
 * threads threads (filled <= max_contacts): a list with less grows to filled
 * and an eighth more, within max_contacts, so that a list reused while its
 * count creeps up (a simulation's, frame after frame) is not reallocated and
 * copied at every search; its new pages up to contact filled made present in
 * parallel first (see core.c). */
ns_status ns__contact_list_grow(ns_contact_list *list, size_t filled, size_t max_contacts,
                                int threads, ns_error *err);

/* Appends to a contact list, growing it; checks max_contacts. */
ns_status ns__list_push_slow(ns_contact_list *list, const ns_contact *c, size_t max_contacts,
                             ns_error *err);
static inline ns_status ns__list_push(ns_contact_list *list, const ns_contact *c,
                                      size_t max_contacts, ns_error *err)
{
    if (list->count < list->capacity && list->count < max_contacts) {
        list->items[list->count++] = *c;
        return NS_OK;
    }
    return ns__list_push_slow(list, c, max_contacts, err);
}
ns_status ns__too_many_contacts(ns_error *err, size_t max_contacts);

/* Per-thread contact buffers for parallel kernels, kept in a kernel's state
 * and reused across queries. Thread t pushes into bufs[t] only. The limit
 * max_contacts is global: a thread whose buffer is full adds what it found
 * since its last visit to a shared total, fails when the total is over the
 * limit, and grows its buffer to at most its contacts plus what the limit
 * still allows (see contact_buffers.c for the memory bound). The first
 * failure (out of memory, over max_contacts) raises a shared flag so every
 * thread can stop early; ns__tbufs_merge() then reports it, or concatenates
 * the buffers into the caller's list. */
typedef struct ns__tbuf {
    ns_contact *items;
    size_t count, capacity;
    size_t published; /* of count, the contacts already added to the shared total */
    ns_status status;
    char pad[64]; /* keep neighbouring threads' counters off one cache line */
} ns__tbuf;

typedef struct ns__tbufs {
    ns__tbuf *bufs;
    int count;
    atomic_int failed;
    atomic_size_t total; /* contacts the threads have published */
} ns__tbufs;

ns_status ns__tbufs_init(ns__tbufs *t, int threads, ns_error *err);
void ns__tbufs_free(ns__tbufs *t);
/* Empties the buffers for a query with this limit (releasing them when an
 * earlier query left more than the limit needs). */
void ns__tbufs_reset(ns__tbufs *t, size_t max_contacts);
size_t ns__tbufs_bytes(const ns__tbufs *t);
/* Appends c to thread's buffer; false (and the flag raised) on failure. */
bool ns__tbuf_push_slow(ns__tbufs *t, int thread, const ns_contact *c, size_t max_contacts);
static inline bool ns__tbuf_push(ns__tbufs *t, int thread, const ns_contact *c, size_t max_contacts)
{
    ns__tbuf *b = &t->bufs[thread];
    if (b->count < b->capacity && b->status == NS_OK) {
        b->items[b->count++] = *c;
        return true;
    }
    return ns__tbuf_push_slow(t, thread, c, max_contacts);
}
/* Has any thread failed? For early exits inside parallel loops. */
bool ns__tbufs_failed(ns__tbufs *t);
/* Replaces list's content with every buffer's contacts. */
ns_status ns__tbufs_merge(ns__tbufs *t, ns_contact_list *list, size_t max_contacts, ns_error *err);

/* Counting sort of particles 0..n by key[i] < nkeys: afterwards bucket k
 * holds entries[start[k] .. start[k+1]), in increasing particle order, and
 * start[nkeys] == n. start has nkeys + 1 entries. */
void ns__counting_sort(const uint32_t *key, size_t n, size_t nkeys, uint32_t *start,
                       uint32_t *entries);

/* Exclusive prefix sum of a[0..n) in place; returns the total. */
size_t ns__exclusive_scan_u32(uint32_t *a, size_t n);
/* The same with a blocked two-pass scan over threads. */
size_t ns__parallel_exclusive_scan_u32(uint32_t *a, size_t n, int threads);

#endif /* NS_CORE_H */

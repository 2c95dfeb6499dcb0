/* internal.h - private helpers shared by the library and the kernels (ns__ prefix). */
#ifndef NS_INTERNAL_H
#define NS_INTERNAL_H

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
void ns__buf_free(ns__buf *b);

/* The same for index arrays, typed. */
typedef struct ns__u32s {
    uint32_t *a;
    size_t capacity;
} ns__u32s;
/* Ensures capacity >= wanted (old content is not kept); false when out of memory. */
bool ns__u32s_reserve(ns__u32s *v, size_t wanted);
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

/* The frame every kernel searches in, computed once per build for all
 * kernels alike so that refusals are identical: the largest radius, the cell
 * edge, the bounding box and the range of cell coordinates. */
typedef struct ns__frame {
    float max_radius;
    double cell;     /* 2 * max_radius, widened by 2^-20 (see core.c) */
    double inv_cell; /* 1 / cell */
    float lo[3], hi[3];
    int64_t cell_lo[3], cell_hi[3]; /* floor(lo * inv_cell), floor(hi * inv_cell) */
} ns__frame;

/* What a kernel's build and query see. */
typedef struct ns__input {
    size_t n;
    const float *pos;
    const float *radius; /* NULL: radius_uniform for all */
    float radius_uniform;
    ns__frame frame;
    int threads;       /* resolved: >= 1 */
    size_t table_size; /* resolved: >= 1 */
    size_t grid_max_bytes;
    size_t max_contacts; /* resolved: >= 1 */
} ns__input;

/* A kernel's functions. state is the kernel's own, kept across builds so
 * memory is reused; build may be called again on a non-NULL state. */
struct ns_kernel_ops {
    ns_status (*build)(void **state, const ns__input *in, ns_error *err);
    /* Fills out; *candidates = the pairs it tested with ns__contact(). */
    ns_status (*query)(void *state, const ns__input *in, ns_contact_list *out, size_t *candidates,
                       ns_error *err);
    void (*info)(const void *state, ns_index_info *info);
    void (*destroy)(void *state);
    /* Optional (NULL when the kernel has none): *count = the contacts of the
     * last build, found without writing them. */
    ns_status (*count)(void *state, const ns__input *in, size_t *count, ns_error *err);
};

static inline float ns__radius(const ns__input *in, size_t i)
{
    return in->radius ? in->radius[i] : in->radius_uniform;
}

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

/* The predicate on the caller's arrays, for i < j. Returns true and fills c
 * when particles i and j touch. Every kernel decides with these functions,
 * so every kernel returns bit-identical contacts. */
static inline bool ns__contact(const ns__input *in, uint32_t i, uint32_t j, ns_contact *c)
{
    const float *pi = in->pos + 3 * (size_t)i, *pj = in->pos + 3 * (size_t)j;
    float dx = pj[0] - pi[0];
    float dy = pj[1] - pi[1];
    float dz = pj[2] - pi[2];
    float d2 = ns__distance2(dx, dy, dz);
    float s = ns__radius(in, i) + ns__radius(in, j);
    if (!ns__touching(d2, s))
        return false;
    ns__contact_fill(i, j, dx, dy, dz, d2, s, c);
    return true;
}

/* Integer cell coordinate of x; the frame's range check makes it exact. */
static inline int64_t ns__cell_coord(const ns__frame *f, float x)
{
    return (int64_t)floor((double)x * f->inv_cell);
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

static inline uint32_t ns__particle_bucket(const ns__input *in, size_t i)
{
    const float *p = in->pos + 3 * i;
    return ns__hash_cell(ns__cell_coord(&in->frame, p[0]), ns__cell_coord(&in->frame, p[1]),
                         ns__cell_coord(&in->frame, p[2]), in->table_size);
}

/* The distinct buckets of the 27 cells around a cell. Two cells may share a
 * bucket: visiting each bucket once (and testing every particle in it by
 * distance) neither loses nor duplicates a contact. */
typedef struct ns__neighbours {
    int64_t cell[3]; /* the cell they surround */
    int count;       /* distinct buckets in bucket[]; -1 before the first use */
    uint32_t bucket[27];
} ns__neighbours;

/* The integer cell of particle i. */
static inline void ns__particle_cell(const ns__input *in, size_t i, int64_t cell[3])
{
    for (int k = 0; k < 3; k++)
        cell[k] = ns__cell_coord(&in->frame, in->pos[3 * i + (size_t)k]);
}

/* The neighbour buckets of a cell; recomputed only when the cell differs
 * from the last one asked for (particles visited bucket by bucket mostly
 * share their cell with the previous one). */
static inline const ns__neighbours *ns__neighbours_around(ns__neighbours *nb, const ns__input *in,
                                                          const int64_t cell[3])
{
    if (nb->count >= 0 && nb->cell[0] == cell[0] && nb->cell[1] == cell[1] &&
        nb->cell[2] == cell[2])
        return nb;
    int m = 0;
    for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dx = -1; dx <= 1; dx++) {
                uint32_t b =
                    ns__hash_cell(cell[0] + dx, cell[1] + dy, cell[2] + dz, in->table_size);
                int k = 0;
                while (k < m && nb->bucket[k] != b)
                    k++;
                if (k == m)
                    nb->bucket[m++] = b;
            }
    nb->cell[0] = cell[0], nb->cell[1] = cell[1], nb->cell[2] = cell[2];
    nb->count = m;
    return nb;
}

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

/* Sets the contact limit of an index's next builds (for ns_skin, which
 * searches candidates and contacts with different limits); 0 = the default. */
void ns__index_set_max_contacts(ns_index *index, size_t max_contacts);

/* Counting sort of particles 0..n by key[i] < nkeys: afterwards bucket k
 * holds entries[start[k] .. start[k+1]), in increasing particle order, and
 * start[nkeys] == n. start has nkeys + 1 entries. */
void ns__counting_sort(const uint32_t *key, size_t n, size_t nkeys, uint32_t *start,
                       uint32_t *entries);

/* Exclusive prefix sum of a[0..n) in place; returns the total. */
size_t ns__exclusive_scan_u32(uint32_t *a, size_t n);
/* The same with a blocked two-pass scan over threads. */
size_t ns__parallel_exclusive_scan_u32(uint32_t *a, size_t n, int threads);

/* ns_sim_settled with piles of at most `block` particles (the tests use
 * small piles to reach the tiling cheaply). */
ns_status ns__sim_settled_piles(size_t n, uint64_t seed, int threads, size_t block, float *pos,
                                float *radius, ns_error *err);

#endif /* NS_INTERNAL_H */

/* kernel.h - the kernels layer's private interface: what a kernel's build
 * and query see (ns__input), the functions a kernel provides (ns_kernel_ops),
 * and the helpers every kernel tests pairs with. Used by the kernels and by
 * the search layer above them, which fills ns__input. */
#ifndef NS_KERNEL_H
#define NS_KERNEL_H

#include "core.h"

#include <string.h>

/* What a kernel's build and query see. */
typedef struct ns__input {
    size_t n;
    const float *pos;
    const float *radius; /* NULL: radius_uniform for all */
    float radius_uniform;
    ns__grid grid;
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
    /* Optional: the contacts of the last build to sink, in batches, in the
     * order query lists them; *candidates += the pairs it tested. */
    ns_status (*stream)(void *state, const ns__input *in, ns_contact_sink sink, void *user,
                        size_t *candidates, ns_error *err);
};

/* Every kernel file is compiled once per code path of the build
 * (CMakeLists.txt: avx512, avx2 and generic where the CPU is chosen at run
 * time, else native or generic alone), with NS_ISA_PATH naming the path;
 * NS__OPS(name) is the name of its ops for that path, e.g.
 * ns__grid_sorted_ops_avx2. isa.c says which path runs. */
#define NS__OPS(name) NS__OPS_(name, NS_ISA_PATH)
#define NS__OPS_(name, path) NS__OPS__(name, path)
#define NS__OPS__(name, path) ns__##name##_ops_##path

/* The ops of kernel k on the path wanted (ns_config.isa; NULL: NS_ISA, else
 * the best the CPU runs); NULL with err filled when that path cannot run. */
const ns_kernel_ops *ns__kernel_ops(const ns_kernel *k, const char *wanted, ns_error *err);
/* The index of that path in this build's list (best first); -1 with err
 * filled when it names a path this build lacks or this CPU cannot run. */
int ns__isa_path(const char *wanted, ns_error *err);

/* A build's state: *state as the last build left it, or on the first build
 * a zeroed one of size bytes (NULL when out of memory). */
static inline void *ns__kernel_state(void **state, size_t size)
{
    if (!*state && (*state = ns__malloc(size)) != NULL)
        memset(*state, 0, size);
    return *state;
}

static inline float ns__radius(const ns__input *in, size_t i)
{
    return in->radius ? in->radius[i] : in->radius_uniform;
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

static inline uint32_t ns__particle_bucket(const ns__input *in, size_t i)
{
    const float *p = in->pos + 3 * i;
    return ns__hash_cell(ns__cell_coord(&in->grid, p[0]), ns__cell_coord(&in->grid, p[1]),
                         ns__cell_coord(&in->grid, p[2]), in->table_size);
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
        cell[k] = ns__cell_coord(&in->grid, in->pos[3 * i + (size_t)k]);
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

/* Particle i against the particles entries[lo .. hi) above it (each pair
 * once): every contact pushed onto out, *tested += the pairs tested. The
 * inner loop of the serial cell and hash kernels. */
static inline ns_status ns__test_entries(const ns__input *in, uint32_t i, const uint32_t *entries,
                                         uint32_t lo, uint32_t hi, ns_contact_list *out,
                                         size_t *tested, ns_error *err)
{
    ns_contact c;
    for (uint32_t e = lo; e < hi; e++) {
        uint32_t j = entries[e];
        if (j <= i)
            continue;
        ++*tested;
        if (ns__contact(in, i, j, &c)) {
            ns_status st = ns__list_push(out, &c, in->max_contacts, err);
            if (st != NS_OK)
                return st;
        }
    }
    return NS_OK;
}

#endif /* NS_KERNEL_H */

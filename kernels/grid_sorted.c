/* grid_sorted - particles reordered into cell order, half stencil, vectorised test.
 *
 * The kernel to link into a simulation. The build is a parallel counting sort
 * that copies positions (and radii) into cell order as separate float arrays,
 * so each cell's particles are contiguous and the distance test streams
 * through memory. Two ways to find a cell, chosen per build:
 *  - dense: a grid over the bounding box with one empty layer of cells around
 *    it, when it has at most 2 cells per particle. Cells are numbered x
 *    fastest, so the three cells x-1, x, x+1 of a row are one contiguous run
 *    of particles;
 *  - sparse (dambreak's empty air, far-apart particles): blocks of 4 x 4 x 4
 *    cells hashed into a table of about n/2 buckets, 64 per block, particles
 *    sorted by bucket and, inside a bucket, by cell; a cell is found by its
 *    bucket and checked by the cell of its first particle. Memory stays
 *    proportional to n.
 * Every pair is tested once: a particle against the later particles of its
 * own cell and the particles of 13 of the 26 neighbour cells (the half
 * stencil: +x; the row y+1; the nine cells of z+1). A cell's candidates are
 * gathered side by side into a scratch padded with NaN, and each of its
 * particles is tested against all of them by one plain loop that the
 * compiler vectorises; the contacts found are compacted (AVX-512 compress,
 * on the AVX2 path a permutation looked up from the mask, a branch-free
 * loop elsewhere; every vector of candidates is stored whether or not it
 * holds a contact, which is faster than a branch that mispredicts) and
 * their values computed by a second vectorised loop, then streamed to the
 * list (a crowded neighbourhood that does not fit the scratch is tested run
 * by run).
 * The query runs twice over blocks of cells in parallel: first counting the
 * contacts of each block, then writing each block's contacts at its offset
 * in the caller's list, so no per-thread buffer is merged and the order of the
 * contacts does not depend on the thread count. Inside a cell the particles
 * keep the caller's order, so the whole result is deterministic.
 * O(n / T) time, at most 40 bytes per particle (see info()). */
#include "kernel.h"

#include <omp.h>
#include <string.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

enum {
    BLOCK = 64, /* cells per unit of parallel work */
    CHUNK = 32, /* candidates tested together before their contacts are written */
    SMALL = 24, /* groups up to this size are sorted by insertion */
    COPY = 16,  /* elements per move when gathering candidates (see copy_floats) */
    SLACK = COPY,
};

typedef struct state {
    bool dense;
    int64_t dim[3];        /* dense: cells per axis, the empty layer included */
    size_t cells;          /* dense: all grid cells; sparse: non-empty cells */
    size_t table;          /* sparse: buckets */
    ns__u32s start;        /* cells + 1: the first sorted particle of each cell */
    ns__u32s order;        /* n: the caller's index of each sorted particle */
    ns__u32s key;          /* n: the cell (dense) or bucket (sparse) of each particle */
    ns__u32s group;        /* sparse: buckets + 1: the first sorted particle of each bucket */
    ns__u32s bucket_cells; /* sparse: buckets + 1: the first cell of each bucket */
    ns__buf soa;           /* floats: x[n], y[n], z[n], then r[n] for per-particle radii */
    ns__buf block_total;   /* size_t: blocks + 1 contact counts, then offsets */
    ns__buf batch;         /* ns_contact: one batch of a streaming query */
    size_t blocks;
    size_t n;
} state;

/* The sorted arrays, as the loops read them. */
typedef struct view {
    const float *x, *y, *z, *r; /* r NULL: every radius is ru */
    float ru;
    const uint32_t *order, *start;
} view;

static void destroy(void *p)
{
    state *s = p;
    ns__u32s_free(&s->start);
    ns__u32s_free(&s->order);
    ns__u32s_free(&s->key);
    ns__u32s_free(&s->group);
    ns__u32s_free(&s->bucket_cells);
    ns__buf_free(&s->soa);
    ns__buf_free(&s->block_total);
    ns__buf_free(&s->batch);
    ns__free(s);
}

/* Dense when the grid with its empty layer has at most 2 cells per particle
 * (and at least a few thousand cells are always allowed). */
static bool choose_dense(state *s, const ns__input *in)
{
    double cells = 1.0;
    for (int k = 0; k < 3; k++) {
        double d = (double)in->grid.cell_hi[k] - (double)in->grid.cell_lo[k] + 3.0;
        s->dim[k] = d < 0x1p40 ? (int64_t)d : 0;
        cells *= d;
    }
    double limit = 2.0 * (double)in->n + 4096.0;
    if (cells > limit || cells > (double)UINT32_MAX - 1)
        return false;
    s->cells = (size_t)cells;
    return true;
}

static inline void cell_of(const ns__grid *g, float x, float y, float z, int64_t c[3])
{
    c[0] = ns__cell_coord(g, x);
    c[1] = ns__cell_coord(g, y);
    c[2] = ns__cell_coord(g, z);
}

/* Sorting the caller's indices inside a group (a dense cell, or a bucket,
 * whose cells must become contiguous runs): by cell when by_cell, then by
 * index, so the order never depends on the threads' race in the scatter. */
typedef struct sorter {
    const ns__input *in;
    bool by_cell;
} sorter;

static bool before(const sorter *so, uint32_t a, uint32_t b)
{
    if (so->by_cell) {
        const float *pa = so->in->pos + 3 * (size_t)a, *pb = so->in->pos + 3 * (size_t)b;
        int64_t ca[3], cb[3];
        cell_of(&so->in->grid, pa[0], pa[1], pa[2], ca);
        cell_of(&so->in->grid, pb[0], pb[1], pb[2], cb);
        for (int k = 2; k >= 0; k--)
            if (ca[k] != cb[k])
                return ca[k] < cb[k];
    }
    return a < b;
}

static void sift_down(const sorter *so, uint32_t *a, size_t root, size_t len)
{
    for (size_t child; (child = 2 * root + 1) < len; root = child) {
        if (child + 1 < len && before(so, a[child], a[child + 1]))
            child++;
        if (!before(so, a[root], a[child]))
            return;
        uint32_t t = a[root];
        a[root] = a[child];
        a[child] = t;
    }
}

/* Insertion sort for the usual handful, heapsort (no allocation, no
 * recursion) for a crowded cell. */
static void sort_group(const sorter *so, uint32_t *a, size_t len)
{
    if (len <= SMALL) {
        for (size_t i = 1; i < len; i++) {
            uint32_t v = a[i];
            size_t k = i;
            for (; k > 0 && before(so, v, a[k - 1]); k--)
                a[k] = a[k - 1];
            a[k] = v;
        }
        return;
    }
    for (size_t i = len / 2; i-- > 0;)
        sift_down(so, a, i, len);
    for (size_t end = len; end-- > 1;) {
        uint32_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(so, a, 0, end);
    }
}

static bool same_cell(const ns__input *in, uint32_t a, uint32_t b)
{
    const float *pa = in->pos + 3 * (size_t)a, *pb = in->pos + 3 * (size_t)b;
    int64_t ca[3], cb[3];
    cell_of(&in->grid, pa[0], pa[1], pa[2], ca);
    cell_of(&in->grid, pb[0], pb[1], pb[2], cb);
    return ca[0] == cb[0] && ca[1] == cb[1] && ca[2] == cb[2];
}

/* Does the group hold more than one cell? */
static bool mixed_cells(const ns__input *in, const uint32_t *a, size_t len)
{
    for (size_t k = 1; k < len; k++)
        if (!same_cell(in, a[0], a[k]))
            return true;
    return false;
}

/* The bucket of a cell (sparse): the 4 x 4 x 4 cells of a block share a
 * hash and take 64 consecutive buckets, so neighbouring cells mostly sit
 * side by side in the sorted order and the query stays in cache. Two's
 * complement bits make the blocks of negative cells whole as well. */
static inline uint32_t block_bucket(const int64_t c[3], size_t table)
{
    uint64_t x = (uint64_t)c[0], y = (uint64_t)c[1], z = (uint64_t)c[2];
    uint32_t block =
        ns__hash_cell((int64_t)(x >> 2), (int64_t)(y >> 2), (int64_t)(z >> 2), table / 64);
    return block * 64 + (uint32_t)((x & 3) | (y & 3) << 2 | (z & 3) << 4);
}

/* The key of each particle: its dense cell (x fastest, shifted by the empty
 * layer) or the bucket of its cell. */
static inline uint32_t particle_key(const state *s, const ns__input *in, size_t i)
{
    const float *p = in->pos + 3 * i;
    int64_t c[3];
    cell_of(&in->grid, p[0], p[1], p[2], c);
    if (!s->dense)
        return block_bucket(c, s->table);
    uint64_t x = (uint64_t)(c[0] - in->grid.cell_lo[0] + 1);
    uint64_t y = (uint64_t)(c[1] - in->grid.cell_lo[1] + 1);
    uint64_t z = (uint64_t)(c[2] - in->grid.cell_lo[2] + 1);
    return (uint32_t)((z * (uint64_t)s->dim[1] + y) * (uint64_t)s->dim[0] + x);
}

/* Parallel counting sort of the particles by key into order[], with
 * group[k] = the first particle of key k and group[keys] = n: atomic counts
 * stored one place up, an exclusive scan, then a scatter through the same
 * counters, which leaves each one at the start of the next key. */
static void sort_by_key(state *s, const ns__input *in, uint32_t *group, size_t keys)
{
    uint32_t *key = s->key.a, *order = s->order.a;
    long long n = (long long)in->n, nk = (long long)keys;
#pragma omp parallel num_threads(in->threads)
    {
#pragma omp for schedule(static)
        for (long long k = 0; k <= nk; k++)
            group[k] = 0;
#pragma omp for schedule(static)
        for (long long i = 0; i < n; i++) {
            uint32_t k = particle_key(s, in, (size_t)i);
            key[i] = k;
#pragma omp atomic update
            group[k + 1]++;
        }
    }
    ns__parallel_exclusive_scan_u32(group, keys + 1, in->threads);
#pragma omp parallel for num_threads(in->threads) schedule(static)
    for (long long i = 0; i < n; i++) {
        uint32_t at;
#pragma omp atomic capture
        at = group[key[i] + 1]++;
        order[at] = (uint32_t)i;
    }
}

/* The cells of each bucket (sparse): sorts each bucket by cell, numbers the
 * cells bucket by bucket and records where each starts. */
static bool find_cells(state *s, const ns__input *in)
{
    uint32_t *group = s->group.a, *order = s->order.a, *first = s->bucket_cells.a;
    long long buckets = (long long)s->table;
#pragma omp parallel for num_threads(in->threads) schedule(dynamic, 1024)
    for (long long b = 0; b < buckets; b++) {
        uint32_t *a = order + group[b];
        size_t len = group[b + 1] - group[b];
        uint32_t cells = len > 0;
        if (len > 1) {
            sorter so = {in, mixed_cells(in, a, len)};
            sort_group(&so, a, len);
            for (size_t k = 1; so.by_cell && k < len; k++)
                cells += !same_cell(in, a[k - 1], a[k]);
        }
        first[b] = cells;
    }
    first[buckets] = 0;
    s->cells = ns__parallel_exclusive_scan_u32(first, s->table + 1, in->threads);
    if (!ns__u32s_reserve(&s->start, s->cells + 1))
        return false;
    uint32_t *start = s->start.a;
#pragma omp parallel for num_threads(in->threads) schedule(dynamic, 1024)
    for (long long b = 0; b < buckets; b++) {
        uint32_t c = first[b], at = group[b], end = group[b + 1];
        if (at == end)
            continue;
        start[c++] = at;
        if (first[b + 1] - first[b] > 1)
            for (uint32_t k = at + 1; k < end; k++)
                if (!same_cell(in, order[k - 1], order[k]))
                    start[c++] = k;
    }
    start[s->cells] = (uint32_t)in->n;
    return true;
}

static view view_of(const state *s, const ns__input *in)
{
    size_t n = s->n;
    const float *soa = s->soa.a;
    return (view){.x = soa,
                  .y = soa + n,
                  .z = soa + 2 * n,
                  .r = in->radius ? soa + 3 * n : NULL,
                  .ru = in->radius_uniform,
                  .order = s->order.a,
                  .start = s->start.a};
}

/* Positions (and radii) into cell order. */
static void gather(const state *s, const ns__input *in)
{
    view v = view_of(s, in);
    float *x = (float *)v.x, *y = (float *)v.y, *z = (float *)v.z, *r = (float *)v.r;
    const float *pos = in->pos;
    long long n = (long long)in->n;
#pragma omp parallel for num_threads(in->threads) schedule(static)
    for (long long p = 0; p < n; p++) {
        size_t i = v.order[p];
        x[p] = pos[3 * i];
        y[p] = pos[3 * i + 1];
        z[p] = pos[3 * i + 2];
        if (r)
            r[p] = in->radius[i];
    }
}

static ns_status build(void **p, const ns__input *in, ns_error *err)
{
    state *s = ns__kernel_state(p, sizeof *s);
    if (!s)
        return ns__fail_oom(err, "grid_sorted state");
    size_t n = in->n;
    s->n = n;
    s->dense = choose_dense(s, in);
    if (!s->dense) {
        s->table = 64;
        while (s->table < n / 2)
            s->table *= 2;
    }
    size_t keys = s->dense ? s->cells : s->table;
    ns__u32s *groups = s->dense ? &s->start : &s->group;
    if (!ns__u32s_reserve(&s->order, n + SLACK) || !ns__u32s_reserve(&s->key, n) ||
        !ns__u32s_reserve(groups, keys + 1) ||
        (!s->dense && !ns__u32s_reserve(&s->bucket_cells, keys + 1)) ||
        !ns__buf_reserve(&s->soa, (in->radius ? 4 : 3) * n + SLACK, sizeof(float)))
        return ns__fail(err, NS_ERR_OUT_OF_MEMORY, NS_NO_PARTICLE,
                        "out of memory sorting %zu particles into %zu %s", n, keys,
                        s->dense ? "cells" : "buckets");

    sort_by_key(s, in, groups->a, keys);
    if (s->dense) {
        /* each cell's particles in the caller's order */
        const uint32_t *start = s->start.a;
        uint32_t *order = s->order.a;
        sorter so = {in, false};
        long long cells = (long long)s->cells;
#pragma omp parallel for num_threads(in->threads) schedule(dynamic, 4096)
        for (long long c = 0; c < cells; c++)
            if (start[c + 1] - start[c] > 1)
                sort_group(&so, order + start[c], start[c + 1] - start[c]);
    } else if (!find_cells(s, in)) {
        return ns__fail_oom(err, "grid_sorted's cells");
    }
    s->blocks = (s->cells + BLOCK - 1) / BLOCK;
    if (!ns__buf_reserve(&s->block_total, s->blocks + 1, sizeof(size_t)))
        return ns__fail_oom(err, "grid_sorted's blocks");
    gather(s, in);
    return NS_OK;
}

/* The runs of particles a cell is tested against, besides its own later
 * particles (up to own_end): the half stencil. */
typedef struct runs {
    uint32_t own_end;
    int count;
    uint32_t begin[13], end[13];
} runs;

static inline void add_run(runs *r, uint32_t begin, uint32_t end)
{
    if (begin < end) {
        r->begin[r->count] = begin;
        r->end[r->count] = end;
        r->count++;
    }
}

/* Dense: the cell x+1 continues the own run; the rows (y+1, z), (y-1, z+1),
 * (y, z+1) and (y+1, z+1), three cells each, are runs of the sorted order. */
static void dense_runs(const state *s, const view *v, size_t c, runs *r)
{
    static const int rows[4][2] = {{1, 0}, {-1, 1}, {0, 1}, {1, 1}};
    ptrdiff_t dx = (ptrdiff_t)s->dim[0], dxy = dx * (ptrdiff_t)s->dim[1];
    r->own_end = v->start[c + 2];
    r->count = 0;
    for (int q = 0; q < 4; q++) {
        size_t mid = (size_t)((ptrdiff_t)c + rows[q][0] * dx + rows[q][1] * dxy);
        add_run(r, v->start[mid - 1], v->start[mid + 2]);
    }
}

/* Sparse: the 13 cells looked up one by one in their buckets. */
static void sparse_runs(const state *s, const view *v, const ns__grid *g, size_t c, runs *r)
{
    const uint32_t *first = s->bucket_cells.a, *start = v->start;
    uint32_t p = start[c];
    int64_t cc[3];
    cell_of(g, v->x[p], v->y[p], v->z[p], cc);
    r->own_end = start[c + 1];
    r->count = 0;
    for (int q = 0; q < 13; q++) {
        /* +x, then the row y+1, then the plane z+1 */
        int ox = q == 0 ? 1 : q < 4 ? q - 2 : (q - 4) % 3 - 1;
        int oy = q == 0 ? 0 : q < 4 ? 1 : (q - 4) / 3 - 1;
        int oz = q < 4 ? 0 : 1;
        int64_t want[3] = {cc[0] + ox, cc[1] + oy, cc[2] + oz};
        uint32_t b = block_bucket(want, s->table);
        for (uint32_t k = first[b]; k < first[b + 1]; k++) {
            uint32_t at = start[k];
            int64_t got[3];
            cell_of(g, v->x[at], v->y[at], v->z[at], got);
            if (got[0] == want[0] && got[1] == want[1] && got[2] == want[2]) {
                add_run(r, at, start[k + 1]);
                break;
            }
        }
    }
}

static inline void cell_runs(const state *s, const view *v, const ns__grid *g, size_t c, runs *r)
{
    if (s->dense)
        dense_runs(s, v, c, r);
    else
        sparse_runs(s, v, g, c, r);
}

/* Contacts of sorted particle p with the run [b, e): the vectorised test. */
static inline uint32_t count_run(const view *v, uint32_t p, uint32_t b, uint32_t e)
{
    const float *x = v->x, *y = v->y, *z = v->z, *r = v->r;
    float px = x[p], py = y[p], pz = z[p];
    uint32_t hits = 0;
    if (r) {
        float pr = r[p];
        for (uint32_t k = b; k < e; k++)
            hits += ns__touching(ns__distance2(x[k] - px, y[k] - py, z[k] - pz), pr + r[k]);
    } else {
        float s = v->ru + v->ru;
        for (uint32_t k = b; k < e; k++)
            hits += ns__touching(ns__distance2(x[k] - px, y[k] - py, z[k] - pz), s);
    }
    return hits;
}

/* The contact of sorted particles p and k, numbered and oriented in the
 * caller's order (i < j, dx = x_j - x_i). */
static inline void emit(const view *v, uint32_t p, uint32_t k, ns_contact *c)
{
    uint32_t a = v->order[p], b = v->order[k];
    if (a > b) {
        uint32_t t = a;
        a = b, b = t;
        t = p;
        p = k, k = t;
    }
    float dx = v->x[k] - v->x[p], dy = v->y[k] - v->y[p], dz = v->z[k] - v->z[p];
    float s = v->r ? v->r[p] + v->r[k] : v->ru + v->ru;
    ns__contact_fill(a, b, dx, dy, dz, ns__distance2(dx, dy, dz), s, c);
}

/* Writes the contacts of sorted particle p with the run [b, e): a chunk's
 * test vectorised into flags, then the few contacts written. */
static inline ns_contact *write_run(const view *v, uint32_t p, uint32_t b, uint32_t e,
                                    ns_contact *out)
{
    const float *x = v->x, *y = v->y, *z = v->z, *r = v->r;
    float px = x[p], py = y[p], pz = z[p];
    float pr = r ? r[p] : v->ru;
    for (uint32_t k0 = b; k0 < e; k0 += CHUNK) {
        uint32_t len = e - k0 < CHUNK ? e - k0 : CHUNK;
        unsigned char hit[CHUNK];
        if (r) {
            for (uint32_t q = 0; q < len; q++) {
                uint32_t k = k0 + q;
                hit[q] = ns__touching(ns__distance2(x[k] - px, y[k] - py, z[k] - pz), pr + r[k]);
            }
        } else {
            float s = pr + pr;
            for (uint32_t q = 0; q < len; q++) {
                uint32_t k = k0 + q;
                hit[q] = ns__touching(ns__distance2(x[k] - px, y[k] - py, z[k] - pz), s);
            }
        }
        for (uint32_t q = 0; q < len; q++)
            if (hit[q])
                emit(v, p, k0 + q, out++);
    }
    return out;
}

/* A cell's candidates side by side: its own particles first, then the runs
 * of the half stencil, padded with NaN (which touches nothing) to whole
 * vectors, so one fixed-width loop tests a particle against all of them.
 * A cell whose candidates do not fit is tested run by run instead. */
enum { SCRATCH = 1024, LANES = 16 };
typedef struct scratch {
    float x[SCRATCH], y[SCRATCH], z[SCRATCH], r[SCRATCH];
    uint32_t id[SCRATCH]; /* the caller's index */
    unsigned char hit[SCRATCH];
    uint16_t at[SCRATCH]; /* the candidates that touch, compacted */
    uint32_t own, padded;
} scratch;

/* Copies of whole vectors: a run of any length in a few wide moves (no
 * library call), allowed to spill up to COPY - 1 elements past its end: the
 * sorted arrays have SLACK elements behind them, the scratch too, and what
 * spills is overwritten by the next run or the NaN padding. */
static inline void copy_floats(float *to, const float *from, uint32_t len)
{
    for (uint32_t k = 0; k < len; k += COPY)
        memcpy(to + k, from + k, COPY * sizeof(float));
}

static inline void gather_run(const view *v, uint32_t b, uint32_t e, scratch *sc, uint32_t at)
{
    uint32_t len = e - b;
    copy_floats(sc->x + at, v->x + b, len);
    copy_floats(sc->y + at, v->y + b, len);
    copy_floats(sc->z + at, v->z + b, len);
    if (v->r)
        copy_floats(sc->r + at, v->r + b, len);
    for (uint32_t k = 0; k < len; k += COPY)
        memcpy(sc->id + at + k, v->order + b + k, COPY * sizeof(uint32_t));
}

static bool gather_cell(const view *v, size_t c, const runs *r, scratch *sc)
{
    uint32_t first = v->start[c], total = r->own_end - first;
    for (int q = 0; q < r->count; q++)
        total += r->end[q] - r->begin[q];
    if (total > SCRATCH - COPY)
        return false;
    sc->own = v->start[c + 1] - first;
    gather_run(v, first, r->own_end, sc, 0);
    uint32_t at = r->own_end - first;
    for (int q = 0; q < r->count; q++) {
        gather_run(v, r->begin[q], r->end[q], sc, at);
        at += r->end[q] - r->begin[q];
    }
    sc->padded = (total + LANES - 1) / LANES * LANES;
    for (uint32_t k = total; k < sc->padded; k++) {
        sc->x[k] = sc->y[k] = sc->z[k] = sc->r[k] = NAN;
        sc->id[k] = 0;
    }
    return true;
}

/* The contacts of the cell's own particle q with the later candidates. */
static inline uint32_t count_gathered(const scratch *sc, const view *v, uint32_t q)
{
    float px = sc->x[q], py = sc->y[q], pz = sc->z[q];
    uint32_t hits = 0;
    if (v->r) {
        float pr = sc->r[q];
        for (uint32_t k = 0; k < sc->padded; k++)
            hits += ns__touching(ns__distance2(sc->x[k] - px, sc->y[k] - py, sc->z[k] - pz),
                                 pr + sc->r[k]) &
                    (k > q);
    } else {
        float s = v->ru + v->ru;
        for (uint32_t k = 0; k < sc->padded; k++)
            hits += ns__touching(ns__distance2(sc->x[k] - px, sc->y[k] - py, sc->z[k] - pz), s) &
                    (k > q);
    }
    return hits;
}

/* Contacts found but not yet written: for each, the caller's indices a, b
 * of the two particles, x_b - x_a (likewise y, z) and, for per-particle
 * radii, the sum of radii; then their values, computed in one vectorised
 * loop. */
enum { PAIRS = 2048 };
typedef struct found {
    uint32_t a[PAIRS + 16], b[PAIRS + 16];
    float dx[PAIRS + 16], dy[PAIRS + 16], dz[PAIRS + 16], s[PAIRS + 16];
    uint32_t count;
} found;

#if defined(__AVX512F__)
/* Contacts from their fields in separate arrays, 16 at a time (6 x 64
 * bytes, out aligned to 64): the fields paired into 64-bit lanes (i j,
 * overlap nx, ny nz), then three lanes per contact. The compiler would store
 * them one field at a time. The stores are non-temporal: the list (352 MB
 * for a million uniform particles) goes to memory without first reading
 * each line into the cache, about 6% faster at 100,000 and 1,000,000
 * particles here, though the caller then reads the contacts from memory. */
static inline void interleave8(ns_contact *out, __m512i ij, __m512i on, __m512i yz)
{
    const __m512i a0 = _mm512_setr_epi64(0, 8, 0, 1, 9, 0, 2, 10),
                  b0 = _mm512_setr_epi64(0, 0, 0, 0, 0, 1, 0, 0);
    const __m512i a1 = _mm512_setr_epi64(0, 3, 11, 0, 4, 12, 0, 5),
                  b1 = _mm512_setr_epi64(2, 0, 0, 3, 0, 0, 4, 0);
    const __m512i a2 = _mm512_setr_epi64(13, 0, 6, 14, 0, 7, 15, 0),
                  b2 = _mm512_setr_epi64(0, 5, 0, 0, 6, 0, 0, 7);
    __m512i *to = (__m512i *)(void *)out;
    _mm512_stream_si512(
        to, _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(ij, a0, on), 0x24, b0, yz));
    _mm512_stream_si512(
        to + 1, _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(ij, a1, on), 0x49, b1, yz));
    _mm512_stream_si512(
        to + 2, _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(ij, a2, on), 0x92, b2, yz));
}

static inline void store16(ns_contact *out, const found *fd, uint32_t t)
{
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    __m512i i = _mm512_loadu_si512(fd->a + t), j = _mm512_loadu_si512(fd->b + t);
    __m512i o = _mm512_loadu_si512(fd->s + t), x = _mm512_loadu_si512(fd->dx + t);
    __m512i y = _mm512_loadu_si512(fd->dy + t), z = _mm512_loadu_si512(fd->dz + t);
    interleave8(out, _mm512_permutex2var_epi32(i, lo, j), _mm512_permutex2var_epi32(o, lo, x),
                _mm512_permutex2var_epi32(y, lo, z));
    interleave8(out + 8, _mm512_permutex2var_epi32(i, hi, j), _mm512_permutex2var_epi32(o, hi, x),
                _mm512_permutex2var_epi32(y, hi, z));
}
#elif defined(__AVX2__)
/* The AVX2 twin of store16: 8 contacts (3 x 64 bytes, out aligned to 64).
 * The fields paired into 64-bit lanes (i j, overlap nx, ny nz) for contacts
 * 0-3 and 4-7, then each 32-byte store gathered from the three pairs by a
 * permutation of each and two blends. */
static inline void interleave4(ns_contact *out, __m256i ij, __m256i on, __m256i yz)
{
    __m256i *to = (__m256i *)(void *)out;
    _mm256_stream_si256(
        to, _mm256_blend_epi32(_mm256_blend_epi32(_mm256_permute4x64_epi64(ij, 0x40),
                                                  _mm256_permute4x64_epi64(on, 0x00), 0x0c),
                               _mm256_permute4x64_epi64(yz, 0x00), 0x30));
    _mm256_stream_si256(
        to + 1, _mm256_blend_epi32(_mm256_blend_epi32(_mm256_permute4x64_epi64(on, 0x81),
                                                      _mm256_permute4x64_epi64(yz, 0x04), 0x0c),
                                   _mm256_permute4x64_epi64(ij, 0x20), 0x30));
    _mm256_stream_si256(
        to + 2, _mm256_blend_epi32(_mm256_blend_epi32(_mm256_permute4x64_epi64(yz, 0xc2),
                                                      _mm256_permute4x64_epi64(ij, 0x0c), 0x0c),
                                   _mm256_permute4x64_epi64(on, 0x30), 0x30));
}

static inline void store8(ns_contact *out, const found *fd, uint32_t t)
{
    __m256i i = _mm256_loadu_si256((const __m256i *)(const void *)(fd->a + t));
    __m256i j = _mm256_loadu_si256((const __m256i *)(const void *)(fd->b + t));
    __m256i o = _mm256_loadu_si256((const __m256i *)(const void *)(fd->s + t));
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(fd->dx + t));
    __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(fd->dy + t));
    __m256i z = _mm256_loadu_si256((const __m256i *)(const void *)(fd->dz + t));
    /* 64-bit lanes: lo = pairs 0 1 | 4 5, hi = pairs 2 3 | 6 7 */
    __m256i ijl = _mm256_unpacklo_epi32(i, j), ijh = _mm256_unpackhi_epi32(i, j);
    __m256i onl = _mm256_unpacklo_epi32(o, x), onh = _mm256_unpackhi_epi32(o, x);
    __m256i yzl = _mm256_unpacklo_epi32(y, z), yzh = _mm256_unpackhi_epi32(y, z);
    interleave4(out, _mm256_permute2x128_si256(ijl, ijh, 0x20),
                _mm256_permute2x128_si256(onl, onh, 0x20),
                _mm256_permute2x128_si256(yzl, yzh, 0x20));
    interleave4(out + 4, _mm256_permute2x128_si256(ijl, ijh, 0x31),
                _mm256_permute2x128_si256(onl, onh, 0x31),
                _mm256_permute2x128_si256(yzl, yzh, 0x31));
}
#endif

/* Computes the found contacts, numbered and oriented in the caller's order
 * (i < j, dx = x_j - x_i: negating x_b - x_a is exact): on x86 into fd's
 * arrays in place (the loop has no branch, so the compiler vectorises it
 * with AVX2 as with AVX-512; uniform is a constant in each call), elsewhere
 * into out. */
static inline void fill_found(found *fd, bool uniform, float su, ns_contact *out)
{
    for (uint32_t t = 0, m = fd->count; t < m; t++) {
        uint32_t a = fd->a[t], b = fd->b[t];
        float dx = fd->dx[t], dy = fd->dy[t], dz = fd->dz[t];
        bool swap = a > b;
        ns_contact c;
        ns__contact_fill(swap ? b : a, swap ? a : b, swap ? -dx : dx, swap ? -dy : dy,
                         swap ? -dz : dz, ns__distance2(dx, dy, dz), uniform ? su : fd->s[t], &c);
#if defined(__AVX2__)
        /* the fields, in place, for store16() or store8() */
        fd->a[t] = c.i, fd->b[t] = c.j, fd->s[t] = c.overlap;
        fd->dx[t] = c.nx, fd->dy[t] = c.ny, fd->dz[t] = c.nz;
        (void)out;
#else
        out[t] = c;
#endif
    }
}

/* Writes the found contacts from out on. */
static ns_contact *flush(found *fd, const view *v, ns_contact *out)
{
    uint32_t m = fd->count;
    if (v->r)
        fill_found(fd, false, 0.0f, out);
    else
        fill_found(fd, true, v->ru + v->ru, out);
#if defined(__AVX2__)
    uint32_t t = 0; /* one by one up to a 64-byte boundary, then 16 or 8 at a time */
    for (; t < m && ((uintptr_t)(out + t) & 63) != 0; t++)
        out[t] = (ns_contact){fd->a[t], fd->b[t], fd->s[t], fd->dx[t], fd->dy[t], fd->dz[t]};
#if defined(__AVX512F__)
    for (; t + 16 <= m; t += 16)
        store16(out + t, fd, t);
#else
    for (; t + 8 <= m; t += 8)
        store8(out + t, fd, t);
#endif
    _mm_sfence(); /* the streamed lines are visible before anything later */
    for (; t < m; t++)
        out[t] = (ns_contact){fd->a[t], fd->b[t], fd->s[t], fd->dx[t], fd->dy[t], fd->dz[t]};
#endif
    fd->count = 0;
    return out + m;
}

#if defined(__AVX2__) && !defined(__AVX512F__)
/* AVX2 has no compress: the lanes a mask keeps are moved to the front by a
 * permutation, looked up from the mask. COMPRESS8[m] holds, 4 bits per
 * output lane, the input lanes of the set bits of m in order; the table is
 * computed by the compiler: bit i of m goes to the lane numbered by the set
 * bits below it. */
#define NS__BIT(m, i) (((m) >> (i)) & 1u)
#define NS__BELOW(m, i) /* the set bits of m below bit i */                                        \
    (NS__BIT((m) & ((1u << (i)) - 1u), 0) + NS__BIT((m) & ((1u << (i)) - 1u), 1) +                 \
     NS__BIT((m) & ((1u << (i)) - 1u), 2) + NS__BIT((m) & ((1u << (i)) - 1u), 3) +                 \
     NS__BIT((m) & ((1u << (i)) - 1u), 4) + NS__BIT((m) & ((1u << (i)) - 1u), 5) +                 \
     NS__BIT((m) & ((1u << (i)) - 1u), 6))
#define NS__LANE(m, i) (NS__BIT(m, i) * ((uint32_t)(i) << (4 * NS__BELOW(m, i))))
#define NS__ENTRY(m)                                                                               \
    (NS__LANE(m, 0) | NS__LANE(m, 1) | NS__LANE(m, 2) | NS__LANE(m, 3) | NS__LANE(m, 4) |          \
     NS__LANE(m, 5) | NS__LANE(m, 6) | NS__LANE(m, 7))
#define NS__E4(m) NS__ENTRY(m), NS__ENTRY(m + 1), NS__ENTRY(m + 2), NS__ENTRY(m + 3)
#define NS__E16(m) NS__E4(m), NS__E4(m + 4), NS__E4(m + 8), NS__E4(m + 12)
#define NS__E64(m) NS__E16(m), NS__E16(m + 16), NS__E16(m + 32), NS__E16(m + 48)
static const uint32_t COMPRESS8[256] = {NS__E64(0u), NS__E64(64u), NS__E64(128u), NS__E64(192u)};

/* The permutation that moves the lanes of mask m to the front. */
static inline __m256i compress_permutation(unsigned m)
{
    return _mm256_srlv_epi32(_mm256_set1_epi32((int)COMPRESS8[m]),
                             _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
}
#endif

static inline ns_contact *write_gathered(scratch *sc, found *fd, const view *v, uint32_t q,
                                         ns_contact *out)
{
    float px = sc->x[q], py = sc->y[q], pz = sc->z[q];
    unsigned char *hit = sc->hit; /* may alias sc: keep the bound in a local */
    uint32_t padded = sc->padded;
#if defined(__AVX512F__)
    {
        if (fd->count + padded > PAIRS)
            out = flush(fd, v, out);
        uint32_t f = fd->count;
        __m512 PX = _mm512_set1_ps(px), PY = _mm512_set1_ps(py), PZ = _mm512_set1_ps(pz);
        __m512 PR = _mm512_set1_ps(v->r ? sc->r[q] : v->ru), RU = _mm512_set1_ps(v->ru);
        __m512i A = _mm512_set1_epi32((int)sc->id[q]);
        __m512i K = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        __m512i Q = _mm512_set1_epi32((int)q), STEP = _mm512_set1_epi32(16);
        for (uint32_t k0 = 0; k0 < padded; k0 += 16, K = _mm512_add_epi32(K, STEP)) {
            __m512 DX = _mm512_sub_ps(_mm512_loadu_ps(sc->x + k0), PX);
            __m512 DY = _mm512_sub_ps(_mm512_loadu_ps(sc->y + k0), PY);
            __m512 DZ = _mm512_sub_ps(_mm512_loadu_ps(sc->z + k0), PZ);
            __m512 D2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(DX, DX), _mm512_mul_ps(DY, DY)),
                                      _mm512_mul_ps(DZ, DZ));
            __m512 S = _mm512_add_ps(PR, v->r ? _mm512_loadu_ps(sc->r + k0) : RU);
            __mmask16 m = _mm512_cmp_ps_mask(D2, _mm512_mul_ps(S, S), _CMP_LT_OQ) &
                          _mm512_cmpgt_epu32_mask(K, Q);
            _mm512_storeu_ps(fd->dx + f, _mm512_maskz_compress_ps(m, DX));
            _mm512_storeu_ps(fd->dy + f, _mm512_maskz_compress_ps(m, DY));
            _mm512_storeu_ps(fd->dz + f, _mm512_maskz_compress_ps(m, DZ));
            if (v->r)
                _mm512_storeu_ps(fd->s + f, _mm512_maskz_compress_ps(m, S));
            _mm512_storeu_si512(fd->b + f,
                                _mm512_maskz_compress_epi32(m, _mm512_loadu_si512(sc->id + k0)));
            _mm512_storeu_si512(fd->a + f, A);
            f += (uint32_t)__builtin_popcount(m);
        }
        fd->count = f;
        (void)hit;
        return out;
    }
#elif defined(__AVX2__)
    {
        if (fd->count + padded > PAIRS)
            out = flush(fd, v, out);
        uint32_t f = fd->count;
        __m256 PX = _mm256_set1_ps(px), PY = _mm256_set1_ps(py), PZ = _mm256_set1_ps(pz);
        __m256 PR = _mm256_set1_ps(v->r ? sc->r[q] : v->ru), RU = _mm256_set1_ps(v->ru);
        __m256i A = _mm256_set1_epi32((int)sc->id[q]);
        __m256i K = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        __m256i Q = _mm256_set1_epi32((int)q), STEP = _mm256_set1_epi32(8);
        for (uint32_t k0 = 0; k0 < padded; k0 += 8, K = _mm256_add_epi32(K, STEP)) {
            __m256 DX = _mm256_sub_ps(_mm256_loadu_ps(sc->x + k0), PX);
            __m256 DY = _mm256_sub_ps(_mm256_loadu_ps(sc->y + k0), PY);
            __m256 DZ = _mm256_sub_ps(_mm256_loadu_ps(sc->z + k0), PZ);
            __m256 D2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(DX, DX), _mm256_mul_ps(DY, DY)),
                                      _mm256_mul_ps(DZ, DZ));
            __m256 S = _mm256_add_ps(PR, v->r ? _mm256_loadu_ps(sc->r + k0) : RU);
            __m256 T = _mm256_and_ps(_mm256_cmp_ps(D2, _mm256_mul_ps(S, S), _CMP_LT_OQ),
                                     _mm256_castsi256_ps(_mm256_cmpgt_epi32(K, Q)));
            unsigned m = (unsigned)_mm256_movemask_ps(T);
            __m256i P = compress_permutation(m);
            _mm256_storeu_ps(fd->dx + f, _mm256_permutevar8x32_ps(DX, P));
            _mm256_storeu_ps(fd->dy + f, _mm256_permutevar8x32_ps(DY, P));
            _mm256_storeu_ps(fd->dz + f, _mm256_permutevar8x32_ps(DZ, P));
            if (v->r)
                _mm256_storeu_ps(fd->s + f, _mm256_permutevar8x32_ps(S, P));
            _mm256_storeu_si256(
                (__m256i *)(void *)(fd->b + f),
                _mm256_permutevar8x32_epi32(
                    _mm256_loadu_si256((const __m256i *)(const void *)(sc->id + k0)), P));
            _mm256_storeu_si256((__m256i *)(void *)(fd->a + f), A);
            f += (uint32_t)__builtin_popcount(m);
        }
        fd->count = f;
        (void)hit;
        return out;
    }
#endif
    if (v->r) {
        float pr = sc->r[q];
        for (uint32_t k = 0; k < padded; k++)
            hit[k] = ns__touching(ns__distance2(sc->x[k] - px, sc->y[k] - py, sc->z[k] - pz),
                                  pr + sc->r[k]) &
                     (k > q);
    } else {
        float s = v->ru + v->ru;
        for (uint32_t k = 0; k < padded; k++)
            hit[k] = ns__touching(ns__distance2(sc->x[k] - px, sc->y[k] - py, sc->z[k] - pz), s) &
                     (k > q);
    }
    if (fd->count + padded > PAIRS)
        out = flush(fd, v, out);
    /* compaction without branches: every candidate is written, and kept
     * only when it touches */
    uint16_t *at = sc->at;
    uint32_t n = 0;
    for (uint32_t k = 0; k < padded; k++) {
        at[n] = (uint16_t)k;
        n += hit[k];
    }
    uint32_t a = sc->id[q], f = fd->count;
    float pr = v->r ? sc->r[q] : 0.0f;
    for (uint32_t t = 0; t < n; t++, f++) {
        uint32_t k = at[t];
        fd->a[f] = a;
        fd->b[f] = sc->id[k];
        fd->dx[f] = sc->x[k] - px;
        fd->dy[f] = sc->y[k] - py;
        fd->dz[f] = sc->z[k] - pz;
        if (v->r)
            fd->s[f] = pr + sc->r[k];
    }
    fd->count = f;
    return out;
}

/* The contacts of cell c, counted (out NULL) or written from out on (some
 * perhaps still pending in fd: flush() writes them); *tested += the pairs it
 * tested. A count stops early once it is over limit: a crowded cell may hold
 * billions of contacts, and a search that will be refused need not count them
 * all. */
static size_t cell_contacts(const state *s, const view *v, const ns__grid *g, size_t c, scratch *sc,
                            found *fd, ns_contact **out, size_t *tested, size_t limit)
{
    runs r;
    cell_runs(s, v, g, c, &r);
    size_t hits = 0;
    uint32_t first = v->start[c], last = v->start[c + 1];
    if (gather_cell(v, c, &r, sc)) {
        for (uint32_t q = 0; q < sc->own; q++) {
            if (*out)
                *out = write_gathered(sc, fd, v, q, *out);
            else
                hits += count_gathered(sc, v, q);
        }
        *tested += (size_t)sc->own * sc->padded;
        return hits;
    }
    /* crowded: run by run, after what is pending */
    if (*out)
        *out = flush(fd, v, *out);
    for (uint32_t p = first; p < last && hits <= limit; p++) {
        if (*out) {
            *out = write_run(v, p, p + 1, r.own_end, *out);
            for (int q = 0; q < r.count; q++)
                *out = write_run(v, p, r.begin[q], r.end[q], *out);
        } else {
            hits += count_run(v, p, p + 1, r.own_end);
            for (int q = 0; q < r.count; q++)
                hits += count_run(v, p, r.begin[q], r.end[q]);
        }
        *tested += r.own_end - p - 1;
        for (int q = 0; q < r.count; q++)
            *tested += r.end[q] - r.begin[q];
    }
    return hits;
}

/* Over the blocks [b0, b1) of cells in parallel: pass 1 (items NULL)
 * counts each block's contacts into s->block_total and returns the sum, or
 * some number over limit once it is clear the sum is; pass 2 writes each
 * block's contacts at the offset s->block_total then holds, and returns the
 * pairs tested. */
static size_t blocks_pass(state *s, const ns__input *in, size_t b0, size_t b1, ns_contact *items,
                          size_t limit)
{
    view v = view_of(s, in);
    const ns__grid *g = &in->grid;
    size_t *total = s->block_total.a, cells = s->cells, sum = 0;
    long long first = (long long)b0, last = (long long)b1;
    int over = 0; /* set once one thread's count alone is over limit */
#pragma omp parallel num_threads(in->threads) reduction(+ : sum)
    {
        scratch sc;
        found fd;
        fd.count = 0;
#pragma omp for schedule(dynamic, 1)
        for (long long blk = first; blk < last; blk++) {
            int stop;
#pragma omp atomic read
            stop = over;
            if (stop)
                continue;
            size_t c0 = (size_t)blk * BLOCK, c1 = c0 + BLOCK < cells ? c0 + BLOCK : cells;
            size_t hits = 0, tested = 0;
            ns_contact *out = items ? items + total[blk] : NULL;
            for (size_t c = c0; c < c1 && hits <= limit; c++)
                if (v.start[c] < v.start[c + 1])
                    hits += cell_contacts(s, &v, g, c, &sc, &fd, &out, &tested, limit - hits);
            if (items)
                flush(&fd, &v, out);
            else
                total[blk] = hits;
            sum += items ? tested : hits;
            if (!items && sum > limit) {
#pragma omp atomic write
                over = 1;
            }
        }
    }
    return sum;
}

static ns_status count(void *p, const ns__input *in, size_t *total, ns_error *err)
{
    (void)err;
    state *s = p;
    *total = blocks_pass(s, in, 0, s->blocks, NULL, SIZE_MAX);
    return NS_OK;
}

/* The blocks [b0, b1) counted (at most in->max_contacts, else refused),
 * their counts turned into offsets from b0's first contact. */
static ns_status count_blocks(state *s, const ns__input *in, size_t b0, size_t b1, size_t *total,
                              ns_error *err)
{
    *total = blocks_pass(s, in, b0, b1, NULL, in->max_contacts);
    if (*total > in->max_contacts)
        return ns__too_many_contacts(err, in->max_contacts);
    size_t *offset = s->block_total.a, at = 0;
    for (size_t b = b0; b < b1; b++) {
        size_t k = offset[b];
        offset[b] = at;
        at += k;
    }
    return NS_OK;
}

static ns_status query(void *p, const ns__input *in, ns_contact_list *list, size_t *candidates,
                       ns_error *err)
{
    state *s = p;
    size_t total;
    ns_status st = count_blocks(s, in, 0, s->blocks, &total, err);
    if (st == NS_OK)
        st = ns_contact_list_reserve(list, total, err);
    if (st != NS_OK)
        return st;
    *candidates = blocks_pass(s, in, 0, s->blocks, list->items, SIZE_MAX);
    list->count = total;
    return NS_OK;
}

/* The query in batches of blocks, each of at least an eighth of the
 * particles, clamped to [STREAM_MIN, STREAM_MAX] (so small sets stream in
 * several batches too, and large ones in bounded memory): counted, written
 * into s->batch, handed to sink, in block order, so the contacts and their
 * order are the query's. */
enum { STREAM_MIN = 1 << 10, STREAM_MAX = 1 << 16 };
static ns_status stream(void *p, const ns__input *in, ns_contact_sink sink, void *user,
                        size_t *candidates, ns_error *err)
{
    state *s = p;
    const uint32_t *start = s->start.a;
    size_t batch = in->n / 8 < STREAM_MIN   ? STREAM_MIN
                   : in->n / 8 > STREAM_MAX ? STREAM_MAX
                                            : in->n / 8;
    for (size_t b0 = 0, b1; b0 < s->blocks; b0 = b1) {
        size_t first = start[b0 * BLOCK], last = first;
        for (b1 = b0; b1 < s->blocks && last - first < batch; b1++)
            last = start[(b1 + 1) * BLOCK < s->cells ? (b1 + 1) * BLOCK : s->cells];
        size_t total;
        ns_status st = count_blocks(s, in, b0, b1, &total, err);
        if (st != NS_OK)
            return st;
        if (total == 0)
            continue;
        if (!ns__buf_reserve(&s->batch, total, sizeof(ns_contact)))
            return ns__fail_oom(err, "a batch of the streamed contacts");
        *candidates += blocks_pass(s, in, b0, b1, s->batch.a, SIZE_MAX);
        if (!sink(s->batch.a, total, user))
            break;
    }
    return NS_OK;
}

static void info(const void *p, ns_index_info *info)
{
    const state *s = p;
    info->bytes += sizeof *s + s->soa.capacity * sizeof(float) +
                   s->block_total.capacity * sizeof(size_t) +
                   s->batch.capacity * sizeof(ns_contact) +
                   (s->start.capacity + s->order.capacity + s->key.capacity + s->group.capacity +
                    s->bucket_cells.capacity) *
                       sizeof(uint32_t);
    info->cells = s->cells;
    info->table_size = s->dense ? 0 : s->table;
    for (size_t c = 0; c < s->cells; c++)
        info->nonempty_buckets += s->start.a[c + 1] > s->start.a[c];
}

const ns_kernel_ops NS__OPS(grid_sorted) = {.build = build,
                                            .query = query,
                                            .info = info,
                                            .destroy = destroy,
                                            .count = count,
                                            .stream = stream};

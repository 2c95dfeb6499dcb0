/* grid_sorted - particles reordered into cell order, half stencil, vectorised test.
 *
 * The kernel to link into a simulation. The build is a parallel counting sort
 * (stable: one table of counts per thread, without atomics, where those
 * tables fit in the space the positions will take)
 * that copies positions (and radii) into cell order as separate float arrays,
 * so each cell's particles are contiguous and the distance test streams
 * through memory. Three ways to number the cells, chosen per build:
 *  - dense: a grid over the bounding box with one empty layer of cells around
 *    it, when it has at most 2 cells per particle. Cells are numbered x
 *    fastest, so the three cells x-1, x, x+1 of a row are one contiguous run
 *    of particles;
 *  - blocked (dambreak's empty air, clusters, a sheet): only the blocks of
 *    4 x 4 x 4 cells that hold particles, each laid out like a small dense
 *    grid (x fastest), numbered in the order of a coarse grid of blocks over
 *    the bounding box (one number per block, at most 1.5 blocks per
 *    particle), so neighbouring blocks lie near each other in memory; when
 *    the non-empty blocks have at most 2 cells per particle;
 *  - hashed (particles far apart): the same blocks, or blocks of 2 x 2 x 2
 *    or single cells when bigger ones would break the 2 cells per particle,
 *    found through a hash table of the blocks.
 *    In both, a cell's neighbours are mostly in its own block, a row of them
 *    in one block is one run, and the blocks around are looked up once per
 *    block, not once per cell. Memory stays proportional to n.
 * Every pair is tested once: a particle against the later particles of its
 * own cell and the particles of 13 of the 26 neighbour cells (the half
 * stencil: +x; the row y+1; the nine cells of z+1). A cell's candidates are
 * gathered side by side into a scratch padded with NaN, and each of its
 * particles is tested against all of them by one plain loop that the
 * compiler vectorises; the contacts found are compacted (AVX-512 compress,
 * on the AVX2 path a permutation looked up from the mask, a branch-free
 * loop elsewhere; every vector of candidates is stored whether or not it
 * holds a contact, which is faster than a branch that mispredicts; where
 * the count found few contacts per candidate, only the indices of those
 * that touch, their fields gathered afterwards) and
 * their values computed by a second vectorised loop, then streamed to the
 * list (a crowded neighbourhood that does not fit the scratch is tested run
 * by run; a few sparse cells of a row are gathered and tested as one, see
 * span_of()).
 * The query runs twice over units of cells in parallel (runs of cells that
 * hold at least UNIT_PARTICLES particles, see plan_units()): first counting
 * the contacts of each unit, then writing each unit's contacts at its offset
 * in the caller's list, so no per-thread buffer is merged and the order of the
 * contacts does not depend on the thread count. Inside a cell the particles
 * keep the caller's order, so the whole result is deterministic. From the
 * second query of an index on, the first pass also records the contacts it
 * finds (the other particle of each, 4 bytes, see recorder), in room for as
 * many as the last query had, and the second pass writes them without
 * testing again: where most candidates do not touch (polydisperse, 28 per
 * contact) the query takes three quarters of the time.
 * Mixed radii are split into levels of cells by radius class, each such a
 * grid (see "Mixed radii" below).
 * O(n / T) time, at most 40 bytes per particle with one level, 4 more
 * with several (each particle's index, level by level), and for the
 * records 4.5 bytes per contact of the last query and 2 per particle and
 * level (see info()). */
#include "kernel.h"

#include <omp.h>
#include <string.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

enum {
    UNIT = 64,        /* cells per step of a unit of parallel work (see plan_units()) */
    BLOCK_SHIFT = 2,  /* a block of the blocked and hashed layouts: 2^2 = 4 cells per axis */
    CHUNK = 32,       /* candidates tested together before their contacts are written */
    SMALL = 24,       /* groups up to this size are sorted by insertion (by block) */
    SMALL_INDEX = 64, /* likewise by index alone: the atomic scatter leaves each cell a
                       * merge of the threads' ascending runs, nearly sorted */
    COPY = 16,        /* elements per move when gathering candidates (see copy_floats) */
    SLACK = COPY,
    SHARES = 256, /* at most this many shares of the particles in a stable sort */
};

/* How cells are numbered (see the top of the file). */
typedef enum layout { DENSE, BLOCKED, HASHED } layout;

typedef struct level {
    layout layout;
    int shift;            /* blocked, hashed: a block is 2^shift cells along each axis */
    int64_t dim[3];       /* dense: cells per axis; blocked: blocks per axis (each with
                           * its empty layer) */
    int64_t first[3];     /* blocked: the block coordinate of the first layer */
    size_t cells;         /* dense: all grid cells; else blocks x cells per block */
    size_t groups;        /* hashed: hash groups of blocks */
    ns__u32s coarse;      /* blocked: the grid of blocks + 1: the number of each
                           * non-empty one */
    ns__u32s start;       /* cells + 1: the first sorted particle of each cell */
    ns__u32s order;       /* n: the caller's index of each sorted particle */
    ns__u32s key;         /* n: the key of each particle in the counting sort (then spare) */
    ns__u32s bucket;      /* hashed: groups x cells per block + 1: the counting sort's */
    ns__u32s group_first; /* hashed: groups + 1: the first block of each group */
    ns__u32s unit_cell;   /* units + 1: the first cell of each unit (see plan_units()) */
    ns__buf soa;          /* floats: x[n], y[n], z[n], then r[n] for per-particle radii */
    ns__grid grid;        /* the cells this level is binned in */
    bool radii;           /* r[] in soa; else every radius is ru */
    float ru;
    size_t units; /* runs of cells: the parallel work */
    size_t n;
    const uint32_t *ids; /* while a level of several is sorted: the caller's index of its
                          * particle i (see caller_index()); NULL: the caller's particle i */
} level;

/* The sorted arrays, as the loops read them. */
typedef struct view {
    const float *x, *y, *z, *r; /* r NULL: every radius is ru */
    float ru;
    const uint32_t *order, *start;
} view;

/* The caller's index of a level's particle i. The counting sort numbers a
 * level's particles 0 .. n - 1 (key[], its shares); from its scatter on,
 * order[] holds the caller's indices, so that every later step reads the
 * caller's positions and radii as a single level does. A level of several
 * reads them through its ids rather than a copy of its particles, which
 * another thread would have written (see list_levels()). */
static inline size_t caller_index(const level *s, size_t i)
{
    return s->ids ? s->ids[i] : i;
}

static void level_free(level *s)
{
    ns__u32s_free(&s->start);
    ns__u32s_free(&s->order);
    ns__u32s_free(&s->key);
    ns__u32s_free(&s->bucket);
    ns__u32s_free(&s->group_first);
    ns__u32s_free(&s->coarse);
    ns__u32s_free(&s->unit_cell);
    ns__buf_free(&s->soa);
}

/* At most 2 cells per particle (and at least a few thousand cells are
 * always allowed): the dense grid's rule, and the blocks' too. */
static bool cells_allowed(double cells, size_t n)
{
    return cells <= 2.0 * (double)n + 4096.0 && cells < (double)UINT32_MAX - 1;
}

/* Dense when the grid with its empty layer keeps the rule. */
static bool choose_dense(level *s, const ns__input *in)
{
    double cells = 1.0;
    for (int k = 0; k < 3; k++) {
        double d = (double)in->grid.cell_hi[k] - (double)in->grid.cell_lo[k] + 3.0;
        s->dim[k] = d < 0x1p40 ? (int64_t)d : 0;
        cells *= d;
    }
    if (!cells_allowed(cells, in->n))
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

/* The block of a cell coordinate: floor(c / 2^shift), written so that it
 * does not rely on how >> treats a negative number. */
static inline int64_t block_coord(int64_t c, int shift)
{
    return c >= 0 ? c >> shift : ~(~c >> shift);
}

/* Sorting the caller's indices inside a group (a dense cell, or a hash
 * group of blocks whose cells must become contiguous runs): when by_block,
 * by block (z, then y, then x), then by cell inside it likewise; then by
 * index, so the order never depends on the threads' race in the scatter. */
typedef struct sorter {
    const ns__input *in;
    bool by_block;
    int shift;
} sorter;

static bool before(const sorter *so, uint32_t a, uint32_t b)
{
    if (so->by_block) {
        const float *pa = so->in->pos + 3 * (size_t)a, *pb = so->in->pos + 3 * (size_t)b;
        int64_t ca[3], cb[3];
        cell_of(&so->in->grid, pa[0], pa[1], pa[2], ca);
        cell_of(&so->in->grid, pb[0], pb[1], pb[2], cb);
        for (int k = 2; k >= 0; k--) {
            int64_t ba = block_coord(ca[k], so->shift), bb = block_coord(cb[k], so->shift);
            if (ba != bb)
                return ba < bb;
        }
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
    if (len <= (so->by_block ? SMALL : SMALL_INDEX)) {
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

/* Blocked and hashed: a block is 2^shift cells along each axis, numbered x fastest
 * inside it (its local cell); blocks are hashed into groups. */
static inline size_t block_cells(const level *s)
{
    return (size_t)1 << (3 * s->shift);
}

static inline uint32_t local_cell(const int64_t c[3], int shift)
{
    uint32_t mask = (1u << shift) - 1u;
    return ((uint32_t)c[0] & mask) | ((uint32_t)c[1] & mask) << shift |
           ((uint32_t)c[2] & mask) << (2 * shift);
}

static inline uint32_t block_group(const int64_t b[3], size_t groups)
{
    return ns__hash_cell(b[0], b[1], b[2], groups);
}

static inline void block_of_cell(const int64_t c[3], int shift, int64_t b[3])
{
    for (int k = 0; k < 3; k++)
        b[k] = block_coord(c[k], shift);
}

/* Blocked: the place of block b in the grid of blocks. */
static inline size_t coarse_index(const level *s, const int64_t b[3])
{
    return (size_t)(((b[2] - s->first[2]) * s->dim[1] + (b[1] - s->first[1])) * s->dim[0] +
                    (b[0] - s->first[0]));
}

/* Dense: the number of cell c (x fastest, shifted by the empty layer). */
static inline size_t dense_cell(const level *s, const int64_t c[3])
{
    const int64_t *lo = s->grid.cell_lo;
    uint64_t x = (uint64_t)(c[0] - lo[0] + 1), y = (uint64_t)(c[1] - lo[1] + 1),
             z = (uint64_t)(c[2] - lo[2] + 1);
    return (size_t)((z * (uint64_t)s->dim[1] + y) * (uint64_t)s->dim[0] + x);
}

/* The key of each particle: its dense cell (x fastest, shifted by the empty
 * layer), or its block's number (blocked) or hash group (hashed), then its
 * local cell. */
static inline uint32_t particle_key(const level *s, const ns__input *in, size_t i)
{
    const float *p = in->pos + 3 * caller_index(s, i);
    int64_t c[3];
    cell_of(&in->grid, p[0], p[1], p[2], c);
    if (s->layout != DENSE) {
        int64_t b[3];
        block_of_cell(c, s->shift, b);
        uint32_t block =
            s->layout == BLOCKED ? s->coarse.a[coarse_index(s, b)] : block_group(b, s->groups);
        return block << (3 * s->shift) | local_cell(c, s->shift);
    }
    return (uint32_t)dense_cell(s, c);
}

/* Stable parallel counting sort of the particles by key into order[] (see
 * sort_by_key()), with one table of counts per share of the particles in
 * table[shares x keys]: each share counts its keys, the offsets run key by
 * key and share by share (the keys cut in one range per share, summed
 * first), and each share scatters its particles through its own table. */
static void sort_stable(level *s, const ns__input *in, uint32_t *group, size_t keys,
                        long long shares, uint32_t *table)
{
    uint32_t *key = s->key.a, *order = s->order.a;
    long long n = (long long)in->n, nk = (long long)keys;
    size_t sum[SHARES + 1];
#pragma omp parallel num_threads(in->threads)
    {
#pragma omp for schedule(static, 1)
        for (long long t = 0; t < shares; t++) {
            uint32_t *mine = table + (size_t)t * keys;
            memset(mine, 0, keys * sizeof *mine);
            for (long long i = n * t / shares; i < n * (t + 1) / shares; i++) {
                uint32_t k = particle_key(s, in, (size_t)i);
                key[i] = k;
                mine[k]++;
            }
        }
#pragma omp for schedule(static, 1)
        for (long long t = 0; t < shares; t++) {
            size_t total = 0;
            for (long long k = nk * t / shares; k < nk * (t + 1) / shares; k++)
                for (long long u = 0; u < shares; u++)
                    total += table[(size_t)u * keys + (size_t)k];
            sum[t + 1] = total;
        }
#pragma omp single
        {
            sum[0] = 0;
            for (long long t = 0; t < shares; t++)
                sum[t + 1] += sum[t];
        }
#pragma omp for schedule(static, 1)
        for (long long t = 0; t < shares; t++) {
            size_t at = sum[t];
            for (long long k = nk * t / shares; k < nk * (t + 1) / shares; k++) {
                group[k] = (uint32_t)at;
                for (long long u = 0; u < shares; u++) {
                    uint32_t *c = table + (size_t)u * keys + (size_t)k, here = *c;
                    *c = (uint32_t)at;
                    at += here;
                }
            }
        }
#pragma omp for schedule(static, 1)
        for (long long t = 0; t < shares; t++) {
            uint32_t *mine = table + (size_t)t * keys;
            for (long long i = n * t / shares; i < n * (t + 1) / shares; i++)
                order[mine[key[i]]++] = (uint32_t)caller_index(s, (size_t)i);
        }
    }
    group[keys] = (uint32_t)n;
}

/* Parallel counting sort of the particles by key into order[], with
 * group[k] = the first particle of key k and group[keys] = n. True: the
 * sort is stable, each key's particles in the caller's order (sort_stable(),
 * its tables in soa, which gather() fills only later). Where those tables
 * do not fit there (more than about 3 n / T keys): atomic counts stored one
 * place up, an exclusive scan, then a scatter through the same counters,
 * which leaves each key's particles in no set order (false). */
static bool sort_by_key(level *s, const ns__input *in, uint32_t *group, size_t keys)
{
    long long shares = in->threads < SHARES ? in->threads : SHARES;
    if ((size_t)shares * keys <= 3 * in->n) {
        sort_stable(s, in, group, keys, shares, s->soa.a);
        return true;
    }
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
        order[at] = (uint32_t)caller_index(s, (size_t)i);
    }
    return false;
}

/* The cell and block of the caller's particle i. */
static inline void particle_block(const ns__input *in, int shift, uint32_t i, int64_t c[3],
                                  int64_t b[3])
{
    const float *p = in->pos + 3 * (size_t)i;
    cell_of(&in->grid, p[0], p[1], p[2], c);
    block_of_cell(c, shift, b);
}

static inline bool same_block(const int64_t a[3], const int64_t b[3])
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

/* The blocks of a group, the few a hash group usually holds: up to FEW
 * found by a scan and put in order (z, y, x); more than FEW, or
 * (returning FEW + 1) not counted. */
enum { FEW = 8 };
typedef struct group_blocks {
    int count;
    int64_t b[FEW][3];
} group_blocks;

static void find_group_blocks(const ns__input *in, int shift, const uint32_t *a, size_t len,
                              group_blocks *gb)
{
    gb->count = 0;
    for (size_t k = 0; k < len; k++) {
        int64_t c[3], b[3];
        particle_block(in, shift, a[k], c, b);
        int q = 0;
        while (q < gb->count && !same_block(gb->b[q], b))
            q++;
        if (q < gb->count)
            continue;
        if (gb->count == FEW) {
            gb->count = FEW + 1;
            return;
        }
        /* inserted in order */
        for (q = gb->count++; q > 0; q--) {
            const int64_t *p = gb->b[q - 1];
            bool after = p[2] != b[2] ? p[2] > b[2] : p[1] != b[1] ? p[1] > b[1] : p[0] > b[0];
            if (!after)
                break;
            memcpy(gb->b[q], p, sizeof gb->b[q]);
        }
        memcpy(gb->b[q], b, sizeof gb->b[q]);
    }
}

/* Hashed, pass 1: the number of blocks of each group into first[g]. A group
 * of more than FEW blocks is sorted into its final order here (by block,
 * cell and index) and its blocks counted along it. */
static void count_blocks_of_groups(level *s, const ns__input *in)
{
    const uint32_t *bucket = s->bucket.a;
    uint32_t *order = s->order.a, *first = s->group_first.a;
    int shift = s->shift;
    long long groups = (long long)s->groups;
    size_t per = block_cells(s);
#pragma omp parallel for num_threads(in->threads) schedule(dynamic, 256)
    for (long long g = 0; g < groups; g++) {
        uint32_t *a = order + bucket[(size_t)g * per];
        size_t len = bucket[(size_t)(g + 1) * per] - bucket[(size_t)g * per];
        group_blocks gb;
        find_group_blocks(in, shift, a, len, &gb);
        uint32_t count = (uint32_t)gb.count;
        if (gb.count > FEW) {
            sorter so = {in, true, shift};
            sort_group(&so, a, len);
            int64_t prev[3] = {0, 0, 0}, c[3], b[3];
            count = 0;
            for (size_t k = 0; k < len; k++, memcpy(prev, b, sizeof prev)) {
                particle_block(in, shift, a[k], c, b);
                count += k == 0 || !same_block(prev, b);
            }
        }
        first[g] = count;
    }
    first[groups] = 0;
}

/* Hashed, pass 2: each group's particles in their final order (by block,
 * then cell, then index) and the start of each of its blocks' cells. The
 * counting sort has put a group's particles in order of their local cell;
 * a group of a few blocks is redistributed by (block, cell) through key[]
 * (free once the sort is done), a group of many was sorted in pass 1 and
 * its cells are found along it. Then each cell is sorted by index. */
static void lay_out_groups(level *s, const ns__input *in)
{
    const uint32_t *bucket = s->bucket.a, *first = s->group_first.a;
    uint32_t *order = s->order.a, *start = s->start.a, *spare = s->key.a;
    int shift = s->shift;
    long long groups = (long long)s->groups;
    size_t per = block_cells(s);
    sorter by_index = {in, false, 0};
#pragma omp parallel for num_threads(in->threads) schedule(dynamic, 256)
    for (long long g = 0; g < groups; g++) {
        uint32_t begin = bucket[(size_t)g * per], end = bucket[(size_t)(g + 1) * per];
        size_t cells = (size_t)(first[g + 1] - first[g]) * per;
        uint32_t *cell = start + (size_t)first[g] * per; /* this group's cells */
        if (cells == 0)
            continue;
        group_blocks gb = {.count = 1};
        if (cells > per)
            find_group_blocks(in, shift, order + begin, end - begin, &gb);
        if (cells == per) {
            memcpy(cell, bucket + (size_t)g * per, per * sizeof *cell);
        } else if (gb.count <= FEW) {
            /* counts per (block, cell), scanned into starts, then a scatter */
            uint32_t at[(FEW << (3 * BLOCK_SHIFT)) + 1] = {0};
            for (int pass = 0; pass < 2; pass++) {
                for (uint32_t k = begin; k < end; k++) {
                    int64_t c[3], b[3];
                    particle_block(in, shift, order[k], c, b);
                    size_t q = 0;
                    while (!same_block(gb.b[q], b))
                        q++;
                    size_t idx = q * per + local_cell(c, shift);
                    if (pass == 0)
                        at[idx + 1]++;
                    else
                        spare[at[idx]++] = order[k];
                }
                if (pass == 0) {
                    at[0] = begin;
                    for (size_t k = 0; k < cells; k++)
                        at[k + 1] += at[k];
                    memcpy(cell, at, cells * sizeof *cell);
                }
            }
            memcpy(order + begin, spare + begin, (end - begin) * sizeof *order);
        } else {
            size_t next = 0;
            int64_t prev[3] = {0, 0, 0};
            size_t q = 0;
            for (uint32_t k = begin; k < end; k++) {
                int64_t c[3], b[3];
                particle_block(in, shift, order[k], c, b);
                q += k > begin && !same_block(prev, b);
                memcpy(prev, b, sizeof prev);
                for (size_t idx = q * per + local_cell(c, shift); next <= idx;)
                    cell[next++] = k;
            }
            while (next < cells)
                cell[next++] = end;
            continue; /* sorted by index too */
        }
        for (size_t k = 0; k < cells; k++) {
            uint32_t b0 = cell[k], b1 = k + 1 < cells ? cell[k + 1] : end;
            if (b1 - b0 > 1)
                sort_group(&by_index, order + b0, b1 - b0);
        }
    }
}

/* Hashed: the particles sorted into blocks of 2^shift cells along each
 * axis, or smaller ones when those would need more than 2 cells per particle
 * (the dense grid's rule), each a new counting sort. */
static ns_status build_hashed(level *s, const ns__input *in, int shift, ns_error *err)
{
    size_t n = in->n;
    s->layout = HASHED;
    for (s->shift = shift;; s->shift--) {
        size_t per = block_cells(s), keys = 64;
        while (keys < n / 2)
            keys *= 2;
        s->groups = keys / per;
        if (!ns__u32s_reserve(&s->bucket, keys + 1) ||
            !ns__u32s_reserve(&s->group_first, s->groups + 1))
            return ns__fail_oom(err, "grid_sorted's buckets");
        sort_by_key(s, in, s->bucket.a, keys);
        count_blocks_of_groups(s, in);
        size_t blocks =
            ns__parallel_exclusive_scan_u32(s->group_first.a, s->groups + 1, in->threads);
        s->cells = blocks * per;
        if (s->shift > 0 && !cells_allowed((double)s->cells, n))
            continue;
        if (!ns__u32s_reserve(&s->start, s->cells + 1))
            return ns__fail_oom(err, "grid_sorted's cells");
        lay_out_groups(s, in);
        s->start.a[s->cells] = (uint32_t)n;
        return NS_OK;
    }
}

static view view_of(const level *s)
{
    size_t n = s->n;
    const float *soa = s->soa.a;
    return (view){.x = soa,
                  .y = soa + n,
                  .z = soa + 2 * n,
                  .r = s->radii ? soa + 3 * n : NULL,
                  .ru = s->ru,
                  .order = s->order.a,
                  .start = s->start.a};
}

/* Positions (and radii) into cell order. */
static void gather(const level *s, const ns__input *in)
{
    view v = view_of(s);
    float *x = (float *)v.x, *y = (float *)v.y, *z = (float *)v.z, *r = (float *)v.r;
    uint32_t *order = s->order.a;
    const float *pos = in->pos;
    long long n = (long long)in->n;
#pragma omp parallel for num_threads(in->threads) schedule(static)
    for (long long p = 0; p < n; p++) {
        size_t i = order[p];
        x[p] = pos[3 * i];
        y[p] = pos[3 * i + 1];
        z[p] = pos[3 * i + 2];
        if (r)
            r[p] = in->radius[i];
    }
}

/* Each cell's particles in the caller's order (dense, blocked). */
static void sort_cells(const level *s, const ns__input *in)
{
    const uint32_t *start = s->start.a;
    uint32_t *order = s->order.a;
    sorter so = {in, false, 0};
    long long cells = (long long)s->cells;
#pragma omp parallel for num_threads(in->threads) schedule(dynamic, 4096)
    for (long long c = 0; c < cells; c++)
        if (start[c + 1] - start[c] > 1)
            sort_group(&so, order + start[c], start[c + 1] - start[c]);
}

/* Blocked when the grid of 4 x 4 x 4 blocks over the bounding box, with an
 * empty layer of blocks around it, has at most 1.5 blocks per particle (4
 * bytes each: with the rest, at most 40 bytes per particle); the non-empty
 * blocks must then keep the cells' rule. */
static bool choose_blocked(level *s, const ns__input *in)
{
    double blocks = 1.0;
    for (int k = 0; k < 3; k++) {
        s->first[k] = block_coord(in->grid.cell_lo[k], BLOCK_SHIFT) - 1;
        double d =
            (double)block_coord(in->grid.cell_hi[k], BLOCK_SHIFT) - (double)s->first[k] + 2.0;
        s->dim[k] = d < 0x1p40 ? (int64_t)d : 0;
        blocks *= d;
    }
    return blocks <= 1.5 * (double)in->n + 4096.0;
}

/* Blocked: the non-empty blocks marked in the grid of blocks and numbered in
 * its order (x fastest), so that neighbouring blocks lie near each other in
 * memory, then a counting sort by cell as for the dense grid. *fits false:
 * the non-empty blocks have more than 2 cells per particle. */
static ns_status build_blocked(level *s, const ns__input *in, bool *fits, ns_error *err)
{
    size_t grid = (size_t)(s->dim[0] * s->dim[1] * s->dim[2]);
    if (!ns__u32s_reserve(&s->coarse, grid + 1))
        return ns__fail_oom(err, "grid_sorted's blocks");
    uint32_t *coarse = s->coarse.a;
    long long n = (long long)in->n, m = (long long)grid;
#pragma omp parallel num_threads(in->threads)
    {
#pragma omp for schedule(static)
        for (long long k = 0; k <= m; k++)
            coarse[k] = 0;
#pragma omp for schedule(static)
        for (long long i = 0; i < n; i++) {
            int64_t c[3], b[3];
            particle_block(in, s->shift, (uint32_t)caller_index(s, (size_t)i), c, b);
            size_t k = coarse_index(s, b);
            uint32_t marked;
#pragma omp atomic read
            marked = coarse[k];
            if (!marked) {
#pragma omp atomic write
                coarse[k] = 1;
            }
        }
    }
    s->cells = block_cells(s) * ns__parallel_exclusive_scan_u32(coarse, grid + 1, in->threads);
    *fits = cells_allowed((double)s->cells, in->n);
    if (!*fits)
        return NS_OK;
    if (!ns__u32s_reserve(&s->start, s->cells + 1))
        return ns__fail_oom(err, "grid_sorted's cells");
    if (!sort_by_key(s, in, s->start.a, s->cells))
        sort_cells(s, in);
    return NS_OK;
}

/* The units of parallel work of a built level: runs of UNIT cells, each
 * run joined to the next until the unit holds at least UNIT_PARTICLES
 * particles (or the cells end). Every unit has a fixed cost in each pass
 * (taking it from the schedule, writing its contacts' first and last
 * partial vectors, fencing its streamed stores), which a unit of a sparse
 * layout's few particles paid for little work: clusters' 1,528 units of 64
 * cells held 65 particles on average, uniform's 307 held 325. Joined, the
 * search took 6 % less time on clusters (100,000 and 1,000,000 particles),
 * 7 % less on dambreak, 2-3 % less on uniform and powder, the same on
 * polydisperse, whose runs of 64 cells already hold about 1,900 (2
 * threads; medians of 12-16 alternations of the two in one process). */
enum { UNIT_PARTICLES = 1024 };
static bool plan_units(level *s)
{
    size_t steps = (s->cells + UNIT - 1) / UNIT;
    if (!ns__u32s_reserve(&s->unit_cell, steps + 1))
        return false;
    const uint32_t *start = s->start.a;
    uint32_t *first = s->unit_cell.a;
    size_t units = 0, from = 0; /* the cells fit in uint32_t: cells_allowed() */
    for (size_t k = 0; k < steps; k++) {
        size_t end = k + 1 < steps ? (k + 1) * UNIT : s->cells;
        if (start[end] - start[from] >= UNIT_PARTICLES || end == s->cells) {
            first[units++] = (uint32_t)from;
            from = end;
        }
    }
    first[units] = (uint32_t)s->cells;
    s->units = units;
    return true;
}

/* One level's grid of the particles in: all of them (ids NULL), or one
 * level's, ids[i] the caller's index of its particle i (in->n of them; in's
 * arrays are the caller's). */
static ns_status build_level(level *s, const ns__input *in, const uint32_t *ids, ns_error *err)
{
    size_t n = in->n;
    s->n = n;
    s->ids = ids;
    s->grid = in->grid;
    s->radii = in->radius != NULL;
    s->ru = in->radius_uniform;
    s->layout = choose_dense(s, in) ? DENSE : choose_blocked(s, in) ? BLOCKED : HASHED;
    s->shift = s->layout == DENSE ? 0 : BLOCK_SHIFT;
    if (!ns__u32s_reserve(&s->order, n + SLACK) || !ns__u32s_reserve(&s->key, n) ||
        (s->layout == DENSE && !ns__u32s_reserve(&s->start, s->cells + 1)) ||
        !ns__buf_reserve(&s->soa, (in->radius ? 4 : 3) * n + SLACK, sizeof(float)))
        return ns__fail(err, NS_ERR_OUT_OF_MEMORY, NS_NO_PARTICLE,
                        "out of memory sorting %zu particles", n);
    ns_status st = NS_OK;
    if (s->layout == DENSE) {
        if (!sort_by_key(s, in, s->start.a, s->cells))
            sort_cells(s, in);
    } else if (s->layout == BLOCKED) {
        bool fits = true;
        st = build_blocked(s, in, &fits, err);
        if (st == NS_OK && !fits)
            st = build_hashed(s, in, BLOCK_SHIFT - 1, err);
    } else {
        st = build_hashed(s, in, BLOCK_SHIFT, err);
    }
    if (st != NS_OK)
        return st;
    if (!plan_units(s))
        return ns__fail_oom(err, "grid_sorted's units");
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

/* Adds [begin, end) when not empty, as part of the last run when it
 * continues it. */
static inline void add_run(runs *r, uint32_t begin, uint32_t end)
{
    if (begin < end && r->count > 0 && r->end[r->count - 1] == begin) {
        r->end[r->count - 1] = end;
    } else if (begin < end) {
        r->begin[r->count] = begin;
        r->end[r->count] = end;
        r->count++;
    }
}

/* Dense: the cells c .. c + m - 1 of one row (see span_of()); the cell x+1
 * after them continues the own run; the rows (y+1, z), (y-1, z+1), (y, z+1)
 * and (y+1, z+1), from x-1 before them to x+1 after them, are runs of the
 * sorted order. */
static void dense_runs(const level *s, const view *v, size_t c, size_t m, runs *r)
{
    static const int rows[4][2] = {{1, 0}, {-1, 1}, {0, 1}, {1, 1}};
    ptrdiff_t dx = (ptrdiff_t)s->dim[0], dxy = dx * (ptrdiff_t)s->dim[1];
    r->own_end = v->start[c + m + 1];
    r->count = 0;
    for (int q = 0; q < 4; q++) {
        size_t mid = (size_t)((ptrdiff_t)c + rows[q][0] * dx + rows[q][1] * dxy);
        add_run(r, v->start[mid - 1], v->start[mid + m + 1]);
    }
}

/* Blocked and hashed: the 27 blocks around the current one (by offset, 13 is itself),
 * each looked up when a cell first needs it. */
#define BLOCK_UNKNOWN (UINT32_MAX - 1)
#define BLOCK_ABSENT UINT32_MAX
typedef struct around {
    size_t block; /* SIZE_MAX: none yet */
    int64_t at[3];
    uint32_t id[27];
} around;

/* The number of the block at b, or BLOCK_ABSENT: found in its hash group by the
 * block of each candidate's first particle. */
static uint32_t find_block(const level *s, const view *v, const ns__grid *g, const int64_t b[3])
{
    if (s->layout == BLOCKED) {
        /* the grid of blocks has an empty layer around the non-empty ones */
        const uint32_t *coarse = s->coarse.a;
        size_t k = coarse_index(s, b);
        return coarse[k + 1] > coarse[k] ? coarse[k] : BLOCK_ABSENT;
    }
    const uint32_t *first = s->group_first.a;
    uint32_t h = block_group(b, s->groups);
    for (uint32_t k = first[h]; k < first[h + 1]; k++) {
        uint32_t p = v->start[(size_t)k << (3 * s->shift)];
        int64_t c[3], got[3];
        cell_of(g, v->x[p], v->y[p], v->z[p], c);
        block_of_cell(c, s->shift, got);
        if (same_block(got, b))
            return k;
    }
    return BLOCK_ABSENT;
}

/* The cells x0 .. x1 of the row (y, z), in local coordinates of the
 * current block that may step one block out, as runs: one for the cells in
 * each block. The first cell continues the own run when it follows it. */
static inline void add_row(const level *s, const view *v, const ns__grid *g, around *ar, int x0,
                           int x1, int y, int z, runs *r)
{
    int sh = s->shift, e = 1 << sh;
    int by = (y >= e) - (y < 0), bz = (z >= e) - (z < 0);
    for (int x = x0, to; x <= x1; x = to + 1) {
        int bx = (x >= e) - (x < 0);
        to = bx == 0 && x1 >= e ? e - 1 : bx < 0 && x1 >= 0 ? -1 : x1;
        int k = (bx + 1) + 3 * (by + 1) + 9 * (bz + 1);
        if (ar->id[k] == BLOCK_UNKNOWN) {
            int64_t want[3] = {ar->at[0] + bx, ar->at[1] + by, ar->at[2] + bz};
            ar->id[k] = find_block(s, v, g, want);
        }
        if (ar->id[k] == BLOCK_ABSENT)
            continue;
        const int64_t cell[3] = {x, y, z}; /* its local cell, wrapped into that block */
        size_t first = (size_t)ar->id[k] << (3 * sh) | local_cell(cell, sh);
        uint32_t begin = v->start[first], end = v->start[first + (size_t)(to - x) + 1];
        if (begin == r->own_end && r->count == 0)
            r->own_end = end;
        else
            add_run(r, begin, end);
    }
}

/* Blocked and hashed: the half stencil of the cells c .. c + m - 1 of one
 * row of a block (the cell x+1 after them, the row y+1, the plane z+1, from
 * x-1 before them to x+1 after them), inside their block or in one of the
 * blocks around it. */
static void block_runs(const level *s, const view *v, const ns__grid *g, size_t c, size_t m,
                       around *ar, runs *r)
{
    int sh = s->shift;
    unsigned mask = (1u << sh) - 1u;
    size_t block = c >> (3 * sh);
    unsigned l = (unsigned)c & ((1u << (3 * sh)) - 1u);
    int x = (int)(l & mask), y = (int)(l >> sh & mask), z = (int)(l >> (2 * sh));
    if (ar->block != block) {
        uint32_t p = v->start[c];
        int64_t cc[3];
        cell_of(g, v->x[p], v->y[p], v->z[p], cc);
        block_of_cell(cc, sh, ar->at);
        ar->block = block;
        for (int k = 0; k < 27; k++)
            ar->id[k] = BLOCK_UNKNOWN;
        ar->id[13] = (uint32_t)block;
    }
    int last = x + (int)m - 1;
    r->own_end = v->start[c + m];
    r->count = 0;
    add_row(s, v, g, ar, last + 1, last + 1, y, z, r);
    add_row(s, v, g, ar, x - 1, last + 1, y + 1, z, r);
    for (int dy = -1; dy <= 1; dy++)
        add_row(s, v, g, ar, x - 1, last + 1, y + dy, z + 1, r);
}

static inline void cell_runs(const level *s, const view *v, const ns__grid *g, size_t c, size_t m,
                             around *ar, runs *r)
{
    if (s->layout == DENSE)
        dense_runs(s, v, c, m, r);
    else
        block_runs(s, v, g, c, m, ar, r);
}

/* Sparse cells are searched together: the cells from c on along its row
 * (of the grid, or of its block), up to c1 and up to SPAN_CELLS of them,
 * while they hold at most SPAN_PARTICLES particles in all, are gathered
 * once and each of their particles tested against the later ones of the
 * span and the rows around it (cell_runs()). A particle of one cell of the
 * span then also tests the cells of the rows beyond its own x-1 .. x+1,
 * farther than a cell from it, so they never touch it: the contacts, and
 * their order, are those of the cells one by one. Each gather has a fixed
 * cost that a cell of one or two particles (most of clusters' cells) paid
 * for a few candidates: with spans, clusters' search (build and query)
 * took 8-9 % less time at 20,000, 100,000 and 1,000,000 particles,
 * uniform's 2 % less, dambreak's, polydisperse's and sheet's the same (2
 * threads, medians of 6-10 alternations inside one process; spans of up
 * to 4 cells and 12 or 15 particles did as well, 8 particles or 2 cells
 * less). Returns the number of cells. Used in the finest level only (the
 * one level of a one-level grid): a coarser level's particles also search
 * the finer levels, and its records (see expand_unit()) are laid out cell
 * by cell, each cell's own contacts, then those across levels. */
enum { SPAN_CELLS = 4, SPAN_PARTICLES = 12 };
static inline size_t span_of(const level *s, const view *v, size_t c, size_t c1)
{
    /* most cells of a bulk workload end their span at once: spare them the
     * division below */
    if (c + 1 >= c1 || v->start[c + 2] - v->start[c] > SPAN_PARTICLES)
        return 1;
    size_t row_end; /* the first cell past c's row: of the grid's inner cells, or of its block */
    if (s->layout == DENSE) {
        size_t dx = (size_t)s->dim[0];
        row_end = c - c % dx + dx - 1; /* its last cell is the empty layer's */
    } else {
        size_t e = (size_t)1 << s->shift;
        row_end = c - c % e + e;
    }
    size_t end = c + SPAN_CELLS < row_end ? c + SPAN_CELLS : row_end;
    end = end < c1 ? end : c1;
    size_t m = 1;
    while (c + m < end && v->start[c + m + 1] - v->start[c] <= SPAN_PARTICLES)
        m++;
    return m;
}

/* A particle tested against runs of a level: its position, radius and the
 * caller's index. Inside a level it is one of its own sorted particles;
 * across levels, a particle of a coarser level tested against a finer
 * one's runs. */
typedef struct probe {
    float x, y, z, r;
    uint32_t id;
} probe;

static inline probe probe_of(const view *v, uint32_t p)
{
    return (probe){v->x[p], v->y[p], v->z[p], v->r ? v->r[p] : v->ru, v->order[p]};
}

/* Contacts of the probe with the run [b, e) of v: the vectorised test. */
static inline uint32_t count_run(const view *v, const probe *p, uint32_t b, uint32_t e)
{
    const float *x = v->x, *y = v->y, *z = v->z, *r = v->r;
    float px = p->x, py = p->y, pz = p->z, pr = p->r;
    uint32_t hits = 0;
    if (r) {
        for (uint32_t k = b; k < e; k++)
            hits += ns__touching(ns__distance2(x[k] - px, y[k] - py, z[k] - pz), pr + r[k]);
    } else {
        float s = pr + v->ru;
        for (uint32_t k = b; k < e; k++)
            hits += ns__touching(ns__distance2(x[k] - px, y[k] - py, z[k] - pz), s);
    }
    return hits;
}

/* The contact of the probe and sorted particle k of v, numbered and
 * oriented in the caller's order (i < j, dx = x_j - x_i: negating is
 * exact). */
static inline void emit(const view *v, const probe *p, uint32_t k, ns_contact *c)
{
    uint32_t a = p->id, b = v->order[k];
    float dx = v->x[k] - p->x, dy = v->y[k] - p->y, dz = v->z[k] - p->z;
    float s = p->r + (v->r ? v->r[k] : v->ru);
    if (a > b) {
        uint32_t t = a;
        a = b, b = t;
        dx = -dx, dy = -dy, dz = -dz;
    }
    ns__contact_fill(a, b, dx, dy, dz, ns__distance2(dx, dy, dz), s, c);
}

/* Writes the contacts of the probe with the run [b, e) of v: a chunk's
 * test vectorised into flags, then the few contacts written. */
static inline ns_contact *write_run(const view *v, const probe *p, uint32_t b, uint32_t e,
                                    ns_contact *out)
{
    const float *x = v->x, *y = v->y, *z = v->z, *r = v->r;
    float px = p->x, py = p->y, pz = p->z, pr = p->r;
    for (uint32_t k0 = b; k0 < e; k0 += CHUNK) {
        uint32_t len = e - k0 < CHUNK ? e - k0 : CHUNK;
        unsigned char hit[CHUNK];
        if (r) {
            for (uint32_t q = 0; q < len; q++) {
                uint32_t k = k0 + q;
                hit[q] = ns__touching(ns__distance2(x[k] - px, y[k] - py, z[k] - pz), pr + r[k]);
            }
        } else {
            float s = pr + v->ru;
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
    uint32_t id[SCRATCH];     /* the caller's index */
    uint32_t sorted[SCRATCH]; /* the sorted index, when recording (see recorder) */
    unsigned char hit[SCRATCH];
    uint16_t at[SCRATCH];     /* the candidates that touch, compacted */
    uint64_t blocks[SCRATCH]; /* per own particle, its blocks within reach (reach_contacts()) */
    uint32_t own, padded;
    bool record; /* fill sorted[] */
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
    if (sc->record)
        for (uint32_t k = 0; k < len; k++)
            sc->sorted[at + k] = b + k;
}

static bool gather_cell(const view *v, size_t c, size_t m, const runs *r, scratch *sc)
{
    uint32_t first = v->start[c], total = r->own_end - first;
    for (int q = 0; q < r->count; q++)
        total += r->end[q] - r->begin[q];
    if (total > SCRATCH - COPY)
        return false;
    sc->own = v->start[c + m] - first;
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

/* The blocks of LANES candidates of the scratch (bit b: candidates
 * b * LANES to b * LANES + LANES - 1) that a particle tests: a mask of at
 * most SCRATCH / LANES = 64 bits. */
_Static_assert(SCRATCH / LANES == 64, "one bit per block of the scratch in a uint64_t");

/* Every candidate, tested by one loop as long as the scratch (a mask of
 * 64 blocks is never whole: the scratch has room for SCRATCH - COPY). */
#define EVERY_BLOCK UINT64_MAX

/* Of blocks, those that hold a candidate after own particle q: the blocks
 * wholly at or before q are left out. */
static inline uint64_t blocks_after(uint64_t blocks, uint32_t q)
{
    return blocks & ~((UINT64_C(1) << ((q + 1) / LANES)) - 1u);
}

#if defined(__AVX512F__)
/* The first block of a non-empty mask (the AVX-512 loops test one block
 * at a time). */
static inline uint32_t first_block(uint64_t blocks)
{
    return (uint32_t)__builtin_ctzll(blocks);
}
#else
/* The other paths test runs of blocks. The mask of every block of the
 * scratch (for EVERY_BLOCK): */
static inline uint64_t blocks_upto(uint32_t padded)
{
    uint32_t b = padded / LANES;
    return b >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << b) - 1u;
}

/* Takes the first run of consecutive blocks off *blocks: false when there
 * is none, else its candidates [*k0, *k1). */
static inline bool next_run(uint64_t *blocks, uint32_t *k0, uint32_t *k1)
{
    if (!*blocks)
        return false;
    unsigned b = (unsigned)__builtin_ctzll(*blocks);
    uint64_t beyond = ~(*blocks >> b); /* its lowest set bit ends the run */
    unsigned e = beyond ? b + (unsigned)__builtin_ctzll(beyond) : 64;
    *k0 = b * LANES, *k1 = e * LANES;
    *blocks = e >= 64 ? 0 : *blocks & ~((UINT64_C(1) << e) - 1u);
    return true;
}
#endif

/* Per-particle radii in a dense level: the cells of the half stencil a
 * particle can reach. Its candidates lie in the scratch cell after cell in
 * the order dense_runs() gathers them (the own cell, x+1, then the rows
 * (y+1, z), (y-1, z+1), (y, z+1), (y+1, z+1) from x-1 to x+1), so each
 * cell's candidates fill a few blocks of LANES. A particle with radius r
 * touches nothing farther than r + the level's largest radius, and a small
 * particle of a crowded cell reaches only the near part of the stencil:
 * polydisperse's particles (radii 0.05 to 0.5 in cells of 1, 30 per cell)
 * test 16 candidates per contact instead of 28, and its query takes a fifth
 * less time. Only cells of at least LANES particles with per-particle radii
 * are cut so, in the counting (and recording) pass: in sparser cells a block
 * holds several cells and little is left out. A cell is left out only when
 * the distance from the particle to
 * its box, less margins for the rounding of the box and of the particle's
 * cell, is beyond that reach by a relative 2^-10, far more than the float
 * predicate's rounding: every contact it accepts is tested. */
enum { STENCIL = 14 };
static const signed char STENCIL_AT[STENCIL][3] = {
    {0, 0, 0},  {1, 0, 0},  {-1, 1, 0}, {0, 1, 0}, {1, 1, 0},  {-1, -1, 1}, {0, -1, 1},
    {1, -1, 1}, {-1, 0, 1}, {0, 0, 1},  {1, 0, 1}, {-1, 1, 1}, {0, 1, 1},   {1, 1, 1}};

typedef struct cell_reach {
    uint64_t blocks[STENCIL]; /* the blocks of each stencil cell's candidates */
    float lo[4], hi[4];       /* the own cell's box, shrunk by the margin (and a 0) */
    float max_radius;
} cell_reach;

/* False when the level's cells give no box to bound (no extent). */
static bool reach_of_cell(const level *s, const view *v, size_t c, cell_reach *re)
{
    const ns__grid *g = &s->grid;
    if (!(g->cell > 0.0))
        return false;
    size_t dx = (size_t)s->dim[0], dxy = dx * (size_t)s->dim[1];
    uint32_t at = 0;
    for (int j = 0; j < STENCIL; j++) {
        const signed char *o = STENCIL_AT[j];
        size_t cj = c + (size_t)((ptrdiff_t)o[0] + (ptrdiff_t)o[1] * (ptrdiff_t)dx +
                                 (ptrdiff_t)o[2] * (ptrdiff_t)dxy);
        uint32_t len = v->start[cj + 1] - v->start[cj];
        uint32_t b0 = at / LANES, b1 = (at + len - 1) / LANES; /* len > 0 */
        re->blocks[j] = len ? (~UINT64_C(0) >> (63 - b1)) & (~UINT64_C(0) << b0) : 0;
        at += len;
    }
    int64_t i[3]; /* the cell's coordinates: those of its first particle */
    uint32_t p = v->start[c];
    cell_of(g, v->x[p], v->y[p], v->z[p], i);
    for (int a = 0; a < 3; a++) {
        double lo = (double)i[a] * g->cell, hi = lo + g->cell;
        double margin = (fabs(lo) + fabs(hi)) * 0x1p-20;
        re->lo[a] = (float)(lo + margin); /* rounded to float: off by less than the margin */
        re->hi[a] = (float)(hi - margin);
    }
    re->lo[3] = re->hi[3] = 0.0f;
    re->max_radius = g->max_radius;
    return true;
}

/* The blocks of the cells within reach of a particle at (x, y, z) with
 * radius r in the cell of re. Without a branch: which cells are in reach
 * is different for every particle. */
static inline uint64_t reach_blocks(const cell_reach *re, float x, float y, float z, float r)
{
    float lim = r + re->max_radius;
    lim = lim * lim * (1.0f + 0x1p-10f);
#if defined(__AVX512F__)
    /* T: lanes 0-2 the gaps to the cells below (x, y, z), squared, 4-6 those
     * above, 3 zero; each stencil cell (a lane) adds one lane per axis */
    const __m512i IX = _mm512_setr_epi32(3, 4, 0, 3, 4, 0, 3, 4, 0, 3, 4, 0, 3, 4, 3, 3);
    const __m512i IY = _mm512_setr_epi32(3, 3, 5, 5, 5, 1, 1, 1, 3, 3, 3, 5, 5, 5, 3, 3);
    const __m512i IZ = _mm512_setr_epi32(3, 3, 3, 3, 3, 6, 6, 6, 6, 6, 6, 6, 6, 6, 3, 3);
    __m128 P = _mm_setr_ps(x, y, z, 0.0f), zero = _mm_setzero_ps();
    __m128 below = _mm_max_ps(_mm_sub_ps(P, _mm_loadu_ps(re->lo)), zero);
    __m128 above = _mm_max_ps(_mm_sub_ps(_mm_loadu_ps(re->hi), P), zero);
    below = _mm_mul_ps(below, below), above = _mm_mul_ps(above, above);
    below = _mm_blend_ps(below, zero, 8), above = _mm_blend_ps(above, zero, 8);
    __m512 T = _mm512_castps256_ps512(_mm256_set_m128(above, below));
    __m512 D2 =
        _mm512_add_ps(_mm512_add_ps(_mm512_permutexvar_ps(IX, T), _mm512_permutexvar_ps(IY, T)),
                      _mm512_permutexvar_ps(IZ, T));
    __mmask16 in = _mm512_cmp_ps_mask(D2, _mm512_set1_ps(lim), _CMP_LE_OQ);
    __m512i B =
        _mm512_or_si512(_mm512_maskz_loadu_epi64((__mmask8)in, re->blocks),
                        _mm512_maskz_loadu_epi64((__mmask8)((in >> 8) & 0x3f), re->blocks + 8));
    return (uint64_t)_mm512_reduce_or_epi64(B);
#else
    const float p[3] = {x, y, z};
    float gap2[3][3]; /* per axis: to the cell below, none, to the cell above, squared */
    for (int a = 0; a < 3; a++) {
        float below = p[a] - re->lo[a], above = re->hi[a] - p[a];
        below = below > 0.0f ? below : 0.0f;
        above = above > 0.0f ? above : 0.0f;
        gap2[a][0] = below * below;
        gap2[a][1] = 0.0f;
        gap2[a][2] = above * above;
    }
    uint64_t blocks = 0;
    for (int j = 0; j < STENCIL; j++) {
        const signed char *o = STENCIL_AT[j];
        float d2 = gap2[0][o[0] + 1] + gap2[1][o[1] + 1] + gap2[2][o[2] + 1];
        blocks |= re->blocks[j] & (UINT64_C(0) - (uint64_t)(d2 <= lim));
    }
    return blocks;
#endif
}

#if defined(__AVX512F__)
/* A probe in every lane, and its test against the 16 particles of v from
 * k0 on that the mask in keeps (the others are not loaded): the mask of
 * those that touch, with x_k - x_p (likewise y, z) and r_p + r_k. */
typedef struct probe16 {
    __m512 x, y, z, r;
} probe16;

static inline probe16 probe16_of(const probe *p)
{
    return (probe16){_mm512_set1_ps(p->x), _mm512_set1_ps(p->y), _mm512_set1_ps(p->z),
                     _mm512_set1_ps(p->r)};
}

static inline __mmask16 probe16_test(const probe16 *P, const view *v, uint32_t k0, __mmask16 in,
                                     __m512 *DX, __m512 *DY, __m512 *DZ, __m512 *S)
{
    *DX = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, v->x + k0), P->x);
    *DY = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, v->y + k0), P->y);
    *DZ = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, v->z + k0), P->z);
    __m512 D2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(*DX, *DX), _mm512_mul_ps(*DY, *DY)),
                              _mm512_mul_ps(*DZ, *DZ));
    *S = _mm512_add_ps(P->r, _mm512_maskz_loadu_ps(in, v->r + k0));
    return _mm512_mask_cmp_ps_mask(in, D2, _mm512_mul_ps(*S, *S), _CMP_LT_OQ);
}

/* The same test against the 16 candidates of the scratch from k0 on (ru:
 * every radius, or NULL for the scratch's radii). */
static inline __mmask16 gathered16_test(const probe16 *P, const scratch *sc, const __m512 *ru,
                                        uint32_t k0, __m512 *DX, __m512 *DY, __m512 *DZ, __m512 *S)
{
    *DX = _mm512_sub_ps(_mm512_loadu_ps(sc->x + k0), P->x);
    *DY = _mm512_sub_ps(_mm512_loadu_ps(sc->y + k0), P->y);
    *DZ = _mm512_sub_ps(_mm512_loadu_ps(sc->z + k0), P->z);
    __m512 D2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(*DX, *DX), _mm512_mul_ps(*DY, *DY)),
                              _mm512_mul_ps(*DZ, *DZ));
    *S = _mm512_add_ps(P->r, ru ? *ru : _mm512_loadu_ps(sc->r + k0));
    return _mm512_cmp_ps_mask(D2, _mm512_mul_ps(*S, *S), _CMP_LT_OQ);
}
#endif

/* Portable paths: the contacts of the cell's own particle q with the later
 * candidates [k0, k1), counted (hit NULL) or flagged in hit[], by one
 * branch-free loop the compiler vectorises. */
static inline uint32_t test_range(const scratch *sc, const view *v, uint32_t q, uint32_t k0,
                                  uint32_t k1, unsigned char *hit)
{
    float px = sc->x[q], py = sc->y[q], pz = sc->z[q];
    float pr = v->r ? sc->r[q] : v->ru;
    uint32_t hits = 0;
    if (hit && v->r) {
        for (uint32_t k = k0; k < k1; k++)
            hit[k] = ns__touching(ns__distance2(sc->x[k] - px, sc->y[k] - py, sc->z[k] - pz),
                                  pr + sc->r[k]) &
                     (k > q);
    } else if (hit) {
        float s = pr + v->ru;
        for (uint32_t k = k0; k < k1; k++)
            hit[k] = ns__touching(ns__distance2(sc->x[k] - px, sc->y[k] - py, sc->z[k] - pz), s) &
                     (k > q);
    } else if (v->r) {
        for (uint32_t k = k0; k < k1; k++)
            hits += ns__touching(ns__distance2(sc->x[k] - px, sc->y[k] - py, sc->z[k] - pz),
                                 pr + sc->r[k]) &
                    (k > q);
    } else {
        float s = pr + v->ru;
        for (uint32_t k = k0; k < k1; k++)
            hits += ns__touching(ns__distance2(sc->x[k] - px, sc->y[k] - py, sc->z[k] - pz), s) &
                    (k > q);
    }
    return hits;
}

#if defined(__AVX512F__)
/* The cell's own particle q in every lane, to test against 16 candidates. */
typedef struct own16 {
    probe16 p;
    __m512 ru; /* every radius, when the scratch has none */
    __m512i q;
    bool radii;
} own16;

static inline own16 own16_of(const scratch *sc, const view *v, uint32_t q)
{
    return (own16){probe16_of(&(probe){sc->x[q], sc->y[q], sc->z[q], v->r ? sc->r[q] : v->ru, 0}),
                   _mm512_set1_ps(v->ru), _mm512_set1_epi32((int)q), v->r != NULL};
}

/* Which of the 16 candidates from k0 on come after q and touch it, with
 * x_k - x_q (likewise y, z) and r_q + r_k. */
static inline __mmask16 own16_test(const own16 *o, const scratch *sc, uint32_t k0, __m512 *DX,
                                   __m512 *DY, __m512 *DZ, __m512 *S)
{
    const __m512i LANE = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return gathered16_test(&o->p, sc, o->radii ? NULL : &o->ru, k0, DX, DY, DZ, S) &
           _mm512_cmpgt_epu32_mask(_mm512_add_epi32(LANE, _mm512_set1_epi32((int)k0)), o->q);
}
#elif defined(__AVX2__)
/* The AVX2 twin of own16: the cell's own particle q in every lane of 8. */
typedef struct own8 {
    __m256 x, y, z, r, ru;
    __m256i q;
    bool radii;
} own8;

static inline own8 own8_of(const scratch *sc, const view *v, uint32_t q)
{
    return (own8){_mm256_set1_ps(sc->x[q]),
                  _mm256_set1_ps(sc->y[q]),
                  _mm256_set1_ps(sc->z[q]),
                  _mm256_set1_ps(v->r ? sc->r[q] : v->ru),
                  _mm256_set1_ps(v->ru),
                  _mm256_set1_epi32((int)q),
                  v->r != NULL};
}

/* Which of the 8 candidates from k0 on come after q and touch it (a mask
 * of 8 bits), with x_k - x_q (likewise y, z) and r_q + r_k. */
static inline unsigned own8_test(const own8 *o, const scratch *sc, uint32_t k0, __m256 *DX,
                                 __m256 *DY, __m256 *DZ, __m256 *S)
{
    const __m256i LANE = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    *DX = _mm256_sub_ps(_mm256_loadu_ps(sc->x + k0), o->x);
    *DY = _mm256_sub_ps(_mm256_loadu_ps(sc->y + k0), o->y);
    *DZ = _mm256_sub_ps(_mm256_loadu_ps(sc->z + k0), o->z);
    __m256 D2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(*DX, *DX), _mm256_mul_ps(*DY, *DY)),
                              _mm256_mul_ps(*DZ, *DZ));
    *S = _mm256_add_ps(o->r, o->radii ? _mm256_loadu_ps(sc->r + k0) : o->ru);
    __m256i K = _mm256_add_epi32(LANE, _mm256_set1_epi32((int)k0));
    __m256 T = _mm256_and_ps(_mm256_cmp_ps(D2, _mm256_mul_ps(*S, *S), _CMP_LT_OQ),
                             _mm256_castsi256_ps(_mm256_cmpgt_epi32(K, o->q)));
    return (unsigned)_mm256_movemask_ps(T);
}
#endif

/* The contacts of the cell's own particle q with the later candidates, in
 * the blocks of the mask (see reach_blocks()). */
static inline uint32_t count_gathered(const scratch *sc, const view *v, uint32_t q, uint64_t blocks)
{
    uint32_t hits = 0;
#if defined(__AVX512F__)
    /* one vector per block, the hits counted lane by lane, added up once */
    own16 o = own16_of(sc, v, q);
    __m512i count = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
    for (; blocks; blocks &= blocks - 1) {
        __m512 DX, DY, DZ, S;
        count = _mm512_mask_add_epi32(
            count, own16_test(&o, sc, first_block(blocks) * LANES, &DX, &DY, &DZ, &S), count, one);
    }
    hits = (uint32_t)_mm512_reduce_add_epi32(count);
#else
    for (uint32_t k0, k1; next_run(&blocks, &k0, &k1);)
        hits += test_range(sc, v, q, k0, k1, NULL);
#endif
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
    bool sparse; /* few contacts per candidate: see write_gathered() */
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

#if defined(__AVX512F__)
/* The lanes of the first min(left, 16) elements. */
static inline __mmask16 tail_mask16(uint32_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}
#endif

#if defined(__AVX512F__)
/* The candidates of mask m appended to fd at f, compacted: x_k - x_p
 * (likewise y, z), r_p + r_k (S, NULL for one radius for all), the
 * caller's index of each (B) and of the particle tested (A). */
static inline void keep16(found *fd, uint32_t f, __mmask16 m, __m512 DX, __m512 DY, __m512 DZ,
                          const __m512 *S, __m512i B, __m512i A)
{
    _mm512_storeu_ps(fd->dx + f, _mm512_maskz_compress_ps(m, DX));
    _mm512_storeu_ps(fd->dy + f, _mm512_maskz_compress_ps(m, DY));
    _mm512_storeu_ps(fd->dz + f, _mm512_maskz_compress_ps(m, DZ));
    if (S)
        _mm512_storeu_ps(fd->s + f, _mm512_maskz_compress_ps(m, *S));
    _mm512_storeu_si512(fd->b + f, _mm512_maskz_compress_epi32(m, B));
    _mm512_storeu_si512(fd->a + f, A);
}

/* The fields of up to 16 contacts of the probe P (its caller's index in
 * every lane of A) with the particles KI of the arrays x, y, z (r: their
 * radii, NULL for one radius for all; ids: their caller's indices), the
 * lanes of in, stored into fd from t on: gathered by index, the same
 * operations as the test, so the same values. */
static inline void gather16_found(found *fd, uint32_t t, __mmask16 in, __m512i KI, const float *x,
                                  const float *y, const float *z, const float *r,
                                  const uint32_t *ids, const probe16 *P, __m512i A)
{
    __m512 zero = _mm512_setzero_ps();
    _mm512_storeu_ps(fd->dx + t, _mm512_sub_ps(_mm512_mask_i32gather_ps(zero, in, KI, x, 4), P->x));
    _mm512_storeu_ps(fd->dy + t, _mm512_sub_ps(_mm512_mask_i32gather_ps(zero, in, KI, y, 4), P->y));
    _mm512_storeu_ps(fd->dz + t, _mm512_sub_ps(_mm512_mask_i32gather_ps(zero, in, KI, z, 4), P->z));
    if (r)
        _mm512_storeu_ps(fd->s + t,
                         _mm512_add_ps(P->r, _mm512_mask_i32gather_ps(zero, in, KI, r, 4)));
    _mm512_storeu_si512(fd->b + t,
                        _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in, KI, ids, 4));
    _mm512_storeu_si512(fd->a + t, A);
}
#elif defined(__AVX2__)
/* keep16() for 8 lanes, compacted by the permutation of mask m. */
static inline void keep8(found *fd, uint32_t f, unsigned m, __m256 DX, __m256 DY, __m256 DZ,
                         const __m256 *S, __m256i B, __m256i A)
{
    __m256i P = compress_permutation(m);
    _mm256_storeu_ps(fd->dx + f, _mm256_permutevar8x32_ps(DX, P));
    _mm256_storeu_ps(fd->dy + f, _mm256_permutevar8x32_ps(DY, P));
    _mm256_storeu_ps(fd->dz + f, _mm256_permutevar8x32_ps(DZ, P));
    if (S)
        _mm256_storeu_ps(fd->s + f, _mm256_permutevar8x32_ps(*S, P));
    _mm256_storeu_si256((__m256i *)(void *)(fd->b + f), _mm256_permutevar8x32_epi32(B, P));
    _mm256_storeu_si256((__m256i *)(void *)(fd->a + f), A);
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
        own16 o = own16_of(sc, v, q);
        __m512i A = _mm512_set1_epi32((int)sc->id[q]);
        const __m512i LANE =
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        for (uint32_t k0 = 0; k0 < padded; k0 += 16) {
            __m512 DX, DY, DZ, S;
            __mmask16 m = own16_test(&o, sc, k0, &DX, &DY, &DZ, &S);
            if (fd->sparse)
                _mm512_storeu_si512(fd->b + f,
                                    _mm512_maskz_compress_epi32(
                                        m, _mm512_add_epi32(LANE, _mm512_set1_epi32((int)k0))));
            else
                keep16(fd, f, m, DX, DY, DZ, v->r ? &S : NULL, _mm512_loadu_si512(sc->id + k0), A);
            f += (uint32_t)__builtin_popcount(m);
        }
        /* sparse: only the candidates' indices were stored; the few that
         * touch get their fields gathered from the scratch by them (the
         * same operations, so the same values), 16 at a time */
        for (uint32_t t = fd->count; fd->sparse && t < f; t += 16) {
            __mmask16 in = tail_mask16(f - t);
            gather16_found(fd, t, in, _mm512_maskz_loadu_epi32(in, fd->b + t), sc->x, sc->y, sc->z,
                           v->r ? sc->r : NULL, sc->id, &o.p, A);
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
        own8 o = own8_of(sc, v, q);
        __m256i A = _mm256_set1_epi32((int)sc->id[q]);
        for (uint32_t k0 = 0; k0 < padded; k0 += 8) {
            __m256 DX, DY, DZ, S;
            unsigned m = own8_test(&o, sc, k0, &DX, &DY, &DZ, &S);
            keep8(fd, f, m, DX, DY, DZ, v->r ? &S : NULL,
                  _mm256_loadu_si256((const __m256i *)(const void *)(sc->id + k0)), A);
            f += (uint32_t)__builtin_popcount(m);
        }
        fd->count = f;
        (void)hit;
        return out;
    }
#endif
    test_range(sc, v, q, 0, padded, hit);
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

/* Recording: the first pass of a query keeps, besides each unit's count,
 * the contacts it found: for each sorted particle the number of its
 * contacts with the later candidates of its level and with each finer
 * level (hits, one count per level from its own on), and for each contact
 * the sorted index of the other particle in its level, in the order they
 * were found. The second pass then writes them without testing again
 * (expand_unit()), in the same order, with the same values. Each thread
 * records into its own slice of the records; a unit that does not fit in
 * what is left of it, that holds a crowded cell, or a particle with more
 * than 65,535 contacts with a finer level, is not recorded and is tested
 * again. */
typedef struct recorder {
    uint32_t *k;    /* the records: the other particle of each contact */
    uint16_t *hits; /* the current level's counts: levels per sorted particle */
    int levels;     /* of the index: counts per particle */
    size_t at, end; /* this thread's free records */
    bool on;        /* the current unit is recorded so far */
} recorder;

#if defined(__AVX512F__)
/* Appends the sorted indices of the candidates of the 16 from k0 on that
 * the cell's own particle q touches to to + f; returns how many. */
static inline uint32_t record16(const own16 *o, const scratch *sc, uint32_t k0, uint32_t *to)
{
    __m512 DX, DY, DZ, S;
    __mmask16 m = own16_test(o, sc, k0, &DX, &DY, &DZ, &S);
    _mm512_storeu_si512(to, _mm512_maskz_compress_epi32(m, _mm512_loadu_si512(sc->sorted + k0)));
    return (uint32_t)__builtin_popcount(m);
}
#endif

/* Records the contacts of the cell's own particle q with the later
 * candidates in the blocks of the mask into to (room for sc->padded +
 * LANES); returns how many. */
static inline uint32_t record_gathered(scratch *sc, const view *v, uint32_t q, uint64_t blocks,
                                       uint32_t *to)
{
    uint32_t f = 0;
#if defined(__AVX512F__)
    own16 o = own16_of(sc, v, q);
    if (blocks == EVERY_BLOCK)
        for (uint32_t k0 = 0; k0 < sc->padded; k0 += LANES)
            f += record16(&o, sc, k0, to + f);
    else
        for (; blocks; blocks &= blocks - 1)
            f += record16(&o, sc, first_block(blocks) * LANES, to + f);
#elif defined(__AVX2__)
    /* as write_gathered()'s AVX2 loop, the sorted indices compacted */
    own8 o = own8_of(sc, v, q);
    if (blocks == EVERY_BLOCK)
        blocks = blocks_upto(sc->padded);
    for (uint32_t k0, k1; next_run(&blocks, &k0, &k1);)
        for (; k0 < k1; k0 += 8) {
            __m256 DX, DY, DZ, S;
            unsigned m = own8_test(&o, sc, k0, &DX, &DY, &DZ, &S);
            __m256i I = _mm256_loadu_si256((const __m256i *)(const void *)(sc->sorted + k0));
            _mm256_storeu_si256((__m256i *)(void *)(to + f),
                                _mm256_permutevar8x32_epi32(I, compress_permutation(m)));
            f += (uint32_t)__builtin_popcount(m);
        }
#else
    if (blocks == EVERY_BLOCK)
        blocks = blocks_upto(sc->padded);
    for (uint32_t k0, k1; next_run(&blocks, &k0, &k1);) {
        test_range(sc, v, q, k0, k1, sc->hit);
        for (uint32_t k = k0; k < k1; k++) { /* compaction without branches */
            to[f] = sc->sorted[k];
            f += sc->hit[k];
        }
    }
#endif
    return f;
}

/* Appends the recorded contacts t0 .. t1 - 1 of the probe, one by one. */
static inline void append_each(found *fd, uint32_t f, const view *v, const probe *pp,
                               const uint32_t *k, uint32_t t0, uint32_t t1)
{
    for (uint32_t t = t0; t < t1; t++) {
        uint32_t q = k[t];
        fd->a[f + t] = pp->id;
        fd->b[f + t] = v->order[q];
        fd->dx[f + t] = v->x[q] - pp->x;
        fd->dy[f + t] = v->y[q] - pp->y;
        fd->dz[f + t] = v->z[q] - pp->z;
        if (v->r)
            fd->s[f + t] = pp->r + v->r[q];
    }
}

/* Appends the h recorded contacts of the probe with the particles k[0 ..
 * h) of v to fd (room for h + 16), computed as write_gathered() and the
 * search across levels do: by gathers of a vector's width, except that
 * fewer than ONE_BY_ONE left are taken one by one. A gather costs about as
 * much for one lane as for all, and a particle of powder's second level has
 * about two recorded contacts: gathering those made powder's build and
 * query 2 % slower (100,000 particles, 2 threads); taking up to 16 one by
 * one made uniform's (about 14 a particle) 1 % slower. */
enum { ONE_BY_ONE = 6 };

static inline void append_recorded(found *fd, const view *v, probe pp, const uint32_t *k,
                                   uint32_t h)
{
    uint32_t f = fd->count, t = 0;
#if defined(__AVX512F__)
    probe16 P = probe16_of(&pp);
    __m512i A = _mm512_set1_epi32((int)pp.id);
    for (; t < h && h - t >= ONE_BY_ONE; t += 16) {
        __mmask16 in = tail_mask16(h - t);
        gather16_found(fd, f + t, in, _mm512_maskz_loadu_epi32(in, k + t), v->x, v->y, v->z, v->r,
                       v->order, &P, A);
    }
#elif defined(__AVX2__)
    __m256 PX = _mm256_set1_ps(pp.x), PY = _mm256_set1_ps(pp.y), PZ = _mm256_set1_ps(pp.z);
    __m256 PR = _mm256_set1_ps(pp.r), zero = _mm256_setzero_ps();
    __m256i A = _mm256_set1_epi32((int)pp.id);
    const __m256i LANE = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (; t < h && h - t >= ONE_BY_ONE; t += 8) {
        __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(h - t < 8 ? h - t : 8)), LANE);
        __m256 inf = _mm256_castsi256_ps(in);
        __m256i KI = _mm256_maskload_epi32((const int *)(const void *)(k + t), in);
        _mm256_storeu_ps(fd->dx + f + t,
                         _mm256_sub_ps(_mm256_mask_i32gather_ps(zero, v->x, KI, inf, 4), PX));
        _mm256_storeu_ps(fd->dy + f + t,
                         _mm256_sub_ps(_mm256_mask_i32gather_ps(zero, v->y, KI, inf, 4), PY));
        _mm256_storeu_ps(fd->dz + f + t,
                         _mm256_sub_ps(_mm256_mask_i32gather_ps(zero, v->z, KI, inf, 4), PZ));
        if (v->r)
            _mm256_storeu_ps(fd->s + f + t,
                             _mm256_add_ps(PR, _mm256_mask_i32gather_ps(zero, v->r, KI, inf, 4)));
        _mm256_storeu_si256((__m256i *)(void *)(fd->b + f + t),
                            _mm256_mask_i32gather_epi32(_mm256_setzero_si256(),
                                                        (const int *)(const void *)v->order, KI, in,
                                                        4));
        _mm256_storeu_si256((__m256i *)(void *)(fd->a + f + t), A);
    }
#endif
    t = t < h ? t : h; /* past h when the gathers took them all */
    append_each(fd, f, v, &pp, k, t, h);
    fd->count = f + h;
}

/* Appends the h contacts of the probe recorded from *k on, after
 * flushing what is pending when they would not fit. */
static inline ns_contact *append_flushed(found *fd, const view *v, probe pp, const uint32_t **k,
                                         uint32_t h, ns_contact *out)
{
    if (!h)
        return out;
    if (fd->count + h + 16 > PAIRS)
        out = flush(fd, v, out);
    if (h + 16 > PAIRS) { /* more than fd holds: in parts */
        for (uint32_t t = 0; t < h; t += PAIRS / 2) {
            uint32_t part = h - t < PAIRS / 2 ? h - t : PAIRS / 2;
            append_recorded(fd, v, pp, *k + t, part);
            out = flush(fd, v, out);
        }
    } else {
        append_recorded(fd, v, pp, *k, h);
    }
    *k += h;
    return out;
}

/* Writes the recorded contacts of the cells [c0, c1) of level l (views
 * v[l] on) from out on, their records from k on, in the order the first
 * pass found them: each cell's contacts in its level, then those of its
 * particles with every finer level. hits: level l's counts. */
static ns_contact *expand_unit(const view *v, int l, int levels, size_t c0, size_t c1,
                               const uint16_t *hits, const uint32_t *k, found *fd, ns_contact *out)
{
    const view *own = &v[l];
    size_t L = (size_t)levels;
    for (size_t c = c0; c < c1; c++) {
        uint32_t b = own->start[c], e = own->start[c + 1];
        for (uint32_t p = b; p < e; p++)
            out = append_flushed(fd, own, probe_of(own, p), &k, hits[p * L], out);
        for (uint32_t p = b; p < e && levels > l + 1; p++)
            for (int f = l + 1; f < levels; f++)
                out = append_flushed(fd, &v[f], probe_of(own, p), &k, hits[p * L + (size_t)(f - l)],
                                     out);
    }
    return out;
}

/* The contacts of the cell's own particle q (the first sorted particle of
 * the cell is first) with the later candidates in the blocks: recorded when
 * rc is on and has room, else counted (and the unit no longer recorded). */
static inline uint32_t own_contacts(scratch *sc, const view *v, uint32_t q, uint64_t blocks,
                                    uint32_t first, recorder *rc)
{
    if (rc && rc->on && rc->end - rc->at >= sc->padded + LANES) {
        uint32_t h = record_gathered(sc, v, q, blocks, rc->k + rc->at);
        rc->hits[(size_t)(first + q) * (size_t)rc->levels] = (uint16_t)h;
        rc->at += h;
        return h;
    }
    if (rc)
        rc->on = false; /* out of room: the unit is tested again */
    return blocks == EVERY_BLOCK ? test_range(sc, v, q, 0, sc->padded, NULL)
                                 : count_gathered(sc, v, q, blocks);
}

/* The contacts of a gathered cell whose particles test only the cells
 * within their reach (see cell_reach), counted, recorded when rc is on.
 * Every particle's blocks are found first, then tested: the reach of one
 * particle (a chain of dependent operations, then a reduction) no longer
 * waits behind the tests of the one before, and the reaches of the cell's
 * particles overlap. powder's and polydisperse's search took about 5 %
 * less time at 100,000 particles (polydisperse 4.6 % at 1,000,000; 2
 * threads, medians of 14 alternations inside one process).
 * Kept out of cell_contacts(): inlined there, it slowed the cells that
 * test every candidate by 8 % (uniform's count pass). */
__attribute__((noinline)) static size_t reach_contacts(scratch *sc, const view *v,
                                                       const cell_reach *re, uint32_t first,
                                                       recorder *rc, size_t *tested)
{
    size_t hits = 0;
    uint64_t *blocks = sc->blocks;
    size_t listed = 0; /* blocks of LANES candidates */
    for (uint32_t q = 0; q < sc->own; q++) {
        blocks[q] = blocks_after(reach_blocks(re, sc->x[q], sc->y[q], sc->z[q], sc->r[q]), q);
        listed += (size_t)__builtin_popcountll(blocks[q]);
    }
    *tested += listed * LANES;
    for (uint32_t q = 0; q < sc->own; q++)
        hits += own_contacts(sc, v, q, blocks[q], first, rc);
    return hits;
}

/* The contacts of the cells c .. c + m - 1 (see span_of()), counted (out
 * NULL; recorded too when rc is on) or written from out on (some perhaps
 * still pending in fd: flush() writes them); *tested += the pairs it
 * tested. A count stops early once it is over limit: a crowded cell may
 * hold billions of contacts, and a search that will be refused need not
 * count them all. */
static size_t cell_contacts(const level *s, const view *v, size_t c, size_t m, around *ar,
                            scratch *sc, found *fd, ns_contact **out, recorder *rc, size_t *tested,
                            size_t limit)
{
    runs r;
    cell_runs(s, v, &s->grid, c, m, ar, &r);
    size_t hits = 0;
    uint32_t first = v->start[c], last = v->start[c + m];
    sc->record = rc && rc->on;
    if (gather_cell(v, c, m, &r, sc)) {
        cell_reach re;
        if (!*out && sc->own >= LANES && s->layout == DENSE && v->r && reach_of_cell(s, v, c, &re))
            return reach_contacts(sc, v, &re, first, rc, tested);
        for (uint32_t q = 0; q < sc->own; q++) {
            if (*out)
                *out = write_gathered(sc, fd, v, q, *out);
            else
                hits += own_contacts(sc, v, q, EVERY_BLOCK, first, rc);
        }
        *tested += (size_t)sc->own * sc->padded;
        return hits;
    }
    if (rc)
        rc->on = false;
    /* crowded: run by run, after what is pending */
    if (*out)
        *out = flush(fd, v, *out);
    for (uint32_t p = first; p < last && hits <= limit; p++) {
        probe pp = probe_of(v, p);
        if (*out) {
            *out = write_run(v, &pp, p + 1, r.own_end, *out);
            for (int q = 0; q < r.count; q++)
                *out = write_run(v, &pp, r.begin[q], r.end[q], *out);
        } else {
            hits += count_run(v, &pp, p + 1, r.own_end);
            for (int q = 0; q < r.count; q++)
                hits += count_run(v, &pp, r.begin[q], r.end[q]);
        }
        *tested += r.own_end - p - 1;
        for (int q = 0; q < r.count; q++)
            *tested += r.end[q] - r.begin[q];
    }
    return hits;
}

/* Mixed radii: levels of cells by radius class. A particle's class is
 * the number of halvings from the largest radius to its own (r in
 * (r_max / 2^(k+1), r_max / 2^k]), the smallest radii all in the last
 * class. Level 0 starts at class 0; each later class starts a new level
 * when the particles from it on, spread over the bounding box, would hold
 * at least LEVEL_FILL per cell of their own (twice their largest radius)
 * and at least LEVEL_CROWD per cell of the level they would otherwise join;
 * else they join it. A pair across levels costs a row of cells visited per
 * few candidates, so a level of sparse cells costs more than the candidates
 * it saves, until the coarser cells it spares would be crowded. Measured
 * (100,000 particles, 2 threads): polydisperse (radii 0.05 to 0.5; 1.8 per
 * cell from the second class on) is faster in one level; powder (seven
 * halvings; from the second class on 20.8 per cell of their own, from the
 * third 2.2, which is 17 per cell of the second class's) about twenty times
 * faster in two levels than in one (its crowded cells tested again when
 * written) and a fifth faster in two than in three; packed closer, two
 * levels still beat three at 33 and 50 per coarser cell (by 13 and 7 %), and
 * three beat two 2.5 times at 80, the coarser cells crowded. Each level is
 * a grid of its own, with cells of twice its largest radius, searched by
 * the half stencil for its own pairs; a pair across levels is tested once,
 * from the coarser particle, against the finer level's cells within reach
 * of it (its radius plus the finer level's largest: see cross_contacts()),
 * so a small particle never sits in a cell sized for the largest one. A
 * finer level is always dense (see build_levels()). Levels need
 * per-particle radii: with one radius for all there is one level, the grid
 * above. */
enum { LEVELS = 6, CLASSES = 16, LEVEL_FILL = 2, LEVEL_CROWD = 32, PLAN_WAYS = 4 };

/* How radii are classed: the limits r_max / 2^(k+1), k < CLASSES - 1, and
 * whether they are all normal floats (r_max at least 2^-100), each r_max
 * with its exponent lowered by k + 1. */
typedef struct classes {
    float limit[CLASSES - 1];
    uint32_t top; /* the bits of r_max */
    bool by_bits;
} classes;

typedef struct plan {
    int levels;
    int level_of_class[CLASSES];
    size_t count[LEVELS];
    float max_radius[LEVELS];
    classes classes; /* with per-particle radii: how they were classed */
} plan;

static void classes_of(float max_radius, classes *c)
{
    for (int k = 0; k < CLASSES - 1; k++)
        c->limit[k] = ldexpf(max_radius, -(k + 1));
    memcpy(&c->top, &max_radius, sizeof c->top);
    c->by_bits = max_radius >= 0x1p-100f;
}

/* The class of radius r (validated: finite, not negative, at most r_max):
 * how many limits it does not exceed (they fall, so the first k).
 * Non-negative floats order as their bits do, and a limit's bits are
 * r_max's less (k + 1) << 23, so r <= limit[k] exactly when k + 1 <=
 * (bits of r_max - bits of r) >> 23: a subtraction and a shift, where
 * comparing the limits in turn cost about 20 cycles a particle on powder. */
static inline int radius_class(const classes *c, float r)
{
    if (c->by_bits) {
        uint32_t b;
        memcpy(&b, &r, sizeof b);
        b &= 0x7fffffffu; /* -0 as 0 */
        uint32_t k = c->top >= b ? (c->top - b) >> 23 : 0;
        return k < CLASSES - 1 ? (int)k : CLASSES - 1;
    }
    int k = 0;
    for (int j = 0; j < CLASSES - 1; j++)
        k += !(r > c->limit[j]);
    return k;
}

/* Radius r counted in a table of counts and largest radii by class. */
static inline void count_class(const classes *c, float r, size_t *count, float *top)
{
    int k = radius_class(c, r);
    count[k]++;
    top[k] = r > top[k] ? r : top[k];
}

/* The particles per cell that count particles would make, spread over the
 * bounding box of g in cells of twice max_radius. */
static double fill(const ns__grid *g, size_t count, float max_radius)
{
    double cell = 2.0 * (double)max_radius, volume = 1.0;
    for (int a = 0; a < 3; a++) {
        double extent = (double)g->hi[a] - (double)g->lo[a];
        volume *= extent > cell ? extent : cell;
    }
    return (double)count * cell * cell * cell / volume;
}

/* The first particle of share t of n particles cut into shares. */
static inline size_t share_first(size_t n, long long t, long long shares)
{
    return n * (size_t)t / (size_t)shares;
}

/* The levels of in's particles (one when every radius is the same class,
 * or no later class is dense enough), and, with per-particle radii, in
 * share_count (in->threads x CLASSES) the particles of each class in each
 * share of them, for list_levels(). */
static void plan_levels(const ns__input *in, size_t *share_count, plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->levels = 1;
    pl->count[0] = in->n;
    pl->max_radius[0] = in->grid.max_radius;
    if (!in->radius || in->grid.max_radius == 0.0f)
        return;
    classes_of(in->grid.max_radius, &pl->classes);
    const classes cl = pl->classes;
    float maxr[CLASSES] = {0};
    const float *rad = in->radius;
    long long shares = in->threads;
    /* clang-format off */
#pragma omp parallel for num_threads(in->threads) schedule(static, 1) reduction(max : maxr[:CLASSES])
    /* clang-format on */
    for (long long t = 0; t < shares; t++) {
        /* PLAN_WAYS tables of counts and largest radii, the share's i-th
         * particle in table i % PLAN_WAYS, so that an update does not wait
         * on the one before (the same class, on most inputs) */
        size_t mine[PLAN_WAYS][CLASSES] = {{0}};
        float top[PLAN_WAYS][CLASSES] = {{0}};
        size_t i = share_first(in->n, t, shares), end = share_first(in->n, t + 1, shares);
        for (; i + PLAN_WAYS <= end; i += PLAN_WAYS)
            for (int w = 0; w < PLAN_WAYS; w++)
                count_class(&cl, rad[i + (size_t)w], mine[w], top[w]);
        for (int w = 0; i < end; i++, w++)
            count_class(&cl, rad[i], mine[w], top[w]);
        size_t *counts = share_count + (size_t)t * CLASSES;
        for (int k = 0; k < CLASSES; k++) {
            counts[k] = 0;
            for (int w = 0; w < PLAN_WAYS; w++) {
                counts[k] += mine[w][k];
                maxr[k] = top[w][k] > maxr[k] ? top[w][k] : maxr[k];
            }
        }
    }
    size_t count[CLASSES] = {0};
    for (long long t = 0; t < shares; t++)
        for (int k = 0; k < CLASSES; k++)
            count[k] += share_count[(size_t)t * CLASSES + (size_t)k];
    size_t rest = in->n;
    for (int k = 0; k < CLASSES; k++) {
        float top = 0.0f; /* the largest radius from class k on */
        for (int j = k; j < CLASSES; j++)
            top = maxr[j] > top ? maxr[j] : top;
        bool starts = k > 0 && count[k] > 0 && pl->levels < LEVELS && top > 0.0f &&
                      fill(&in->grid, rest, top) >= LEVEL_FILL &&
                      fill(&in->grid, rest, pl->max_radius[pl->levels - 1]) >= LEVEL_CROWD;
        if (starts) {
            pl->levels++;
            pl->max_radius[pl->levels - 1] = top;
        }
        pl->level_of_class[k] = pl->levels - 1;
        rest -= count[k];
    }
    if (pl->levels == 1)
        return;
    memset(pl->count, 0, sizeof pl->count);
    for (int k = 0; k < CLASSES; k++)
        pl->count[pl->level_of_class[k]] += count[k];
}

typedef struct state {
    level level[LEVELS];
    int levels;
    size_t particle_first[LEVELS + 1]; /* of each level, in ids' order */
    size_t unit_first[LEVELS + 1];     /* of each level, counted over all levels */
    ns__u32s ids;       /* more than one level: n, the caller's index of each particle,
                         * level by level (each in the caller's order) */
    ns__buf threads;    /* more than one level: size_t, particles per share and class, then
                         * each share's first place in each level (list_levels()) */
    ns__buf unit_total; /* size_t: units + 1 contact counts, then offsets */
    ns__buf batch;      /* ns_contact: one batch of a streaming query */
    /* a query's recorded contacts (see recorder) */
    ns__u32s records;    /* the other particle of each */
    ns__buf record_hits; /* uint16_t: levels per particle, level by level */
    ns__buf unit_record; /* size_t: per unit, its first record, or UNRECORDED */
    size_t records_last; /* for the next query: the last one's contacts */
    size_t n;
} state;

#define UNRECORDED SIZE_MAX

static void destroy(void *p)
{
    state *S = p;
    for (int l = 0; l < LEVELS; l++)
        level_free(&S->level[l]);
    ns__u32s_free(&S->ids);
    ns__buf_free(&S->threads);
    ns__buf_free(&S->unit_total);
    ns__buf_free(&S->batch);
    ns__u32s_free(&S->records);
    ns__buf_free(&S->record_hits);
    ns__buf_free(&S->unit_record);
    ns__free(S);
}

/* The caller's index of each particle, level by level into S->ids, each
 * level in the caller's order (the particles are cut into one share per
 * thread, and a share's particles of a level go after the shares before
 * it), from the counts plan_levels() left in S->threads. Only the indices:
 * the levels' builds read the caller's positions and radii through them.
 * A copy of those (16 bytes a particle), written here by one thread and
 * read by the other in the sort and the gather, made powder's build at
 * 100,000 particles slower on 2 threads than on 1 on a 2-vCPU EPYC
 * (moving cache lines between the cores cost more than the copy saved). */
static void list_levels(state *S, const ns__input *in, const plan *pl)
{
    int L = pl->levels;
    long long shares = in->threads;
    size_t n = in->n, *count = S->threads.a, *place = count + (size_t)shares * CLASSES;
    size_t at = 0; /* each share's first place in each level: shares x L */
    for (int l = 0; l < L; l++)
        for (long long t = 0; t < shares; t++) {
            place[(size_t)t * (size_t)L + (size_t)l] = at;
            for (int k = 0; k < CLASSES; k++)
                at += pl->level_of_class[k] == l ? count[(size_t)t * CLASSES + (size_t)k] : 0;
        }
    const classes cl = pl->classes; /* as plan_levels() classed them; a copy the stores
                                     * below cannot alias */
    const float *rad = in->radius;
    uint32_t *ids = S->ids.a;
#pragma omp parallel for num_threads(in->threads) schedule(static, 1)
    for (long long t = 0; t < shares; t++) {
        /* the share's places, kept here while the loop runs: in S->threads,
         * next to the other shares', each thread's writes would take the
         * cache line from the others */
        size_t mine[LEVELS];
        memcpy(mine, place + (size_t)t * (size_t)L, (size_t)L * sizeof *mine);
        size_t end = share_first(n, t + 1, shares);
        for (size_t i = share_first(n, t, shares); i < end; i++) {
            ids[mine[pl->level_of_class[radius_class(&cl, rad[i])]]++] = (uint32_t)i;
        }
    }
}

/* The bounding box of the caller's particles ids[0 .. m) (m > 0), over
 * threads. Its own loop, apart from list_levels(), whose loop would
 * otherwise carry each level's box from one particle to the next through
 * memory (powder's two boxes took 1.9 ms of its build at 1,000,000
 * particles that way, 2 threads); here the box stays in registers. A
 * level's ids rise, so pos is read forwards. */
static void bounds(const float *pos, const uint32_t *ids, size_t m, int threads, float lo[3],
                   float hi[3])
{
    float l0 = INFINITY, l1 = INFINITY, l2 = INFINITY, h0 = -INFINITY, h1 = -INFINITY,
          h2 = -INFINITY;
    long long count = (long long)m;
    /* clang-format off */
#pragma omp parallel for num_threads(threads) schedule(static) \
    reduction(min : l0, l1, l2) reduction(max : h0, h1, h2)
    /* clang-format on */
    for (long long k = 0; k < count; k++) {
        const float *x = pos + 3 * (size_t)ids[k];
        l0 = x[0] < l0 ? x[0] : l0, h0 = x[0] > h0 ? x[0] : h0;
        l1 = x[1] < l1 ? x[1] : l1, h1 = x[1] > h1 ? x[1] : h1;
        l2 = x[2] < l2 ? x[2] : l2, h2 = x[2] > h2 ? x[2] : h2;
    }
    lo[0] = l0, lo[1] = l1, lo[2] = l2, hi[0] = h0, hi[1] = h1, hi[2] = h2;
}

/* Level l's grid: cells of twice its largest radius, as the index's
 * grid, over its own bounding box. False when its cell coordinates would
 * leave the range the index checks. */
static bool level_grid(const ns__input *in, float max_radius, const float lo[3], const float hi[3],
                       ns__grid *g)
{
    *g = in->grid;
    g->max_radius = max_radius;
    memcpy(g->lo, lo, sizeof g->lo);
    memcpy(g->hi, hi, sizeof g->hi);
    return ns__grid_set_cells(g) < 0;
}

/* More than one level: each level's particles listed (their caller's
 * indices, S->ids), its grid built over its own bounding box. *one: a level's
 * grid is out of range, or a finer level's would not be dense (the cross
 * search reads rows of a dense grid; the fill that starts a level makes
 * that rare), so build a single level instead. */
static ns_status build_levels(state *S, const ns__input *in, const plan *pl, bool *one,
                              ns_error *err)
{
    size_t n = in->n;
    if (!ns__u32s_reserve(&S->ids, n))
        return ns__fail_oom(err, "grid_sorted's levels");
    list_levels(S, in, pl);
    ns__grid grid[LEVELS];
    for (int l = 0; l < pl->levels; l++) {
        ns__input sub = *in;
        sub.n = pl->count[l];
        level dense = {.layout = DENSE};
        float lo[3], hi[3];
        bounds(in->pos, S->ids.a + S->particle_first[l], pl->count[l], in->threads, lo, hi);
        if (!level_grid(in, pl->max_radius[l], lo, hi, &sub.grid) ||
            (l > 0 && !choose_dense(&dense, &sub))) {
            *one = true;
            return NS_OK;
        }
        grid[l] = sub.grid;
    }
    for (int l = 0; l < pl->levels; l++) {
        ns__input sub = *in; /* the caller's arrays, read through the level's ids */
        sub.n = pl->count[l];
        sub.grid = grid[l];
        level *s = &S->level[l];
        ns_status st = build_level(s, &sub, S->ids.a + S->particle_first[l], err);
        s->ids = NULL; /* order[] holds the caller's indices (or the build failed) */
        if (st != NS_OK)
            return st;
    }
    return NS_OK;
}

static ns_status build(void **p, const ns__input *in, ns_error *err)
{
    state *S = ns__kernel_state(p, sizeof *S);
    if (!S)
        return ns__fail_oom(err, "grid_sorted state");
    S->n = in->n;
    plan pl;
    if (in->radius && /* room for plan_levels()'s counts, and list_levels()'s places */
        !ns__buf_reserve(&S->threads, (size_t)in->threads * (CLASSES + LEVELS), sizeof(size_t)))
        return ns__fail_oom(err, "grid_sorted's levels");
    plan_levels(in, S->threads.a, &pl);
    bool one = pl.levels == 1;
    S->levels = pl.levels;
    S->particle_first[0] = 0;
    for (int l = 0; l < pl.levels; l++)
        S->particle_first[l + 1] = S->particle_first[l] + pl.count[l];
    ns_status st = one ? NS_OK : build_levels(S, in, &pl, &one, err);
    if (st == NS_OK && one) {
        S->levels = 1;
        S->particle_first[1] = in->n;
        st = build_level(&S->level[0], in, NULL, err);
    }
    if (st != NS_OK)
        return st;
    /* nothing kept that this build does not use (a previous one may have
     * had more levels): info() reports what the index holds. The class
     * counts (S->threads, a few hundred bytes per thread) every build with
     * per-particle radii uses are kept, so that a simulation's builds,
     * frame after frame, allocate nothing. */
    for (int l = S->levels; l < LEVELS; l++)
        level_free(&S->level[l]);
    if (S->levels == 1) {
        ns__u32s_free(&S->ids);
    }
    S->unit_first[0] = 0;
    for (int l = 0; l < S->levels; l++)
        S->unit_first[l + 1] = S->unit_first[l] + S->level[l].units;
    if (!ns__buf_reserve(&S->unit_total, S->unit_first[S->levels] + 1, sizeof(size_t)))
        return ns__fail_oom(err, "grid_sorted's units");
    return NS_OK;
}

/* The cells of finer level f that a probe of a coarser level may touch:
 * those within reach along each axis (its radius plus f's largest, widened
 * by a relative 2^-20: see cross_contacts()), clamped to f's cells. A
 * contact accepted by the float predicate is within that reach (as within
 * the index's widened cell);
 * the margin of 2^-40 of the coordinate absorbs the rounding of the bound
 * in double, and floor(x / cell) is monotone, so no such contact is
 * outside the box. False: the box is empty. */
static bool reach_box(const level *f, const probe *p, double reach, int64_t lo[3], int64_t hi[3])
{
    const ns__grid *g = &f->grid;
    const float at[3] = {p->x, p->y, p->z};
    for (int a = 0; a < 3; a++) {
        double x = (double)at[a], margin = reach + fabs(x) * 0x1p-40;
        double c0 = floor((x - margin) * g->inv_cell), c1 = floor((x + margin) * g->inv_cell);
        c0 = c0 > (double)g->cell_lo[a] ? c0 : (double)g->cell_lo[a];
        c1 = c1 < (double)g->cell_hi[a] ? c1 : (double)g->cell_hi[a];
        if (c0 > c1)
            return false;
        lo[a] = (int64_t)c0, hi[a] = (int64_t)c1;
    }
    return true;
}

/* The contacts of a probe with the runs [b0[r], b1[r]) of v (a finer level,
 * with radii), r < rows, as in cross_contacts(): counted (*out NULL),
 * recorded when rc is on and has room, or written into fd. The rows are
 * found first (up to CROSS_ROWS at a time), then tested, so the loads of
 * their bounds, then of their particles, overlap instead of waiting on one
 * another: those loads were the hottest instructions of powder's search
 * across levels. */
enum { CROSS_ROWS = 32 };

#if defined(__AVX512F__)
/* AVX-512: the runs cut into vectors of 16 particles and listed (the
 * first sorted index of each, and how many of its lanes hold particles),
 * 8 vectors of a run at a time without a branch, then tested by one loop
 * over the list. A run holds a few vectors, and a loop of its own for each
 * ended in a branch that mispredicts; in one list, the tests of several
 * runs overlap: powder's build and query 2.5 % faster (100,000 particles,
 * 2 threads). At most PAIRS particles are listed at a time, so that what
 * they find fits fd. */
enum { RUN_VECTORS = 8, LISTED = PAIRS / 16 };
typedef struct vectors {
    uint32_t first[LISTED], lanes[LISTED];
    uint32_t count, particles;
} vectors;

/* Lists the vectors of the runs from run *r on (its particles from *at on)
 * while they fit; *r and *at are left at the first particle not listed. */
static inline void list_vectors(const uint32_t *b0, const uint32_t *b1, int rows, int *r,
                                uint32_t *at, vectors *vs)
{
    const __m256i STEP = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
    const __m256i ZERO = _mm256_setzero_si256(), FULL = _mm256_set1_epi32(16);
    vs->count = vs->particles = 0;
    while (*r < rows && vs->count + RUN_VECTORS <= LISTED) {
        uint32_t b = b0[*r] + *at, left = b1[*r] - b;
        uint32_t part = left < RUN_VECTORS * 16 ? left : RUN_VECTORS * 16;
        __m256i K = _mm256_add_epi32(_mm256_set1_epi32((int)b), STEP);
        __m256i L = _mm256_min_epi32(
            _mm256_max_epi32(_mm256_sub_epi32(_mm256_set1_epi32((int)part), STEP), ZERO), FULL);
        _mm256_storeu_si256((__m256i *)(void *)(vs->first + vs->count), K);
        _mm256_storeu_si256((__m256i *)(void *)(vs->lanes + vs->count), L);
        vs->count += (part + 15) / 16;
        vs->particles += part;
        if (left > part) {
            *at += part;
        } else {
            *at = 0;
            (*r)++;
        }
    }
}

static inline __mmask16 lanes_mask(uint32_t lanes)
{
    return (__mmask16)((1u << lanes) - 1u);
}

/* Writes the contacts of the probe with the listed particles into fd
 * (room for vs->particles + 16), compacted as in write_gathered(). */
static inline void write_vectors(const view *v, const probe *p, const vectors *vs, found *fd)
{
    uint32_t f = fd->count;
    probe16 P = probe16_of(p);
    __m512i A = _mm512_set1_epi32((int)p->id);
    for (uint32_t j = 0; j < vs->count; j++) {
        uint32_t k0 = vs->first[j];
        __mmask16 in = lanes_mask(vs->lanes[j]);
        __m512 DX, DY, DZ, S;
        __mmask16 m = probe16_test(&P, v, k0, in, &DX, &DY, &DZ, &S);
        keep16(fd, f, m, DX, DY, DZ, &S, _mm512_maskz_loadu_epi32(in, v->order + k0), A);
        f += (uint32_t)__builtin_popcount(m);
    }
    fd->count = f;
}

/* Records the sorted index of each listed particle the probe touches into
 * to (room for vs->particles + LANES); returns how many. */
static inline uint32_t record_vectors(const view *v, const probe *p, const vectors *vs,
                                      uint32_t *to)
{
    uint32_t f = 0;
    probe16 P = probe16_of(p);
    const __m512i LANE = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const view w = *v; /* a copy the stores below cannot alias: else its arrays are reloaded */
    for (uint32_t j = 0; j < vs->count; j++) {
        uint32_t k0 = vs->first[j];
        __m512 DX, DY, DZ, S;
        __mmask16 m = probe16_test(&P, &w, k0, lanes_mask(vs->lanes[j]), &DX, &DY, &DZ, &S);
        _mm512_storeu_si512(to + f, _mm512_maskz_compress_epi32(
                                        m, _mm512_add_epi32(LANE, _mm512_set1_epi32((int)k0))));
        f += (uint32_t)__builtin_popcount(m);
    }
    return f;
}

static inline uint32_t count_vectors(const view *v, const probe *p, const vectors *vs)
{
    uint32_t hits = 0;
    probe16 P = probe16_of(p);
    for (uint32_t j = 0; j < vs->count; j++) {
        __m512 DX, DY, DZ, S;
        hits += (uint32_t)__builtin_popcount(
            probe16_test(&P, v, vs->first[j], lanes_mask(vs->lanes[j]), &DX, &DY, &DZ, &S));
    }
    return hits;
}

static size_t rows_contacts(const view *v, const probe *p, const uint32_t *b0, const uint32_t *b1,
                            int rows, found *fd, ns_contact **out, recorder *rc, size_t *tested)
{
    size_t hits = 0;
    vectors vs;
    int r = 0;
    uint32_t at = 0;
    while (r < rows) {
        list_vectors(b0, b1, rows, &r, &at, &vs);
        *tested += vs.particles;
        if (*out) {
            if (fd->count + vs.particles > PAIRS)
                *out = flush(fd, v, *out);
            write_vectors(v, p, &vs, fd);
        } else if (rc && rc->on && rc->end - rc->at >= vs.particles + LANES) {
            uint32_t h = record_vectors(v, p, &vs, rc->k + rc->at);
            rc->at += h;
            hits += h;
        } else {
            if (rc)
                rc->on = false;
            hits += count_vectors(v, p, &vs);
        }
    }
    return hits;
}
#else
#if defined(__AVX2__)
/* A probe's coordinates and radius, each in every lane. */
typedef struct probe8 {
    __m256 x, y, z, r;
} probe8;

static inline probe8 probe8_of(const probe *p)
{
    return (probe8){_mm256_set1_ps(p->x), _mm256_set1_ps(p->y), _mm256_set1_ps(p->z),
                    _mm256_set1_ps(p->r)};
}

/* The AVX2 twin of probe16_test(): which of the candidates k0 .. k0 + 7
 * of v, those before e (in), touch the probe P: a mask, lane by lane, with
 * the differences DX, DY, DZ and the sums of radii S that decided it. */
static inline unsigned probe8_test(const probe8 *P, const view *v, uint32_t k0, uint32_t e,
                                   __m256i *in, __m256 *DX, __m256 *DY, __m256 *DZ, __m256 *S)
{
    const __m256i LANE = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int left = e - k0 >= 8 ? 8 : (int)(e - k0);
    *in = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), LANE);
    *DX = _mm256_sub_ps(_mm256_maskload_ps(v->x + k0, *in), P->x);
    *DY = _mm256_sub_ps(_mm256_maskload_ps(v->y + k0, *in), P->y);
    *DZ = _mm256_sub_ps(_mm256_maskload_ps(v->z + k0, *in), P->z);
    __m256 D2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(*DX, *DX), _mm256_mul_ps(*DY, *DY)),
                              _mm256_mul_ps(*DZ, *DZ));
    *S = _mm256_add_ps(P->r, _mm256_maskload_ps(v->r + k0, *in));
    __m256 T = _mm256_and_ps(_mm256_cmp_ps(D2, _mm256_mul_ps(*S, *S), _CMP_LT_OQ),
                             _mm256_castsi256_ps(*in));
    return (unsigned)_mm256_movemask_ps(T);
}
#endif

/* Writes the contacts of a probe with the run [b, e) of v: on the AVX2
 * path into fd, tested where the run lies by vectors with the tail masked,
 * compacted as in write_gathered(); elsewhere, and for a run longer than fd
 * holds, straight to out by write_run(), after what is pending. */
static ns_contact *write_probe_run(const view *v, const probe *p, uint32_t b, uint32_t e, found *fd,
                                   ns_contact *out)
{
    if (fd->count + (e - b) > PAIRS)
        out = flush(fd, v, out);
    if (e - b > PAIRS)
        return write_run(v, p, b, e, out);
#if defined(__AVX2__)
    uint32_t f = fd->count;
    probe8 P = probe8_of(p);
    __m256i A = _mm256_set1_epi32((int)p->id);
    for (uint32_t k0 = b; k0 < e; k0 += 8) {
        __m256i in;
        __m256 DX, DY, DZ, S;
        unsigned m = probe8_test(&P, v, k0, e, &in, &DX, &DY, &DZ, &S);
        keep8(fd, f, m, DX, DY, DZ, &S,
              _mm256_maskload_epi32((const int *)(const void *)(v->order + k0), in), A);
        f += (uint32_t)__builtin_popcount(m);
    }
    fd->count = f;
    return out;
#else
    out = flush(fd, v, out);
    return write_run(v, p, b, e, out);
#endif
}

/* Records the contacts of a probe with the run [b, e) of v into to (room
 * for e - b + LANES): the sorted index of each, compacted without a
 * branch; on the AVX2 path by the vectors of write_probe_run(), their
 * lanes moved to the front by the permutation of the mask (one candidate
 * at a time, powder's build and query took 13.2 ms against 9.8 at 100k,
 * 147 against 111 at 1M). */
static inline uint32_t record_probe_run(const view *v, const probe *p, uint32_t b, uint32_t e,
                                        uint32_t *to)
{
    uint32_t f = 0;
#if defined(__AVX2__)
    probe8 P = probe8_of(p);
    const __m256i LANE = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (uint32_t k0 = b; k0 < e; k0 += 8) {
        __m256i in;
        __m256 DX, DY, DZ, S;
        unsigned m = probe8_test(&P, v, k0, e, &in, &DX, &DY, &DZ, &S);
        __m256i K = _mm256_add_epi32(LANE, _mm256_set1_epi32((int)k0));
        _mm256_storeu_si256((__m256i *)(void *)(to + f),
                            _mm256_permutevar8x32_epi32(K, compress_permutation(m)));
        f += (uint32_t)__builtin_popcount(m);
    }
#else
    for (uint32_t k = b; k < e; k++) {
        to[f] = k;
        f += ns__touching(ns__distance2(v->x[k] - p->x, v->y[k] - p->y, v->z[k] - p->z),
                          p->r + v->r[k]);
    }
#endif
    return f;
}

static size_t rows_contacts(const view *v, const probe *p, const uint32_t *b0, const uint32_t *b1,
                            int rows, found *fd, ns_contact **out, recorder *rc, size_t *tested)
{
    size_t hits = 0;
    for (int r = 0; r < rows; r++) {
        *tested += b1[r] - b0[r];
        if (*out) {
            *out = write_probe_run(v, p, b0[r], b1[r], fd, *out);
        } else if (rc && rc->on && rc->end - rc->at >= b1[r] - b0[r] + LANES) {
            uint32_t h = record_probe_run(v, p, b0[r], b1[r], rc->k + rc->at);
            rc->at += h;
            hits += h;
        } else {
            if (rc)
                rc->on = false;
            hits += count_run(v, p, b0[r], b1[r]);
        }
    }
    return hits;
}
#endif

/* What cross_contacts() needs to find the rows of a probe's reach box in
 * finer level f: the probe, its reach, and the margins for rounding. */
typedef struct reach_rows {
    double px, py, pz, reach2, slack_x, slack_y, slack_z;
    int64_t lo[3], hi[3];
} reach_rows;

#if defined(__AVX512F__) && defined(__AVX512DQ__)
/* The distances from p to the cells c of a level's grid along one axis,
 * less slack, at least 0, lane by lane (as gap() on the other paths). */
static inline __m512d gaps8(__m512d C, double cell, double p, double slack)
{
    const __m512d ZERO = _mm512_setzero_pd();
    __m512d CELL = _mm512_set1_pd(cell), P = _mm512_set1_pd(p);
    __m512d A = _mm512_mul_pd(C, CELL),
            B = _mm512_mul_pd(_mm512_add_pd(C, _mm512_set1_pd(1.0)), CELL);
    __m512d D = _mm512_max_pd(_mm512_max_pd(_mm512_sub_pd(A, P), _mm512_sub_pd(P, B)), ZERO);
    return _mm512_max_pd(_mm512_sub_pd(D, _mm512_set1_pd(slack)), ZERO);
}

/* The runs of the rows i0 .. i0 + 7 (those below all) of the reach box,
 * its rows numbered y fastest (ny of them per layer z), in the operations
 * row_run() (below, the other paths) makes for one row, lane by lane:
 * appends those that hold particles to b and e (room for 8), in order;
 * returns how many. One row at a time, this arithmetic and its two loads
 * were the largest part of powder's search across levels; a layer at a time,
 * half the lanes were past the box's 3 or 4 rows. */
static inline int rows8(const level *f, const view *vf, const reach_rows *rr, int64_t i0,
                        int64_t ny, int64_t all, uint32_t *b, uint32_t *e)
{
    const ns__grid *g = &f->grid;
    const __m512d ZERO = _mm512_setzero_pd(), ONE = _mm512_set1_pd(1.0);
    __m512d I = _mm512_add_pd(_mm512_set1_pd((double)i0),
                              _mm512_setr_pd(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0));
    __mmask8 in = _mm512_cmp_pd_mask(I, _mm512_set1_pd((double)all), _CMP_LT_OQ);
    /* the layer, floor((i + 1/2) / ny): (i + 1/2) / ny is at least
     * 1 / (2 ny) from a whole number, and the reciprocal's rounding moves
     * it by about (i / ny) 2^-52, far less while ny nz < 2^32 (the box
     * lies in the level's grid) */
    __m512d NY = _mm512_set1_pd((double)ny);
    __m512d ZO = _mm512_roundscale_pd(
        _mm512_mul_pd(_mm512_add_pd(I, _mm512_set1_pd(0.5)), _mm512_set1_pd(1.0 / (double)ny)),
        _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512d Y =
        _mm512_add_pd(_mm512_set1_pd((double)rr->lo[1]), _mm512_sub_pd(I, _mm512_mul_pd(ZO, NY)));
    __m512d Z = _mm512_add_pd(_mm512_set1_pd((double)rr->lo[2]), ZO);
    __m512d DY = gaps8(Y, g->cell, rr->py, rr->slack_y),
            DZ = gaps8(Z, g->cell, rr->pz, rr->slack_z);
    __m512d left = _mm512_sub_pd(_mm512_sub_pd(_mm512_set1_pd(rr->reach2), _mm512_mul_pd(DY, DY)),
                                 _mm512_mul_pd(DZ, DZ));
    in &= _mm512_cmp_pd_mask(left, ZERO, _CMP_GE_OQ);
    __m512d W =
        _mm512_add_pd(_mm512_sqrt_pd(_mm512_max_pd(left, ZERO)), _mm512_set1_pd(rr->slack_x));
    __m512d PX = _mm512_set1_pd(rr->px), INV = _mm512_set1_pd(g->inv_cell);
    __m512d X0 = _mm512_max_pd(_mm512_roundscale_pd(_mm512_mul_pd(_mm512_sub_pd(PX, W), INV),
                                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC),
                               _mm512_set1_pd((double)rr->lo[0]));
    __m512d X1 = _mm512_min_pd(_mm512_roundscale_pd(_mm512_mul_pd(_mm512_add_pd(PX, W), INV),
                                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC),
                               _mm512_set1_pd((double)rr->hi[0]));
    in &= _mm512_cmp_pd_mask(X0, X1, _CMP_LE_OQ);
    /* dense_cell() of (x0, y, z), exact in double (fewer than 2^32 cells) */
    const int64_t *lo = g->cell_lo;
    __m512d row = _mm512_add_pd(
        _mm512_mul_pd(_mm512_add_pd(_mm512_sub_pd(Z, _mm512_set1_pd((double)lo[2])), ONE),
                      _mm512_set1_pd((double)f->dim[1])),
        _mm512_add_pd(_mm512_sub_pd(Y, _mm512_set1_pd((double)lo[1])), ONE));
    __m512d first = _mm512_add_pd(_mm512_mul_pd(row, _mm512_set1_pd((double)f->dim[0])),
                                  _mm512_sub_pd(X0, _mm512_set1_pd((double)lo[0] - 1.0)));
    __m512d last = _mm512_add_pd(_mm512_add_pd(first, _mm512_sub_pd(X1, X0)), ONE);
    const __m256i NONE = _mm256_setzero_si256();
    __m256i S = _mm512_mask_i64gather_epi32(NONE, in, _mm512_cvttpd_epi64(first), vf->start, 4);
    __m256i E = _mm512_mask_i64gather_epi32(NONE, in, _mm512_cvttpd_epi64(last), vf->start, 4);
    __mmask8 full = in & _mm256_cmpneq_epi32_mask(S, E);
    _mm256_storeu_si256((__m256i *)(void *)b, _mm256_maskz_compress_epi32(full, S));
    _mm256_storeu_si256((__m256i *)(void *)e, _mm256_maskz_compress_epi32(full, E));
    return __builtin_popcount(full);
}
#else
/* The distance from x to the interval [a, b], less slack, at least 0. */
static inline double gap(double x, double a, double b, double slack)
{
    double d = x < a ? a - x : x > b ? x - b : 0.0;
    return d > slack ? d - slack : 0.0;
}

/* The run of row (y, z) of f within reach along x, [*b, *e), after the
 * distance to the row in y and z: false when the row is out of reach. */
static inline bool row_run(const level *f, const view *vf, const reach_rows *rr, int64_t y,
                           int64_t z, double dz, uint32_t *b, uint32_t *e)
{
    const ns__grid *g = &f->grid;
    double dy = gap(rr->py, (double)y * g->cell, (double)(y + 1) * g->cell, rr->slack_y);
    double left = rr->reach2 - dy * dy - dz * dz;
    if (left < 0.0)
        return false;
    double w = sqrt(left) + rr->slack_x, c0 = floor((rr->px - w) * g->inv_cell),
           c1 = floor((rr->px + w) * g->inv_cell);
    int64_t x0 = c0 > (double)rr->lo[0] ? (int64_t)c0 : rr->lo[0];
    int64_t x1 = c1 < (double)rr->hi[0] ? (int64_t)c1 : rr->hi[0];
    if (x0 > x1)
        return false;
    const int64_t c[3] = {x0, y, z};
    size_t first = dense_cell(f, c);
    *b = vf->start[first];
    *e = vf->start[first + (size_t)(x1 - x0) + 1];
    return true;
}
#endif

/* The contacts of a probe of a coarser level with the particles of level f
 * (dense; its sorted arrays vf) within the probe's reach, a row of cells at
 * a time: the rows (y, z) of the reach box that come within reach of the
 * probe, each cut to the cells x within reach along it, one run. The distances are bounded
 * from below with a margin for the rounding of floor(x / cell), so every
 * contact the float predicate accepts is tested. Counted (out NULL) or
 * written; *tested += the pairs tested. */
__attribute__((noinline)) static size_t cross_contacts(const level *f, const view *vf,
                                                       const probe *p, found *fd, ns_contact **out,
                                                       recorder *rc, size_t *tested)
{
    const ns__grid *g = &f->grid;
    double reach = ((double)p->r + (double)g->max_radius) * (1.0 + 0x1p-20);
    reach_rows rr;
    if (!reach_box(f, p, reach, rr.lo, rr.hi))
        return 0;
    rr.px = (double)p->x, rr.py = (double)p->y, rr.pz = (double)p->z;
    rr.reach2 = reach * reach;
    rr.slack_x = (fabs(rr.px) + g->cell) * 0x1p-40;
    rr.slack_y = (fabs(rr.py) + g->cell) * 0x1p-40;
    rr.slack_z = (fabs(rr.pz) + g->cell) * 0x1p-40;
    size_t hits = 0;
    uint32_t b0[CROSS_ROWS + 8], b1[CROSS_ROWS + 8]; /* room for 8 rows more */
    int rows = 0;
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    int64_t ny = rr.hi[1] - rr.lo[1] + 1, all = ny * (rr.hi[2] - rr.lo[2] + 1);
    for (int64_t i = 0; i < all; i += 8) {
        rows += rows8(f, vf, &rr, i, ny, all, b0 + rows, b1 + rows);
        if (rows >= CROSS_ROWS) {
            hits += rows_contacts(vf, p, b0, b1, rows, fd, out, rc, tested);
            rows = 0;
        }
    }
#else
    for (int64_t z = rr.lo[2]; z <= rr.hi[2]; z++) {
        double dz = gap(rr.pz, (double)z * g->cell, (double)(z + 1) * g->cell, rr.slack_z);
        for (int64_t y = rr.lo[1]; y <= rr.hi[1]; y++) {
            rows += row_run(f, vf, &rr, y, z, dz, b0 + rows, b1 + rows);
            if (rows >= CROSS_ROWS) {
                hits += rows_contacts(vf, p, b0, b1, rows, fd, out, rc, tested);
                rows = 0;
            }
        }
    }
#endif
    return hits + rows_contacts(vf, p, b0, b1, rows, fd, out, rc, tested);
}

/* The level of unit u (u < all the units). */
static inline int unit_level(const state *S, size_t u)
{
    int l = 0;
    while (u >= S->unit_first[l + 1])
        l++;
    return l;
}

/* Over the units [u0, u1) (runs of cells, see plan_units()), level after level, in parallel:
 * each cell's contacts in its level, then those of its particles with every
 * finer level. Pass 1 (items NULL) counts each unit's contacts into
 * S->unit_total and returns the sum, or some number over limit once it is
 * clear the sum is, and the pairs it tested in *tested; with record, it
 * also records the contacts (see recorder) in S->records. Pass 2 writes each
 * unit's contacts at the offset S->unit_total then holds: with record, those
 * that pass 1 recorded without testing again, the others tested. */
static size_t units_pass(state *S, const ns__input *in, size_t u0, size_t u1, ns_contact *items,
                         bool sparse, bool record, size_t limit, size_t *tested)
{
    view views[LEVELS];
    for (int l = 0; l < S->levels; l++)
        views[l] = view_of(&S->level[l]);
    size_t *total = S->unit_total.a, sum = 0, pairs = 0;
    long long first = (long long)u0, last = (long long)u1;
    int over = 0; /* set once one thread's count alone is over limit */
#pragma omp parallel num_threads(in->threads) reduction(+ : sum, pairs)
    {
        scratch sc;
        found fd;
        fd.count = 0;
        fd.sparse = sparse;
        around ar[LEVELS];
        for (int l = 0; l < LEVELS; l++)
            ar[l].block = SIZE_MAX;
        recorder rc = {0}, *rec = NULL;
        size_t *unit_record = S->unit_record.a;
        if (record && !items) { /* this thread's slice of the records */
            size_t all = S->records.capacity, t = (size_t)omp_get_thread_num(),
                   T = (size_t)omp_get_num_threads();
            rc = (recorder){S->records.a, NULL, S->levels, all * t / T, all * (t + 1) / T, false};
            rec = &rc;
        }
        const uint16_t *record_hits = S->record_hits.a;
#pragma omp for schedule(dynamic, 1)
        for (long long u = first; u < last; u++) {
            int stop;
#pragma omp atomic read
            stop = over;
            if (stop)
                continue;
            int l = unit_level(S, (size_t)u);
            const level *s = &S->level[l];
            const view *v = &views[l];
            const uint32_t *unit_cell = s->unit_cell.a + ((size_t)u - S->unit_first[l]);
            size_t c0 = unit_cell[0], c1 = unit_cell[1];
            size_t hits = 0, unit_tested = 0;
            ns_contact *out = items ? items + total[u] : NULL;
            size_t level_hits = S->particle_first[l] * (size_t)S->levels;
            if (items && record && unit_record[u] != UNRECORDED) {
                out = expand_unit(views, l, S->levels, c0, c1, record_hits + level_hits,
                                  S->records.a + unit_record[u], &fd, out);
                flush(&fd, v, out);
                continue;
            }
            size_t first_record = rc.at;
            rc.on = rec != NULL;
            rc.hits = rec ? (uint16_t *)S->record_hits.a + level_hits : NULL;
            for (size_t c = c0, m; c < c1 && hits <= limit; c += m) {
                m = 1;
                if (v->start[c] == v->start[c + 1])
                    continue;
                m = l + 1 == S->levels ? span_of(s, v, c, c1) : 1;
                hits += cell_contacts(s, v, c, m, &ar[l], &sc, &fd, &out, rec, &unit_tested,
                                      limit - hits);
                for (uint32_t q = v->start[c]; q < v->start[c + m] && hits <= limit; q++) {
                    probe pp = probe_of(v, q);
                    for (int f = l + 1; f < S->levels; f++) {
                        size_t h = cross_contacts(&S->level[f], &views[f], &pp, &fd, &out, rec,
                                                  &unit_tested);
                        if (rc.on && h > UINT16_MAX)
                            rc.on = false;
                        if (rc.on)
                            rc.hits[(size_t)q * (size_t)S->levels + (size_t)(f - l)] = (uint16_t)h;
                        hits += h;
                    }
                }
            }
            if (rec) {
                unit_record[u] = rc.on ? first_record : UNRECORDED;
                if (!rc.on)
                    rc.at = first_record; /* its records are of no use */
            }
            if (items)
                flush(&fd, v, out);
            else
                total[u] = hits;
            sum += hits;
            pairs += unit_tested;
            if (!items && sum > limit) {
#pragma omp atomic write
                over = 1;
            }
        }
    }
    if (tested)
        *tested = pairs;
    return sum;
}

static size_t units_of(const state *S)
{
    return S->unit_first[S->levels];
}

static ns_status count(void *p, const ns__input *in, size_t *total, ns_error *err)
{
    (void)err;
    state *S = p;
    *total = units_pass(S, in, 0, units_of(S), NULL, false, false, SIZE_MAX, NULL);
    return NS_OK;
}

/* The units [u0, u1) counted (at most in->max_contacts, else refused),
 * their counts turned into offsets from u0's first contact; *tested = the
 * pairs tested. */
static ns_status count_units(state *S, const ns__input *in, size_t u0, size_t u1, bool record,
                             size_t *total, size_t *tested, ns_error *err)
{
    *total = units_pass(S, in, u0, u1, NULL, false, record, in->max_contacts, tested);
    if (*total > in->max_contacts)
        return ns__too_many_contacts(err, in->max_contacts);
    size_t *offset = S->unit_total.a, at = 0;
    for (size_t u = u0; u < u1; u++) {
        size_t k = offset[u];
        offset[u] = at;
        at += k;
    }
    return NS_OK;
}

/* Whether the write pass should store only the indices of the candidates
 * that touch and gather their fields afterwards (see write_gathered()):
 * when there are more than SPARSE pairs tested per contact, most vectors
 * of candidates hold no contact, and storing six compacted fields for each
 * costs more than gathering them for the few contacts (polydisperse, 28
 * per contact: the query about 20% faster; uniform, 7: 25% slower). */
enum { SPARSE = 12 };
static bool sparse(size_t contacts, size_t pairs)
{
    return pairs / SPARSE > contacts;
}

/* Room to record a query's contacts (see recorder), at least as many as
 * the last query found with a scratch's worth per thread to spare (grown to
 * that and an eighth): false (nothing recorded, every unit tested again) for
 * the first query of an index, or when the memory is not there. */
static bool reserve_records(state *S, const ns__input *in)
{
    if (S->records_last == 0 || in->n > SIZE_MAX / LEVELS)
        return false;
    size_t spare = (size_t)in->threads * (SCRATCH + 2 * LANES);
    return ns__u32s_grow(&S->records, S->records_last + spare) &&
           ns__buf_reserve(&S->record_hits, in->n * (size_t)S->levels, sizeof(uint16_t)) &&
           ns__buf_reserve(&S->unit_record, units_of(S), sizeof(size_t));
}

static ns_status query(void *p, const ns__input *in, ns_contact_list *list, size_t *candidates,
                       ns_error *err)
{
    state *S = p;
    size_t total, pairs = 0;
    bool recorded = reserve_records(S, in);
    ns_status st = count_units(S, in, 0, units_of(S), recorded, &total, &pairs, err);
    if (st == NS_OK) /* a refused count is some number over the limit */
        S->records_last = total;
    *candidates += pairs;
    if (st == NS_OK)
        st = ns__contact_list_grow(list, total, in->max_contacts, in->threads, err);
    if (st != NS_OK)
        return st;
    if (total > 0)
        units_pass(S, in, 0, units_of(S), list->items, sparse(total, pairs), recorded, SIZE_MAX,
                   NULL);
    list->count = total;
    return NS_OK;
}

/* The particles in the units before u, over all levels. */
static size_t particles_before(const state *S, size_t u)
{
    if (u == units_of(S))
        return S->n;
    int l = unit_level(S, u);
    const level *s = &S->level[l];
    return S->particle_first[l] + s->start.a[s->unit_cell.a[u - S->unit_first[l]]];
}

/* The query in batches of units, each of at least an eighth of the
 * particles, clamped to [STREAM_MIN, STREAM_MAX] (so small sets stream in
 * several batches too, and large ones in bounded memory): counted, written
 * into S->batch, handed to sink, in unit order, so the contacts and their
 * order are the query's. */
enum { STREAM_MIN = 1 << 10, STREAM_MAX = 1 << 16 };
static ns_status stream(void *p, const ns__input *in, ns_contact_sink sink, void *user,
                        size_t *candidates, ns_error *err)
{
    state *S = p;
    size_t batch = in->n / 8 < STREAM_MIN   ? STREAM_MIN
                   : in->n / 8 > STREAM_MAX ? STREAM_MAX
                                            : in->n / 8;
    size_t units = units_of(S);
    for (size_t u0 = 0, u1; u0 < units; u0 = u1) {
        size_t first = particles_before(S, u0);
        for (u1 = u0 + 1; u1 < units && particles_before(S, u1) - first < batch; u1++)
            ;
        size_t total, pairs = 0;
        ns_status st = count_units(S, in, u0, u1, false, &total, &pairs, err);
        *candidates += pairs;
        if (st != NS_OK)
            return st;
        if (total == 0)
            continue;
        if (!ns__buf_reserve(&S->batch, total, sizeof(ns_contact)))
            return ns__fail_oom(err, "a batch of the streamed contacts");
        units_pass(S, in, u0, u1, S->batch.a, sparse(total, pairs), false, SIZE_MAX, NULL);
        if (!sink(S->batch.a, total, user))
            break;
    }
    return NS_OK;
}

static void info(const void *p, ns_index_info *info)
{
    const state *S = p;
    static const char *const names[] = {
        [DENSE] = "dense", [BLOCKED] = "blocked", [HASHED] = "hashed"};
    info->bytes += sizeof *S + S->unit_total.capacity * sizeof(size_t) +
                   S->batch.capacity * sizeof(ns_contact) + S->ids.capacity * sizeof(uint32_t) +
                   S->threads.capacity * sizeof(size_t) + S->records.capacity * sizeof(uint32_t) +
                   S->record_hits.capacity * sizeof(uint16_t) +
                   S->unit_record.capacity * sizeof(size_t);
    info->layout = names[S->level[0].layout];
    info->levels = S->levels;
    for (int l = 0; l < LEVELS; l++) { /* what every level holds, used or not */
        const level *s = &S->level[l];
        info->bytes +=
            s->soa.capacity * sizeof(float) +
            (s->start.capacity + s->order.capacity + s->key.capacity + s->bucket.capacity +
             s->group_first.capacity + s->coarse.capacity + s->unit_cell.capacity) *
                sizeof(uint32_t);
    }
    for (int l = 0; l < S->levels; l++) {
        const level *s = &S->level[l];
        info->cells += s->cells;
        info->table_size += s->layout == HASHED ? s->groups : 0;
        for (size_t c = 0; c < s->cells; c++)
            info->nonempty_buckets += s->start.a[c + 1] > s->start.a[c];
    }
}

const ns_kernel_ops NS__OPS(grid_sorted) = {.build = build,
                                            .query = query,
                                            .info = info,
                                            .destroy = destroy,
                                            .count = count,
                                            .stream = stream};

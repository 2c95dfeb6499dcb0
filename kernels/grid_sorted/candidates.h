/* grid_sorted/candidates.h - part of grid_sorted.c: a cell's candidates and
 * the plain loops that test them. A probe (one particle) is tested against
 * a run of the sorted arrays by count_run() and write_run(): the way of a
 * crowded cell, whose candidates do not fit the scratch. Otherwise a cell's
 * candidates are gathered side by side into the scratch (gather_cell()),
 * padded with NaN to whole blocks of LANES, and each of its particles is
 * tested against the later ones by test_range(), a branch-free loop the
 * compiler vectorises, or by the code path's own loops (simd.h). In a
 * crowded dense cell with per-particle radii, each particle tests only the
 * blocks of the stencil cells within its reach (reach_of_cell(),
 * reach_blocks()). The portable loops the AVX2 path shares with the
 * portable one (next_run(), count_gathered_portable(),
 * reach_blocks_portable()) are here too. */

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

/* The paths that test runs of blocks (AVX2, portable; the AVX-512 loops
 * test one block at a time). The mask of every block of the scratch (for
 * EVERY_BLOCK): */
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

/* The contacts of the cell's own particle q with the later candidates
 * [k0, k1), counted (hit NULL) or flagged in hit[], by one branch-free loop
 * the compiler vectorises: on every path the count of a whole scratch
 * (own_contacts()), on the AVX2 and portable paths the counts of runs of
 * blocks, on the portable path every test. */
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

/* The contacts of the cell's own particle q with the later candidates in
 * the blocks of the mask, counted run of blocks by run (simd_count_gathered()
 * of the AVX2 and portable paths). */
static inline uint32_t count_gathered_portable(const scratch *sc, const view *v, uint32_t q,
                                               uint64_t blocks)
{
    uint32_t hits = 0;
    for (uint32_t k0, k1; next_run(&blocks, &k0, &k1);)
        hits += test_range(sc, v, q, k0, k1, NULL);
    return hits;
}

/* Per-particle radii in a dense level: the cells of the half stencil a
 * particle can reach. Its candidates lie in the scratch cell after cell in
 * the order dense_runs() gathers them (the own cell, x+1, then the rows
 * (y+1, z), (y-1, z+1), (y, z+1), (y+1, z+1) from x-1 to x+1), so each
 * cell's candidates fill a few blocks of LANES. A particle with radius r
 * touches nothing farther than r + the level's largest radius, and a small
 * particle of a crowded cell reaches only the near part of the stencil, so
 * it tests fewer candidates (polydisperse's, with recording:
 * docs/optimisation-log.md, "Cutting a crowded cell's candidates by
 * reach"). Only cells of at least LANES particles with per-particle radii
 * are cut so, in the counting (and recording) pass: in sparser cells a block
 * holds several cells and little is left out. A cell is left out only when
 * the distance from the particle to its box, less margins for the rounding
 * of the box and of the particle's cell, is beyond that reach by a relative
 * 2^-10, far more than the float predicate's rounding: every contact it
 * accepts is tested. */
static const signed char STENCIL_AT[STENCIL][3] = {
    {0, 0, 0},  {1, 0, 0},  {-1, 1, 0}, {0, 1, 0}, {1, 1, 0},  {-1, -1, 1}, {0, -1, 1},
    {1, -1, 1}, {-1, 0, 1}, {0, 0, 1},  {1, 0, 1}, {-1, 1, 1}, {0, 1, 1},   {1, 1, 1}};

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

/* The blocks of the stencil cells within lim of a particle at (x, y, z),
 * lim the square of its reach widened (reach_blocks()): per axis the
 * squared gaps to the cells below and above, summed per cell, compared, and
 * each cell's blocks kept by a mask. Without a branch: which cells are in
 * reach is different for every particle. (simd_reach_blocks() of the AVX2
 * and portable paths; the AVX-512 path computes the same sums lane by
 * lane.) */
__attribute__((always_inline)) static inline uint64_t
reach_blocks_portable(const cell_reach *re, float x, float y, float z, float lim)
{
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
}

/* The blocks of the cells within reach of a particle at (x, y, z) with
 * radius r in the cell of re: its reach, r + the level's largest radius,
 * squared and widened by a relative 2^-10, then the code path's test of
 * the 14 cells (simd_reach_blocks()). */
static inline uint64_t reach_blocks(const cell_reach *re, float x, float y, float z, float r)
{
    float lim = r + re->max_radius;
    lim = lim * lim * (1.0f + 0x1p-10f);
    return simd_reach_blocks(re, x, y, z, lim);
}

/* grid_sorted/cross.h - part of grid_sorted.c: the search across levels. A
 * particle of a coarser level (a probe) is tested against the particles of
 * each finer level within its reach, its radius plus the finer level's
 * largest: the cells of the finer level's dense grid within reach along
 * each axis (reach_box()), then each row (y, z) of that box that comes
 * within reach, cut along x to the cells within reach (row_run(), or 8 rows
 * at a time by the AVX-512 path's rows8()): one run of the sorted order per
 * row, tested by the code path's loops (simd_rows_contacts()). It comes
 * after the code path's simd file, whose rows8() its loop calls. */

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

/* The rows of a probe's reach box are found first, up to CROSS_ROWS at a
 * time, then tested, so that the loads of their bounds, then of their
 * particles, overlap instead of waiting on one another (those loads were
 * the hottest instructions of powder's search across levels:
 * docs/optimisation-log.md, "Mixed radii: levels of cells", "Where
 * powder's time went, with three levels"). */
enum { CROSS_ROWS = 32 };

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
    /* The rows found 8 at a time on the AVX-512 path (rows8(), simd_avx512.h),
     * one by one elsewhere (row_run()): the one choice of code path outside
     * the simd files. In an operation of simd.h GCC compiles the loop on its
     * own before inlining it here and makes slightly different code of this
     * hot loop (registers, one load more or less); written here, it is
     * optimised with its caller. */
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    int64_t ny = rr.hi[1] - rr.lo[1] + 1, all = ny * (rr.hi[2] - rr.lo[2] + 1);
    for (int64_t i = 0; i < all; i += 8) {
        rows += rows8(f, vf, &rr, i, ny, all, b0 + rows, b1 + rows);
        if (rows >= CROSS_ROWS) {
            hits += simd_rows_contacts(vf, p, b0, b1, rows, fd, out, rc, tested);
            rows = 0;
        }
    }
#else
    for (int64_t z = rr.lo[2]; z <= rr.hi[2]; z++) {
        double dz = gap(rr.pz, (double)z * g->cell, (double)(z + 1) * g->cell, rr.slack_z);
        for (int64_t y = rr.lo[1]; y <= rr.hi[1]; y++) {
            rows += row_run(f, vf, &rr, y, z, dz, b0 + rows, b1 + rows);
            if (rows >= CROSS_ROWS) {
                hits += simd_rows_contacts(vf, p, b0, b1, rows, fd, out, rc, tested);
                rows = 0;
            }
        }
    }
#endif
    return hits + simd_rows_contacts(vf, p, b0, b1, rows, fd, out, rc, tested);
}

/* grid_sorted/stencil.h - part of grid_sorted.c: which particles a cell is
 * tested against. Each pair is tested once: a cell's particles against the
 * later particles of their own cell and the particles of 13 of the 26 cells
 * around it (the half stencil: x+1; the row y+1; the nine cells of z+1),
 * listed as runs of the sorted order (cell_runs()): in a dense level 5 runs,
 * in the blocked and hashed layouts up to 9 (a row split where it crosses
 * into the next block, each block around looked up once while the cells
 * of one block are searched). span_of() groups a few sparse cells of a row
 * into one span, searched as one wider cell. */

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
 * cost that a cell of one or two particles (most of clusters' cells) would
 * pay for a few candidates; a span shares it (the measurements, and the
 * sizes of span tried: docs/optimisation-log.md, "Sparse cells searched
 * together"). Returns the number of cells, at least 1. Used in the finest
 * level only (the one level of a one-level grid): a coarser level's
 * particles also search the finer levels, and its records (see
 * expand_unit()) are laid out cell by cell, each cell's own contacts, then
 * those across levels. */
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

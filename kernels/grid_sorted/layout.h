/* grid_sorted/layout.h - part of grid_sorted.c: the build of one level.
 * Its layout keeps the rule of at most 2 cells per particle
 * (cells_allowed()): dense when the grid over the bounding box keeps it,
 * blocked when the grid of 4 x 4 x 4 blocks is small enough and its
 * non-empty blocks keep it, else hashed (blocks of 4, 2 or single cells
 * along each axis, found through a hash table of the blocks). Each sorts
 * the particles by key (sort.h) into cell order, start[c] the first of
 * cell c; plan_units() cuts the cells into units of parallel work, and
 * gather() copies the positions (and radii) into the sorted arrays the
 * search reads (view_of()). build_level() does all of it for one level. */

/* Frees a level's arrays (build() frees those of the levels it does not
 * use; destroy() all). */
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
 * particles (or the cells end), so that every cell is in exactly one unit,
 * in order: unit u holds the cells unit_cell[u] .. unit_cell[u + 1] - 1.
 * Every unit has a fixed cost in each pass (taking it from the schedule,
 * writing its contacts' first and last partial vectors, fencing its
 * streamed stores), which a unit of a sparse layout's few particles would
 * pay for little work; joined, they share it (measured:
 * docs/optimisation-log.md, "Units of work"). */
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

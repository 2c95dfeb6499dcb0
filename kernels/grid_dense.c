/* grid_dense - a uniform grid over the particles' bounding box.
 *
 * Cells have the edge of the largest interaction distance, so every contact
 * of a particle lies in its own cell or one of the 26 around it. The grid is
 * built by a counting sort (count per cell, partial sums as entry points,
 * fill by decrementing); the query tests, for each particle, every particle
 * with a larger index in the 27 cells. O(n + cells) time and memory: the
 * cells of empty space cost too, so the cell storage is capped
 * (config.grid_max_bytes) and a larger grid is refused. One thread. */
#include "kernel.h"

typedef struct state {
    ns__u32s start;   /* cells + 1 entry points */
    ns__u32s entries; /* n particle indices, by cell */
    ns__u32s cell_of; /* n cell indices */
    size_t cells;
    int64_t dim[3];
} state;

static void destroy(void *p)
{
    state *s = p;
    ns__u32s_free(&s->start);
    ns__u32s_free(&s->entries);
    ns__u32s_free(&s->cell_of);
    ns__free(s);
}

/* Cells along each axis and in all, or the too-large refusal. */
static ns_status grid_size(state *s, const ns__input *in, ns_error *err)
{
    const ns__grid *g = &in->grid;
    size_t slots = in->grid_max_bytes / sizeof(uint32_t);
    uint64_t max_cells = slots > 0 ? slots - 1 : 0;
    if (max_cells > UINT32_MAX)
        max_cells = UINT32_MAX;
    uint64_t cells = 1;
    bool over = false;
    for (int k = 0; k < 3; k++) {
        uint64_t d = (uint64_t)g->cell_hi[k] - (uint64_t)g->cell_lo[k] + 1;
        s->dim[k] = (int64_t)d;
        over = over || d > max_cells || cells > max_cells / d;
        if (!over)
            cells *= d;
    }
    if (over) {
        double want = 4.0 * ((double)s->dim[0] * (double)s->dim[1] * (double)s->dim[2] + 1);
        return ns__fail(err, NS_ERR_TOO_LARGE, NS_NO_PARTICLE,
                        "grid_dense would need %.0f x %.0f x %.0f cells (%.3g bytes of cell "
                        "storage), over its cap of %zu bytes (grid_max_bytes)",
                        (double)s->dim[0], (double)s->dim[1], (double)s->dim[2], want,
                        in->grid_max_bytes);
    }
    s->cells = (size_t)cells;
    return NS_OK;
}

static ns_status build(void **p, const ns__input *in, ns_error *err)
{
    state *s = ns__kernel_state(p, sizeof *s);
    if (!s)
        return ns__fail_oom(err, "grid_dense state");
    ns_status st = grid_size(s, in, err);
    if (st != NS_OK)
        return st;
    if (!ns__u32s_reserve(&s->start, s->cells + 1) || !ns__u32s_reserve(&s->entries, in->n) ||
        !ns__u32s_reserve(&s->cell_of, in->n))
        return ns__fail(err, NS_ERR_OUT_OF_MEMORY, NS_NO_PARTICLE,
                        "out of memory allocating grid_dense's %zu cells", s->cells);

    /* cell of every particle */
    const ns__grid *g = &in->grid;
    for (size_t i = 0; i < in->n; i++) {
        const float *x = in->pos + 3 * i;
        uint64_t c[3];
        for (int k = 0; k < 3; k++)
            c[k] = (uint64_t)(ns__cell_coord(g, x[k]) - g->cell_lo[k]);
        s->cell_of.a[i] =
            (uint32_t)((c[2] * (uint64_t)s->dim[1] + c[1]) * (uint64_t)s->dim[0] + c[0]);
    }
    /* particles sorted by cell */
    ns__counting_sort(s->cell_of.a, in->n, s->cells, s->start.a, s->entries.a);
    return NS_OK;
}

static ns_status query(void *p, const ns__input *in, ns_contact_list *out, size_t *candidates,
                       ns_error *err)
{
    const state *s = p;
    const ns__grid *g = &in->grid;
    const uint32_t *start = s->start.a, *entries = s->entries.a;
    size_t tested = 0;
    for (size_t i = 0; i < in->n; i++) {
        const float *x = in->pos + 3 * i;
        int64_t lo[3], hi[3];
        for (int k = 0; k < 3; k++) {
            int64_t cell = ns__cell_coord(g, x[k]) - g->cell_lo[k];
            lo[k] = cell > 0 ? cell - 1 : 0;
            hi[k] = cell + 1 < s->dim[k] ? cell + 1 : s->dim[k] - 1;
        }
        /* the 27 cells around, clipped to the grid */
        for (int64_t z = lo[2]; z <= hi[2]; z++)
            for (int64_t y = lo[1]; y <= hi[1]; y++)
                for (int64_t xc = lo[0]; xc <= hi[0]; xc++) {
                    size_t cell = (size_t)((z * s->dim[1] + y) * s->dim[0] + xc);
                    ns_status st = ns__test_entries(in, (uint32_t)i, entries, start[cell],
                                                    start[cell + 1], out, &tested, err);
                    if (st != NS_OK)
                        return st;
                }
    }
    *candidates = tested;
    return NS_OK;
}

static void info(const void *p, ns_index_info *info)
{
    const state *s = p;
    info->bytes += sizeof *s + (s->start.capacity + s->entries.capacity + s->cell_of.capacity) *
                                   sizeof(uint32_t);
    info->cells = s->cells;
    for (size_t c = 0; c < s->cells; c++)
        info->nonempty_buckets += s->start.a[c + 1] > s->start.a[c];
}

const ns_kernel_ops NS__OPS(grid_dense) = {
    .build = build, .query = query, .info = info, .destroy = destroy};

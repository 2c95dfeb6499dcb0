/* index.c - the kernel-independent part of every search: settings, the
 * grid (largest radius, cell size, bounds, range check) and the
 * create/build/query life cycle. */
#include "search.h"

#include <omp.h>
#include <string.h>

struct ns_index {
    const ns_kernel *kernel;
    const ns_kernel_ops *ops; /* the kernel's, on the code path this process runs */
    ns_config config;
    ns__input in;
    void *state;       /* the kernel's, kept across builds */
    bool built;        /* the last build succeeded */
    bool trivial;      /* no contact is possible: fewer than 2 particles or all radii 0 */
    size_t candidates; /* pairs tested by the last query */
};

/* Bounds, largest radius and a cheap validity check in one pass over the
 * particles. Returns false when some value is not finite or a radius is
 * negative or outside the exact range; ns_particles_validate() then says
 * which. */
static bool scan_particles(ns__input *in)
{
    const float *pos = in->pos, *rad = in->radius;
    float lo0 = INFINITY, lo1 = INFINITY, lo2 = INFINITY;
    float hi0 = -INFINITY, hi1 = -INFINITY, hi2 = -INFINITY;
    float maxr = rad ? 0.0f : in->radius_uniform;
    int bad = 0;
    long long n = (long long)in->n;
#pragma omp parallel for num_threads(in->threads) schedule(static) if (n > 65536)                  \
    reduction(min                                                                                  \
              : lo0, lo1, lo2) reduction(max                                                       \
                                         : hi0, hi1, hi2, maxr) reduction(|                        \
                                                                          : bad)
    for (long long i = 0; i < n; i++) {
        float x = pos[3 * i], y = pos[3 * i + 1], z = pos[3 * i + 2];
        bad |= !isfinite(x) | !isfinite(y) | !isfinite(z);
        lo0 = x < lo0 ? x : lo0;
        lo1 = y < lo1 ? y : lo1;
        lo2 = z < lo2 ? z : lo2;
        hi0 = x > hi0 ? x : hi0;
        hi1 = y > hi1 ? y : hi1;
        hi2 = z > hi2 ? z : hi2;
        if (rad) {
            float r = rad[i];
            bad |= !(r == 0.0f || (r >= NS__RADIUS_MIN && r <= NS__RADIUS_MAX));
            maxr = r > maxr ? r : maxr;
        }
    }
    ns__grid *g = &in->grid;
    g->lo[0] = lo0, g->lo[1] = lo1, g->lo[2] = lo2;
    g->hi[0] = hi0, g->hi[1] = hi1, g->hi[2] = hi2;
    g->max_radius = maxr;
    return !bad;
}

/* Twice as many buckets as particles keeps collisions rare. */
static size_t default_table_size(size_t n)
{
    if (n == 0)
        return 1;
    return n < UINT32_MAX / 2 ? 2 * n : UINT32_MAX;
}

/* The most buckets a table for n particles gets (see nsearch.h): beyond
 * NS_TABLE_SIZE_PER_PARTICLE per particle the buckets are almost all empty
 * and only cost memory and the time to clear them. */
static size_t table_size_cap(size_t n)
{
    size_t cap = n < UINT32_MAX / NS_TABLE_SIZE_PER_PARTICLE
                     ? (size_t)NS_TABLE_SIZE_PER_PARTICLE * n
                     : UINT32_MAX;
    return cap > NS_TABLE_SIZE_FLOOR ? cap : NS_TABLE_SIZE_FLOOR;
}

/* The cell edge and the range of cell coordinates (ns__grid_set_cells);
 * refused when a coordinate is beyond 2^62 cells from the origin, naming
 * the first particle there. */
static ns_status set_cells(ns__input *in, const ns_particles *p, ns_error *err)
{
    ns__grid *g = &in->grid;
    int k = ns__grid_set_cells(g);
    if (k < 0)
        return NS_OK;
    size_t bad = 0;
    while (bad < p->n &&
           ns__cell_in_range(floor((double)p->pos[3 * bad + (size_t)k] * g->inv_cell)))
        bad++;
    return ns__fail(err, NS_ERR_TOO_LARGE, bad,
                    "particle %zu: coordinate %c = %g is beyond 2^62 cells of %g from the "
                    "origin",
                    bad, "xyz"[k], (double)p -> pos[3 * bad + (size_t)k], g -> cell);
}

ns_status ns_index_create(const ns_kernel *kernel, const ns_config *config, ns_index **out,
                          ns_error *err)
{
    if (!out)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "index pointer is NULL");
    *out = NULL;
    if (!kernel || !kernel->ops)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "kernel is NULL");
    ns_config c = config ? *config : ns_config_default();
    /* an explicit count is checked for every kernel; OpenMP's default only
     * matters to the parallel ones */
    int threads;
    if (c.threads != 0 || kernel->parallel) {
        ns_status s = ns__resolve_threads(c.threads, &threads, err);
        if (s != NS_OK)
            return s;
    }
    if (c.table_size > UINT32_MAX)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "table_size = %zu is more than the %u buckets a uint32_t numbers",
                        c.table_size, UINT32_MAX);
    if (c.grid_max_bytes == 0)
        c.grid_max_bytes = NS_DEFAULT_GRID_MAX_BYTES;
    const ns_kernel_ops *ops = ns__kernel_ops(kernel, c.isa, err);
    if (!ops) /* config.isa or NS_ISA names a path that cannot run: err says which */
        return NS_ERR_INVALID_ARGUMENT;
    ns_index *index = ns__malloc(sizeof *index);
    if (!index)
        return ns__fail_oom(err, "the index");
    memset(index, 0, sizeof *index);
    index->kernel = kernel;
    index->ops = ops;
    index->config = c;
    *out = index;
    ns__ok(err);
    return NS_OK;
}

void ns_index_destroy(ns_index *index)
{
    if (!index)
        return;
    if (index->state)
        index->ops->destroy(index->state);
    ns__free(index);
}

ns_status ns_index_build(ns_index *index, const ns_particles *p, ns_error *err)
{
    if (!index)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "index is NULL");
    index->built = false;
    if (!p)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "particles is NULL");
    if (p->n > NS_MAX_PARTICLES || (p->n > 0 && !p->pos))
        return ns_particles_validate(p, err);

    const ns_config *c = &index->config;
    ns__input *in = &index->in;
    memset(in, 0, sizeof *in);
    in->n = p->n;
    in->pos = p->pos;
    in->radius = p->radius;
    in->radius_uniform = p->radius_uniform;
    in->threads = 1;
    if (index->kernel->parallel) {
        /* again: OpenMP's default may have changed since the create */
        ns_status s = ns__resolve_threads(c->threads, &in->threads, err);
        if (s != NS_OK)
            return s;
        if (!c->exact_threads)
            in->threads = ns_kernel_threads(index->kernel, p->n, in->threads);
    }
    size_t table_cap = table_size_cap(p->n);
    in->table_size = c->table_size == 0          ? default_table_size(p->n)
                     : c->table_size > table_cap ? table_cap
                                                 : c->table_size;
    in->grid_max_bytes = c->grid_max_bytes;
    in->max_contacts = ns__resolve_max_contacts(c->max_contacts);

    if (!scan_particles(in) || (!p->radius && !ns__radius_in_range(p->radius_uniform)))
        return ns_particles_validate(p, err);
    index->trivial = p->n < 2 || in->grid.max_radius == 0.0f;
    if (!index->trivial) {
        ns_status s = set_cells(in, p, err);
        if (s == NS_OK)
            s = index->ops->build(&index->state, in, err);
        if (s != NS_OK)
            return s;
    }
    index->built = true;
    ns__ok(err);
    return NS_OK;
}

ns_status ns_index_query(ns_index *index, ns_contact_list *contacts, ns_error *err)
{
    if (!index || !contacts)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "%s is NULL",
                        index ? "contact list" : "index");
    contacts->count = 0;
    index->candidates = 0;
    if (!index->built)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "query of an index without a successful build");
    if (!index->trivial) {
        ns_status s =
            index->ops->query(index->state, &index->in, contacts, &index->candidates, err);
        if (s != NS_OK) {
            contacts->count = 0;
            return s;
        }
    }
    ns__ok(err);
    return NS_OK;
}

bool ns_index_can_count(const ns_index *index)
{
    return index && index->ops->count;
}

ns_status ns_index_count(ns_index *index, size_t *count, ns_error *err)
{
    if (!index || !count)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "%s is NULL",
                        index ? "count" : "index");
    *count = 0;
    if (!ns_index_can_count(index))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "kernel %s has no counting pass", index->kernel->name);
    if (!index->built)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "count of an index without a successful build");
    if (!index->trivial) {
        ns_status s = index->ops->count(index->state, &index->in, count, err);
        if (s != NS_OK)
            return s;
    }
    ns__ok(err);
    return NS_OK;
}

bool ns_index_can_stream(const ns_index *index)
{
    return index && index->ops->stream;
}

ns_status ns_index_query_stream(ns_index *index, ns_contact_sink sink, void *user, ns_error *err)
{
    if (!index || !sink)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "%s is NULL",
                        index ? "sink" : "index");
    index->candidates = 0;
    if (!ns_index_can_stream(index))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "kernel %s has no streaming query", index->kernel->name);
    if (!index->built)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "streaming query of an index without a successful build");
    if (!index->trivial) {
        ns_status s =
            index->ops->stream(index->state, &index->in, sink, user, &index->candidates, err);
        if (s != NS_OK)
            return s;
    }
    ns__ok(err);
    return NS_OK;
}

void ns__index_set_max_contacts(ns_index *index, size_t max_contacts)
{
    index->config.max_contacts = max_contacts;
}

void ns_index_get_info(const ns_index *index, ns_index_info *info)
{
    if (!info)
        return;
    memset(info, 0, sizeof *info);
    if (!index)
        return;
    info->bytes = sizeof *index;
    info->candidates = index->candidates;
    info->threads = index->built ? index->in.threads : 0;
    if (index->built && !index->trivial) {
        if (index->state)
            index->ops->info(index->state, info);
        if (info->cells || info->table_size)
            info->cell_size = index->in.grid.cell;
    }
}

ns_status ns_find_contacts(const ns_kernel *kernel, const ns_particles *particles,
                           const ns_config *config, ns_contact_list *contacts, ns_error *err)
{
    if (!contacts)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "contact list is NULL");
    contacts->count = 0;
    ns_index *index;
    ns_status s = ns_index_create(kernel, config, &index, err);
    if (s != NS_OK)
        return s;
    s = ns_index_build(index, particles, err);
    if (s == NS_OK)
        s = ns_index_query(index, contacts, err);
    ns_index_destroy(index);
    return s;
}

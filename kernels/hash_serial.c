/* hash_serial - a spatial hash: cells of unbounded space hashed into a table.
 *
 * Cells as in grid_dense, but each cell's integer coordinates are hashed
 * into one of table_size buckets, so memory is O(n + table_size) however far
 * apart the particles are. Built by a counting sort of the particles by
 * bucket; the query takes the particles bucket by bucket, visits the
 * distinct buckets of the 27 cells around each and tests every particle in
 * them with a larger index. A bucket
 * may hold particles of unrelated cells: they cost a distance test, never a
 * wrong contact. O(n) time for a table of O(n) buckets. One thread. */
#include "kernel.h"

typedef struct state {
    ns__u32s start;     /* table_size + 1 entry points */
    ns__u32s entries;   /* n particle indices, by bucket */
    ns__u32s bucket_of; /* n buckets */
    size_t table_size;
} state;

static void destroy(void *p)
{
    state *s = p;
    ns__u32s_free(&s->start);
    ns__u32s_free(&s->entries);
    ns__u32s_free(&s->bucket_of);
    ns__free(s);
}

static ns_status build(void **p, const ns__input *in, ns_error *err)
{
    state *s = ns__kernel_state(p, sizeof *s);
    if (!s)
        return ns__fail_oom(err, "hash_serial state");
    s->table_size = in->table_size;
    if (!ns__u32s_reserve(&s->start, in->table_size + 1) || !ns__u32s_reserve(&s->entries, in->n) ||
        !ns__u32s_reserve(&s->bucket_of, in->n))
        return ns__fail(err, NS_ERR_OUT_OF_MEMORY, NS_NO_PARTICLE,
                        "out of memory allocating a hash table of %zu buckets", in->table_size);

    /* bucket of every particle */
    for (size_t i = 0; i < in->n; i++)
        s->bucket_of.a[i] = ns__particle_bucket(in, i);
    /* particles sorted by bucket */
    ns__counting_sort(s->bucket_of.a, in->n, s->table_size, s->start.a, s->entries.a);
    return NS_OK;
}

static ns_status query(void *p, const ns__input *in, ns_contact_list *out, size_t *candidates,
                       ns_error *err)
{
    const state *s = p;
    const uint32_t *start = s->start.a, *entries = s->entries.a;
    ns__neighbours nb = {.count = -1};
    size_t tested = 0;
    /* bucket by bucket, so neighbouring particles are visited together */
    for (size_t b = 0; b < s->table_size; b++)
        for (uint32_t e = start[b]; e < start[b + 1]; e++) {
            uint32_t i = entries[e];
            int64_t cell[3];
            ns__particle_cell(in, i, cell);
            const ns__neighbours *near = ns__neighbours_around(&nb, in, cell);
            for (int k = 0; k < near->count; k++) {
                uint32_t b2 = near->bucket[k];
                ns_status st =
                    ns__test_entries(in, i, entries, start[b2], start[b2 + 1], out, &tested, err);
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
    info->bytes += sizeof *s + (s->start.capacity + s->entries.capacity + s->bucket_of.capacity) *
                                   sizeof(uint32_t);
    info->table_size = s->table_size;
    for (size_t b = 0; b < s->table_size; b++)
        info->nonempty_buckets += s->start.a[b + 1] > s->start.a[b];
}

const ns_kernel_ops NS__OPS(hash_serial) = {
    .build = build, .query = query, .info = info, .destroy = destroy};

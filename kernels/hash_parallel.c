/* hash_parallel - the spatial hash of hash_serial, built and queried in parallel.
 *
 * The same buckets and the same query, over T threads: each particle's
 * bucket is counted with an atomic increment, a blocked two-pass parallel
 * prefix sum turns counts into bucket starts, and particles are scattered
 * into their buckets through atomic cursors (so the order inside a bucket
 * varies from run to run; the contacts do not). The scatter copies each
 * particle's position and radius beside its index, so the query reads the
 * particles of a bucket from one stretch of memory instead of from all over
 * the caller's array. Threads query blocks of buckets into their own contact
 * buffers, concatenated at the end; the particles of a bucket that share a
 * cell are tested together, so each candidate is loaded once for all of them.
 * O(n / T) time, O(n + table_size) memory. */
#include "kernel.h"

#include <omp.h>
#include <string.h>

typedef struct state {
    ns__u32s start;     /* table_size + 1 entry points */
    ns__u32s cursor;    /* table_size insertion cursors */
    ns__u32s entries;   /* n particle indices, by bucket */
    ns__u32s bucket_of; /* n buckets */
    ns__buf particle;   /* n x (x, y, z, r) floats, in the order of entries */
    size_t table_size;
    ns__tbufs out;
} state;

static void destroy(void *p)
{
    state *s = p;
    ns__u32s_free(&s->start);
    ns__u32s_free(&s->cursor);
    ns__u32s_free(&s->entries);
    ns__u32s_free(&s->bucket_of);
    ns__buf_free(&s->particle);
    ns__tbufs_free(&s->out);
    ns__free(s);
}

static ns_status build(void **p, const ns__input *in, ns_error *err)
{
    state *s = ns__kernel_state(p, sizeof *s);
    if (!s)
        return ns__fail_oom(err, "hash_parallel state");
    if (s->out.count != in->threads) {
        ns__tbufs_free(&s->out);
        ns_status st = ns__tbufs_init(&s->out, in->threads, err);
        if (st != NS_OK)
            return st;
    }
    size_t m = in->table_size;
    s->table_size = m;
    if (!ns__u32s_reserve(&s->start, m + 1) || !ns__u32s_reserve(&s->cursor, m) ||
        !ns__u32s_reserve(&s->entries, in->n) || !ns__u32s_reserve(&s->bucket_of, in->n))
        return ns__fail(err, NS_ERR_OUT_OF_MEMORY, NS_NO_PARTICLE,
                        "out of memory allocating a hash table of %zu buckets", m);
    if (!ns__buf_reserve(&s->particle, in->n, 4 * sizeof(float)))
        return ns__fail_oom(err, "hash_parallel's particle copy");
    float *particle = s->particle.a;

    uint32_t *start = s->start.a, *cursor = s->cursor.a, *entries = s->entries.a,
             *bucket_of = s->bucket_of.a;
    long long n = (long long)in->n, buckets = (long long)m;
#pragma omp parallel num_threads(in->threads)
    {
#pragma omp for schedule(static)
        for (long long b = 0; b <= buckets; b++)
            start[b] = 0;
            /* count per bucket */
#pragma omp for schedule(static)
        for (long long i = 0; i < n; i++) {
            uint32_t b = ns__particle_bucket(in, (size_t)i);
            bucket_of[i] = b;
#pragma omp atomic update
            start[b]++;
        }
    }
    /* bucket starts */
    ns__parallel_exclusive_scan_u32(start, m + 1, in->threads);
#pragma omp parallel num_threads(in->threads)
    {
#pragma omp for schedule(static)
        for (long long b = 0; b < buckets; b++)
            cursor[b] = start[b];
            /* scatter through atomic cursors */
#pragma omp for schedule(static)
        for (long long i = 0; i < n; i++) {
            uint32_t at;
#pragma omp atomic capture
            at = cursor[bucket_of[i]]++;
            entries[at] = (uint32_t)i;
            const float *from = in->pos + 3 * i;
            float *to = particle + 4 * (size_t)at;
            to[0] = from[0], to[1] = from[1], to[2] = from[2], to[3] = ns__radius(in, (size_t)i);
        }
    }
    return NS_OK;
}

/* Up to this many particles of one cell are tested together, so each
 * candidate's position is loaded once for all of them. */
enum { GROUP = 32 };

static ns_status query(void *p, const ns__input *in, ns_contact_list *list, size_t *candidates,
                       ns_error *err)
{
    state *s = p;
    const uint32_t *start = s->start.a, *entries = s->entries.a;
    const float *particle = s->particle.a;
    ns__tbufs_reset(&s->out, in->max_contacts);
    long long buckets = (long long)s->table_size;
    size_t tested = 0;
#pragma omp parallel num_threads(in->threads) reduction(+ : tested)
    {
        int t = omp_get_thread_num();
        const ns__input local = *in; /* a private copy: no store can alias it */
        ns__neighbours nb = {.count = -1};
        uint32_t group[GROUP];
        float gx[GROUP], gy[GROUP], gz[GROUP], gr[GROUP];
        size_t my_tested = 0;
        ns_contact c;
        /* blocks of buckets, so neighbouring particles are visited together */
#pragma omp for schedule(dynamic, 1024)
        for (long long b = 0; b < buckets; b++) {
            uint32_t e = start[b], end = start[b + 1];
            while (e < end && !ns__tbufs_failed(&s->out)) {
                /* a run of the bucket's particles that share one cell */
                int64_t cell[3];
                const float *q = particle + 4 * (size_t)e;
                cell[0] = ns__cell_coord(&local.grid, q[0]);
                cell[1] = ns__cell_coord(&local.grid, q[1]);
                cell[2] = ns__cell_coord(&local.grid, q[2]);
                int m = 0;
                do {
                    group[m] = entries[e];
                    gx[m] = q[0], gy[m] = q[1], gz[m] = q[2], gr[m] = q[3];
                    m++, e++, q += 4;
                } while (e < end && m < GROUP && ns__cell_coord(&local.grid, q[0]) == cell[0] &&
                         ns__cell_coord(&local.grid, q[1]) == cell[1] &&
                         ns__cell_coord(&local.grid, q[2]) == cell[2]);
                const ns__neighbours *near = ns__neighbours_around(&nb, &local, cell);
                /* every particle of the neighbour buckets against the run */
                for (int k = 0; k < near->count; k++)
                    for (uint32_t f = start[near->bucket[k]]; f < start[near->bucket[k] + 1]; f++) {
                        uint32_t j = entries[f];
                        const float *pj = particle + 4 * (size_t)f;
                        for (int g = 0; g < m; g++) {
                            if (j <= group[g])
                                continue;
                            my_tested++;
                            float dx = pj[0] - gx[g], dy = pj[1] - gy[g], dz = pj[2] - gz[g];
                            float d2 = ns__distance2(dx, dy, dz), sum = gr[g] + pj[3];
                            if (ns__touching(d2, sum)) {
                                ns__contact_fill(group[g], j, dx, dy, dz, d2, sum, &c);
                                ns__tbuf_push(&s->out, t, &c, local.max_contacts);
                            }
                        }
                    }
            }
        }
        tested += my_tested;
    }
    *candidates = tested;
    return ns__tbufs_merge(&s->out, list, in->max_contacts, err);
}

static void info(const void *p, ns_index_info *info)
{
    const state *s = p;
    info->bytes +=
        sizeof *s + s->out.count * sizeof(ns__tbuf) +
        (s->start.capacity + s->cursor.capacity + s->entries.capacity + s->bucket_of.capacity) *
            sizeof(uint32_t) +
        s->particle.capacity * 4 * sizeof(float);
    info->table_size = s->table_size;
    for (size_t b = 0; b < s->table_size; b++)
        info->nonempty_buckets += s->start.a[b + 1] > s->start.a[b];
}

const ns_kernel_ops NS__OPS(hash_parallel) = {
    .build = build, .query = query, .info = info, .destroy = destroy};

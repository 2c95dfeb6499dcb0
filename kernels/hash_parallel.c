/* hash_parallel - the spatial hash of hash_serial, built and queried in parallel.
 *
 * The same buckets and the same query, over T threads: each particle's
 * bucket is counted with an atomic increment, a blocked two-pass parallel
 * prefix sum turns counts into bucket starts, and particles are scattered
 * into their buckets through atomic cursors (so the order inside a bucket
 * varies from run to run; the contacts do not). Threads query blocks of
 * buckets into their own contact buffers, concatenated at the end; the
 * particles of a bucket that share a cell are tested together, so each
 * candidate is loaded once for all of them.
 * O(n / T) time, O(n + table_size) memory. */
#include "internal.h"

#include <omp.h>
#include <string.h>

typedef struct state {
    ns__u32s start;     /* table_size + 1 entry points */
    ns__u32s cursor;    /* table_size insertion cursors */
    ns__u32s entries;   /* n particle indices, by bucket */
    ns__u32s bucket_of; /* n buckets */
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
    ns__tbufs_free(&s->out);
    ns__free(s);
}

static ns_status build(void **p, const ns__input *in, ns_error *err)
{
    state *s = *p;
    if (!s) {
        s = ns__malloc(sizeof *s);
        if (!s)
            return ns__fail_oom(err, "hash_parallel state");
        memset(s, 0, sizeof *s);
        *p = s;
    }
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
    ns__tbufs_reset(&s->out);
    long long buckets = (long long)s->table_size;
    size_t tested = 0;
#pragma omp parallel num_threads(in->threads) reduction(+ : tested)
    {
        int t = omp_get_thread_num();
        const ns__input local = *in; /* a private copy: no store can alias it */
        ns__neighbours nb = {.count = -1};
        uint32_t group[GROUP];
        size_t my_tested = 0;
        ns_contact c;
        /* blocks of buckets, so neighbouring particles are visited together */
#pragma omp for schedule(dynamic, 1024)
        for (long long b = 0; b < buckets; b++) {
            uint32_t e = start[b], end = start[b + 1];
            while (e < end && !ns__tbufs_failed(&s->out)) {
                /* a run of the bucket's particles that share one cell */
                int64_t cell[3], next[3];
                ns__particle_cell(&local, entries[e], cell);
                int m = 0;
                group[m++] = entries[e++];
                while (e < end && m < GROUP) {
                    ns__particle_cell(&local, entries[e], next);
                    if (next[0] != cell[0] || next[1] != cell[1] || next[2] != cell[2])
                        break;
                    group[m++] = entries[e++];
                }
                const ns__neighbours *near = ns__neighbours_around(&nb, &local, cell);
                /* every particle of the neighbour buckets against the run */
                for (int k = 0; k < near->count; k++)
                    for (uint32_t f = start[near->bucket[k]]; f < start[near->bucket[k] + 1]; f++) {
                        uint32_t j = entries[f];
                        for (int g = 0; g < m; g++) {
                            if (j <= group[g])
                                continue;
                            my_tested++;
                            if (ns__contact(&local, group[g], j, &c))
                                ns__tbuf_push(&s->out, t, &c, local.max_contacts);
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
    info->bytes += sizeof *s + s->out.count * sizeof(ns__tbuf) +
                   (s->start.capacity + s->cursor.capacity + s->entries.capacity +
                    s->bucket_of.capacity) *
                       sizeof(uint32_t);
    info->table_size = s->table_size;
    for (size_t b = 0; b < s->table_size; b++)
        info->nonempty_buckets += s->start.a[b + 1] > s->start.a[b];
}

const ns_kernel_ops ns__hash_parallel_ops = {.build = build, .query = query, .info = info, .destroy = destroy};

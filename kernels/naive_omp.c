/* naive_omp - every pair i < j, rows split over OpenMP threads.
 *
 * The reference loop in parallel: O(n^2 / T) time. Row i tests n - i - 1
 * pairs, so the triangle is unbalanced: rows are handed out dynamically in
 * small chunks. Each thread appends to its own contact buffer; the buffers
 * are concatenated at the end. Memory: the per-thread buffers. */
#include "kernel.h"

#include <omp.h>

typedef struct state {
    ns__tbufs out;
} state;

static void destroy(void *p)
{
    state *s = p;
    ns__tbufs_free(&s->out);
    ns__free(s);
}

static ns_status build(void **p, const ns__input *in, ns_error *err)
{
    state *s = *p;
    if (s && s->out.count == in->threads)
        return NS_OK;
    if (s)
        destroy(s);
    *p = NULL;
    s = ns__malloc(sizeof *s);
    if (!s)
        return ns__fail_oom(err, "naive_omp state");
    ns_status st = ns__tbufs_init(&s->out, in->threads, err);
    if (st != NS_OK) {
        ns__free(s);
        return st;
    }
    *p = s;
    return NS_OK;
}

static ns_status query(void *p, const ns__input *in, ns_contact_list *list, size_t *candidates,
                       ns_error *err)
{
    *candidates = in->n * (in->n - 1) / 2;
    state *s = p;
    ns__tbufs_reset(&s->out, in->max_contacts);
    long long n = (long long)in->n;
#pragma omp parallel num_threads(in->threads)
    {
        int t = omp_get_thread_num();
        ns_contact c;
#pragma omp for schedule(dynamic, 16)
        for (long long i = 0; i < n; i++) {
            if (ns__tbufs_failed(&s->out))
                continue;
            for (long long j = i + 1; j < n; j++)
                if (ns__contact(in, (uint32_t)i, (uint32_t)j, &c) &&
                    !ns__tbuf_push(&s->out, t, &c, in->max_contacts))
                    break;
        }
    }
    return ns__tbufs_merge(&s->out, list, in->max_contacts, err);
}

static void info(const void *p, ns_index_info *info)
{
    (void)p, (void)info;
}

const ns_kernel_ops NS__OPS(naive_omp) = {
    .build = build, .query = query, .info = info, .destroy = destroy};

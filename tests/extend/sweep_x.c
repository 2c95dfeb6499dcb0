/* sweep_x - sort-and-sweep along x: the particles sorted by x, then each
 * tested against those after it until they are farther along x than the
 * largest interaction distance.
 *
 * A kernel written for tests/extend/add_kernel_test.sh, which copies it into
 * kernels/ with one line of kernels/kernel_list.h and checks that it then
 * appears in the CLI, the differential and layout tests and the sweep.
 * O(n log n) to sort, then O(n * the particles within one interaction
 * distance along x): fast on a thin slab, quadratic when all share an x.
 * One thread; n (x, index) pairs of memory. */
#include "kernel.h"

#include <stdlib.h>

typedef struct entry {
    float x;
    uint32_t i;
} entry;

typedef struct state {
    entry *by_x;
    size_t capacity;
} state;

static int by_x(const void *a, const void *b)
{
    const entry *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : (p->i > q->i) - (p->i < q->i);
}

static ns_status build(void **st, const ns__input *in, ns_error *err)
{
    state *s = *st;
    if (!s) {
        if (!(s = ns__malloc(sizeof *s)))
            return ns__fail_oom(err, "sweep_x's state");
        s->by_x = NULL;
        s->capacity = 0;
        *st = s;
    }
    if (s->capacity < in->n) { /* grown only when needed: rebuilds reuse it */
        entry *grown = ns__malloc_array(in->n, sizeof *grown);
        if (!grown)
            return ns__fail_oom(err, "sweep_x's order");
        ns__free(s->by_x);
        s->by_x = grown;
        s->capacity = in->n;
    }
    for (uint32_t i = 0; i < in->n; i++)
        s->by_x[i] = (entry){in->pos[3 * (size_t)i], i};
    if (in->n > 1)
        qsort(s->by_x, in->n, sizeof *s->by_x, by_x);
    return NS_OK;
}

static ns_status query(void *st, const ns__input *in, ns_contact_list *out, size_t *candidates,
                       ns_error *err)
{
    const state *s = st;
    *candidates = 0;
    ns_contact c;
    for (size_t a = 0; a < in->n; a++)
        for (size_t b = a + 1; b < in->n; b++) {
            /* exact in double: beyond one cell along x, no later particle touches */
            if ((double)s->by_x[b].x - (double)s->by_x[a].x > in->grid.cell)
                break;
            uint32_t i = s->by_x[a].i, j = s->by_x[b].i;
            ++*candidates;
            if (ns__contact(in, i < j ? i : j, i < j ? j : i, &c)) {
                ns_status r = ns__list_push(out, &c, in->max_contacts, err);
                if (r != NS_OK)
                    return r;
            }
        }
    return NS_OK;
}

static void info(const void *st, ns_index_info *info)
{
    const state *s = st;
    if (s)
        info->bytes += sizeof *s + s->capacity * sizeof *s->by_x;
}

static void destroy(void *st)
{
    state *s = st;
    if (s)
        ns__free(s->by_x);
    ns__free(s);
}

const ns_kernel_ops NS__OPS(sweep_x) = {
    .build = build, .query = query, .info = info, .destroy = destroy};

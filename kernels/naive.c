/* naive - every pair i < j, tested with the shared contact predicate.
 *
 * The frozen reference every other kernel is checked against: short and
 * obviously right, never optimised. O(n^2) time, no memory beyond the
 * contacts, one thread. */
#include "kernel.h"

static ns_status build(void **state, const ns__input *in, ns_error *err)
{
    (void)state, (void)in, (void)err;
    return NS_OK;
}

static ns_status query(void *state, const ns__input *in, ns_contact_list *out, size_t *candidates,
                       ns_error *err)
{
    (void)state;
    *candidates = in->n * (in->n - 1) / 2;
    ns_contact c;
    for (uint32_t i = 0; i < in->n; i++)
        for (uint32_t j = i + 1; j < in->n; j++)
            if (ns__contact(in, i, j, &c)) {
                ns_status s = ns__list_push(out, &c, in->max_contacts, err);
                if (s != NS_OK)
                    return s;
            }
    return NS_OK;
}

static void info(const void *state, ns_index_info *info)
{
    (void)state, (void)info;
}

static void destroy(void *state)
{
    (void)state;
}

const ns_kernel_ops NS__OPS(naive) = {
    .build = build, .query = query, .info = info, .destroy = destroy};

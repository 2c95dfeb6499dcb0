/* contact_buffers.c - per-thread contact buffers for parallel kernels. */
#include "internal.h"

#include <omp.h>
#include <string.h>

ns_status ns__tbufs_init(ns__tbufs *t, int threads, ns_error *err)
{
    t->count = 0;
    t->bufs = ns__malloc_array((size_t)threads, sizeof(ns__tbuf));
    if (!t->bufs)
        return ns__fail_oom(err, "per-thread contact buffers");
    memset(t->bufs, 0, (size_t)threads * sizeof(ns__tbuf));
    t->count = threads;
    atomic_init(&t->failed, 0);
    return NS_OK;
}

void ns__tbufs_free(ns__tbufs *t)
{
    for (int k = 0; k < t->count; k++)
        ns__free(t->bufs[k].items);
    ns__free(t->bufs);
    t->bufs = NULL;
    t->count = 0;
}

size_t ns__tbufs_bytes(const ns__tbufs *t)
{
    size_t bytes = (size_t)t->count * sizeof(ns__tbuf);
    for (int k = 0; k < t->count; k++)
        bytes += t->bufs[k].capacity * sizeof(ns_contact);
    return bytes;
}

void ns__tbufs_reset(ns__tbufs *t)
{
    for (int k = 0; k < t->count; k++) {
        t->bufs[k].count = 0;
        t->bufs[k].status = NS_OK;
    }
    atomic_store_explicit(&t->failed, 0, memory_order_relaxed);
}

bool ns__tbufs_failed(ns__tbufs *t)
{
    return atomic_load_explicit(&t->failed, memory_order_relaxed) != 0;
}

static bool tbuf_fail(ns__tbufs *t, ns__tbuf *b, ns_status status)
{
    b->status = status;
    atomic_store_explicit(&t->failed, 1, memory_order_relaxed);
    return false;
}

bool ns__tbuf_push_slow(ns__tbufs *t, int thread, const ns_contact *c, size_t max_contacts)
{
    ns__tbuf *b = &t->bufs[thread];
    if (b->status != NS_OK)
        return false;
    if (b->count >= max_contacts)
        return tbuf_fail(t, b, NS_ERR_TOO_MANY_CONTACTS);
    if (b->count == b->capacity) {
        size_t want = b->capacity < 512 ? 1024 : 2 * b->capacity;
        if (want > max_contacts)
            want = max_contacts;
        ns_contact *items = ns__realloc(b->items, want * sizeof(ns_contact));
        if (!items)
            return tbuf_fail(t, b, NS_ERR_OUT_OF_MEMORY);
        b->items = items;
        b->capacity = want;
    }
    b->items[b->count++] = *c;
    return true;
}

ns_status ns__tbufs_merge(ns__tbufs *t, ns_contact_list *list, size_t max_contacts,
                          ns_error *err)
{
    list->count = 0;
    size_t total = 0;
    bool too_many = false;
    for (int k = 0; k < t->count; k++) {
        if (t->bufs[k].status == NS_ERR_OUT_OF_MEMORY)
            return ns__fail_oom(err, "a per-thread contact buffer");
        too_many |= t->bufs[k].status == NS_ERR_TOO_MANY_CONTACTS;
        total += t->bufs[k].count;
    }
    if (too_many || total > max_contacts)
        return ns__too_many_contacts(err, max_contacts);
    if (total > list->capacity) {
        size_t want = total + total / 8;
        ns_status s = ns_contact_list_reserve(list, want > total && want <= max_contacts ? want : total, err);
        if (s != NS_OK)
            return s;
    }
    size_t *offset = ns__malloc_array((size_t)t->count, sizeof(size_t));
    if (!offset)
        return ns__fail_oom(err, "merge offsets");
    size_t at = 0;
    for (int k = 0; k < t->count; k++) {
        offset[k] = at;
        at += t->bufs[k].count;
    }
#pragma omp parallel for num_threads(t->count) schedule(static, 1)
    for (int k = 0; k < t->count; k++)
        if (t->bufs[k].count)
            memcpy(list->items + offset[k], t->bufs[k].items, t->bufs[k].count * sizeof(ns_contact));
    ns__free(offset);
    list->count = total;
    return NS_OK;
}

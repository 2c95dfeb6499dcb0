/* contact_buffers.c - per-thread contact buffers for parallel kernels.
 *
 * The contact limit is global, whatever the thread count. A thread writes
 * into its own buffer without synchronising; only when the buffer is full
 * (the slow path) does it add the contacts it found since its last visit,
 * the one being pushed included, to the shared total. A total over
 * max_contacts fails the search: the true total is at least the published
 * one, so this never refuses a search whose contacts fit. Otherwise the
 * buffer doubles (from 1024), but to at most its contacts plus what the
 * limit still allows (max_contacts - total), so no buffer outgrows the limit.
 * A search whose threads never reach the slow path over the limit is refused
 * by the merge, which counts every buffer: refusal happens exactly when the
 * contacts are more than max_contacts, with ns__too_many_contacts()'s status
 * and message like every other kernel.
 *
 * Memory: a buffer grows only when full, to at most twice the contacts it
 * then holds (or 1024), and at its last growth each buffer's count was part
 * of the published total, which was then at most max_contacts. So within a
 * query the capacities sum to at most 2 x max_contacts + 1024 per thread
 * (24 bytes each), at any thread count; a realloc that moves holds the old
 * block as well for a moment (at most max_contacts more in all), and the
 * merge reserves at most max_contacts in the caller's list, only when the
 * contacts fit. A refused search releases the buffers, and a query starts by
 * releasing them when an earlier one left more than max_contacts + 1024 per
 * thread, so what is kept between queries is bounded too. */
#include "core.h"

#include <omp.h>
#include <string.h>

enum { FIRST_CAPACITY = 1024 };

ns_status ns__tbufs_init(ns__tbufs *t, int threads, ns_error *err)
{
    t->count = 0;
    t->bufs = ns__malloc_array((size_t)threads, sizeof(ns__tbuf));
    if (!t->bufs)
        return ns__fail_oom(err, "per-thread contact buffers");
    memset(t->bufs, 0, (size_t)threads * sizeof(ns__tbuf));
    t->count = threads;
    atomic_init(&t->failed, 0);
    atomic_init(&t->total, 0);
    return NS_OK;
}

/* Frees every buffer's contacts (the buffers stay, empty). */
static void release(ns__tbufs *t)
{
    for (int k = 0; k < t->count; k++) {
        ns__free(t->bufs[k].items);
        t->bufs[k].items = NULL;
        t->bufs[k].capacity = 0;
        t->bufs[k].count = 0;
        t->bufs[k].published = 0;
    }
}

void ns__tbufs_free(ns__tbufs *t)
{
    if (t->bufs)
        release(t);
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

void ns__tbufs_reset(ns__tbufs *t, size_t max_contacts)
{
    size_t kept = 0;
    for (int k = 0; k < t->count; k++) {
        t->bufs[k].count = 0;
        t->bufs[k].published = 0;
        t->bufs[k].status = NS_OK;
        kept += t->bufs[k].capacity;
    }
    if (kept > max_contacts + (size_t)t->count * FIRST_CAPACITY)
        release(t);
    atomic_store_explicit(&t->failed, 0, memory_order_relaxed);
    atomic_store_explicit(&t->total, 0, memory_order_relaxed);
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
    /* publish: the contacts since the last visit, and c */
    size_t mine = b->count + 1, delta = mine - b->published;
    size_t total = atomic_fetch_add_explicit(&t->total, delta, memory_order_relaxed) + delta;
    b->published = mine;
    if (total > max_contacts)
        return tbuf_fail(t, b, NS_ERR_TOO_MANY_CONTACTS);
    if (b->count == b->capacity) {
        /* total >= mine, so most <= max_contacts; and most >= mine */
        size_t most = mine + (max_contacts - total);
        size_t want = b->capacity < FIRST_CAPACITY / 2 ? FIRST_CAPACITY : 2 * b->capacity;
        if (want > most)
            want = most;
        ns_contact *items = want <= SIZE_MAX / sizeof(ns_contact)
                                ? ns__realloc(b->items, want * sizeof(ns_contact))
                                : NULL;
        if (!items)
            return tbuf_fail(t, b, NS_ERR_OUT_OF_MEMORY);
        b->items = items;
        b->capacity = want;
    }
    b->items[b->count++] = *c;
    return true;
}

ns_status ns__tbufs_merge(ns__tbufs *t, ns_contact_list *list, size_t max_contacts, ns_error *err)
{
    list->count = 0;
    size_t total = 0;
    bool too_many = false, oom = false;
    for (int k = 0; k < t->count; k++) {
        oom |= t->bufs[k].status == NS_ERR_OUT_OF_MEMORY;
        too_many |= t->bufs[k].status == NS_ERR_TOO_MANY_CONTACTS;
        total += t->bufs[k].count;
    }
    if (oom || too_many || total > max_contacts) {
        release(t); /* what they hold is of no use */
        return oom ? ns__fail_oom(err, "a per-thread contact buffer")
                   : ns__too_many_contacts(err, max_contacts);
    }
    ns_status s = ns__contact_list_grow(list, total, max_contacts, t->count, err);
    if (s != NS_OK)
        return s;
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
            memcpy(list->items + offset[k], t->bufs[k].items,
                   t->bufs[k].count * sizeof(ns_contact));
    ns__free(offset);
    list->count = total;
    return NS_OK;
}

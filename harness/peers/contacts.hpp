/* contacts.hpp - what every peer adapter shares: candidates turned into
 * contacts with the library's predicate, in parallel, and C++ exceptions
 * turned into ns_status (nothing may throw through the C harness). */
#ifndef NSB_PEER_CONTACTS_HPP
#define NSB_PEER_CONTACTS_HPP

#include "peer.h"

#include <omp.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <vector>

/* A macro's value as a string literal (an adapter's tuning text). */
#define NSB_STR_(x) #x
#define NSB_STR(x) NSB_STR_(x)

namespace nsb
{

/* The reach added to every radius: the library looks 2^-10 further than
 * the contact distance, so its rounding can only add candidates. */
constexpr double inflate = 1.0 + 1.0 / 1024.0;

inline float radius(const ns_particles *p, size_t i)
{
    return p->radius ? p->radius[i] : p->radius_uniform;
}

inline float largest_radius(const ns_particles *p)
{
    float r = p->radius_uniform;
    for (size_t i = 0; p->radius && i < p->n; i++)
        r = std::fmax(r, p->radius[i]);
    return r;
}

inline ns_status fail(ns_error *err, ns_status status, const char *what)
{
    if (err) {
        err->status = status;
        err->particle = NS_NO_PARTICLE;
        err->line = 0;
        std::snprintf(err->message, sizeof err->message, "%.*s", (int)sizeof err->message - 1,
                      what); /* cut to fit */
    }
    return status;
}

/* Runs f(), turning an exception into a status with err filled. */
template <class F> ns_status guarded(const char *who, ns_error *err, F &&f)
{
    char what[200];
    try {
        return f();
    } catch (const std::bad_alloc &) {
        std::snprintf(what, sizeof what, "%s: out of memory", who);
        return fail(err, NS_ERR_OUT_OF_MEMORY, what);
    } catch (const std::exception &e) {
        std::snprintf(what, sizeof what, "%s: %s", who, e.what());
        return fail(err, NS_ERR_INVALID_ARGUMENT, what);
    }
}

/* Per-thread contact buffers, kept from one query to the next like the
 * kernels' (their memory is not reallocated every search). */
struct parts {
    std::vector<std::vector<ns_contact>> of_thread;
    size_t candidates = 0;

    void start(int threads)
    {
        of_thread.resize((size_t)threads);
        for (auto &v : of_thread)
            v.clear();
        candidates = 0;
    }
    /* Candidate j of particle i: a contact when i < j and they touch. */
    void test(const ns_particles *p, std::vector<ns_contact> &mine, size_t &tested, uint32_t i,
              uint32_t j)
    {
        ns_contact c;
        if (i < j && (tested++, ns_contact_between(p, i, j, &c)))
            mine.push_back(c);
    }
    /* All threads' contacts into out. */
    ns_status gather(ns_contact_list *out, ns_error *err)
    {
        size_t total = 0;
        for (auto &v : of_thread)
            total += v.size();
        out->count = 0;
        ns_status st = ns_contact_list_reserve(out, total, err);
        if (st != NS_OK)
            return st;
        for (auto &v : of_thread) {
            if (!v.empty())
                std::memcpy(out->items + out->count, v.data(), v.size() * sizeof(ns_contact));
            out->count += v.size();
        }
        return NS_OK;
    }
};

/* For each k < n (split over threads, dynamic chunks of 256),
 * candidates_of(k, emit) calls emit(i, j) for each pair the library finds
 * (k names the query: particle k, or the k-th in the library's own order);
 * the pairs with i < j that touch become contacts in out. */
template <class Candidates>
ns_status parallel_contacts(parts &buf, const ns_particles *p, int threads, ns_contact_list *out,
                            size_t *candidates, ns_error *err, Candidates &&candidates_of)
{
    buf.start(threads);
    std::atomic<bool> out_of_memory{false};
    size_t tested = 0;
    long long n = (long long)p->n;
#pragma omp parallel num_threads(threads) reduction(+ : tested)
    {
        std::vector<ns_contact> &mine = buf.of_thread[(size_t)omp_get_thread_num()];
#pragma omp for schedule(dynamic, 256)
        for (long long k = 0; k < n; k++) {
            if (out_of_memory.load(std::memory_order_relaxed))
                continue;
            try {
                candidates_of((uint32_t)k,
                              [&](uint32_t i, uint32_t j) { buf.test(p, mine, tested, i, j); });
            } catch (const std::bad_alloc &) {
                out_of_memory = true;
            }
        }
    }
    if (out_of_memory)
        return fail(err, NS_ERR_OUT_OF_MEMORY, "out of memory for the peer's contacts");
    *candidates = tested;
    return buf.gather(out, err);
}

/* An adapter's create and destroy for its state type S. */
template <class S> void *create()
{
    return new (std::nothrow) S;
}
template <class S> void destroy(void *state)
{
    delete static_cast<S *>(state);
}

} // namespace nsb

#endif /* NSB_PEER_CONTACTS_HPP */

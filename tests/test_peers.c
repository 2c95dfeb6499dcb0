/* test_peers.c - the peer adapters (harness/peers/) against the reference,
 * exactly: the same sorted contact list, bit for bit, as naive, on every
 * workload at several sizes and seeds and on the pitfalls every kernel
 * passes (coincident particles, exact touching, zero radii, uniform radii,
 * clusters 10^6 apart, which a peer whose memory grows with the domain may
 * refuse like grid_dense), with 1, 2 and 3 threads.
 *
 *   test_peers workloads PEER    every workload, n in {0, 1, 2, 10, 100, 1000, 3000}
 *   test_peers pitfalls PEER     the pitfall sets
 *
 * Built only with NS_PEERS (the release preset): the sanitizer presets keep
 * the C++ libraries out. */
#include "peer.h"
#include "testlib.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const nsb_peer *peer_named(const char *name)
{
    const nsb_peer *P = nsb_peer_find(name);
    if (!P)
        fprintf(stderr, "no peer '%s' in this build\n", name ? name : "(null)");
    REQUIRE(P != NULL);
    return P;
}

/* One search by the peer with `threads` threads against naive's contacts;
 * with may_refuse, a peer whose memory grows with the domain may refuse the
 * set instead (NS_ERR_TOO_LARGE), as grid_dense does. */
static void expect_reference_or(const nsb_peer *P, const ns_particles *p, const char *what,
                                bool may_refuse)
{
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    CHECK_STATUS(tl_find(tl_reference_kernel(), p, NULL, &ref, &err), NS_OK, &err);
    ns_contact_list_sort(&ref);
    void *state = P->create();
    REQUIRE(state != NULL);
    check_set_context("%s: %s, prepare", P->name, what);
    ns_status st = P->prepare ? P->prepare(state, p, &err) : NS_OK;
    if (st == NS_ERR_TOO_LARGE && may_refuse && P->domain_memory) {
        CHECK(strlen(err.message) > 0);
        goto done;
    }
    CHECK_STATUS(st, NS_OK, &err);
    for (int threads = 1; threads <= (P->parallel ? 3 : 1); threads++) {
        check_set_context("%s: %s, %d threads", P->name, what, threads);
        for (int again = 0; again < 2; again++) { /* a second search on the same state */
            size_t candidates = 0;
            st = P->build(state, p, threads, &err);
            if (st == NS_ERR_TOO_LARGE && may_refuse && P->domain_memory) {
                CHECK(strlen(err.message) > 0);
                continue;
            }
            CHECK_STATUS(st, NS_OK, &err);
            CHECK_STATUS(P->query(state, p, threads, &got, &candidates, &err), NS_OK, &err);
            CHECK_CMP_U(candidates, >=, got.count);
            ns_contact_list_sort(&got);
            tl_lists_equal(&ref, &got, check_context);
        }
    }
done:
    P->destroy(state);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
}

static void expect_reference(const nsb_peer *P, const ns_particles *p, const char *what)
{
    expect_reference_or(P, p, what, false);
}

static void t_workloads(int argc, char **argv)
{
    REQUIRE(argc >= 1);
    const nsb_peer *P = peer_named(argv[0]);
    static const size_t sizes[] = {0, 1, 2, 10, 100, 1000, 3000};
    for (size_t w = 0; w < ns_workload_count(); w++) {
        const ns_workload *W = ns_workload_at(w);
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++)
            for (uint64_t seed = 1; seed <= 2; seed++) {
                if (!tl_affordable(W, sizes[k]) || (W->cache_version > 0 && seed > 1))
                    continue;
                tl_set s;
                tl_generate(W, sizes[k], seed, &s);
                ns_particles p = tl_particles(&s);
                char what[160];
                snprintf(what, sizeof what, "%s n=%zu seed=%llu", W->name, sizes[k],
                         (unsigned long long)seed);
                expect_reference(P, &p, what);
                tl_set_free(&s);
            }
    }
}

static void t_pitfalls(int argc, char **argv)
{
    REQUIRE(argc >= 1);
    const nsb_peer *P = peer_named(argv[0]);
    tl_set s;

    /* 300 coincident particles: every pair, normal (0, 0, 0) */
    tl_set_init(&s, 300);
    for (size_t i = 0; i < s.n; i++)
        tl_set_put(&s, i, 1.25f, -3.5f, 7.0f, 0.125f);
    ns_particles p = tl_particles(&s);
    expect_reference(P, &p, "300 coincident");
    p.radius = NULL, p.radius_uniform = 0.125f;
    expect_reference(P, &p, "300 coincident, uniform radius");
    tl_set_free(&s);

    /* a lattice at exactly touching distance (no contacts), then each
     * particle nudged by one ulp towards its neighbour (contacts) */
    tl_set_init(&s, 0);
    for (int x = 0; x < 8; x++)
        for (int y = 0; y < 8; y++)
            for (int z = 0; z < 8; z++)
                tl_add_particle(&s, (float)x, (float)y, (float)z, 0.5f);
    p = tl_particles(&s);
    expect_reference(P, &p, "exactly touching lattice");
    for (size_t i = 0; i < s.n; i += 2)
        s.pos[3 * i] = nextafterf(s.pos[3 * i], INFINITY);
    expect_reference(P, &p, "lattice, every other particle one ulp along x");
    tl_set_free(&s);

    /* zero radii mixed with positive ones, and all zero */
    tl_generate(tl_workload("uniform"), 2000, 5, &s);
    for (size_t i = 0; i < s.n; i += 3)
        s.radius[i] = 0.0f;
    p = tl_particles(&s);
    expect_reference(P, &p, "a third of the radii zero");
    for (size_t i = 0; i < s.n; i++)
        s.radius[i] = 0.0f;
    expect_reference(P, &p, "every radius zero");
    tl_set_free(&s);

    /* two clusters 10^6 apart: float spacing 0.0625 there */
    tl_set a, b;
    tl_generate(tl_workload("clusters"), 1500, 7, &a);
    tl_generate(tl_workload("polydisperse"), 1500, 8, &b);
    for (size_t i = 0; i < b.n; i++)
        b.pos[3 * i] += 1e6f, b.pos[3 * i + 2] -= 1e6f;
    tl_set_append(&a, &b);
    p = tl_particles(&a);
    expect_reference_or(P, &p, "clusters 10^6 apart", true);
    tl_set_free(&a);
    /* and after a refusal, the next search is whole */
    p = tl_particles(&b);
    expect_reference(P, &p, "a cluster after the far-apart pair");
    tl_set_free(&b);
}

static void peer_ctests(const char *which)
{
    for (size_t k = 0; k < nsb_peer_count(); k++) {
        const nsb_peer *P = nsb_peer_at(k);
        char name[200];
        snprintf(name, sizeof name, "peers/%s/%s", which, P->name);
        tl_ctest(name, NULL, -1, which, P->name, NULL);
    }
}

static void workloads_ctests(void)
{
    peer_ctests("workloads");
}

static void pitfalls_ctests(void)
{
    peer_ctests("pitfalls");
}

static const tl_case cases[] = {
    {"workloads", .run_args = t_workloads, .ctests = workloads_ctests},
    {"pitfalls", .run_args = t_pitfalls, .ctests = pitfalls_ctests},
};

int main(int argc, char **argv)
{
    static const tl_suite suite = {"peers", "peers", -1, 0};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

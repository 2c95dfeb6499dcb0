/* test_layouts.c - the layouts that break neighbour searches, against every
 * kernel, and the counting API (ns_index_can_count / ns_index_count),
 * black-box against the contract.
 *
 * usage: test_layouts CASE [ARGS]     (no argument: list the cases;
 *        --ctest: the ctests, see testlib.h)
 *
 * Layout cases (ctest label kernels), each run for every kernel of the table
 * (layout/CASE/KERNEL):
 *   far_particles       a compact block plus a few particles 1e4..1e7 cells away
 *                       (grid_sorted's hashed sparse layout), and the threshold
 *                       between its dense and sparse layouts crossed by moving
 *                       one particle
 *   two_clusters        two clusters 1e6 apart (straddling 0, and all negative)
 *   sparse_spread       particles almost all alone in their cells, with planted
 *                       touching pairs and chains, over a range of densities
 *   straddle_zero       lattices around 0 at exact multiples of the cell size,
 *                       -0, denormals, with and without far particles
 *   crowded_one_cell    2000 particles in one cell (mixed and uniform radii), about twice
 *                       what grid_sorted gathers into its scratch
 *   crowded_coincident  1500 coincident particles (and variants)
 *   crowded_neighbours  a crowded cell next to normal cells; a neighbourhood
 *                       crowded by many moderately full cells
 *   uniform_radius      ns_particles.radius == NULL on every workload
 * Every set is checked through expect_exact(): bit-identical to the reference
 * (naive) at every thread count, the same raw order at every thread count
 * where the table says the kernel's order is stable, and (where the kernel
 * can count) ns_index_count equal to the contact count. A kernel whose memory
 * grows with the domain may refuse a vast one (NS_ERR_TOO_LARGE).
 *
 *   thread_order W K    workload W at n = 2 .. 20000, three seeds: the raw,
 *                       unsorted list of kernel K is byte-for-byte the same for
 *                       config.threads = 1, 2, 3, 8 and 0 (OpenMP's default),
 *                       through ns_find_contacts and the index; sorted, it is
 *                       bit-identical to naive's (order/W/K: every parallel
 *                       kernel with a stable order, every generated workload)
 *
 * Counting API cases (ctest label unit), over every kernel in the table,
 * ns_index_can_count deciding which must count:
 *   count_workloads     count == the query's count on every workload and size,
 *                       threads 1 and 3; kernels that cannot count refuse
 *   count_errors        before build, NULL index / count, after a failed build
 *   count_trivial       n = 0, n = 1, all radii 0
 *   count_max_contacts  counting ignores max_contacts; the query does not */
#include "testlib.h"

#include <math.h>
#include <omp.h>

static const int thread_counts[] = {1, 2, 3, 8, 0}; /* 0 = OpenMP's default */
#define N_THREAD_COUNTS (sizeof thread_counts / sizeof thread_counts[0])

enum {
    ALLOW_NO_CONTACTS = 1, /* the set may legitimately have no contact */
    OWN_REFERENCE = 2      /* also compare with the test's own O(n^2) predicate */
};

/* Whether a layout case runs kernel K at thread_counts[t]: a kernel that
 * uses no threads (the table's parallel false) runs the same code at every
 * count, so 1 and 2 only, which show that it ignores them; OpenMP's default
 * (0) unless it is one of the counts run anyway (the differential tests
 * take every kernel's threads from it). */
static bool runs_at(const ns_kernel *K, size_t t)
{
    int threads = thread_counts[t];
    if (!K->parallel)
        return threads == 1 || threads == 2;
    if (threads == 0)
        for (size_t u = 0; u < N_THREAD_COUNTS; u++)
            if (thread_counts[u] == omp_get_max_threads())
                return false;
    return true;
}

/* The kernel a layout case tests (its argument). */
static const ns_kernel *tested;

/* The raw (unsorted) list of kernel K with config.threads = threads. */
static ns_status raw_find(const ns_kernel *K, const ns_particles *p, int threads,
                          ns_contact_list *out, ns_error *err)
{
    ns_config cfg = ns_config_default();
    cfg.threads = threads;
    cfg.exact_threads = true; /* the parallel code at every n */
    tl_poison_error(err);
    ns_status st = ns_find_contacts(K, p, &cfg, out, err);
    if (st != NS_OK) {
        CHECK_EQ_I(err->status, st);
        CHECK_EQ_U(out->count, 0);
    }
    return st;
}

/* Byte-for-byte the same list in the same order. */
static int same_order(const ns_contact_list *want, const ns_contact_list *got, const char *what)
{
    size_t d = tl_first_difference(want, got);
    CHECK_COUNT_();
    if (d == SIZE_MAX)
        return 1;
    if (check_fail(__FILE__, __LINE__)) {
        fprintf(stderr,
                "  raw order differs (%s): counts %zu (want) vs %zu (got), first difference at "
                "position %zu\n",
                what, want->count, got->count, d);
        if (d < want->count)
            tl_print_contact("  want", &want->items[d]);
        if (d < got->count)
            tl_print_contact("  got ", &got->items[d]);
    }
    return 0;
}

/* ns_index_count on a built index must fail with NS_ERR_INVALID_ARGUMENT. */
static void expect_count_refused(ns_index *index, const char *what)
{
    ns_error err;
    size_t count = 12345;
    tl_poison_error(&err);
    ns_status st = ns_index_count(index, &count, &err);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT, "%s: ns_index_count returned %d (%s), count %zu", what,
              (int)st, ns_status_str(st), count);
    if (st != NS_OK) {
        CHECK_MSG(err.status == st, "%s: err.status %d != returned %d", what, (int)err.status,
                  (int)st);
        CHECK_MSG(err.message[0] != '\0', "%s: empty error message", what);
        CHECK_MSG(memchr(err.message, '\0', sizeof err.message) != NULL,
                  "%s: message not NUL-terminated", what);
        CHECK_MSG(err.particle == NS_NO_PARTICLE, "%s: err.particle = %zu (want NS_NO_PARTICLE)",
                  what, err.particle);
    }
    st = ns_index_count(index, &count, NULL);
    CHECK_MSG(st == NS_ERR_INVALID_ARGUMENT, "%s (err NULL): ns_index_count returned %d (%s)", what,
              (int)st, ns_status_str(st));
}

/* ns_index_count on a built index: NS_OK and the count. */
static size_t count_ok(ns_index *index, const char *what)
{
    ns_error err;
    size_t count = (size_t)-7;
    tl_poison_error(&err);
    ns_status st = ns_index_count(index, &count, &err);
    CHECK_MSG(st == NS_OK, "%s: ns_index_count returned %d (%s): %s", what, (int)st,
              ns_status_str(st), err.message);
    return count;
}

/* grid_sorted on p: sorted, bit-identical to naive at every thread count; the
 * raw order identical at every thread count, through ns_find_contacts and the
 * index; ns_index_count (when the kernel has it) equal to the contact count. */
static void expect_exact(const char *what, const ns_particles *p, int flags)
{
    const ns_kernel *naive = tl_reference_kernel();
    const ns_kernel *K = tested;
    ns_contact_list ref, first, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&first);
    ns_contact_list_init(&got);
    ns_error err;

    check_set_context("%s: %s", what, naive->name);
    REQUIRE(ns_particles_validate(p, &err) == NS_OK);
    CHECK_STATUS(tl_find(naive, p, NULL, &ref, &err), NS_OK, &err);
    if (!(flags & ALLOW_NO_CONTACTS) && p->n >= 2)
        CHECK_MSG(ref.count > 0, "the set has no contacts: the case is vacuous");

    int have_first = 0;
    for (size_t t = 0; t < N_THREAD_COUNTS; t++) {
        if (!runs_at(K, t))
            continue;
        char ctx[400];
        snprintf(ctx, sizeof ctx, "%s: %s, ns_find_contacts, threads=%d", what, K->name,
                 thread_counts[t]);
        check_set_context("%s", ctx);
        ns_status st = raw_find(K, p, thread_counts[t], &got, &err);
        if (st == NS_ERR_TOO_LARGE && K->domain_memory) {
            /* a kernel whose memory grows with the domain refuses a vast one */
            printf("%-72s n=%-6zu refused: %s\n", what, p->n, err.message);
            goto done;
        }
        CHECK_STATUS(st, NS_OK, &err);
        if (st != NS_OK)
            continue;
        if (!have_first) {
            tl_copy_list(&first, &got);
            have_first = 1;
        } else if (K->stable_order) {
            /* identical to the first thread count's raw list, which was
             * checked sorted below: sorting this one again checks nothing
             * new (those sorts were most of this program's time under
             * AddressSanitizer) */
            if (same_order(&first, &got, "threads=1 vs this thread count"))
                continue;
        }
        ns_contact_list_sort(&got);
        tl_lists_equal(&ref, &got, ctx);
        if (t == 0) {
            tl_check_contacts(p, &got, ctx);
            if (flags & OWN_REFERENCE) {
                ns_contact_list own;
                ns_contact_list_init(&own);
                tl_reference(p, &own);
                tl_compare_reference(&own, &got, ctx);
                ns_contact_list_free(&own);
            }
        }
    }

    /* the index path: same raw order, a second query too; the count */
    ns_index_info info;
    memset(&info, 0, sizeof info);
    const int index_threads[] = {3, 1};
    for (int it = 0; it < (K->parallel ? 2 : 1); it++) {
        ns_config cfg = ns_config_default();
        cfg.threads = index_threads[it];
        cfg.exact_threads = true; /* the parallel code at every n */
        check_set_context("%s: %s via the index, threads=%d", what, K->name, cfg.threads);
        ns_index *index = NULL;
        REQUIRE(ns_index_create(K, &cfg, &index, &err) == NS_OK);
        CHECK_STATUS(ns_index_build(index, p, &err), NS_OK, &err);
        int can = ns_index_can_count(index);
        if (can)
            CHECK_EQ_U(count_ok(index, "count before the query"), ref.count);
        for (int q = 0; q < 2; q++) {
            tl_poison_error(&err);
            CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
            if (have_first && K->stable_order)
                same_order(&first, &got, q ? "second query of one build" : "index query");
            CHECK_EQ_U(got.count, ref.count);
        }
        if (can)
            CHECK_EQ_U(count_ok(index, "count after the query"), ref.count);
        ns_index_get_info(index, &info);
        ns_index_destroy(index);
    }

    /* the layout is not part of the contract: printed for information only */
    printf("%-72s n=%-6zu contacts=%-8zu cells=%zu nonempty=%zu\n", what, p->n, ref.count,
           info.cells, info.nonempty_buckets);
done:
    ns_contact_list_free(&ref);
    ns_contact_list_free(&first);
    ns_contact_list_free(&got);
}

/* The same set with per-particle radii and with ns_particles.radius == NULL. */
static void expect_exact_set(const char *what, const tl_set *s, int flags)
{
    ns_particles p = tl_particles(s);
    expect_exact(what, &p, flags);
}

static void expect_exact_uniform(const char *what, const tl_set *s, float r, int flags)
{
    ns_particles p = tl_particles(s);
    p.radius = NULL;
    p.radius_uniform = r;
    char w[300];
    snprintf(w, sizeof w, "%s [radius NULL, radius_uniform %g]", what, (double)r);
    expect_exact(w, &p, flags);
}

/* ---- particle set builders ---- */

/* An L^3 lattice at origin o with the given spacing, each point moved by up
 * to +-jitter per axis (computed in double, rounded once to float); radii
 * uniform in [rlo, rhi] (rlo == rhi: all the same). */
static void add_block(tl_set *s, size_t L, double ox, double oy, double oz, double spacing,
                      double jitter, float rlo, float rhi, uint64_t *rng)
{
    tl_set b;
    tl_set_init(&b, L * L * L);
    size_t i = 0;
    for (size_t a = 0; a < L; a++)
        for (size_t c = 0; c < L; c++)
            for (size_t e = 0; e < L; e++) {
                double jx = jitter > 0 ? (double)tl_rng_float(rng, -1, 1) * jitter : 0;
                double jy = jitter > 0 ? (double)tl_rng_float(rng, -1, 1) * jitter : 0;
                double jz = jitter > 0 ? (double)tl_rng_float(rng, -1, 1) * jitter : 0;
                float r = rlo == rhi ? rlo : tl_rng_float(rng, rlo, rhi);
                tl_set_put(&b, i++, (float)(ox + (double)a * spacing + jx),
                           (float)(oy + (double)c * spacing + jy),
                           (float)(oz + (double)e * spacing + jz), r);
            }
    tl_set_append(s, &b);
    tl_set_free(&b);
}

/* n particles uniform in the box [lo, hi)^3 shifted by (ox, oy, oz). */
static void add_cloud(tl_set *s, size_t n, double ox, double oy, double oz, float lo, float hi,
                      float rlo, float rhi, uint64_t *rng)
{
    tl_set b;
    tl_set_init(&b, n);
    for (size_t i = 0; i < n; i++) {
        float x = (float)(ox + (double)tl_rng_float(rng, lo, hi));
        float y = (float)(oy + (double)tl_rng_float(rng, lo, hi));
        float z = (float)(oz + (double)tl_rng_float(rng, lo, hi));
        float r = rlo == rhi ? rlo : tl_rng_float(rng, rlo, rhi);
        tl_set_put(&b, i, x, y, z, r);
    }
    tl_set_append(s, &b);
    tl_set_free(&b);
}

/* Mixed radii for a crowded region: mostly small, a few of rbig (which sets
 * the cell size). */
static float mixed_radius(uint64_t *rng, float rbig)
{
    uint64_t u = tl_rng(rng) % 100;
    if (u < 4)
        return rbig;
    if (u < 8)
        return 0.0f;
    return tl_rng_float(rng, 0.01f, 0.08f) * (rbig / 0.5f);
}

/* ---- grid_sorted cases ---- */

static void t_thread_order(int argc, char **argv)
{
    REQUIRE(argc == 2);
    const ns_workload *w = tl_workload(argv[0]);
    const ns_kernel *K = tested = tl_kernel(argv[1]);
    const size_t sizes[] = {2, 10, 100, 1000, 20000};
    const uint64_t seeds[] = {1, 2, 3};
    ns_contact_list first, got;
    ns_contact_list_init(&first);
    ns_contact_list_init(&got);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
        for (size_t sd = 0; sd < sizeof seeds / sizeof seeds[0]; sd++) {
            tl_set s;
            tl_generate(w, sizes[si], seeds[sd], &s);
            char what[200];
            snprintf(what, sizeof what, "%s n=%zu seed=%llu", w->name, sizes[si],
                     (unsigned long long)seeds[sd]);
            if (sizes[si] <= 1000 || sd == 0) {
                /* everything, naive included */
                expect_exact_set(what, &s, sizes[si] < 1000 ? ALLOW_NO_CONTACTS : 0);
                tl_set_free(&s);
                continue;
            }
            /* the raw order only (naive at 20000 is the slow part) */
            ns_particles p = tl_particles(&s);
            ns_error err;
            for (size_t t = 0; t < N_THREAD_COUNTS; t++) {
                check_set_context("%s: raw order, threads=%d", what, thread_counts[t]);
                CHECK_STATUS(raw_find(K, &p, thread_counts[t], t ? &got : &first, &err), NS_OK,
                             &err);
                if (t)
                    same_order(&first, &got, "threads=1 vs this thread count");
            }
            check_set_context("%s: raw order, again with threads=3", what);
            CHECK_STATUS(raw_find(K, &p, 3, &got, &err), NS_OK, &err);
            same_order(&first, &got, "a second search");
            printf("%-72s n=%-6zu contacts=%zu (raw order)\n", what, p.n, first.count);
            tl_set_free(&s);
        }
    /* uniform radius on the largest size */
    tl_set s;
    tl_generate(w, 20000, 4, &s);
    char what[200];
    snprintf(what, sizeof what, "%s n=20000 seed=4", w->name);
    expect_exact_uniform(what, &s, s.radius[0], 0);
    tl_set_free(&s);
    ns_contact_list_free(&first);
    ns_contact_list_free(&got);
}

static void t_far_particles(int argc, char **argv)
{
    REQUIRE(argc == 1);
    tested = tl_kernel(argv[0]);
    uint64_t rng = 1001;
    /* far particles, r = 0.5 (cell 1); pairs that touch far away too */
    tl_set far;
    tl_set_init(&far, 0);
    tl_add_particle(&far, 1e4f, 0.25f, 0.5f, 0.5f);
    tl_add_particle(&far, -1e4f, 3.0f, -2.0f, 0.5f);
    tl_add_particle(&far, 0.5f, -1e5f, 0.5f, 0.5f);
    tl_add_particle(&far, 5.0f, 5.0f, 1e5f, 0.5f);
    tl_add_particle(&far, -1e6f, -1e6f, -1e6f, 0.5f);
    tl_add_particle(&far, 1e6f, -1e6f, 1e6f, 0.5f);
    tl_add_particle(&far, 1e6f + 0.5f, -1e6f, 1e6f, 0.5f);     /* touches the previous one */
    tl_add_particle(&far, 1e6f + 0.75f, -1e6f, 1e6f, 0.5f);    /* and both of them */
    tl_add_particle(&far, 1e6f - 0.9375f, -1e6f, 1e6f, 0.25f); /* touches (1e6, ..) only */
    tl_add_particle(&far, -1e7f, 0.0f, 0.0f, 0.5f);
    tl_add_particle(&far, -1e7f, 0.0f, 0.0f, 0.5f); /* coincident */
    tl_add_particle(&far, -1e7f, 0.0f, 0.0f, 0.5f);
    tl_add_particle(&far, -1e7f, 1.0f, 0.0f, 0.5f); /* exactly touching: no contact */
    tl_add_particle(&far, 1e7f, 1e7f, -1e7f, 0.5f);
    tl_add_particle(&far, 0.5f, 1e7f, 0.5f, 0.5f);
    tl_add_particle(&far, -3e6f, 2e6f, -7e6f, 0.5f);
    tl_add_particle(&far, -3e6f, 2e6f, -7e6f + 0.5f, 0.5f);

    expect_exact_set("far particles alone (n=17, 1e4..1e7 cells)", &far, OWN_REFERENCE);

    /* a compact jittered block (spacing 0.45, r in [0.3, 0.5]) plus the far ones */
    tl_set block, all;
    tl_set_init(&block, 0);
    add_block(&block, 12, -2.7, -2.7, -2.7, 0.45, 0.1, 0.3f, 0.5f, &rng);
    tl_set_init(&all, 0);
    tl_set_append(&all, &block);
    tl_set_append(&all, &far);
    expect_exact_set("block of 1728 around 0 alone", &block, OWN_REFERENCE);
    expect_exact_set("block of 1728 + 17 far particles", &all, OWN_REFERENCE);
    expect_exact_uniform("block of 1728 + 17 far particles", &all, 0.5f, OWN_REFERENCE);
    expect_exact_uniform("block of 1728 + 17 far particles", &all, 0.3f, 0);

    /* the far particles first, then the block (the particle order differs) */
    tl_set rev;
    tl_set_init(&rev, 0);
    tl_set_append(&rev, &far);
    tl_set_append(&rev, &block);
    expect_exact_set("17 far particles + block of 1728", &rev, 0);

    /* a block in the negative octant with one far particle per direction */
    const double dists[] = {1e4, 1e5, 1e6, 1e7};
    for (size_t d = 0; d < 4; d++) {
        tl_set s;
        tl_set_init(&s, 0);
        add_block(&s, 13, -400.3, -200.1, -300.7, 0.45, 0.1, 0.2f, 0.5f, &rng);
        float D = (float)dists[d];
        tl_add_particle(&s, -D, -D, -D, 0.5f);
        tl_add_particle(&s, D, -D, 0.0f, 0.5f);
        tl_add_particle(&s, -D, D + 0.5f, -D, 0.5f);
        tl_add_particle(&s, -D, D, -D, 0.5f);
        char what[160];
        snprintf(what, sizeof what,
                 "negative block of 2197 + 4 particles %.0e cells away (negative too)", dists[d]);
        expect_exact_set(what, &s, 0);
        tl_set_free(&s);
    }

    /* the uniform workload (n = 3000) plus a few far particles */
    tl_set u;
    tl_generate(tl_workload("uniform"), 3000, 7, &u);
    float ru = u.radius[0];
    tl_add_particle(&u, -1e5f, 0, 0, ru);
    tl_add_particle(&u, 3e6f, -3e6f, 0, ru);
    tl_add_particle(&u, 3e6f, -3e6f, 0, ru);
    expect_exact_set("uniform n=3000 + 3 far particles", &u, 0);
    expect_exact_uniform("uniform n=3000 + 3 far particles", &u, ru, 0);
    tl_set_free(&u);

    /* one particle moved away step by step along the diagonal: the bounding
     * box grows from ~1 to far over 2 cells per particle, crossing the switch
     * between the dense and the sparse layout */
    const double steps[] = {3, 6, 8, 10, 12, 14, 16, 18, 20, 25, 30, 50, 100, 1000};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        tl_set s;
        tl_set_init(&s, 0);
        tl_set_append(&s, &block);
        float D = (float)steps[k];
        tl_add_particle(&s, D, D, D, 0.5f);
        tl_add_particle(&s, D + 0.4f, D, D, 0.5f); /* a contact out there */
        tl_add_particle(&s, -D, 0.3f, -D, 0.5f);
        char what[160];
        snprintf(what, sizeof what, "block of 1728, particles at +-%g on the diagonal", steps[k]);
        expect_exact_set(what, &s, 0);
        if (k % 3 == 0)
            expect_exact_uniform(what, &s, 0.5f, 0);
        tl_set_free(&s);
    }
    tl_set_free(&far);
    tl_set_free(&block);
    tl_set_free(&all);
    tl_set_free(&rev);
}

static void t_two_clusters(int argc, char **argv)
{
    REQUIRE(argc == 1);
    tested = tl_kernel(argv[0]);
    uint64_t rng = 2002;
    struct {
        double ax, ay, az, bx, by, bz;
        const char *what;
    } layouts[] = {
        {-5e5, 0, 0, 5e5, 0, 0, "clusters at x = -5e5 and +5e5 (straddling 0)"},
        {-1e6, -1e6, -1e6, -2e6, -1e6, -1e6, "clusters at -1e6 and -2e6 (all negative)"},
        {0, 0, 0, 0, 1e6, 0, "clusters at 0 and y = 1e6"},
        {-3e5, 4e5, -6e5, 3e5, -4e5, 6e5 + 3e5, "clusters ~1.5e6 apart on a diagonal"},
    };
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        tl_set s;
        tl_set_init(&s, 0);
        add_cloud(&s, 1500, layouts[l].ax, layouts[l].ay, layouts[l].az, -3.0f, 3.0f, 0.2f, 0.5f,
                  &rng);
        add_cloud(&s, 1500, layouts[l].bx, layouts[l].by, layouts[l].bz, -3.0f, 3.0f, 0.2f, 0.5f,
                  &rng);
        expect_exact_set(layouts[l].what, &s, OWN_REFERENCE);
        expect_exact_uniform(layouts[l].what, &s, 0.4f, 0);
        tl_set_free(&s);
    }
    /* interleaved: the particles of the two clusters alternate in the input */
    tl_set a, b, s;
    tl_set_init(&a, 0);
    tl_set_init(&b, 0);
    add_cloud(&a, 1200, 1e6, 1e6, 1e6, -2.5f, 2.5f, 0.3f, 0.5f, &rng);
    add_cloud(&b, 1200, -1e6 + 7, 3, -1e6, -2.5f, 2.5f, 0.3f, 0.5f, &rng);
    tl_set_init(&s, 2400);
    for (size_t i = 0; i < 1200; i++) {
        tl_set_put(&s, 2 * i, a.pos[3 * i], a.pos[3 * i + 1], a.pos[3 * i + 2], a.radius[i]);
        tl_set_put(&s, 2 * i + 1, b.pos[3 * i], b.pos[3 * i + 1], b.pos[3 * i + 2], b.radius[i]);
    }
    expect_exact_set("two clusters 2e6 apart, particles interleaved", &s, 0);
    tl_set_free(&a);
    tl_set_free(&b);
    tl_set_free(&s);
}

static void t_sparse_spread(int argc, char **argv)
{
    REQUIRE(argc == 1);
    tested = tl_kernel(argv[0]);
    uint64_t rng = 3003;
    /* n singles over a huge domain (side S cells), every 8th with a partner
     * planted at a distance below the sum of radii, every 50th with a chain of
     * three along x across cell boundaries */
    const double sides[] = {150, 1e4, 1e6};
    for (size_t k = 0; k < 3; k++) {
        for (int mixed = 0; mixed < 2; mixed++) {
            const size_t n = 3000;
            double S = sides[k];
            tl_set s;
            tl_set_init(&s, 0);
            for (size_t i = 0; i < n; i++) {
                float r = mixed ? tl_rng_float(&rng, 0.1f, 0.5f) : 0.5f;
                float x = (float)((double)tl_rng_float(&rng, -0.5f, 0.5f) * S);
                float y = (float)((double)tl_rng_float(&rng, -0.5f, 0.5f) * S);
                float z = (float)((double)tl_rng_float(&rng, -0.5f, 0.5f) * S);
                tl_add_particle(&s, x, y, z, r);
                if (i % 8 == 0) {
                    float r2 = mixed ? tl_rng_float(&rng, 0.1f, 0.5f) : 0.5f;
                    float reach = 0.9f * (r + r2);
                    tl_add_particle(&s, x + tl_rng_float(&rng, -reach, reach) / 1.8f,
                                    y + tl_rng_float(&rng, -reach, reach) / 1.8f,
                                    z + tl_rng_float(&rng, -reach, reach) / 1.8f, r2);
                }
                if (i % 50 == 0) {
                    float bx = floorf(x) + 0.8f;
                    tl_add_particle(&s, bx, y, z, 0.5f);
                    tl_add_particle(&s, bx + 0.35f, y, z, 0.5f);
                    tl_add_particle(&s, bx + 0.7f, y, z, 0.5f);
                }
            }
            char what[160];
            snprintf(what, sizeof what, "%zu singles over side %g cells + planted pairs%s", s.n, S,
                     mixed ? ", radii 0.1..0.5" : "");
            expect_exact_set(what, &s, OWN_REFERENCE);
            if (!mixed)
                expect_exact_uniform(what, &s, 0.5f, 0);
            tl_set_free(&s);
        }
    }

    /* random clouds of 3000 around 0 at a range of cells per particle */
    const double cpp[] = {0.25, 0.5, 1, 1.5, 1.9, 2, 2.1, 2.5, 3, 4, 8, 64, 1000};
    for (size_t k = 0; k < sizeof cpp / sizeof cpp[0]; k++) {
        const size_t n = 3000;
        float half = (float)(0.5 * cbrt(cpp[k] * (double)n)); /* cell = 1 */
        tl_set s;
        tl_set_init(&s, 0);
        add_cloud(&s, n, 0, 0, 0, -half, half, 0.5f, 0.5f, &rng);
        char what[160];
        snprintf(what, sizeof what, "3000 in a cube of %g cells per particle around 0", cpp[k]);
        expect_exact_set(what, &s, cpp[k] >= 64 ? ALLOW_NO_CONTACTS : 0);
        /* the same positions with mixed radii (r max 0.5) */
        for (size_t i = 0; i < s.n; i++)
            s.radius[i] = tl_rng_float(&rng, 0.05f, 0.5f);
        snprintf(what, sizeof what, "3000 in a cube of %g cells per particle, radii 0.05..0.5",
                 cpp[k]);
        expect_exact_set(what, &s, ALLOW_NO_CONTACTS);
        tl_set_free(&s);
    }
}

static void t_straddle_zero(int argc, char **argv)
{
    REQUIRE(argc == 1);
    tested = tl_kernel(argv[0]);
    /* r = 0.5: cell 1 (2 max r). A lattice of spacing 0.5 from -6 to 6: every
     * cell boundary (the integers) carries particles; axis neighbours at 0.5
     * touch, at 1.0 exactly touch (no contact) */
    const float radii[] = {0.5f, 0.25f, 0.3f};
    for (size_t ri = 0; ri < 3; ri++) {
        float r = radii[ri];
        tl_set s;
        tl_set_init(&s, 0);
        for (int a = -12; a <= 12; a++)
            for (int b = -12; b <= 12; b += 2)
                for (int c = -12; c <= 12; c += 3) {
                    /* multiples of r: computed in float */
                    float x = (float)a * r, y = (float)b * r, z = (float)c * r;
                    if (a == 0 && b == 0)
                        x = -0.0f; /* -0 on a cell boundary */
                    tl_add_particle(&s, x, y, z, r);
                }
        /* particles around 0 at the smallest scales */
        tl_add_particle(&s, -1e-30f, 0.0f, 0.0f, r);
        tl_add_particle(&s, 1e-30f, -0.0f, 0.0f, r);
        tl_add_particle(&s, -1.4e-45f, -1.4e-45f, -1.4e-45f, r);
        tl_add_particle(&s, 1.4e-45f, 1.4e-45f, 1.4e-45f, r);
        tl_add_particle(&s, -0.0f, -0.0f, -0.0f, r);
        tl_add_particle(&s, 2 * r, -2 * r, -0.0f, r);
        tl_add_particle(&s, nextafterf(2 * r, 0), nextafterf(-2 * r, 0), 0.0f, r);
        tl_add_particle(&s, nextafterf(-2 * r, -1), nextafterf(2 * r, 1), 0.0f, r);
        char what[160];
        snprintf(what, sizeof what, "lattice at multiples of r = %g from -12r to 12r", (double)r);
        expect_exact_set(what, &s, OWN_REFERENCE);
        expect_exact_uniform(what, &s, r, 0);
        /* the same with far particles: the sparse layout */
        tl_add_particle(&s, 1e7f, -1e7f, 1e7f, r);
        tl_add_particle(&s, -1e7f, 1e7f, -1e7f, r);
        tl_add_particle(&s, -1e7f, 1e7f, -1e7f, r);
        snprintf(what, sizeof what,
                 "lattice at multiples of r = %g from -12r to 12r + 3 far particles", (double)r);
        expect_exact_set(what, &s, OWN_REFERENCE);
        expect_exact_uniform(what, &s, r, 0);
        tl_set_free(&s);
    }
    /* a jittered cloud around 0 snapped to a 1/8 grid: many exact multiples
     * of the cell size and of half of it, negative and positive */
    uint64_t rng = 4004;
    tl_set s;
    tl_set_init(&s, 4000);
    for (size_t i = 0; i < s.n; i++) {
        float x = floorf(tl_rng_float(&rng, -64, 64)) / 8.0f;
        float y = floorf(tl_rng_float(&rng, -64, 64)) / 8.0f;
        float z = floorf(tl_rng_float(&rng, -64, 64)) / 8.0f;
        tl_set_put(&s, i, x, y, z, (float)(1 + tl_rng(&rng) % 4) / 8.0f); /* r up to 0.5 */
    }
    expect_exact_set("4000 on a 1/8 grid in [-8, 8)^3, r in {1,2,3,4}/8", &s, OWN_REFERENCE);
    expect_exact_uniform("4000 on a 1/8 grid in [-8, 8)^3", &s, 0.25f, 0);
    tl_add_particle(&s, -4e6f, 0.0f, 4e6f, 0.5f);
    expect_exact_set("4000 on a 1/8 grid in [-8, 8)^3 + a particle at (-4e6, 0, 4e6)", &s, 0);
    tl_set_free(&s);
}

static void t_crowded_one_cell(int argc, char **argv)
{
    REQUIRE(argc == 1);
    tested = tl_kernel(argv[0]);
    uint64_t rng = 5005;
    enum { CROWD = 2000 }; /* about twice what grid_sorted gathers at once (1024) */
    const double origins[][3] = {{2, 2, 2}, {-1, -1, -1}, {-1, 0, -1}};
    char what[200];
    for (size_t o = 0; o < 3; o++) {
        /* CROWD in [0.05, 0.95)^3 + origin: one cell of side 1 (r max 0.5) */
        tl_set s;
        tl_set_init(&s, CROWD);
        for (size_t i = 0; i < s.n; i++)
            tl_set_put(&s, i, (float)(origins[o][0] + (double)tl_rng_float(&rng, 0.05f, 0.95f)),
                       (float)(origins[o][1] + (double)tl_rng_float(&rng, 0.05f, 0.95f)),
                       (float)(origins[o][2] + (double)tl_rng_float(&rng, 0.05f, 0.95f)),
                       mixed_radius(&rng, 0.5f));
        snprintf(what, sizeof what, "%d in one cell at (%g, %g, %g), mixed radii", CROWD,
                 origins[o][0], origins[o][1], origins[o][2]);
        expect_exact_set(what, &s, OWN_REFERENCE);
        if (o == 0) {
            snprintf(what, sizeof what, "%d in one cell at (%g, %g, %g)", CROWD, origins[o][0],
                     origins[o][1], origins[o][2]);
            expect_exact_uniform(what, &s, 0.5f, 0);
        }
        if (o == 1) {
            tl_add_particle(&s, 5e6f, 5e6f, -5e6f, 0.5f);
            snprintf(what, sizeof what,
                     "%d in one cell at (-1, -1, -1) + a particle at 5e6, mixed radii", CROWD);
            expect_exact_set(what, &s, 0);
        }
        tl_set_free(&s);
    }
    /* CROWD in a tiny box (side 1e-3) with a uniform radius: every pair touches */
    tl_set t;
    tl_set_init(&t, 0);
    add_cloud(&t, CROWD, -0.5, 0.25, 0.75, 0.0f, 1e-3f, 0.5f, 0.5f, &rng);
    snprintf(what, sizeof what, "%d in a box of side 1e-3", CROWD);
    expect_exact_uniform(what, &t, 0.5f, 0);
    tl_set_free(&t);
}

static void t_crowded_coincident(int argc, char **argv)
{
    REQUIRE(argc == 1);
    tested = tl_kernel(argv[0]);
    uint64_t rng = 6006;
    const size_t n = 1500;
    tl_set s;
    tl_set_init(&s, 0);
    add_cloud(&s, n, 0.3, -0.7, 2.1, 0.0f, 0.0f, 0.5f, 0.5f, &rng); /* all at one point */
    expect_exact_uniform("1500 coincident at (0.3, -0.7, 2.1)", &s, 0.5f, 0);
    expect_exact_set("1500 coincident at (0.3, -0.7, 2.1), per-particle r = 0.5", &s, 0);
    for (size_t i = 0; i < s.n; i++)
        s.radius[i] = mixed_radius(&rng, 0.5f); /* some zero: zero pairs are no contact */
    expect_exact_set("1500 coincident at (0.3, -0.7, 2.1), mixed radii (some 0)", &s,
                     OWN_REFERENCE);
    tl_set_free(&s);

    /* on a cell corner: (-1, 0, 1) with cell 1 */
    tl_set_init(&s, 0);
    add_cloud(&s, n, -1.0, 0.0, 1.0, 0.0f, 0.0f, 0.5f, 0.5f, &rng);
    expect_exact_uniform("1500 coincident on the cell corner (-1, 0, 1)", &s, 0.5f, 0);
    /* plus a shell of ordinary particles around them */
    add_block(&s, 8, -2.75, -1.75, -0.75, 0.5, 0.05, 0.5f, 0.5f, &rng);
    expect_exact_uniform("1500 coincident on (-1, 0, 1) inside a lattice of 512", &s, 0.5f, 0);
    for (size_t i = 0; i < s.n; i++)
        s.radius[i] = mixed_radius(&rng, 0.5f);
    expect_exact_set("1500 coincident on (-1, 0, 1) inside a lattice of 512, mixed radii", &s, 0);
    tl_set_free(&s);

    /* two coincident groups in neighbouring cells */
    tl_set_init(&s, 0);
    add_cloud(&s, 800, 0.9, 0.5, 0.5, 0.0f, 0.0f, 0.5f, 0.5f, &rng);
    add_cloud(&s, 800, 1.6, 0.5, 0.5, 0.0f, 0.0f, 0.5f, 0.5f, &rng);
    expect_exact_uniform("800 + 800 coincident, 0.7 apart across a cell boundary", &s, 0.5f, 0);
    tl_set_free(&s);
}

static void t_crowded_neighbours(int argc, char **argv)
{
    REQUIRE(argc == 1);
    tested = tl_kernel(argv[0]);
    uint64_t rng = 7007;
    /* 1200 in [0.5, 0.99)^3 (cell (0,0,0)) next to a jittered lattice filling
     * [-3, 4)^3 at normal density */
    for (int uniform = 0; uniform < 2; uniform++) {
        tl_set s;
        tl_set_init(&s, 0);
        add_block(&s, 10, -3.0, -3.0, -3.0, 0.7, 0.1, 0.2f, 0.5f, &rng);
        tl_set crowd;
        tl_set_init(&crowd, 1200);
        for (size_t i = 0; i < crowd.n; i++)
            tl_set_put(&crowd, i, tl_rng_float(&rng, 0.5f, 0.99f), tl_rng_float(&rng, 0.5f, 0.99f),
                       tl_rng_float(&rng, 0.5f, 0.99f), mixed_radius(&rng, 0.5f));
        tl_set_append(&s, &crowd);
        /* a second crowded cell right next to the first: (1, 0, 0) */
        for (size_t i = 0; i < crowd.n; i++)
            crowd.pos[3 * i] += 0.5f;
        tl_set_append(&s, &crowd);
        if (uniform) {
            expect_exact_uniform("two crowded cells (1200 each) in a lattice of 1000", &s, 0.5f, 0);
        } else {
            expect_exact_set("two crowded cells (1200 each) in a lattice of 1000, mixed radii", &s,
                             OWN_REFERENCE);
            tl_add_particle(&s, -2e6f, 1e6f, 3e6f, 0.5f);
            expect_exact_set("two crowded cells in a lattice of 1000 + a far particle", &s, 0);
        }
        tl_set_free(&crowd);
        tl_set_free(&s);
    }
    /* no single cell crowded, every neighbourhood of 27 cells is: 4^3 cells
     * of 60 particles each (about 1600 per neighbourhood) */
    tl_set s;
    tl_set_init(&s, 0);
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++) {
                tl_set cell;
                tl_set_init(&cell, 60);
                for (size_t i = 0; i < cell.n; i++)
                    tl_set_put(&cell, i, (float)(a - 2) + tl_rng_float(&rng, 0.01f, 0.99f),
                               (float)(b - 2) + tl_rng_float(&rng, 0.01f, 0.99f),
                               (float)(c - 2) + tl_rng_float(&rng, 0.01f, 0.99f),
                               mixed_radius(&rng, 0.5f));
                tl_set_append(&s, &cell);
                tl_set_free(&cell);
            }
    expect_exact_set("4^3 cells x 60 particles around 0, mixed radii", &s, OWN_REFERENCE);
    expect_exact_uniform("4^3 cells x 60 particles around 0", &s, 0.5f, 0);
    expect_exact_uniform("4^3 cells x 60 particles around 0", &s, 0.1f, 0);
    tl_set_free(&s);
}

static void t_uniform_radius(int argc, char **argv)
{
    REQUIRE(argc == 1);
    tested = tl_kernel(argv[0]);
    const size_t sizes[] = {2, 100, 1000, 5000};
    for (size_t w = 0; w < ns_workload_count(); w++) {
        const ns_workload *W = ns_workload_at(w);
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
            for (uint64_t seed = 1; seed <= 2 && tl_affordable(W, sizes[k]); seed++) {
                tl_set s;
                tl_generate(W, sizes[k], seed, &s);
                float rmin = s.radius[0], rmax = s.radius[0];
                for (size_t i = 1; i < s.n; i++) {
                    rmin = s.radius[i] < rmin ? s.radius[i] : rmin;
                    rmax = s.radius[i] > rmax ? s.radius[i] : rmax;
                }
                char what[160];
                snprintf(what, sizeof what, "%s n=%zu seed=%llu", W->name, sizes[k],
                         (unsigned long long)seed);
                int flags = sizes[k] < 1000 ? ALLOW_NO_CONTACTS : 0;
                expect_exact_uniform(what, &s, s.radius[0], flags);
                if (rmin != rmax && sizes[k] <= 1000)
                    expect_exact_uniform(what, &s, rmax, flags);
                if (sizes[k] == 1000)
                    expect_exact_uniform(what, &s, 0.0f, ALLOW_NO_CONTACTS);
                tl_set_free(&s);
            }
    }
}

/* ---- the counting API ---- */

static void t_count_workloads(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const size_t sizes[] = {0, 1, 2, 10, 1000, 20000};
    const int threads[] = {1, 3};
    size_t counting = 0;
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_error err;
        ns_index *index = NULL;
        check_set_context("kernel %s: can_count before and after a build", K->name);
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        bool can_before = ns_index_can_count(index);
        tl_set s;
        tl_generate(tl_workload("uniform"), 500, 1, &s);
        ns_particles p = tl_particles(&s);
        CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
        bool can = ns_index_can_count(index);
        CHECK_MSG(can == can_before, "ns_index_can_count: %d before the build, %d after",
                  (int)can_before, (int)can);
        if (!can) {
            /* a kernel without a counting pass refuses, with a message */
            check_set_context("kernel %s: cannot count", K->name);
            expect_count_refused(index, "a kernel without a counting pass");
            /* and its query still works */
            CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
            ns_index_destroy(index);
            tl_set_free(&s);
            printf("%-14s cannot count (refused with NS_ERR_INVALID_ARGUMENT)\n", K->name);
            continue;
        }
        ns_index_destroy(index);
        tl_set_free(&s);
        counting++;

        for (size_t w = 0; w < ns_workload_count(); w++) {
            const ns_workload *W = ns_workload_at(w);
            for (size_t sz = 0; sz < sizeof sizes / sizeof sizes[0]; sz++)
                for (uint64_t seed = 1; seed <= 2; seed++) {
                    if ((sizes[sz] == 20000 && seed == 2) || !tl_affordable(W, sizes[sz]))
                        continue;
                    tl_generate(W, sizes[sz], seed, &s);
                    p = tl_particles(&s);
                    if (sizes[sz] <= 1000) {
                        check_set_context("naive on %s n=%zu seed=%llu", W->name, sizes[sz],
                                          (unsigned long long)seed);
                        CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK,
                                     &err);
                    }
                    for (int variant = 0; variant < 2; variant++) {
                        ns_particles pv = p;
                        if (variant) {
                            pv.radius = NULL;
                            pv.radius_uniform = s.n ? s.radius[0] : 0.5f;
                        }
                        for (size_t t = 0; t < 2; t++) {
                            ns_config cfg = ns_config_default();
                            cfg.threads = threads[t];
                            cfg.exact_threads = true; /* the parallel code at every n */
                            check_set_context("kernel %s: count, %s n=%zu seed=%llu threads=%d%s",
                                              K->name, W->name, sizes[sz], (unsigned long long)seed,
                                              threads[t], variant ? " radius NULL" : "");
                            REQUIRE(ns_index_create(K, &cfg, &index, &err) == NS_OK);
                            CHECK_STATUS(ns_index_build(index, &pv, &err), NS_OK, &err);
                            size_t c1 = count_ok(index, "count");
                            size_t c2 = count_ok(index, "count again");
                            CHECK_EQ_U(c1, c2);
                            CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
                            CHECK_EQ_U(c1, got.count);
                            CHECK_EQ_U(count_ok(index, "count after the query"), got.count);
                            if (sizes[sz] <= 1000 && !variant)
                                CHECK_EQ_U(c1, ref.count);
                            ns_index_destroy(index);
                            if (t == 0 && !variant)
                                printf("%-14s %-12s n=%-6zu seed=%llu count=%zu\n", K->name,
                                       W->name, sizes[sz], (unsigned long long)seed, c1);
                        }
                    }
                    tl_set_free(&s);
                }
        }

        /* one index, several builds: the count follows the last build */
        check_set_context("kernel %s: count across rebuilds", K->name);
        tl_set a, b;
        tl_generate(tl_workload("uniform"), 2000, 5, &a);
        tl_generate(tl_workload("clusters"), 1500, 6, &b);
        ns_particles pa = tl_particles(&a), pb = tl_particles(&b);
        ns_contact_list ra, rb;
        ns_contact_list_init(&ra);
        ns_contact_list_init(&rb);
        CHECK_STATUS(tl_find(tl_kernel("naive"), &pa, NULL, &ra, &err), NS_OK, &err);
        CHECK_STATUS(tl_find(tl_kernel("naive"), &pb, NULL, &rb, &err), NS_OK, &err);
        REQUIRE(ra.count != rb.count);
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        for (int frame = 0; frame < 4; frame++) {
            CHECK_STATUS(ns_index_build(index, frame % 2 ? &pb : &pa, &err), NS_OK, &err);
            CHECK_EQ_U(count_ok(index, "count after a rebuild"), frame % 2 ? rb.count : ra.count);
        }
        ns_index_destroy(index);
        ns_contact_list_free(&ra);
        ns_contact_list_free(&rb);
        tl_set_free(&a);
        tl_set_free(&b);
    }
    check_set_context("the kernel table");
    const ns_kernel *gs = ns_kernel_find("grid_sorted");
    if (gs != NULL) {
        ns_index *index = NULL;
        ns_error err;
        REQUIRE(ns_index_create(gs, NULL, &index, &err) == NS_OK);
        CHECK_MSG(ns_index_can_count(index), "grid_sorted is documented to count");
        ns_index_destroy(index);
    }
    CHECK_MSG(counting >= 1, "no kernel can count");
    printf("%zu of %zu kernels can count\n", counting, ns_kernel_count());
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
}

static void t_count_errors(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tl_set s;
    tl_generate(tl_workload("uniform"), 300, 1, &s);
    ns_particles good = tl_particles(&s);
    tl_set bad_set;
    tl_generate(tl_workload("uniform"), 300, 1, &bad_set);
    bad_set.pos[3 * 17 + 1] = NAN;
    ns_particles bad = tl_particles(&bad_set);
    tl_set neg_set;
    tl_generate(tl_workload("uniform"), 300, 1, &neg_set);
    neg_set.radius[5] = -1.0f;
    ns_particles neg = tl_particles(&neg_set);
    ns_error err;
    size_t count;

    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_index *index = NULL;
        check_set_context("kernel %s: count before any build", K->name);
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        bool can = ns_index_can_count(index);
        expect_count_refused(index, "before any build");

        check_set_context("kernel %s: count with a NULL count pointer", K->name);
        CHECK_STATUS(ns_index_build(index, &good, &err), NS_OK, &err);
        tl_poison_error(&err);
        CHECK_STATUS(ns_index_count(index, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_EQ_I(err.status, NS_ERR_INVALID_ARGUMENT);
        CHECK(err.message[0] != '\0');
        CHECK_STATUS(ns_index_count(index, NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
        if (can) {
            check_set_context("kernel %s: count after a good build", K->name);
            size_t c = count_ok(index, "after a good build");
            CHECK_CMP_U(c, >, 0);
        } else {
            expect_count_refused(index, "a kernel without a counting pass");
        }

        check_set_context("kernel %s: count after a failed build (NaN y of particle 17) that "
                          "followed a good build",
                          K->name);
        tl_poison_error(&err);
        CHECK_STATUS(ns_index_build(index, &bad, &err), NS_ERR_INVALID_INPUT, &err);
        expect_count_refused(index, "after a failed build");
        check_set_context("kernel %s: a good build after the failed one", K->name);
        CHECK_STATUS(ns_index_build(index, &good, &err), NS_OK, &err);
        if (can)
            CHECK_CMP_U(count_ok(index, "after the failed build, a good one"), >, 0);
        check_set_context("kernel %s: count after a failed build (negative radius)", K->name);
        CHECK_STATUS(ns_index_build(index, &neg, &err), NS_ERR_INVALID_INPUT, &err);
        expect_count_refused(index, "after a failed build (negative radius)");
        CHECK_STATUS(ns_index_build(index, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
        expect_count_refused(index, "after a build with NULL particles");
        ns_index_destroy(index);

        check_set_context("kernel %s: count after a failed first build", K->name);
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        CHECK_STATUS(ns_index_build(index, &bad, &err), NS_ERR_INVALID_INPUT, &err);
        expect_count_refused(index, "after a failed first build");
        ns_index_destroy(index);

        check_set_context("kernel %s: count after a too-large build (x = 1e30, r = 1e-3)", K->name);
        tl_set far;
        tl_set_init(&far, 2);
        tl_set_put(&far, 0, 0.0f, 0.0f, 0.0f, 1e-3f);
        tl_set_put(&far, 1, 1e30f, 0.0f, 0.0f, 1e-3f);
        ns_particles pf = tl_particles(&far);
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        CHECK_STATUS(ns_index_build(index, &good, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_build(index, &pf, &err), NS_ERR_TOO_LARGE, &err);
        expect_count_refused(index, "after a build refused as too large");
        ns_index_destroy(index);
        tl_set_free(&far);
        printf("%-14s can_count=%d: errors checked\n", K->name, (int)can);
    }
    check_set_context("NULL index");
    count = 99;
    tl_poison_error(&err);
    CHECK_STATUS(ns_index_count(NULL, &count, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_EQ_I(err.status, NS_ERR_INVALID_ARGUMENT);
    CHECK(err.message[0] != '\0');
    CHECK_STATUS(ns_index_count(NULL, &count, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
    CHECK_STATUS(ns_index_count(NULL, NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
    check_set_context("ns_index_can_count(NULL)");
    CHECK(!ns_index_can_count(NULL));
    tl_set_free(&s);
    tl_set_free(&bad_set);
    tl_set_free(&neg_set);
}

static void t_count_trivial(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    uint64_t rng = 8008;
    tl_set zero;
    tl_set_init(&zero, 0);
    tl_set one;
    tl_set_init(&one, 1);
    tl_set_put(&one, 0, -3.0f, 2.0f, 1e6f, 0.5f);
    tl_set flat; /* 600 particles of radius 0, 200 of them coincident */
    tl_set_init(&flat, 0);
    add_cloud(&flat, 400, 0, 0, 0, -2.0f, 2.0f, 0.0f, 0.0f, &rng);
    add_cloud(&flat, 200, 0.5, 0.5, 0.5, 0.0f, 0.0f, 0.0f, 0.0f, &rng);

    struct {
        const tl_set *s;
        int uniform;
        float r;
        const char *what;
    } sets[] = {
        {&zero, 0, 0, "n = 0"},
        {&zero, 1, 0.5f, "n = 0, radius NULL"},
        {&one, 0, 0, "n = 1"},
        {&one, 1, 0.5f, "n = 1, radius NULL"},
        {&flat, 0, 0, "600 of radius 0 (200 coincident)"},
        {&flat, 1, 0.0f, "600, radius NULL, radius_uniform 0"},
    };
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
            for (int threads = 1; threads <= 3; threads += 2) {
                ns_config cfg = ns_config_default();
                cfg.threads = threads;
                cfg.exact_threads = true; /* the parallel code at every n */
                ns_particles p = tl_particles(sets[i].s);
                if (sets[i].uniform) {
                    p.radius = NULL;
                    p.radius_uniform = sets[i].r;
                }
                check_set_context("kernel %s: %s, threads=%d", K->name, sets[i].what, threads);
                ns_index *index = NULL;
                ns_error err;
                REQUIRE(ns_index_create(K, &cfg, &index, &err) == NS_OK);
                CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
                if (ns_index_can_count(index)) {
                    size_t c = count_ok(index, sets[i].what);
                    CHECK_EQ_U(c, 0);
                } else {
                    expect_count_refused(index, "a kernel without a counting pass");
                }
                ns_contact_list got;
                ns_contact_list_init(&got);
                CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
                CHECK_EQ_U(got.count, 0);
                ns_contact_list_free(&got);
                ns_index_destroy(index);
            }
        printf("%-14s trivial sets checked\n", K->name);
    }
    tl_set_free(&zero);
    tl_set_free(&one);
    tl_set_free(&flat);
}

static void t_count_max_contacts(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tl_set s;
    tl_generate(tl_workload("uniform"), 2000, 3, &s);
    tl_set co; /* 1500 coincident: 1124250 contacts */
    tl_set_init(&co, 1500);
    for (size_t i = 0; i < co.n; i++)
        tl_set_put(&co, i, 1.25f, -0.5f, 3.0f, 0.5f);
    const tl_set *sets[] = {&s, &co};
    const char *names[] = {"uniform n=2000 seed=3", "1500 coincident"};
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);

    for (size_t si = 0; si < 2; si++) {
        ns_particles p = tl_particles(sets[si]);
        ns_error err;
        check_set_context("%s: naive", names[si]);
        CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK, &err);
        size_t C = ref.count;
        REQUIRE(C > 2);
        if (si == 1)
            CHECK_EQ_U(C, (size_t)1500 * 1499 / 2);
        const size_t limits[] = {1, C / 2, C - 1, C, C + 1};
        for (size_t k = 0; k < ns_kernel_count(); k++) {
            const ns_kernel *K = ns_kernel_at(k);
            for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++)
                for (int threads = 1; threads <= 3; threads += 2) {
                    ns_config cfg = ns_config_default();
                    cfg.max_contacts = limits[l];
                    cfg.threads = threads;
                    cfg.exact_threads = true; /* the parallel code at every n */
                    check_set_context("kernel %s: %s (%zu contacts), max_contacts = %zu, "
                                      "threads=%d",
                                      K->name, names[si], C, limits[l], threads);
                    ns_index *index = NULL;
                    REQUIRE(ns_index_create(K, &cfg, &index, &err) == NS_OK);
                    CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
                    int can = ns_index_can_count(index);
                    if (can)
                        CHECK_EQ_U(count_ok(index, "count before the query"), C);
                    ns_status want = limits[l] < C ? NS_ERR_TOO_MANY_CONTACTS : NS_OK;
                    tl_poison_error(&err);
                    ns_status st = ns_index_query(index, &got, &err);
                    CHECK_STATUS(st, want, &err);
                    if (st == NS_OK)
                        CHECK_EQ_U(got.count, C);
                    else
                        CHECK_EQ_U(got.count, 0);
                    /* the failed query leaves the build intact */
                    if (can)
                        CHECK_EQ_U(count_ok(index, "count after the query"), C);
                    ns_index_destroy(index);
                }
        }
        printf("%s: max_contacts around %zu checked\n", names[si], C);
    }
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
    tl_set_free(&co);
}

/* thread_order: every generated workload (the simulated ones are the
 * differential tests' and test_sim's) with every parallel kernel whose order
 * the table says is the same at any thread count: order/WORKLOAD/KERNEL */
static void thread_order_ctests(void)
{
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        if (!K->parallel || !K->stable_order)
            continue;
        for (size_t w = 0; w < ns_workload_count(); w++) {
            const ns_workload *W = ns_workload_at(w);
            if (W->cache_version > 0)
                continue;
            char name[200];
            snprintf(name, sizeof name, "order/%s/%s", W->name, K->name);
            tl_ctest(name, "kernels", 0, "thread_order", W->name, K->name);
        }
    }
}

/* The info of the tested kernel's index built on s with 2 threads. */
static void built_info(const tl_set *s, ns_index_info *info)
{
    ns_particles p = tl_particles(s);
    ns_config cfg = ns_config_default();
    cfg.threads = 2;
    cfg.exact_threads = true;
    ns_index *index = NULL;
    ns_error err;
    REQUIRE(ns_index_create(tested, &cfg, &index, &err) == NS_OK);
    CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
    ns_index_get_info(index, info);
    ns_index_destroy(index);
}

/* grid_sorted chooses how to number its cells per build (ns_index_info's
 * layout): each set here is made to take one, and its contacts must be
 * naive's exactly (r = 0.5: cells of edge 1). */
static void t_grid_sorted_layouts(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tested = tl_kernel("grid_sorted");
    uint64_t rng = 4242;
    tl_set s[4];
    for (int k = 0; k < 4; k++)
        tl_set_init(&s[k], 0);
    /* a cube of 3,000: at most 2 cells per particle */
    add_cloud(&s[0], 3000, 0, 0, 0, 0.0f, 12.0f, 0.5f, 0.5f, &rng);
    /* two cubes of 20 cells, 10,000 particles each, 80 apart: 48,000 cells
     * (more than 2n + 4,096), 2,112 blocks of 4 x 4 x 4 in the box (at most
     * n + 4,096), about 250 of them non-empty */
    add_cloud(&s[1], 10000, 0, 0, 0, 0.0f, 20.0f, 0.5f, 0.5f, &rng);
    add_cloud(&s[1], 10000, 100, 0, 0, 0.0f, 20.0f, 0.5f, 0.5f, &rng);
    /* two clouds 1e6 apart: far too many blocks in the box */
    add_cloud(&s[2], 1500, -5e5, 0, 0, 0.0f, 6.0f, 0.5f, 0.5f, &rng);
    add_cloud(&s[2], 1500, 5e5, 3, 0, 0.0f, 6.0f, 0.5f, 0.5f, &rng);
    /* 1,000 touching pairs and 1,000 lone particles spread over 1e5 per
     * axis: 2,000 places, too many for blocks of 2 x 2 x 2 (16,000 cells):
     * single cells, hashed */
    for (int k = 0; k < 2000; k++) {
        double c[3];
        for (int a = 0; a < 3; a++)
            c[a] = (double)tl_rng_float(&rng, -5e4f, 5e4f);
        add_cloud(&s[3], k < 1000 ? 2 : 1, c[0], c[1], c[2], 0.0f, 0.5f, 0.5f, 0.5f, &rng);
    }
    const char *want[4] = {"dense", "blocked", "hashed", "hashed"};
    const char *what[4] = {"a cube of 3,000 (dense)", "two cubes 80 cells apart (blocked)",
                           "two clouds 1e6 apart (hashed blocks)",
                           "3,000 particles over 1e5 cells (hashed cells)"};
    for (int k = 0; k < 4; k++) {
        check_set_context("%s", what[k]);
        ns_index_info info;
        built_info(&s[k], &info);
        CHECK_MSG(info.layout && strcmp(info.layout, want[k]) == 0, "%s: layout %s, not %s",
                  what[k], info.layout ? info.layout : "NULL", want[k]);
        expect_exact_set(what[k], &s[k], 0);
        tl_set_free(&s[k]);
    }
    /* a kernel that has one way and one grid only says none of either */
    ns_index *index = NULL;
    ns_particles p = {.n = 0};
    REQUIRE(ns_index_create(tl_kernel("hash_parallel"), NULL, &index, NULL) == NS_OK);
    CHECK_STATUS(ns_index_build(index, &p, NULL), NS_OK, NULL);
    ns_index_info info;
    ns_index_get_info(index, &info);
    CHECK(info.layout == NULL);
    CHECK(info.levels == 0);
    ns_index_destroy(index);
}

/* grid_sorted splits mixed radii into levels of cells (ns_index_info's
 * levels): each set here is made to take a known number, and its contacts
 * must be naive's exactly. */
static void t_grid_sorted_levels(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tested = tl_kernel("grid_sorted");
    uint64_t rng = 5151;
    enum { SETS = 6 };
    tl_set s[SETS];
    tl_generate(tl_workload("powder"), 20000, 1, &s[0]);
    tl_generate(tl_workload("polydisperse"), 20000, 1, &s[1]);
    for (int k = 2; k < SETS - 1; k++)
        tl_set_init(&s[k], 0);
    /* powder packed into 0.6 of its side: 10 particles per cell from the
     * third class on, enough for a third level */
    tl_generate(tl_workload("powder"), 20000, 1, &s[5]);
    for (size_t i = 0; i < 3 * s[5].n; i++)
        s[5].pos[i] *= 0.6f;
    /* one particle of radius 40 among 20,000 of 0.5: it touches them all */
    add_cloud(&s[2], 10000, 0, 0, 0, 0.0f, 20.0f, 0.5f, 0.5f, &rng);
    add_cloud(&s[2], 1, 10, 10, 10, 0.0f, 0.0f, 40.0f, 40.0f, &rng);
    add_cloud(&s[2], 10000, 0, 0, 0, 0.0f, 20.0f, 0.5f, 0.5f, &rng);
    /* lattices at exact binary spacings straddling 0: radius 0.5 on the
     * integers, 0.0625 on the body-centred lattice of edge 0.125, so many
     * pairs lie exactly at r_i + r_j (not touching) or one spacing closer */
    add_block(&s[3], 3, -1.0, -1.0, -1.0, 1.0, 0.0, 0.5f, 0.5f, &rng);
    add_block(&s[3], 17, -1.0, -1.0, -1.0, 0.125, 0.0, 0.0625f, 0.0625f, &rng);
    add_block(&s[3], 16, -0.9375, -0.9375, -0.9375, 0.125, 0.0, 0.0625f, 0.0625f, &rng);
    /* radii over every class: 0.5 down to 2^-20, and 0, in a dense cube,
     * with particles of each class coincident with big ones */
    for (int k = 0; k < 3000; k++) {
        float r = k % 50 == 0 ? 0.0f : ldexpf(0.5f, -(int)(tl_rng(&rng) % 21));
        add_cloud(&s[4], 1, 0, 0, 0, 0.0f, 4.0f, r, r, &rng);
    }
    for (int k = 0; k < 40; k++)
        tl_set_put(&s[4], (size_t)k, s[4].pos[0], s[4].pos[1], s[4].pos[2], s[4].radius[k]);
    const int want[SETS] = {2, 1, 2, 2, 0, 3};
    const char *what[SETS] = {"powder n=20000 (two levels)",
                              "polydisperse n=20000 (one level)",
                              "one radius of 40 among 20,000 of 0.5 (two levels)",
                              "lattices of radius 0.5 and 0.0625 at exact spacings (two levels)",
                              "3,000 radii from 0.5 to 2^-20, and 0, in a cube of 4",
                              "powder n=20000 packed into 0.6 of its side (three levels)"};
    for (int k = 0; k < SETS; k++) {
        check_set_context("%s", what[k]);
        ns_index_info info;
        built_info(&s[k], &info);
        if (want[k] > 0)
            CHECK_MSG(info.levels == want[k], "%s: %d levels, not %d", what[k], info.levels,
                      want[k]);
        else
            CHECK_MSG(info.levels >= 2, "%s: %d levels, want several", what[k], info.levels);
        printf("%-72s levels=%d\n", what[k], info.levels);
        expect_exact_set(what[k], &s[k], 0);
    }
    /* an index rebuilt with one level releases what the earlier build's
     * other levels held (buffers otherwise only grow, so without that it
     * would hold at least as much as after the powder) */
    check_set_context("powder, then polydisperse, on one index");
    ns_config cfg = ns_config_default();
    cfg.threads = 2;
    ns_index *index = NULL;
    ns_particles powder = tl_particles(&s[0]), poly = tl_particles(&s[1]);
    REQUIRE(ns_index_create(tested, &cfg, &index, NULL) == NS_OK);
    ns_index_info first, again;
    CHECK_STATUS(ns_index_build(index, &powder, NULL), NS_OK, NULL);
    ns_index_get_info(index, &first);
    CHECK_STATUS(ns_index_build(index, &poly, NULL), NS_OK, NULL);
    ns_index_get_info(index, &again);
    CHECK_EQ_I(again.levels, 1);
    CHECK_CMP_U(again.bytes, <, first.bytes);
    ns_index_destroy(index);
    for (int k = 0; k < SETS; k++)
        tl_set_free(&s[k]);
}

/* Levels whose coarsest is not dense (blocked, hashed): a level's sort
 * reads the caller's positions through the level's list of indices on every
 * layout's path. Such a build needs many particles (a second level starts
 * only where the smaller particles would crowd the coarser cells 32 deep,
 * and the coarser level goes sparse only past 4,096 cells), too many for
 * the O(n^2) reference in a test, so hash_serial (itself checked against
 * naive on every workload and pitfall) is the reference here, exactly. */
static void t_grid_sorted_levels_sparse(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tested = tl_kernel("grid_sorted");
    const ns_kernel *reference = tl_kernel("hash_serial");
    uint64_t rng = 7070;
    enum { SETS = 2 };
    tl_set s[SETS];
    for (int k = 0; k < SETS; k++)
        tl_set_init(&s[k], 0);
    /* 200,000 of radius 0.24 (34 per cell of the first level), then 200 of
     * 0.5 in two far corners of the cube (a few blocks of cells hold them),
     * or spread over it (too many blocks): the first level's particles are
     * not the caller's first */
    for (int k = 0; k < SETS; k++)
        add_cloud(&s[k], 200000, 0, 0, 0, 0.0f, 18.0f, 0.24f, 0.24f, &rng);
    add_cloud(&s[0], 100, 0, 0, 0, 0.0f, 3.0f, 0.5f, 0.5f, &rng);
    add_cloud(&s[0], 100, 15, 15, 15, 0.0f, 3.0f, 0.5f, 0.5f, &rng);
    add_cloud(&s[1], 200, 0, 0, 0, 0.0f, 18.0f, 0.5f, 0.5f, &rng);
    const char *layout[SETS] = {"blocked", "hashed"};
    const char *what[SETS] = {
        "200,000 of radius 0.24, 200 of 0.5 in two corners (a blocked first level)",
        "200,000 of radius 0.24, 200 of 0.5 spread (a hashed first level)"};
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    for (int k = 0; k < SETS; k++) {
        check_set_context("%s", what[k]);
        ns_index_info info;
        built_info(&s[k], &info);
        CHECK_MSG(info.levels == 2, "%s: %d levels, not 2", what[k], info.levels);
        CHECK_MSG(strcmp(info.layout, layout[k]) == 0, "%s: the first level %s, not %s", what[k],
                  info.layout, layout[k]);
        ns_particles p = tl_particles(&s[k]);
        CHECK_STATUS(tl_find(reference, &p, NULL, &ref, NULL), NS_OK, NULL);
        CHECK_MSG(ref.count > 0, "the set has no contacts: the case is vacuous");
        for (int threads = 1; threads <= 2; threads++) {
            ns_config cfg = ns_config_default();
            cfg.threads = threads;
            cfg.exact_threads = true;
            check_set_context("%s: threads=%d", what[k], threads);
            CHECK_STATUS(tl_find(tested, &p, &cfg, &got, NULL), NS_OK, NULL);
            tl_lists_equal(&ref, &got, what[k]);
        }
        printf("%-80s %s, %zu contacts\n", what[k], info.layout, ref.count);
    }
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    for (int k = 0; k < SETS; k++)
        tl_set_free(&s[k]);
}

static const tl_case cases[] = {
    {"thread_order", .run_args = t_thread_order, .ctests = thread_order_ctests},
    {"far_particles", .run_args = t_far_particles, .each_kernel = true},
    {"two_clusters", .run_args = t_two_clusters, .each_kernel = true},
    {"sparse_spread", .run_args = t_sparse_spread, .each_kernel = true},
    {"straddle_zero", .run_args = t_straddle_zero, .each_kernel = true},
    {"crowded_one_cell", .run_args = t_crowded_one_cell, .each_kernel = true},
    {"crowded_coincident", .run_args = t_crowded_coincident, .each_kernel = true},
    {"crowded_neighbours", .run_args = t_crowded_neighbours, .each_kernel = true},
    {"uniform_radius", .run_args = t_uniform_radius, .each_kernel = true},
    /* the counting API's cases are unit tests of the index */
    {"count_workloads", .run_args = t_count_workloads, .ctest_name = "unit/index_count_workloads",
     .label = "unit"},
    {"grid_sorted_layouts", .run_args = t_grid_sorted_layouts,
     .ctest_name = "unit/grid_sorted_layouts", .label = "unit"},
    {"grid_sorted_levels", .run_args = t_grid_sorted_levels,
     .ctest_name = "unit/grid_sorted_levels", .label = "unit"},
    {"grid_sorted_levels_sparse", .run_args = t_grid_sorted_levels_sparse,
     .ctest_name = "unit/grid_sorted_levels_sparse", .label = "unit"},
    {"count_errors", .run_args = t_count_errors, .ctest_name = "unit/index_count_errors",
     .label = "unit"},
    {"count_trivial", .run_args = t_count_trivial, .ctest_name = "unit/index_count_trivial",
     .label = "unit"},
    {"count_max_contacts", .run_args = t_count_max_contacts,
     .ctest_name = "unit/index_count_max_contacts", .label = "unit"},
};

int main(int argc, char **argv)
{
    /* label kernels, and layout: ThreadSanitizer's runs leave the layouts out
     * (their threads do what the differential and order tests' do) */
    static const tl_suite suite = {"layout", "kernels,layout", 3, 0};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

/* test_pitfalls.c - docs/design.md's pitfalls, each over every kernel in the table.
 *
 * usage: test_pitfalls NAME      (no argument: list the names; --ctest: the ctests)
 *
 * Each case builds a layout whose contact count is known by construction
 * (checked against the test's own O(n^2) predicate, tl_reference) or, where a
 * construction is impractical, taken from that reference; every kernel must
 * return exactly that count, the same pairs and overlaps as the reference,
 * a list bit-identical to naive's, and contacts with the documented
 * properties. */
#include "testlib.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdatomic.h>

#define ANY_COUNT SIZE_MAX /* expect_all: take the count from tl_reference, require > 0 */

enum {
    ALLOW_DENSE_TOO_LARGE = 1, /* a dense-grid kernel may refuse with NS_ERR_TOO_LARGE */
    SKIP_INDEX_PATH = 2
};

static int contains_nocase(const char *s, const char *needle)
{
    size_t n = strlen(needle);
    for (; *s; s++) {
        size_t k = 0;
        while (k < n && s[k] && tolower((unsigned char)s[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n)
            return 1;
    }
    return 0;
}

/* Appends an L x L x L lattice with the given origin and spacing (computed in
 * double, then rounded once to float). */
static void add_lattice(tl_set *s, size_t L, double ox, double oy, double oz, double spacing,
                        float r)
{
    tl_set l;
    tl_set_init(&l, L * L * L);
    size_t i = 0;
    for (size_t a = 0; a < L; a++)
        for (size_t b = 0; b < L; b++)
            for (size_t c = 0; c < L; c++)
                tl_set_put(&l, i++, (float)(ox + (double)a * spacing),
                           (float)(oy + (double)b * spacing), (float)(oz + (double)c * spacing), r);
    tl_set_append(s, &l);
    tl_set_free(&l);
}

/* Axis-neighbour contacts of an L^3 lattice whose spacing is below the
 * interaction distance and whose face diagonal is above it. */
static size_t lattice_axis_contacts(size_t L)
{
    return 3 * L * L * (L - 1);
}

/* Runs every kernel (find and index paths) on p and checks the result.
 * Returns the number of dense-grid refusals (with ALLOW_DENSE_TOO_LARGE). */
static int expect_all(const char *what, const ns_particles *p, const ns_config *cfg,
                      size_t expected, int flags)
{
    ns_contact_list own, ref, got;
    ns_contact_list_init(&own);
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    int refused = 0;

    check_set_context("%s: the test's own O(n^2) reference", what);
    tl_reference(p, &own);
    if (expected == ANY_COUNT) {
        expected = own.count;
        if (p->n >= 2)
            CHECK_MSG(expected > 0, "layout has no contacts: the case is vacuous");
    } else {
        CHECK_EQ_U(own.count, expected); /* the construction is what we think it is */
    }

    ns_error err;
    check_set_context("%s: naive", what);
    ns_status st = tl_find(tl_kernel("naive"), p, cfg, &ref, &err);
    CHECK_STATUS(st, NS_OK, &err);

    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        for (int path = 0; path < 2; path++) {
            if (path == 1 && (flags & SKIP_INDEX_PATH))
                continue;
            char ctx[300];
            snprintf(ctx, sizeof ctx, "%s: kernel %s via %s", what, K->name,
                     path ? "index" : "ns_find_contacts");
            check_set_context("%s", ctx);
            st = path ? tl_find_index(K, p, cfg, &got, &err) : tl_find(K, p, cfg, &got, &err);
            if (st == NS_ERR_TOO_LARGE && (flags & ALLOW_DENSE_TOO_LARGE) && K->domain_memory) {
                CHECK_MSG(contains_nocase(err.message, "byte"),
                          "refusal message should say how many bytes: \"%s\"", err.message);
                refused++;
                continue;
            }
            CHECK_STATUS(st, NS_OK, &err);
            if (st != NS_OK)
                continue;
            CHECK_EQ_U(got.count, expected);
            tl_check_contacts(p, &got, ctx);
            tl_compare_reference(&own, &got, ctx);
            tl_lists_equal(&ref, &got, ctx);
        }
    }
    printf("%-60s n=%zu contacts=%zu%s\n", what, p->n, expected,
           refused ? " (the dense grid refused: too large)" : "");
    ns_contact_list_free(&own);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    return refused;
}

static int expect_set(const char *what, const tl_set *s, const ns_config *cfg, size_t expected,
                      int flags)
{
    ns_particles p = tl_particles(s);
    return expect_all(what, &p, cfg, expected, flags);
}

/* ---- the cases ---- */

static void t_negative_coords(void)
{
    /* spacing 0.99 < 2r = 1: axis neighbours touch, face diagonals (1.40) do not */
    const size_t LA = 10, LB = 6, LC = 5;
    tl_set a, b, c, all;
    tl_set_init(&a, 0);
    tl_set_init(&b, 0);
    tl_set_init(&c, 0);
    add_lattice(&a, LA, -5.37, -5.37, -5.37, 0.99, 0.5f); /* straddles 0 on every axis */
    add_lattice(&b, LB, -20.5, -20.5, -20.5, 0.99, 0.5f); /* all negative */
    add_lattice(&c, LC, 7.3, -2.0, 40.1, 0.99, 0.5f);     /* straddles 0 in y only */
    expect_set("lattice straddling 0", &a, NULL, lattice_axis_contacts(LA), 0);
    expect_set("lattice in the negative octant", &b, NULL, lattice_axis_contacts(LB), 0);
    tl_set_init(&all, 0);
    tl_set_append(&all, &a);
    tl_set_append(&all, &b);
    tl_set_append(&all, &c);
    expect_set("three lattices around 0", &all, NULL,
               lattice_axis_contacts(LA) + lattice_axis_contacts(LB) + lattice_axis_contacts(LC),
               0);

    /* a random cloud in [-15, 15)^3 */
    tl_set cloud;
    tl_set_init(&cloud, 3000);
    uint64_t rng = 42;
    for (size_t i = 0; i < cloud.n; i++)
        tl_set_put(&cloud, i, tl_rng_float(&rng, -15, 15), tl_rng_float(&rng, -15, 15),
                   tl_rng_float(&rng, -15, 15), 0.5f);
    expect_set("random cloud in [-15, 15)^3", &cloud, NULL, ANY_COUNT, 0);
    tl_set_free(&a);
    tl_set_free(&b);
    tl_set_free(&c);
    tl_set_free(&all);
    tl_set_free(&cloud);
}

static void t_coords_1e6(void)
{
    /* integer coordinates near +-1e6 are exact in float (ulp 0.0625);
     * spacing 1 < 2r = 1.1 < sqrt(2) */
    const size_t L = 8;
    tl_set a, b, all;
    tl_set_init(&a, 0);
    tl_set_init(&b, 0);
    add_lattice(&a, L, 1e6, -1e6, 1e6, 1.0, 0.55f);
    add_lattice(&b, L, -1e6, -1e6, -1e6 - 7.0, 1.0, 0.55f);
    expect_set("lattice at (1e6, -1e6, 1e6)", &a, NULL, lattice_axis_contacts(L), 0);
    expect_set("lattice at (-1e6, -1e6, -1e6)", &b, NULL, lattice_axis_contacts(L), 0);
    tl_set_init(&all, 0);
    tl_set_append(&all, &a);
    tl_set_append(&all, &b);
    /* the bounding box is 2e6 wide: a dense grid may refuse for memory */
    expect_set("both lattices (+-1e6)", &all, NULL, 2 * lattice_axis_contacts(L),
               ALLOW_DENSE_TOO_LARGE);
    tl_set_free(&a);
    tl_set_free(&b);
    tl_set_free(&all);
}

static void t_coords_1e12(void)
{
    /* float spacing at 1e12 is 65536; a lattice of step 3 * 65536 = 196608 is
     * exact there. Radii 1e5: 2r = 2e5 > 196608, face diagonal 278042 > 2e5. */
    const double B = (double)1e12f; /* 999999995904 = 15258789 * 65536 */
    const double step = 196608.0;
    const size_t L = 6;
    tl_set c1, c2, c3, all;
    tl_set_init(&c1, 0);
    tl_set_init(&c2, 0);
    tl_set_init(&c3, 0);
    add_lattice(&c1, L, B, B, B, step, 1e5f);
    add_lattice(&c2, L, -B, -B, -B, step, 1e5f);
    add_lattice(&c3, L, B, -B, B, step, 1e5f);
    for (size_t i = 0; i < 3 * c1.n; i++) /* the construction is exact */
        REQUIRE(fmod(fabs((double)c1.pos[i] - B), step) == 0.0);
    expect_set("cluster at (+1e12, +1e12, +1e12)", &c1, NULL, lattice_axis_contacts(L), 0);
    expect_set("cluster at (-1e12, -1e12, -1e12)", &c2, NULL, lattice_axis_contacts(L), 0);
    expect_set("cluster at (+1e12, -1e12, +1e12)", &c3, NULL, lattice_axis_contacts(L), 0);
    tl_set_init(&all, 0);
    tl_set_append(&all, &c1);
    tl_set_append(&all, &c2);
    tl_set_append(&all, &c3);
    expect_set("three clusters 2e12 apart", &all, NULL, 3 * lattice_axis_contacts(L),
               ALLOW_DENSE_TOO_LARGE);
    tl_set_free(&c1);
    tl_set_free(&c2);
    tl_set_free(&c3);
    tl_set_free(&all);
}

static void t_cell_coords_64bit(void)
{
    /* radius 1e-3: cell 2e-3, so 1e15 is cell ~5e17: beyond 32 bits, within 2^62.
     * Distinct floats near 1e15 are >= 64 apart, so only coincident particles
     * touch there. */
    tl_set g1, g2, g3, g4, all;
    tl_set_init(&g1, 3);
    tl_set_init(&g2, 2);
    tl_set_init(&g3, 1);
    tl_set_init(&g4, 2);
    for (size_t i = 0; i < 3; i++)
        tl_set_put(&g1, i, 1e15f, 1e15f, 1e15f, 1e-3f); /* 3 contacts */
    for (size_t i = 0; i < 2; i++)
        tl_set_put(&g2, i, -1e15f, 5e14f, -3e14f, 1e-3f); /* 1 contact */
    tl_set_put(&g3, 0, 1e15f, -1e15f, 0.0f, 1e-3f);       /* alone */
    tl_set_put(&g4, 0, 0.0f, 0.0f, 0.0f, 1e-3f);          /* 1 contact near 0 */
    tl_set_put(&g4, 1, 0.001f, 0.0f, 0.0f, 1e-3f);
    expect_set("3 coincident at (1e15, 1e15, 1e15), r=1e-3", &g1, NULL, 3, 0);
    expect_set("2 coincident at (-1e15, 5e14, -3e14), r=1e-3", &g2, NULL, 1, 0);
    tl_set_init(&all, 0);
    tl_set_append(&all, &g1);
    tl_set_append(&all, &g2);
    tl_set_append(&all, &g3);
    tl_set_append(&all, &g4);
    expect_set("groups 2e15 apart (cells ~5e17)", &all, NULL, 5, ALLOW_DENSE_TOO_LARGE);
    tl_set_free(&g1);
    tl_set_free(&g2);
    tl_set_free(&g3);
    tl_set_free(&g4);
    tl_set_free(&all);
}

static void expect_too_large_everywhere(const char *what, const ns_particles *p)
{
    ns_error err;
    ns_contact_list got;
    ns_contact_list_init(&got);
    check_set_context("%s: ns_particles_validate", what);
    /* validation is about finiteness and n; 1e30 is a finite float */
    CHECK_STATUS(ns_particles_validate(p, &err), NS_OK, &err);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        check_set_context("%s: kernel %s", what, K->name);
        got.count = 0;
        ns_status st = tl_find(K, p, NULL, &got, &err);
        CHECK_STATUS(st, NS_ERR_TOO_LARGE, &err);
        st = tl_find_index(K, p, NULL, &got, &err);
        CHECK_STATUS(st, NS_ERR_TOO_LARGE, &err);
    }
    printf("%-60s refused by all %zu kernels\n", what, ns_kernel_count());
    ns_contact_list_free(&got);
}

static void t_cell_coords_too_large(void)
{
    tl_set s;
    ns_particles p;

    tl_set_init(&s, 2);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 1e-3f);
    tl_set_put(&s, 1, 1e30f, 0.0f, 0.0f, 1e-3f);
    p = tl_particles(&s);
    expect_too_large_everywhere("x = 1e30, r = 1e-3", &p);
    tl_set_put(&s, 1, 0.0f, -1e30f, 0.0f, 1e-3f);
    expect_too_large_everywhere("y = -1e30, r = 1e-3", &p);
    tl_set_put(&s, 1, 5.0f, 5.0f, 1e30f, 1e-3f);
    expect_too_large_everywhere("z = 1e30, r = 1e-3", &p);
    /* both particles coincident far away: contacts would exist, still refused */
    tl_set_put(&s, 0, -1e30f, 1e30f, -1e30f, 1e-3f);
    tl_set_put(&s, 1, -1e30f, 1e30f, -1e30f, 1e-3f);
    expect_too_large_everywhere("coincident pair at (-1e30, 1e30, -1e30)", &p);
    /* uniform radius */
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0.0f);
    tl_set_put(&s, 1, 1e30f, 1e30f, 1e30f, 0.0f);
    p.radius = NULL;
    p.radius_uniform = 1e-3f;
    expect_too_large_everywhere("1e30 with radius_uniform = 1e-3", &p);
    /* 1e20 / (2 * 1) = 5e19 > 2^62 = 4.6e18 */
    p.radius_uniform = 1.0f;
    tl_set_put(&s, 1, 1e20f, 0.0f, 0.0f, 0.0f);
    expect_too_large_everywhere("x = 1e20 with radius 1 (cell 5e19 > 2^62)", &p);
    tl_set_free(&s);
}

static void add_chain(tl_set *s)
{
    /* r = 0.5, cell 1: z = -0.9, -0.3 in cell (0,0,-1); 0.3 in (0,0,0);
     * 1.2, 1.8 in (0,0,1). Consecutive gaps 0.6, 0.6, 0.9, 0.6 < 1: 4 contacts;
     * gaps of two steps (1.2, 1.5, 1.5) are not contacts. */
    const float z[] = {-0.9f, -0.3f, 0.3f, 1.2f, 1.8f};
    for (size_t i = 0; i < 5; i++)
        tl_add_particle(s, 0.5f, 0.5f, z[i], 0.5f);
}

static void t_hash_table_sizes(void)
{
    const size_t sizes[] = {1, 2, 3, 7, 13, 64, 0};
    tl_set chain, all;
    tl_set_init(&chain, 0);
    add_chain(&chain);
    tl_set_init(&all, 0);
    add_chain(&all);
    add_lattice(&all, 5, -1.8, -1.8, -1.8, 0.9, 0.5f); /* fills the 27 cells around 0 */
    add_lattice(&all, 4, 30.2, -40.7, 3.3, 0.9, 0.5f);
    /* the chain (x = y = 0.5) lies inside the first lattice's cube: the
     * combined count comes from the test's reference (ANY_COUNT) */
    tl_set clusters;
    tl_generate(tl_workload("clusters"), 2000, 5, &clusters);

    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        ns_config cfg = ns_config_default();
        cfg.table_size = sizes[t];
        char what[160];
        snprintf(what, sizeof what, "chain through cells (0,0,-1)..(0,0,1), table_size=%zu",
                 sizes[t]);
        expect_set(what, &chain, &cfg, 4, 0);
        snprintf(what, sizeof what, "chain + lattices around 0, table_size=%zu", sizes[t]);
        expect_set(what, &all, &cfg, ANY_COUNT, 0);
        if (sizes[t] == 1 || sizes[t] == 2 || sizes[t] == 7) {
            snprintf(what, sizeof what, "clusters n=2000, table_size=%zu", sizes[t]);
            expect_set(what, &clusters, &cfg, ANY_COUNT, SKIP_INDEX_PATH);
        }
    }
    /* the index reports the table size it was given */
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        if (!K->uses_table_size)
            continue;
        const size_t info_sizes[] = {1, 7, 97};
        for (size_t t = 0; t < 3; t++) {
            ns_config cfg = ns_config_default();
            cfg.table_size = info_sizes[t];
            check_set_context("index info of %s with table_size=%zu", K->name, cfg.table_size);
            ns_index *index = NULL;
            ns_error err;
            ns_particles p = tl_particles(&all);
            REQUIRE(ns_index_create(K, &cfg, &index, &err) == NS_OK);
            CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
            ns_index_info info;
            memset(&info, 0xAB, sizeof info);
            ns_index_get_info(index, &info);
            CHECK_EQ_U(info.table_size, cfg.table_size);
            CHECK_CMP_U(info.nonempty_buckets, <=, cfg.table_size);
            CHECK_CMP_U(info.nonempty_buckets, >=, 1);
            ns_index_destroy(index);
        }
    }
    tl_set_free(&chain);
    tl_set_free(&all);
    tl_set_free(&clusters);
}

static void t_one_cell(void)
{
    /* 300 particles in a cube of side 0.55 inside cell (2,2,2) (r = 0.5, cell 1):
     * the diameter sqrt(3) * 0.55 = 0.953 < 1, so every pair is a contact */
    tl_set s;
    tl_set_init(&s, 300);
    uint64_t rng = 7;
    for (size_t i = 0; i < s.n; i++)
        tl_set_put(&s, i, tl_rng_float(&rng, 2.22f, 2.77f), tl_rng_float(&rng, 2.22f, 2.77f),
                   tl_rng_float(&rng, 2.22f, 2.77f), 0.5f);
    expect_set("300 in one cell, all pairs in contact", &s, NULL, 300 * 299 / 2, 0);
    tl_set_free(&s);

    /* 1000 particles filling cell (0,0,0) */
    tl_set_init(&s, 1000);
    for (size_t i = 0; i < s.n; i++)
        tl_set_put(&s, i, tl_rng_float(&rng, 0.01f, 0.99f), tl_rng_float(&rng, 0.01f, 0.99f),
                   tl_rng_float(&rng, 0.01f, 0.99f), 0.5f);
    expect_set("1000 in cell (0,0,0)", &s, NULL, ANY_COUNT, 0);
    /* the same with the uniform radius */
    ns_particles p = tl_particles(&s);
    p.radius = NULL;
    p.radius_uniform = 0.5f;
    expect_all("1000 in cell (0,0,0), radius_uniform", &p, NULL, ANY_COUNT, 0);
    tl_set_free(&s);
}

static void check_all_coincident(const ns_particles *p, float overlap)
{
    ns_contact_list got;
    ns_contact_list_init(&got);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_error err;
        check_set_context("500 coincident: kernel %s (radius %s)", K->name,
                          p->radius ? "per particle" : "uniform");
        ns_status st = tl_find(K, p, NULL, &got, &err);
        CHECK_STATUS(st, NS_OK, &err);
        CHECK_EQ_U(got.count, 124750);
        size_t bad = 0;
        for (size_t c = 0; c < got.count; c++) {
            const ns_contact *t = &got.items[c];
            if (tl_bits(t->nx) != 0 || tl_bits(t->ny) != 0 || tl_bits(t->nz) != 0 ||
                tl_bits(t->overlap) != tl_bits(overlap) || !(t->i < t->j)) {
                if (bad++ == 0) {
                    CHECK_MSG(0, "contact %zu: want normal +0,+0,+0 and overlap %.9g", c,
                              (double)overlap);
                    tl_print_contact("got", t);
                }
            }
        }
        tl_check_contacts(p, &got, check_context);
    }
    ns_contact_list_free(&got);
}

static void t_coincident_500(void)
{
    tl_set s;
    tl_set_init(&s, 500);
    for (size_t i = 0; i < s.n; i++)
        tl_set_put(&s, i, 1.25f, -3.5f, 7.0f, 0.125f);
    ns_particles p = tl_particles(&s);
    check_all_coincident(&p, 0.25f);
    p.radius = NULL;
    p.radius_uniform = 0.125f;
    check_all_coincident(&p, 0.25f);
    expect_set("500 coincident (full comparison)", &s, NULL, 124750, SKIP_INDEX_PATH);
    tl_set_free(&s);
}

static void t_signed_zero(void)
{
    /* dx = x_j - x_i is -0 when x_j = -0 and x_i = +0; the normal must store +0 */
    tl_set s;
    tl_set_init(&s, 2);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 1, -0.0f, -0.0f, -0.0f, 0.5f);
    expect_set("+0 and -0 coincident", &s, NULL, 1, 0);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 1, -0.0f, -0.0f, 0.5f, 0.5f);
    expect_set("normal (-0, -0, 1) must be stored as (+0, +0, 1)", &s, NULL, 1, 0);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 1, 0.5f, -0.0f, -0.0f, 0.5f);
    expect_set("normal (1, -0, -0) must be stored as (1, +0, +0)", &s, NULL, 1, 0);
    tl_set_put(&s, 0, -0.0f, 0.0f, -0.0f, 0.5f);
    tl_set_put(&s, 1, 0.0f, -0.75f, 0.0f, 0.5f);
    expect_set("i at (-0, 0, -0), j at (0, -0.75, 0)", &s, NULL, 1, 0);

    /* explicit bits for the second layout, for every kernel */
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 1, -0.0f, -0.0f, 0.5f, 0.5f);
    ns_particles p = tl_particles(&s);
    ns_contact_list got;
    ns_contact_list_init(&got);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        ns_error err;
        check_set_context("signed zero normal bits: kernel %s", ns_kernel_at(k)->name);
        CHECK_STATUS(tl_find(ns_kernel_at(k), &p, NULL, &got, &err), NS_OK, &err);
        REQUIRE(got.count == 1);
        CHECK_EQ_F32_BITS(got.items[0].nx, 0.0f);
        CHECK_EQ_F32_BITS(got.items[0].ny, 0.0f);
        CHECK_EQ_F32_BITS(got.items[0].nz, 1.0f);
        CHECK_EQ_F32_BITS(got.items[0].overlap, 0.5f);
    }
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

static void t_zero_radii(void)
{
    /* all radii zero: no contact, even for coincident centres (0 < 0 is false) */
    tl_set z;
    tl_set_init(&z, 200);
    uint64_t rng = 3;
    for (size_t i = 0; i < z.n; i++)
        tl_set_put(&z, i, tl_rng_float(&rng, -2, 2), tl_rng_float(&rng, -2, 2),
                   i < 20 ? 1.0f : tl_rng_float(&rng, -2, 2), 0.0f);
    for (size_t i = 100; i < 110; i++) /* coincident zero-radius particles */
        tl_set_put(&z, i, 0.5f, 0.5f, 0.5f, 0.0f);
    expect_set("all radii zero (per particle)", &z, NULL, 0, 0);
    ns_particles p = tl_particles(&z);
    p.radius = NULL;
    p.radius_uniform = 0.0f;
    expect_all("all radii zero (radius_uniform = 0)", &p, NULL, 0, 0);

    /* mixed: A (r = 1) at 0; B, C (r = 0) coincident at 0.5: A-B, A-C, not B-C;
     * D (r = 0) at exactly 1: touching A, no contact; E (r = 0) at 0.999: A-E.
     * F, G (r = 0.25) 0.4 apart far away: 1 contact. Plus zero-radius dust. */
    tl_set m;
    tl_set_init(&m, 7);
    tl_set_put(&m, 0, 0.0f, 0.0f, 0.0f, 1.0f);
    tl_set_put(&m, 1, 0.5f, 0.0f, 0.0f, 0.0f);
    tl_set_put(&m, 2, 0.5f, 0.0f, 0.0f, 0.0f);
    tl_set_put(&m, 3, 1.0f, 0.0f, 0.0f, 0.0f);
    tl_set_put(&m, 4, 0.0f, 0.999f, 0.0f, 0.0f);
    tl_set_put(&m, 5, 10.0f, 10.0f, 10.0f, 0.25f);
    tl_set_put(&m, 6, 10.0f, 10.4f, 10.0f, 0.25f);
    tl_set dust;
    tl_set_init(&dust, 300);
    for (size_t i = 0; i < dust.n; i++)
        tl_set_put(&dust, i, tl_rng_float(&rng, -20, -5), tl_rng_float(&rng, -20, -5),
                   tl_rng_float(&rng, -20, -5), 0.0f);
    tl_set_append(&m, &dust);
    expect_set("zero radii mixed with non-zero", &m, NULL, 4, 0);

    /* one big particle among zero-radius lattice points */
    tl_set big;
    tl_set_init(&big, 0);
    add_lattice(&big, 9, -4.0, -4.0, -4.0, 1.0, 0.0f);
    tl_add_particle(&big, 0.3f, -0.2f, 0.1f, 2.0f);
    expect_set("r=2 among a zero-radius lattice", &big, NULL, ANY_COUNT, 0);
    tl_set_free(&z);
    tl_set_free(&m);
    tl_set_free(&dust);
    tl_set_free(&big);
}

static void t_radii_100_to_1(void)
{
    /* big r = 5, small r = 0.05 (cell 10 from the largest radius) */
    tl_set s;
    tl_set_init(&s, 0);
    tl_add_particle(&s, 0.0f, 0.0f, 0.0f, 5.0f);
    const float a = 5.04f; /* < 5.05: contact */
    for (int ax = 0; ax < 3; ax++)
        for (int sg = -1; sg <= 1; sg += 2) {
            float v[3] = {0.0f, 0.0f, 0.0f};
            v[ax] = (float)sg * a;
            tl_add_particle(&s, v[0], v[1], v[2], 0.05f);
        }
    const float d = (float)(5.07 / sqrt(3.0)); /* |v| = 5.07 > 5.05: no contact */
    for (int sx = -1; sx <= 1; sx += 2)
        for (int sy = -1; sy <= 1; sy += 2)
            for (int sz = -1; sz <= 1; sz += 2)
                tl_add_particle(&s, (float)sx * d, (float)sy * d, (float)sz * d, 0.05f);
    add_lattice(&s, 5, 20.0, 20.0, 20.0, 0.09, 0.05f); /* 0.09 < 0.1 < 0.127 */
    tl_add_particle(&s, 0.0f, 0.0f, -30.0f, 5.0f);     /* two bigs 9.5 apart */
    tl_add_particle(&s, 0.0f, 0.0f, -20.5f, 5.0f);
    expect_set("radii 100:1 by construction", &s, NULL, 6 + lattice_axis_contacts(5) + 1, 0);
    tl_set_free(&s);

    /* random: 10 big (r = 2) among 2000 small (r = 0.02) */
    tl_set r;
    tl_set_init(&r, 2010);
    uint64_t rng = 99;
    for (size_t i = 0; i < r.n; i++)
        tl_set_put(&r, i, tl_rng_float(&rng, -5, 5), tl_rng_float(&rng, -5, 5),
                   tl_rng_float(&rng, -5, 5), i % 201 == 0 ? 2.0f : 0.02f);
    expect_set("radii 100:1 random", &r, NULL, ANY_COUNT, 0);
    tl_set_free(&r);
}

static void t_exactly_touching(void)
{
    tl_set s;
    tl_set_init(&s, 12);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0.5f); /* |d| = 1 = 0.5 + 0.5: no contact */
    tl_set_put(&s, 1, 1.0f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 2, 200.0f, 0.0f, 0.0f, 0.5f); /* 0.999 apart: contact */
    tl_set_put(&s, 3, 200.999f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 4, 300.0f, 0.0f, 0.0f, 2.5f); /* (3, 4, 0): d2 = 25 = 5^2: none */
    tl_set_put(&s, 5, 303.0f, 4.0f, 0.0f, 2.5f);
    tl_set_put(&s, 6, -400.0f, 0.0f, -7.0f, 0.25f); /* 0.25 + 0.75 = 1 apart: none */
    tl_set_put(&s, 7, -400.0f, 0.0f, -6.0f, 0.75f);
    tl_set_put(&s, 8, 500.0f, 0.0f, 0.0f, 2.5f); /* (3, 4, 0), 2.5 + 2.51: contact */
    tl_set_put(&s, 9, 503.0f, 4.0f, 0.0f, 2.51f);
    tl_set_put(&s, 10, -600.0f, -1.0f, -1.0f, 0.5f); /* negative, touching: none */
    tl_set_put(&s, 11, -600.0f, -1.0f, 0.0f, 0.5f);
    expect_set("touching pairs and near-touching pairs", &s, NULL, 2, 0);
    tl_set_free(&s);

    /* a lattice of spacing exactly 1 with r = 0.5: every neighbour touches, none
     * is a contact (and neighbours sit exactly on cell boundaries) */
    const size_t L = 8;
    tl_set lat;
    tl_set_init(&lat, 0);
    add_lattice(&lat, L, -4.0, -4.0, -4.0, 1.0, 0.5f);
    expect_set("touching lattice, spacing 1, r = 0.5", &lat, NULL, 0, 0);
    /* one interior particle with r = 0.5 + 2^-23: r_i + r_j = 1 + 2^-23 exactly,
     * its square rounds to 1 + 2^-22 > 1: contacts with its 6 axis neighbours */
    size_t centre = (3 * L + 3) * L + 3; /* (a, b, c) = (3, 3, 3) */
    lat.radius[centre] = 0.5f + 0x1p-23f;
    expect_set("touching lattice with one radius 0.5 + 2^-23", &lat, NULL, 6, 0);
    tl_set_free(&lat);
}

/* The normal of every contact of p (sorted, from a kernel) against the
 * coincident rule: (0, 0, 0) when d2 < FLT_MIN, else of unit length within
 * 1e-6 (a property of each contact, not a comparison of kernels). Returns
 * how many contacts had each kind of normal. */
static void check_normals(const ns_particles *p, const ns_contact_list *got, size_t *zero,
                          size_t *unit)
{
    *zero = *unit = 0;
    for (size_t k = 0; k < got->count; k++) {
        const ns_contact *c = &got->items[k];
        const float *pi = p->pos + 3 * (size_t)c->i, *pj = p->pos + 3 * (size_t)c->j;
        float dx = pj[0] - pi[0], dy = pj[1] - pi[1], dz = pj[2] - pi[2];
        float d2 = dx * dx + dy * dy + dz * dz;
        double len = sqrt((double)c->nx * c->nx + (double)c->ny * c->ny + (double)c->nz * c->nz);
        if (d2 < FLT_MIN) {
            (*zero)++;
            CHECK_MSG(tl_bits(c->nx) == 0 && tl_bits(c->ny) == 0 && tl_bits(c->nz) == 0,
                      "contact (%u, %u): d2 %g < FLT_MIN, want the normal +0,+0,+0", c->i, c->j,
                      (double)d2);
        } else {
            (*unit)++;
            CHECK_MSG(fabs(len - 1.0) <= 1e-6, "contact (%u, %u): d2 %g, |normal| = %.9g", c->i,
                      c->j, (double)d2, len);
        }
    }
}

static void t_extreme_values(void)
{
    /* r = 2^60, the largest accepted: (r_i + r_j)^2 = 2^122 is finite. Centres
     * 1e20 apart: dx * dx = 1e40 overflows to inf, no contact; 1e19 and 3e18
     * apart: no contact (d2 finite, above 2^122 = 5.3e36); 2e18 apart and
     * coincident: contacts. */
    const float big = 0x1p60f;
    tl_set s;
    tl_set_init(&s, 10);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, big);
    tl_set_put(&s, 1, 1e20f, 0.0f, 0.0f, big);  /* d2 overflows */
    tl_set_put(&s, 2, 0.0f, 1e19f, 0.0f, big);  /* 1e19 from 0 */
    tl_set_put(&s, 3, 2e18f, 1e19f, 0.0f, big); /* 2e18 from 2: contact */
    tl_set_put(&s, 4, -1e20f, -1e20f, -1e20f, big);
    tl_set_put(&s, 5, -1e20f + 1e18f, -1e20f, -1e20f, big); /* 1e18 from 4: contact */
    tl_set_put(&s, 6, 5e19f, 5e19f, 5e19f, big);
    tl_set_put(&s, 7, 5e19f, 5e19f, 5e19f, big); /* coincident with 6 */
    tl_set_put(&s, 8, 5e19f, -5e19f, 3e18f, big);
    tl_set_put(&s, 9, 5e19f, -5e19f, 0.0f, big); /* 3e18 from 8: no contact */
    expect_set("r = 2^60: centres 1e20 (d2 = inf), 1e19, 3e18 apart none; 2e18, 1e18, 0 apart", &s,
               NULL, 3, 0);
    ns_particles p = tl_particles(&s);
    ns_contact_list got;
    ns_contact_list_init(&got);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        ns_error err;
        check_set_context("r = 2^60: kernel %s", ns_kernel_at(k)->name);
        CHECK_STATUS(tl_find(ns_kernel_at(k), &p, NULL, &got, &err), NS_OK, &err);
        REQUIRE(got.count == 3);
        CHECK_EQ_U(got.items[2].i, 6);
        CHECK_EQ_F32_BITS(got.items[2].overlap, 0x1p61f); /* coincident: r_i + r_j */
        CHECK_EQ_F32_BITS(got.items[2].nx, 0.0f);
    }
    p.radius = NULL;
    p.radius_uniform = big;
    expect_all("radius_uniform = 2^60, the same layout", &p, NULL, 3, 0);
    tl_set_free(&s);

    /* r = 2^-60, the smallest accepted: 50 coincident particles, every pair a
     * contact with overlap 2^-59 and normal (0, 0, 0) (s * s = 2^-118 does
     * not underflow) */
    const float tiny = 0x1p-60f;
    tl_set_init(&s, 50);
    for (size_t i = 0; i < s.n; i++)
        tl_set_put(&s, i, 1.0f, -2.0f, 3.0f, tiny);
    p = tl_particles(&s);
    check_set_context("50 coincident, r = 2^-60");
    expect_set("50 coincident, r = 2^-60: every pair", &s, NULL, 50 * 49 / 2, 0);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        ns_error err;
        check_set_context("50 coincident, r = 2^-60: kernel %s", ns_kernel_at(k)->name);
        CHECK_STATUS(tl_find(ns_kernel_at(k), &p, NULL, &got, &err), NS_OK, &err);
        REQUIRE(got.count == 50 * 49 / 2);
        size_t bad = 0;
        for (size_t c = 0; c < got.count; c++)
            bad += tl_bits(got.items[c].overlap) != tl_bits(0x1p-59f) ||
                   tl_bits(got.items[c].nx) != 0 || tl_bits(got.items[c].ny) != 0 ||
                   tl_bits(got.items[c].nz) != 0;
        CHECK_EQ_U(bad, 0);
    }
    p.radius = NULL;
    p.radius_uniform = tiny;
    expect_all("50 coincident, radius_uniform = 2^-60", &p, NULL, 50 * 49 / 2, 0);
    tl_set_free(&s);

    /* centres 1e-30 apart: d2 = 1e-60 underflows to 0, so the centres count as
     * coincident (normal (0, 0, 0), overlap r_i + r_j) */
    tl_set_init(&s, 4);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 1.0f);
    tl_set_put(&s, 1, 1e-30f, 0.0f, 0.0f, 1.0f);
    tl_set_put(&s, 2, 5.0f, 5.0f, 5.0f, 1.0f);
    tl_set_put(&s, 3, 5.0f, 5.0f, 5.0f + 4.76837158e-07f, 1.0f); /* one ulp at 5 */
    expect_set("centres 1e-30 apart (d2 underflows) and one ulp apart", &s, NULL, 2, 0);
    p = tl_particles(&s);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        ns_error err;
        check_set_context("d2 underflow: kernel %s", ns_kernel_at(k)->name);
        CHECK_STATUS(tl_find(ns_kernel_at(k), &p, NULL, &got, &err), NS_OK, &err);
        REQUIRE(got.count == 2);
        CHECK_EQ_F32_BITS(got.items[0].nx, 0.0f);
        CHECK_EQ_F32_BITS(got.items[0].overlap, 2.0f);
        CHECK_EQ_F32_BITS(got.items[1].nz, 1.0f);
    }
    tl_set_free(&s);

    /* r = 1e-10, centres near 0 at tiny distances (all within 2e-10 of each
     * other, so every pair touches): 1e-25 apart (d2 = 0), 1e-20 and 1e-19
     * (d2 subnormal: below FLT_MIN, the normal is (0, 0, 0)), 1.5e-19, 2e-19
     * and 1e-18 (d2 >= FLT_MIN: a unit normal) */
    const float at[][3] = {{0.0f, 0.0f, 0.0f},      {1e-25f, 0.0f, 0.0f},   {0.0f, 0.0f, 1e-20f},
                           {0.0f, -1e-19f, 0.0f},   {1.5e-19f, 0.0f, 0.0f}, {-2e-19f, 0.0f, 0.0f},
                           {0.0f, 1e-18f, 0.0f},    {0.0f, 0.0f, -1e-18f},  {3e-20f, 4e-20f, 0.0f},
                           {1e-18f, 1e-18f, 1e-18f}};
    const size_t m = sizeof at / sizeof at[0];
    tl_set_init(&s, m);
    for (size_t i = 0; i < m; i++)
        tl_set_put(&s, i, at[i][0], at[i][1], at[i][2], 1e-10f);
    expect_set("r = 1e-10, centres 1e-25 to 1e-18 apart near 0: every pair", &s, NULL,
               m * (m - 1) / 2, 0);
    p = tl_particles(&s);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        ns_error err;
        check_set_context("r = 1e-10, tiny distances: kernel %s", ns_kernel_at(k)->name);
        CHECK_STATUS(tl_find(ns_kernel_at(k), &p, NULL, &got, &err), NS_OK, &err);
        REQUIRE(got.count == m * (m - 1) / 2);
        size_t zero, unit;
        check_normals(&p, &got, &zero, &unit);
        CHECK_CMP_U(zero, >=, 4); /* the case is not vacuous either way */
        CHECK_CMP_U(unit, >=, 10);
        /* 0 and 1 (1e-25 apart): coincident; 0 and 6 (1e-18 apart): (0, 1, 0) */
        CHECK_EQ_U(got.items[0].j, 1);
        CHECK_EQ_F32_BITS(got.items[0].nx, 0.0f);
        CHECK_EQ_F32_BITS(got.items[0].overlap, 2e-10f);
        CHECK_EQ_U(got.items[5].j, 6);
        CHECK_EQ_F32_BITS(got.items[5].ny, 1.0f);
        /* 0 and 2 (1e-20 apart, d2 = 1e-40 subnormal): (0, 0, 0) */
        CHECK_EQ_U(got.items[1].j, 2);
        CHECK_EQ_F32_BITS(got.items[1].nz, 0.0f);
    }
    printf("tiny distances: %zu contacts\n", got.count);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

static void t_n_0_and_1(void)
{
    tl_set s;
    tl_set_init(&s, 0);
    expect_set("n = 0", &s, NULL, 0, 0);
    ns_particles p = tl_particles(&s);
    p.radius = NULL;
    p.radius_uniform = 1.0f;
    expect_all("n = 0, radius_uniform", &p, NULL, 0, 0);
    tl_set_free(&s);

    tl_set_init(&s, 1);
    tl_set_put(&s, 0, -3.0f, 2.0f, 1e6f, 4.0f);
    expect_set("n = 1", &s, NULL, 0, 0);
    tl_set_free(&s);

    tl_set_init(&s, 2);
    tl_set_put(&s, 0, -3.0f, 2.0f, 1.0f, 4.0f);
    tl_set_put(&s, 1, -3.0f, 2.0f, 1.0f, 4.0f);
    expect_set("n = 2 coincident", &s, NULL, 1, 0);

    /* a list holding contacts is emptied by a search over 0 or 1 particles */
    ns_contact_list got;
    ns_contact_list_init(&got);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_error err;
        ns_particles two = tl_particles(&s);
        check_set_context("reused list emptied by n = 0 / 1: kernel %s", K->name);
        CHECK_STATUS(tl_find(K, &two, NULL, &got, &err), NS_OK, &err);
        CHECK_EQ_U(got.count, 1);
        two.n = 1;
        CHECK_STATUS(tl_find(K, &two, NULL, &got, &err), NS_OK, &err);
        CHECK_EQ_U(got.count, 0);
        two.n = 2;
        CHECK_STATUS(tl_find(K, &two, NULL, &got, &err), NS_OK, &err);
        two.n = 0;
        CHECK_STATUS(tl_find(K, &two, NULL, &got, &err), NS_OK, &err);
        CHECK_EQ_U(got.count, 0);
    }
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* Expects NS_ERR_INVALID_INPUT naming particle `bad` (NS_NO_PARTICLE: none)
 * from validation, every kernel and every build. */
static void expect_invalid(const char *what, const ns_particles *p, size_t bad)
{
    ns_error err;
    ns_contact_list got;
    ns_contact_list_init(&got);
    check_set_context("%s: ns_particles_validate", what);
    err.particle = 12345678;
    CHECK_STATUS(ns_particles_validate(p, &err), NS_ERR_INVALID_INPUT, &err);
    CHECK_EQ_I(err.status, NS_ERR_INVALID_INPUT);
    CHECK(err.message[0] != '\0');
    CHECK_EQ_U(err.particle, bad);
    CHECK_STATUS(ns_particles_validate(p, NULL), NS_ERR_INVALID_INPUT, NULL);

    /* a valid search first, so the list holds contacts */
    tl_set ok;
    tl_set_init(&ok, 2);
    tl_set_put(&ok, 1, 0.1f, 0.0f, 0.0f, 1.0f);
    tl_set_put(&ok, 0, 0.0f, 0.0f, 0.0f, 1.0f);
    ns_particles okp = tl_particles(&ok);

    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        check_set_context("%s: kernel %s", what, K->name);
        CHECK_STATUS(tl_find(K, &okp, NULL, &got, &err), NS_OK, &err);
        CHECK_EQ_U(got.count, 1);
        err.particle = 12345678;
        CHECK_STATUS(tl_find(K, p, NULL, &got, &err), NS_ERR_INVALID_INPUT, &err);
        CHECK_EQ_U(err.particle, bad);
        CHECK_EQ_U(got.count, 0);
        CHECK_STATUS(ns_find_contacts(K, p, NULL, &got, NULL), NS_ERR_INVALID_INPUT, NULL);

        ns_index *index = NULL;
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        err.particle = 12345678;
        CHECK_STATUS(ns_index_build(index, p, &err), NS_ERR_INVALID_INPUT, &err);
        CHECK_EQ_U(err.particle, bad);
        /* the index still works with good input afterwards */
        CHECK_STATUS(ns_index_build(index, &okp, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
        CHECK_EQ_U(got.count, 1);
        ns_index_destroy(index);
    }
    ns_contact_list_free(&got);
    tl_set_free(&ok);
}

static void t_invalid_input(void)
{
    const float bad_values[] = {NAN, INFINITY, -INFINITY};
    const char *bad_names[] = {"NaN", "+inf", "-inf"};
    const size_t n = 10;
    tl_set s;
    char what[160];

    for (int v = 0; v < 3; v++)
        for (int c = 0; c < 3; c++) {
            tl_set_init(&s, n);
            for (size_t i = 0; i < n; i++)
                tl_set_put(&s, i, (float)i * 0.3f, -(float)i, 0.5f, 0.5f);
            s.pos[3 * 6 + c] = bad_values[v];
            s.pos[3 * 8 + (c + 1) % 3] = bad_values[v]; /* a later bad particle */
            ns_particles p = tl_particles(&s);
            snprintf(what, sizeof what, "coordinate %c of particle 6 = %s", "xyz"[c], bad_names[v]);
            expect_invalid(what, &p, 6);
            p.radius = NULL;
            p.radius_uniform = 0.5f;
            snprintf(what, sizeof what, "coordinate %c of particle 6 = %s (radius_uniform)",
                     "xyz"[c], bad_names[v]);
            expect_invalid(what, &p, 6);
            tl_set_free(&s);
        }

    const float bad_radii[] = {NAN, INFINITY, -INFINITY, -1.0f, -1e-45f};
    const char *bad_radius_names[] = {"NaN", "+inf", "-inf", "-1", "-1e-45 (denormal)"};
    for (int v = 0; v < 5; v++) {
        tl_set_init(&s, n);
        for (size_t i = 0; i < n; i++)
            tl_set_put(&s, i, (float)i, 0.0f, 0.0f, 0.5f);
        s.radius[3] = bad_radii[v];
        s.radius[9] = -2.0f;
        ns_particles p = tl_particles(&s);
        snprintf(what, sizeof what, "radius of particle 3 = %s", bad_radius_names[v]);
        expect_invalid(what, &p, 3);
        tl_set_free(&s);
    }

    /* the first bad particle, whatever is wrong with it */
    tl_set_init(&s, n);
    for (size_t i = 0; i < n; i++)
        tl_set_put(&s, i, (float)i, 0.0f, 0.0f, 0.5f);
    s.pos[3 * 7 + 1] = NAN;
    s.radius[4] = -1.0f;
    ns_particles p = tl_particles(&s);
    expect_invalid("bad radius at 4 before a bad coordinate at 7", &p, 4);
    s.radius[4] = 0.5f;
    s.pos[3 * 2 + 2] = INFINITY;
    s.radius[5] = NAN;
    expect_invalid("bad coordinate at 2 before a bad radius at 5", &p, 2);
    s.pos[3 * 2 + 2] = 0.0f;
    s.pos[3 * 0 + 0] = -INFINITY;
    expect_invalid("bad coordinate at particle 0", &p, 0);
    tl_set_free(&s);

    /* radius_uniform is ignored when radius is given */
    const float ignored[] = {-1.0f, NAN, INFINITY};
    for (int v = 0; v < 3; v++) {
        tl_set_init(&s, n);
        for (size_t i = 0; i < n; i++)
            tl_set_put(&s, i, (float)i * 0.75f, 0.0f, 0.0f, 0.5f);
        p = tl_particles(&s);
        p.radius_uniform = ignored[v];
        snprintf(what, sizeof what, "per-particle radii with radius_uniform = %g (ignored)",
                 (double)ignored[v]);
        check_set_context("%s: ns_particles_validate", what);
        ns_error err;
        CHECK_STATUS(ns_particles_validate(&p, &err), NS_OK, &err);
        expect_all(what, &p, NULL, n - 1, 0);
        tl_set_free(&s);
    }

    /* a bad uniform radius is no one particle's: none is named */
    const float bad_uniform[] = {-1.0f, NAN, INFINITY, -INFINITY};
    for (int v = 0; v < 4; v++) {
        tl_set_init(&s, n);
        for (size_t i = 0; i < n; i++)
            tl_set_put(&s, i, (float)i, 0.0f, 0.0f, 0.5f);
        p = tl_particles(&s);
        p.radius = NULL;
        p.radius_uniform = bad_uniform[v];
        snprintf(what, sizeof what, "radius_uniform = %g", (double)bad_uniform[v]);
        expect_invalid(what, &p, NS_NO_PARTICLE);
        tl_set_free(&s);
    }
}

/* Radii outside [2^-60, 2^60] (other than 0) are refused by validation and
 * by every kernel with the same status, particle and message; the bounds
 * themselves are accepted. */
static void t_radius_range(void)
{
    const size_t n = 10;
    const struct {
        const char *name;
        float r;
    } bad[] = {{"1e-30", 1e-30f},
               {"3e38", 3e38f},
               {"2^60 * 1.0000001", 0x1p60f * 1.0000001f},
               {"the float below 2^-60", 0x1.fffffep-61f},
               {"FLT_MAX", FLT_MAX},
               {"1e-45 (subnormal)", 1e-45f},
               {"FLT_MIN", FLT_MIN}};
    tl_set s;
    char what[200];
    ns_contact_list got;
    ns_contact_list_init(&got);
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        CHECK_MSG(!(bad[b].r == 0.0f || (bad[b].r >= 0x1p-60f && bad[b].r <= 0x1p60f)),
                  "%s is in the range: the case is wrong", bad[b].name);
        for (int uniform = 0; uniform < 2; uniform++) {
            tl_set_init(&s, n);
            for (size_t i = 0; i < n; i++)
                tl_set_put(&s, i, (float)i * 0.5f, 0.0f, 0.0f, 0.5f);
            s.radius[3] = bad[b].r;
            s.radius[7] = 1e-35f; /* a later bad one */
            ns_particles p = tl_particles(&s);
            if (uniform) {
                p.radius = NULL;
                p.radius_uniform = bad[b].r;
            }
            snprintf(what, sizeof what, "%s = %s", uniform ? "radius_uniform" : "radius of 3",
                     bad[b].name);
            expect_invalid(what, &p, uniform ? NS_NO_PARTICLE : 3);
            /* the message: the particle, the value and the range */
            ns_error ref, err;
            check_set_context("%s: the message", what);
            CHECK_STATUS(ns_particles_validate(&p, &ref), NS_ERR_INVALID_INPUT, &ref);
            CHECK_STR_CONTAINS(ref.message, uniform ? "uniform radius" : "particle 3: radius");
            CHECK_STR_CONTAINS(ref.message, "outside [8.67361738e-19, 1.1529215e+18]");
            CHECK_STR_CONTAINS(ref.message, "2^-60 to 2^60");
            for (size_t k = 0; k < ns_kernel_count(); k++) {
                const ns_kernel *K = ns_kernel_at(k);
                for (int path = 0; path < 2; path++) {
                    check_set_context("%s: kernel %s via %s: the same refusal", what, K->name,
                                      path ? "index" : "ns_find_contacts");
                    ns_status st = path ? tl_find_index(K, &p, NULL, &got, &err)
                                        : tl_find(K, &p, NULL, &got, &err);
                    CHECK_STATUS(st, NS_ERR_INVALID_INPUT, &err);
                    CHECK_MSG(strcmp(err.message, ref.message) == 0, "\"%s\" != \"%s\"",
                              err.message, ref.message);
                    CHECK_EQ_U(err.particle, ref.particle);
                }
            }
            printf("%-50s refused: %s\n", what, ref.message);
            tl_set_free(&s);
        }
    }

    /* the bounds and 0 are accepted, mixed */
    tl_set_init(&s, 6);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0x1p-60f);
    tl_set_put(&s, 1, 0.0f, 0.0f, 0.0f, 0x1p-60f);
    tl_set_put(&s, 2, 0.0f, 0.0f, 0.0f, 0.0f);
    tl_set_put(&s, 3, 1e18f, 0.0f, 0.0f, 0x1p60f);
    tl_set_put(&s, 4, 1e18f, 2e18f, 0.0f, 0x1p60f);
    tl_set_put(&s, 5, 1e18f, 2e18f, 1e17f, 0.0f);
    /* 0-1 (coincident), 0-2, 1-2 (2^-60 + 0 > 0), 0/1/2 with 3 (1e18 < 2^60),
     * 3-4 (2e18 < 2^61), 3-5 (2.002e18 > 2^60: none), 4-5 (1e17 < 2^60);
     * 0/1/2 with 4, 5: about 2.2e18 apart, beyond 2^60 + 2^-60 */
    expect_set("radii 2^-60, 2^60 and 0 together", &s, NULL, ANY_COUNT, 0);
    ns_particles p = tl_particles(&s);
    ns_error err;
    check_set_context("radii 2^-60, 2^60 and 0: ns_particles_validate");
    CHECK_STATUS(ns_particles_validate(&p, &err), NS_OK, &err);
    tl_set_free(&s);
    ns_contact_list_free(&got);
}

static void t_too_many_particles(void)
{
#if SIZE_MAX > UINT32_MAX
    static float pos[12], radius[4];
    const size_t ns[] = {NS_MAX_PARTICLES + 1, (size_t)1 << 40, SIZE_MAX / 3, SIZE_MAX};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        ns_particles p = {.n = ns[t], .pos = pos, .radius = radius, .radius_uniform = 0};
        ns_error err;
        check_set_context("n = %zu: ns_particles_validate", ns[t]);
        CHECK_STATUS(ns_particles_validate(&p, &err), NS_ERR_TOO_LARGE, &err);
        ns_contact_list got;
        ns_contact_list_init(&got);
        for (size_t k = 0; k < ns_kernel_count(); k++) {
            const ns_kernel *K = ns_kernel_at(k);
            check_set_context("n = %zu: kernel %s", ns[t], K->name);
            CHECK_STATUS(tl_find(K, &p, NULL, &got, &err), NS_ERR_TOO_LARGE, &err);
            p.radius = NULL;
            CHECK_STATUS(tl_find_index(K, &p, NULL, &got, &err), NS_ERR_TOO_LARGE, &err);
            p.radius = radius;
        }
        ns_contact_list_free(&got);
    }
#else
    printf("size_t is 32 bits: n cannot exceed NS_MAX_PARTICLES\n");
    CHECK(1);
#endif
}

static void t_grid_dense_memory_cap(void)
{
    /* a contact near 0 and a lonely particle far away: 1 contact */
    tl_set s;
    tl_set_init(&s, 3);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 1, 0.5f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 2, 1000.0f, 1000.0f, 1000.0f, 0.5f); /* ~1e9 cells */
    ns_particles p = tl_particles(&s);

    ns_config tiny = ns_config_default();
    tiny.grid_max_bytes = 4096;
    ns_config dflt = ns_config_default(); /* 1 GiB cap */
    tl_set s2;
    tl_set_init(&s2, 3);
    memcpy(s2.pos, s.pos, 9 * sizeof(float));
    memcpy(s2.radius, s.radius, 3 * sizeof(float));
    tl_set_put(&s2, 2, 1e5f, -1e5f, 1e5f, 0.5f); /* ~8e15 cells: over the default cap */
    ns_particles p2 = tl_particles(&s2);

    int dense_seen = 0;
    ns_contact_list got;
    ns_contact_list_init(&got);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        for (int c = 0; c < 2; c++) {
            const ns_particles *pp = c ? &p2 : &p;
            const ns_config *cfg = c ? &dflt : &tiny;
            ns_error err;
            check_set_context("%s with %s: kernel %s",
                              c ? "far particle at 1e5" : "far particle at 1e3",
                              c ? "the default grid_max_bytes" : "grid_max_bytes = 4096", K->name);
            for (int path = 0; path < 2; path++) {
                ns_status st =
                    path ? tl_find_index(K, pp, cfg, &got, &err) : tl_find(K, pp, cfg, &got, &err);
                if (K->domain_memory) {
                    dense_seen = 1;
                    CHECK_STATUS(st, NS_ERR_TOO_LARGE, &err);
                    CHECK_MSG(contains_nocase(err.message, "byte"),
                              "message should give the bytes needed: \"%s\"", err.message);
                    CHECK_EQ_U(got.count, 0);
                } else {
                    CHECK_STATUS(st, NS_OK, &err);
                    CHECK_EQ_U(got.count, 1);
                }
            }
        }
    }
    check_set_context("grid_dense is in the kernel table");
    CHECK(dense_seen);

    /* the dense grid works when the cap allows it */
    const ns_kernel *dense = ns_kernel_find("grid_dense");
    if (dense != NULL) {
        ns_config big = ns_config_default();
        big.grid_max_bytes = (size_t)1 << 28;
        ns_error err;
        s.pos[6] = s.pos[7] = s.pos[8] = 10.0f;
        check_set_context("grid_dense, compact layout, cap 256 MiB");
        CHECK_STATUS(tl_find(dense, &p, &big, &got, &err), NS_OK, &err);
        CHECK_EQ_U(got.count, 1);
        ns_index *index = NULL;
        REQUIRE(ns_index_create(dense, &big, &index, &err) == NS_OK);
        CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
        ns_index_info info;
        ns_index_get_info(index, &info);
        CHECK_CMP_U(info.bytes, >, 0);
        CHECK_CMP_U(info.bytes, <=, big.grid_max_bytes);
        CHECK_CMP_U(info.cells, >=, 1);
        ns_index_destroy(index);
    }
    ns_contact_list_free(&got);
    tl_set_free(&s);
    tl_set_free(&s2);
}

static void t_max_contacts(void)
{
    tl_set s;
    tl_generate(tl_workload("uniform"), 2000, 3, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list own, got;
    ns_contact_list_init(&own);
    ns_contact_list_init(&got);
    tl_reference(&p, &own);
    size_t C = own.count;
    check_set_context("max_contacts: uniform n=2000 seed=3");
    REQUIRE(C > 2);

    const size_t limits[] = {1, C / 2, C - 1, C, C + 1};
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
            ns_config cfg = ns_config_default();
            cfg.max_contacts = limits[l];
            ns_status want = limits[l] < C ? NS_ERR_TOO_MANY_CONTACTS : NS_OK;
            for (int path = 0; path < 2; path++) {
                ns_error err;
                check_set_context("kernel %s, %zu contacts, max_contacts = %zu, via %s", K->name, C,
                                  limits[l], path ? "index" : "ns_find_contacts");
                ns_status st = path ? tl_find_index(K, &p, &cfg, &got, &err)
                                    : tl_find(K, &p, &cfg, &got, &err);
                CHECK_STATUS(st, want, &err);
                if (want == NS_OK) {
                    CHECK_EQ_U(got.count, C);
                    tl_compare_reference(&own, &got, check_context);
                } else {
                    CHECK_EQ_U(got.count, 0);
                }
            }
        }
    }
    printf("max_contacts checked around %zu contacts\n", C);
    ns_contact_list_free(&own);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* An allocator that counts the bytes it has handed out (a size header in
 * front of each block) and the peak, realloc counting both blocks while it
 * copies. Thread-safe: parallel kernels allocate inside OpenMP regions. */
static atomic_size_t live_bytes, peak_bytes;
enum { HEADER = 16 };

static void note(size_t now)
{
    size_t peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now))
        ;
}
static void *count_malloc(size_t size, void *ctx)
{
    (void)ctx;
    unsigned char *p = malloc(size + HEADER);
    if (!p)
        return NULL;
    memcpy(p, &size, sizeof size);
    note(atomic_fetch_add(&live_bytes, size) + size);
    return p + HEADER;
}
static void *count_realloc(void *ptr, size_t size, void *ctx)
{
    if (!ptr)
        return count_malloc(size, ctx);
    unsigned char *base = (unsigned char *)ptr - HEADER;
    size_t old;
    memcpy(&old, base, sizeof old);
    note(atomic_load(&live_bytes) + size); /* the old block and the new */
    unsigned char *q = realloc(base, size + HEADER);
    if (!q)
        return NULL;
    memcpy(q, &size, sizeof size);
    atomic_fetch_add(&live_bytes, size);
    atomic_fetch_sub(&live_bytes, old);
    return q + HEADER;
}
static void count_free(void *ptr, void *ctx)
{
    (void)ctx;
    if (!ptr)
        return;
    unsigned char *base = (unsigned char *)ptr - HEADER;
    size_t size;
    memcpy(&size, base, sizeof size);
    atomic_fetch_sub(&live_bytes, size);
    free(base);
}

/* The contact limit is global: n coincident particles (every pair a
 * contact) with a limit below, at and above their count, through every
 * kernel at 1, 2 and 8 threads. A refusal has naive's status and message;
 * the memory a search holds at its peak, per-thread buffers and realloc
 * copies included, stays below 3 x max_contacts x 24 bytes plus a fixed
 * allowance (the index, 1024 contacts per thread), whatever the thread
 * count. */
static void t_max_contacts_global(void)
{
    ns_allocator a = {count_malloc, count_realloc, count_free, NULL};
    ns_set_allocator(&a);
    const size_t n = 2000, total = n * (n - 1) / 2;
    tl_set s;
    tl_set_init(&s, n);
    for (size_t i = 0; i < n; i++)
        tl_set_put(&s, i, 1.5f, -2.5f, 0.25f, 0.5f);
    ns_particles p = tl_particles(&s);
    const size_t limits[] = {1, 1000, 100000, total - 1, total};
    const int threads[] = {1, 2, 8};
    const size_t slack = (size_t)4 << 20;
    ns_contact_list got;
    for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
        ns_config cfg = ns_config_default();
        cfg.max_contacts = limits[l];
        ns_status want = limits[l] < total ? NS_ERR_TOO_MANY_CONTACTS : NS_OK;
        ns_error ref;
        ns_contact_list_init(&got);
        check_set_context("%zu coincident, max_contacts %zu: naive", n, limits[l]);
        CHECK_STATUS(tl_find(tl_kernel("naive"), &p, &cfg, &got, &ref), want, &ref);
        ns_contact_list_free(&got);
        size_t bound = 3 * limits[l] * sizeof(ns_contact) + slack;
        size_t worst = 0;
        for (size_t k = 0; k < ns_kernel_count(); k++) {
            const ns_kernel *K = ns_kernel_at(k);
            for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
                if (!K->parallel && t > 0)
                    continue;
                cfg.threads = threads[t];
                cfg.exact_threads = true; /* the parallel code at every n */
                check_set_context("%zu coincident (%zu contacts), max_contacts %zu: kernel %s, "
                                  "threads %d",
                                  n, total, limits[l], K->name, threads[t]);
                ns_contact_list_init(&got);
                size_t before = atomic_load(&live_bytes);
                atomic_store(&peak_bytes, before);
                ns_error err;
                /* not tl_find: its sort would allocate too */
                ns_status st = ns_find_contacts(K, &p, &cfg, &got, &err);
                size_t peak = atomic_load(&peak_bytes) - before;
                CHECK_STATUS(st, want, &err);
                tl_check_error(st, &err);
                if (st != NS_OK) {
                    CHECK_EQ_U(got.count, 0);
                    CHECK_MSG(strcmp(err.message, ref.message) == 0, "\"%s\" != naive's \"%s\"",
                              err.message, ref.message);
                    CHECK_EQ_U(err.particle, ref.particle);
                } else {
                    CHECK_EQ_U(got.count, total);
                }
                CHECK_MSG(peak <= bound, "peak %zu bytes, more than 3 x %zu x 24 + %zu = %zu", peak,
                          limits[l], slack, bound);
                worst = peak > worst ? peak : worst;
                ns_contact_list_free(&got);
                CHECK_EQ_U(atomic_load(&live_bytes), before); /* nothing kept */
            }
        }
        printf("max_contacts %8zu of %zu: %s; peak %zu bytes (%.2f x max_contacts x 24)\n",
               limits[l], total, ns_status_str(want), worst,
               (double)worst / (double)(limits[l] * sizeof(ns_contact)));
    }
    /* an index reused: a query at the limit, then refusals, then again */
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_config cfg = ns_config_default();
        cfg.threads = 8;
        cfg.exact_threads = true; /* the parallel code at every n */
        cfg.max_contacts = 100000;
        check_set_context("kernel %s: one index, max_contacts 100000, refusals and a success",
                          K->name);
        ns_index *index = NULL;
        ns_error err;
        REQUIRE(ns_index_create(K, &cfg, &index, &err) == NS_OK);
        ns_contact_list_init(&got);
        size_t before = atomic_load(&live_bytes);
        atomic_store(&peak_bytes, before);
        ns_particles small = p;
        small.n = 400; /* 79800 contacts: under the limit */
        for (int round = 0; round < 4; round++) {
            const ns_particles *pp = round % 2 ? &p : &small;
            CHECK_STATUS(ns_index_build(index, pp, &err), NS_OK, &err);
            ns_status st = ns_index_query(index, &got, &err);
            CHECK_STATUS(st, round % 2 ? NS_ERR_TOO_MANY_CONTACTS : NS_OK, &err);
        }
        size_t peak = atomic_load(&peak_bytes) - before;
        size_t bound = 3 * cfg.max_contacts * sizeof(ns_contact) + slack;
        CHECK_MSG(peak <= bound, "peak %zu bytes over 4 queries, more than %zu", peak, bound);
        ns_index_destroy(index);
        ns_contact_list_free(&got);
    }
    tl_set_free(&s);
    ns_set_allocator(NULL);
}

static void t_reference_predicate(void)
{
    /* every kernel on every workload against the test's own predicate */
    for (size_t w = 0; w < ns_workload_count(); w++) {
        const ns_workload *W = ns_workload_at(w);
        for (uint64_t seed = 11; seed <= 12; seed++) {
            tl_set s;
            tl_generate(W, 2000, seed, &s);
            char what[160];
            snprintf(what, sizeof what, "workload %s n=2000 seed=%llu", W->name,
                     (unsigned long long)seed);
            expect_set(what, &s, NULL, ANY_COUNT, seed == 12 ? SKIP_INDEX_PATH : 0);
            tl_set_free(&s);
        }
    }
}

static void t_list_reuse(void)
{
    tl_set big, small;
    tl_generate(tl_workload("uniform"), 3000, 21, &big);
    tl_generate(tl_workload("uniform"), 300, 22, &small);
    ns_particles pb = tl_particles(&big), ps = tl_particles(&small);
    ns_contact_list ref_big, ref_small, got;
    ns_contact_list_init(&ref_big);
    ns_contact_list_init(&ref_small);
    tl_reference(&pb, &ref_big);
    tl_reference(&ps, &ref_small);
    check_set_context("list reuse: reference counts");
    REQUIRE(ref_big.count > ref_small.count);
    REQUIRE(ref_small.count > 0);

    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_error err;
        ns_contact_list_init(&got);
        check_set_context("list reuse: kernel %s", K->name);
        CHECK(got.items == NULL && got.count == 0 && got.capacity == 0);
        CHECK_STATUS(tl_find(K, &pb, NULL, &got, &err), NS_OK, &err);
        tl_lists_equal(&ref_big, &got, "first search");
        size_t cap = got.capacity;
        CHECK_CMP_U(cap, >=, ref_big.count);
        CHECK_STATUS(tl_find(K, &pb, NULL, &got, &err), NS_OK, &err);
        tl_compare_reference(&ref_big, &got, "second search, same list");
        CHECK_EQ_U(got.capacity, cap); /* nothing to grow */
        CHECK_STATUS(tl_find(K, &ps, NULL, &got, &err), NS_OK, &err);
        tl_compare_reference(&ref_small, &got, "smaller set, same list");
        CHECK_CMP_U(got.capacity, >=, cap); /* never shrinks */
        CHECK_STATUS(tl_find(K, &pb, NULL, &got, &err), NS_OK, &err);
        tl_compare_reference(&ref_big, &got, "big set again");
        CHECK_EQ_U(got.capacity, cap);

        /* a list that was reserved beforehand is used as is */
        ns_contact_list pre;
        ns_contact_list_init(&pre);
        CHECK_STATUS(ns_contact_list_reserve(&pre, ref_big.count + 100, &err), NS_OK, &err);
        size_t pre_cap = pre.capacity;
        CHECK_STATUS(tl_find(K, &pb, NULL, &pre, &err), NS_OK, &err);
        tl_compare_reference(&ref_big, &pre, "reserved list");
        CHECK_EQ_U(pre.capacity, pre_cap);
        ns_contact_list_free(&pre);

        /* one index, many builds (frames) into one list */
        ns_index *index = NULL;
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        for (int frame = 0; frame < 4; frame++) {
            const ns_particles *pp = frame % 2 ? &ps : &pb;
            const ns_contact_list *ref = frame % 2 ? &ref_small : &ref_big;
            CHECK_STATUS(ns_index_build(index, pp, &err), NS_OK, &err);
            for (int q = 0; q < 2; q++) {
                CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
                ns_contact_list_sort(&got);
                tl_compare_reference(ref, &got, "index frames");
            }
            CHECK_CMP_U(got.capacity, >=, cap);
        }
        ns_index_destroy(index);
        ns_contact_list_free(&got);
    }
    ns_contact_list_free(&ref_big);
    ns_contact_list_free(&ref_small);
    tl_set_free(&big);
    tl_set_free(&small);
}

static const tl_case cases[] = {
    {"negative_coords", .run = t_negative_coords},
    {"coords_1e6", .run = t_coords_1e6},
    {"coords_1e12", .run = t_coords_1e12},
    {"cell_coords_64bit", .run = t_cell_coords_64bit},
    {"cell_coords_too_large", .run = t_cell_coords_too_large},
    {"hash_table_sizes", .run = t_hash_table_sizes},
    {"one_cell", .run = t_one_cell},
    {"coincident_500", .run = t_coincident_500},
    {"signed_zero", .run = t_signed_zero},
    {"zero_radii", .run = t_zero_radii},
    {"radii_100_to_1", .run = t_radii_100_to_1},
    {"exactly_touching", .run = t_exactly_touching},
    {"extreme_values", .run = t_extreme_values},
    {"n_0_and_1", .run = t_n_0_and_1},
    {"invalid_input", .run = t_invalid_input},
    {"radius_range", .run = t_radius_range},
    {"too_many_particles", .run = t_too_many_particles},
    {"grid_dense_memory_cap", .run = t_grid_dense_memory_cap},
    {"max_contacts", .run = t_max_contacts},
    {"max_contacts_global", .run = t_max_contacts_global},
    {"reference_predicate", .run = t_reference_predicate},
    {"list_reuse", .run = t_list_reuse},
};

int main(int argc, char **argv)
{
    static const tl_suite suite = {"pitfall", "pitfalls", 3, -1};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

/* test_sim.c - the particle simulation (ns_sim_*), search reuse with a skin
 * (ns_skin_*) and the settled workload, black-box against include/nsearch.h.
 *
 * usage: test_sim CASE [ARG]     (no argument: list the cases; --ctest: the ctests)
 *
 *   spawn             ns_sim_spawn: coordinates the layout's scaled exactly (2, 2, 8
 *                     as `nsearch sim --help` says), radii kept, room of two largest
 *                     radii around the spheres; ns_sim_params_default
 *   box L [raw|violent]  layout L (uniform, dambreak, polydisperse) spawned (or its
 *                     own overlapping positions, or with dt 0.05, gravity 60 and
 *                     2 passes), grid_sorted, 300 frames: after every frame every
 *                     sphere lies inside the box and every value is finite
 *   free_fall         one sphere: falls along -z only, comes to rest on the floor
 *                     at box_lo[2] + r exactly; energies against their definitions
 *   settle            2000 uniform spheres until at rest: overlaps (naive on the
 *                     final positions) <= 5% of the smaller radius, kinetic energy
 *                     <= 1% of the potential energy released
 *   settled           ns_sim_settled(3000, 1): overlaps <= 5%, bit-identical at
 *                     threads 1 and 3, ns_workload_generate("settled") the same
 *   deterministic L   two sims at threads 1, one at 3, one at 8, 100 frames:
 *                     bit-identical positions, velocities and sorted contacts
 *                     after every frame
 *   kernels_agree L [raw]  every kernel of the table runs the same sim (layout L
 *                     spawned, or with `raw` its own overlapping positions):
 *                     positions and sorted contacts bit-identical to naive's after
 *                     every frame (grid_dense may refuse with NS_ERR_TOO_LARGE: skipped)
 *   skin_sim          params.skin 0.1 and 0.3 (grid_sorted), 0.2 (hash_parallel)
 *                     against no skin: bit-identical frames and sorted contacts,
 *                     and searches reused once the pile rests
 *   skin_api          ns_skin_search against naive on moving particle sequences
 *                     (small and large moves, radius and n changes) with the
 *                     documented rebuild rule; info counters
 *   skin_edges        NaN coordinate, skin 0, skin too small for the coordinates,
 *                     bad skins, NULL arguments, radius_uniform, max_contacts on
 *                     the rebuild and on the reuse path
 *   skin_limits       a skin above the largest diameter refused (ns_skin_search,
 *                     ns_sim_create), at it accepted; every radius 0; a search
 *                     radius outside the exact range; candidates over 2 x
 *                     max_contacts (a direct search) and over max_contacts (the
 *                     counted filter): still naive's contacts and refusals
 *   skin_huge         every finite skin accepted by ns_skin_create (FLT_MAX too),
 *                     refused by a search for radii 0.5, direct for radii 0;
 *                     radii 2^59 and 2^60 with skins 2^60 and 2^61
 *   skin_info_failures  a failed search (NaN, skin over the diameter, too many
 *                     contacts before or after the kernel ran) leaves
 *                     ns_skin_info as it was
 *   skin_growth       a set compressed a little every frame, so that each rebuild
 *                     finds a few more candidates than the last: the contacts are
 *                     naive's, and the caller's list grows with room (at most 3
 *                     times over 40 frames, never short of the candidates), not
 *                     to the exact count at every rebuild
 *   degenerate        zero radii (some, all), coincident spheres, a tiny scale:
 *                     finite, inside the box, naive = grid_sorted = a skin
 *   errors            ns_sim_create's documented refusals (bad params, empty box,
 *                     a particle larger than the box, NULL pointers, NaN input)
 *   settled_tiles     ns__sim_settled_piles (src/sim/sim.h) with small piles:
 *                     finite, thread-count independent, overlaps <= 5%, a single
 *                     pile independent of the block size */
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Private (src/sim/sim.h): ns_sim_settled with piles of at most `block`. */
ns_status ns__sim_settled_piles(size_t n, uint64_t seed, int threads, size_t block, float *pos,
                                float *radius, ns_error *err);

#define MAX_OVERLAP_FRACTION 0.05 /* of the smaller radius of a touching pair */

/* ---- helpers ---- */

/* A layout spawned for the simulation. */
typedef struct spawned {
    tl_set s;
    float lo[3], hi[3];
} spawned;

static void spawn(const char *layout, size_t n, uint64_t seed, spawned *sp)
{
    tl_set_init(&sp->s, n);
    ns_error err;
    CHECK_STATUS(ns_sim_spawn(tl_workload(layout), n, seed, 1, sp->s.pos, sp->s.radius, sp->lo,
                              sp->hi, &err),
                 NS_OK, &err);
}

static ns_sim_params params_for(const spawned *sp)
{
    ns_sim_params prm = ns_sim_params_default();
    memcpy(prm.box_lo, sp->lo, sizeof prm.box_lo);
    memcpy(prm.box_hi, sp->hi, sizeof prm.box_hi);
    return prm;
}

static ns_sim *make_sim(const ns_kernel *K, int threads, const ns_sim_params *prm, const tl_set *s)
{
    ns_config cfg = ns_config_default();
    cfg.threads = threads;
    cfg.exact_threads = true; /* the parallel code at every n */
    ns_sim *sim = NULL;
    ns_error err;
    tl_poison_error(&err);
    ns_status st = ns_sim_create(K, &cfg, prm, s->n, s->pos, s->radius, &sim, &err);
    if (st != NS_OK)
        fprintf(stderr, "ns_sim_create(%s): %s: %s\n", K->name, ns_status_str(st), err.message);
    REQUIRE(st == NS_OK);
    REQUIRE(sim != NULL);
    return sim;
}

static void step(ns_sim *sim, ns_sim_frame *frame)
{
    ns_error err;
    tl_poison_error(&err);
    ns_status st = ns_sim_step(sim, frame, &err);
    CHECK_STATUS(st, NS_OK, &err);
    REQUIRE(st == NS_OK);
}

/* Every sphere inside [lo, hi] (lo + r <= x <= hi - r in float) and every
 * position and velocity finite; returns the number of violations (reports
 * the first). */
static size_t check_inside(const ns_sim *sim, const float lo[3], const float hi[3], size_t frame)
{
    size_t n = ns_sim_count(sim), bad = 0;
    const float *x = ns_sim_positions(sim), *v = ns_sim_velocities(sim), *r = ns_sim_radii(sim);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            float p = x[3 * i + k];
            int ok =
                isfinite(p) && isfinite(v[3 * i + k]) && lo[k] + r[i] <= p && p <= hi[k] - r[i];
            if (!ok && bad++ == 0) {
                CHECK_COUNT_();
                if (check_fail(__FILE__, __LINE__))
                    fprintf(stderr,
                            "  frame %zu: particle %zu axis %d: x = %.9g v = %.9g r = %.9g, box "
                            "[%.9g, %.9g] (needs %.9g <= x <= %.9g)\n",
                            frame, i, k, (double)p, (double)v[3 * i + k], (double)r[i],
                            (double)lo[k], (double)hi[k], (double)(lo[k] + r[i]),
                            (double)(hi[k] - r[i]));
            }
        }
    }
    CHECK_COUNT_();
    return bad;
}

/* The largest overlap / min(r_i, r_j) over the contacts naive finds. */
static double max_overlap_fraction(size_t n, const float *pos, const float *radius,
                                   size_t *contacts, const char *what)
{
    ns_particles p = {n, pos, radius, 0.0f};
    ns_contact_list c;
    ns_contact_list_init(&c);
    ns_error err;
    ns_status st = tl_find(tl_kernel("naive"), &p, NULL, &c, &err);
    CHECK_STATUS(st, NS_OK, &err);
    double worst = 0.0;
    size_t wi = 0, wj = 0;
    for (size_t k = 0; k < c.count; k++) {
        const ns_contact *t = &c.items[k];
        float rmin = radius[t->i] < radius[t->j] ? radius[t->i] : radius[t->j];
        double f = rmin > 0.0f ? (double)t->overlap / rmin : (t->overlap > 0.0f ? INFINITY : 0.0);
        if (f > worst) {
            worst = f;
            wi = t->i;
            wj = t->j;
        }
    }
    printf("%s: %zu contacts, largest overlap %.4f of the smaller radius (pair %zu, %zu)\n", what,
           c.count, worst, wi, wj);
    if (contacts)
        *contacts = c.count;
    ns_contact_list_free(&c);
    return worst;
}

static int all_finite(const float *a, size_t count)
{
    for (size_t k = 0; k < count; k++)
        if (!isfinite(a[k]))
            return 0;
    return 1;
}

/* ---- spawn and defaults ---- */

static void t_spawn(void)
{
    check_set_context("ns_sim_params_default");
    ns_sim_params d = ns_sim_params_default();
    CHECK_EQ_F32_BITS(d.dt, 0.01f);
    CHECK_EQ_F32_BITS(d.gravity, 9.81f);
    CHECK_EQ_I(d.iterations, 10);
    CHECK_EQ_F32_BITS(d.relaxation, 1.5f);
    CHECK_EQ_F32_BITS(d.damping, 0.002f);
    CHECK_EQ_F32_BITS(d.shock, 1.0f);
    CHECK_EQ_F32_BITS(d.margin, 0.2f);
    CHECK_EQ_F32_BITS(d.skin, 0.0f);
    for (int k = 0; k < 3; k++)
        CHECK_MSG(!(d.box_lo[k] < d.box_hi[k]), "the default box is not empty on axis %d", k);

    /* The layout's coordinates scaled exactly: `nsearch sim --help` says twice
     * the spacing in x and y and 8 times in z, which is what ns_sim_spawn does.
     * (include/nsearch.h says "the layout's times 4" on every axis: the two
     * documents disagree; the test follows the implemented one.) */
    const float factor[3] = {2.0f, 2.0f, 8.0f};
    const char *layouts[] = {"uniform", "dambreak", "polydisperse", "clusters", "sheet"};
    const size_t sizes[] = {0, 1, 2, 777, 1500};
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) {
        for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
            size_t n = sizes[z];
            check_set_context("ns_sim_spawn(%s, n=%zu)", layouts[l], n);
            tl_set gen;
            tl_generate(tl_workload(layouts[l]), n, 3, &gen);
            spawned sp;
            spawn(layouts[l], n, 3, &sp);
            float rmax = 0.0f;
            size_t mism = 0;
            for (size_t i = 0; i < n; i++) {
                if (tl_bits(sp.s.radius[i]) != tl_bits(gen.radius[i]) && mism++ == 0)
                    CHECK_MSG(0, "radius %zu: %.9g, the layout's %.9g", i, (double)sp.s.radius[i],
                              (double)gen.radius[i]);
                for (int k = 0; k < 3; k++)
                    if (tl_bits(sp.s.pos[3 * i + k]) != tl_bits(factor[k] * gen.pos[3 * i + k]) &&
                        mism++ == 0)
                        CHECK_MSG(0, "particle %zu axis %d: %.9g, want %g x %.9g = %.9g", i, k,
                                  (double)sp.s.pos[3 * i + k], (double)factor[k],
                                  (double)gen.pos[3 * i + k],
                                  (double)(factor[k] * gen.pos[3 * i + k]));
                if (sp.s.radius[i] > rmax)
                    rmax = sp.s.radius[i];
            }
            CHECK_EQ_U(mism, 0);
            if (n > 0) {
                for (int k = 0; k < 3; k++) {
                    CHECK(sp.lo[k] < sp.hi[k]);
                    float mn = INFINITY, mx = -INFINITY;
                    for (size_t i = 0; i < n; i++) {
                        float a = sp.s.pos[3 * i + k] - sp.s.radius[i];
                        float b = sp.s.pos[3 * i + k] + sp.s.radius[i];
                        mn = a < mn ? a : mn;
                        mx = b > mx ? b : mx;
                    }
                    /* room of two largest radii between the spheres and every wall */
                    CHECK_MSG(sp.lo[k] <= mn - 1.99f * rmax && mx + 1.99f * rmax <= sp.hi[k],
                              "axis %d: box [%.9g, %.9g], spheres span [%.9g, %.9g], rmax %.9g", k,
                              (double)sp.lo[k], (double)sp.hi[k], (double)mn, (double)mx,
                              (double)rmax);
                }
            }
            tl_set_free(&gen);
            tl_set_free(&sp.s);
        }
    }
}

/* ---- box: nothing ever leaves the box ---- */

static void raw_layout(const char *layout, size_t n, uint64_t seed, spawned *sp);

static void t_box(int argc, char **argv)
{
    REQUIRE(argc == 1 ||
            (argc == 2 && (strcmp(argv[1], "raw") == 0 || strcmp(argv[1], "violent") == 0)));
    const char *layout = argv[0];
    const char *variant = argc == 2 ? argv[1] : "spawned";
    const size_t n = 1200, frames = 300;
    spawned sp;
    if (strcmp(variant, "raw") == 0)
        raw_layout(layout, n, 7, &sp);
    else
        spawn(layout, n, 7, &sp);
    ns_sim_params prm = params_for(&sp);
    if (strcmp(variant, "violent") == 0) { /* long steps, strong gravity, few passes */
        prm.dt = 0.05f;
        prm.gravity = 60.0f;
        prm.iterations = 2;
        prm.damping = 0.0f;
    }
    ns_sim *sim = make_sim(tl_kernel("grid_sorted"), 0, &prm, &sp.s);
    check_set_context("box: %s (%s) n=%zu, after ns_sim_create", layout, variant, n);
    CHECK_EQ_U(ns_sim_count(sim), n);
    CHECK(memcmp(ns_sim_radii(sim), sp.s.radius, n * sizeof(float)) == 0);
    check_inside(sim, sp.lo, sp.hi, 0);
    CHECK_MSG(ns_sim_kinetic_energy(sim) == 0.0, "kinetic energy %.9g after create (velocities 0)",
              ns_sim_kinetic_energy(sim));
    double pe0 = ns_sim_potential_energy(sim);
    size_t bad_frames = 0;
    for (size_t f = 1; f <= frames; f++) {
        check_set_context("box: %s (%s) n=%zu frame %zu", layout, variant, n, f);
        ns_sim_frame fr;
        memset(&fr, 0xAB, sizeof fr);
        step(sim, &fr);
        CHECK_EQ_U(fr.frame, f);
        CHECK(fr.rebuilt);
        CHECK_EQ_U(fr.contacts, ns_sim_contacts(sim)->count);
        CHECK(fr.integrate_s >= 0.0 && fr.search_s >= 0.0 && fr.resolve_s >= 0.0);
        if (check_inside(sim, sp.lo, sp.hi, f))
            bad_frames++;
        if (bad_frames > 3)
            break;
        CHECK(isfinite(ns_sim_kinetic_energy(sim)) && isfinite(ns_sim_potential_energy(sim)));
    }
    double pe = ns_sim_potential_energy(sim), ke = ns_sim_kinetic_energy(sim);
    printf("box %s (%s): n=%zu, %zu frames, potential %.6g -> %.6g, kinetic %.6g, %zu contacts\n",
           layout, variant, n, frames, pe0, pe, ke, ns_sim_contacts(sim)->count);
    check_set_context("box: %s (%s), energy", layout, variant);
    CHECK_MSG(pe < pe0, "the particles did not fall: potential %.9g -> %.9g", pe0, pe);
    CHECK_MSG(ke < pe0 - pe, "kinetic energy %.9g exceeds the potential energy released %.9g", ke,
              pe0 - pe);
    ns_sim_destroy(sim);
    ns_sim_destroy(NULL);
    tl_set_free(&sp.s);
}

/* ---- one sphere ---- */

static void t_free_fall(void)
{
    tl_set s;
    tl_set_init(&s, 1);
    tl_set_put(&s, 0, 1.25f, -2.5f, 3.0f, 0.5f);
    ns_sim_params prm = ns_sim_params_default();
    const float lo[3] = {0.0f, -4.0f, -1.0f}, hi[3] = {2.0f, 0.0f, 5.0f};
    memcpy(prm.box_lo, lo, sizeof lo);
    memcpy(prm.box_hi, hi, sizeof hi);
    ns_sim *sim = make_sim(tl_kernel("grid_sorted"), 1, &prm, &s);
    s.pos[0] = 99.0f; /* copied: the sim does not see this */
    s.radius[0] = 99.0f;
    check_set_context("free fall: after create");
    CHECK_EQ_F32_BITS(ns_sim_positions(sim)[0], 1.25f);
    CHECK_EQ_F32_BITS(ns_sim_radii(sim)[0], 0.5f);
    double m = 0.5 * 0.5 * 0.5;
    double pe0 = ns_sim_potential_energy(sim);
    CHECK_MSG(fabs(pe0 - m * 9.81 * (3.0 - (-1.0))) <= 1e-5 * pe0, "potential %.9g, want %.9g", pe0,
              m * 9.81 * 4.0);
    /* 10 frames of 0.01 s: about g t^2 / 2 = 0.049 down, nothing sideways */
    for (int f = 0; f < 10; f++)
        step(sim, NULL);
    const float *x = ns_sim_positions(sim), *v = ns_sim_velocities(sim);
    check_set_context("free fall: after 10 frames");
    CHECK_EQ_F32_BITS(x[0], 1.25f);
    CHECK_EQ_F32_BITS(x[1], -2.5f);
    double drop = 3.0 - x[2];
    CHECK_MSG(drop > 0.8 * 0.5 * 9.81 * 0.01 && drop < 1.25 * 0.5 * 9.81 * 0.11 * 0.11,
              "dropped %.9g in 0.1 s (g t^2 / 2 = %.9g)", drop, 0.5 * 9.81 * 0.01);
    CHECK_EQ_F32_BITS(v[0], 0.0f);
    CHECK_EQ_F32_BITS(v[1], 0.0f);
    CHECK_MSG(v[2] < -0.5 * 9.81 * 0.1 && v[2] > -1.5 * 9.81 * 0.1, "v_z %.9g after 0.1 s",
              (double)v[2]);
    double ke = ns_sim_kinetic_energy(sim);
    double want_ke = 0.5 * m * ((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
    CHECK_MSG(fabs(ke - want_ke) <= 1e-6 * want_ke, "kinetic %.9g, 0.5 m v^2 = %.9g", ke, want_ke);
    double pe = ns_sim_potential_energy(sim);
    double want_pe = m * 9.81 * ((double)x[2] - lo[2]);
    CHECK_MSG(fabs(pe - want_pe) <= 1e-5 * want_pe, "potential %.9g, m g (z - lo) = %.9g", pe,
              want_pe);
    CHECK_EQ_U(ns_sim_contacts(sim)->count, 0);
    /* on the floor, at rest, at box_lo[2] + r exactly */
    for (int f = 0; f < 400; f++)
        step(sim, NULL);
    check_set_context("free fall: after 410 frames");
    CHECK_EQ_F32_BITS(x[2], lo[2] + 0.5f);
    CHECK_EQ_F32_BITS(x[0], 1.25f);
    CHECK_MSG(fabsf(v[2]) < 1e-3f, "v_z %.9g on the floor", (double)v[2]);
    ns_sim_destroy(sim);
    tl_set_free(&s);

    /* a centre outside the box is clamped in at create */
    tl_set_init(&s, 2);
    tl_set_put(&s, 0, -10.0f, 10.0f, 100.0f, 0.5f);
    tl_set_put(&s, 1, 1.0f, -2.0f, 2.0f, 0.25f);
    sim = make_sim(tl_kernel("naive"), 1, &prm, &s);
    check_set_context("a centre outside the box at create");
    check_inside(sim, lo, hi, 0);
    ns_sim_destroy(sim);
    tl_set_free(&s);
}

/* ---- settle ---- */

static void t_settle(void)
{
    const size_t n = 2000;
    spawned sp;
    spawn("uniform", n, 1, &sp);
    ns_sim_params prm = params_for(&sp);
    ns_sim *sim = make_sim(tl_kernel("grid_sorted"), 0, &prm, &sp.s);
    double pe0 = ns_sim_potential_energy(sim);
    size_t f = 0;
    double ke = 0.0, released = 0.0;
    for (f = 1; f <= 1000; f++) {
        check_set_context("settle: frame %zu", f);
        step(sim, NULL);
        ke = ns_sim_kinetic_energy(sim);
        released = pe0 - ns_sim_potential_energy(sim);
        if (f >= 50 && ke <= 1e-3 * released)
            break;
    }
    printf("settle: n=%zu, %zu frames, kinetic %.6g, released %.6g (ratio %.3g)\n", n, f, ke,
           released, ke / released);
    check_set_context("settle: n=%zu after %zu frames", n, f);
    check_inside(sim, sp.lo, sp.hi, f);
    CHECK_MSG(released > 0.0, "no potential energy released (%.9g)", released);
    CHECK_MSG(ke <= 0.01 * released, "kinetic energy %.9g > 1%% of the released %.9g", ke,
              released);
    double worst = max_overlap_fraction(n, ns_sim_positions(sim), ns_sim_radii(sim), NULL,
                                        "settle: final positions");
    CHECK_MSG(worst <= MAX_OVERLAP_FRACTION, "largest overlap %.4f of the smaller radius", worst);
    ns_sim_destroy(sim);
    tl_set_free(&sp.s);
}

static void t_settled(void)
{
    const size_t n = 3000;
    tl_set a, b, c;
    tl_set_init(&a, n);
    tl_set_init(&b, n);
    tl_set_init(&c, n);
    ns_error err;
    check_set_context("ns_sim_settled(%zu, 1), threads 1", n);
    tl_poison_error(&err);
    CHECK_STATUS(ns_sim_settled(n, 1, 1, a.pos, a.radius, &err), NS_OK, &err);
    check_set_context("ns_sim_settled(%zu, 1), threads 3", n);
    CHECK_STATUS(ns_sim_settled(n, 1, 3, b.pos, b.radius, &err), NS_OK, &err);
    CHECK_MSG(memcmp(a.pos, b.pos, 3 * n * sizeof(float)) == 0, "positions differ");
    CHECK_MSG(memcmp(a.radius, b.radius, n * sizeof(float)) == 0, "radii differ");
    check_set_context("ns_workload_generate(settled, 500, 1) vs ns_sim_settled(500, 1)");
    CHECK_STATUS(ns_workload_generate("settled", 500, 1, 2, c.pos, c.radius, &err), NS_OK, &err);
    CHECK_STATUS(ns_sim_settled(500, 1, 1, b.pos, b.radius, &err), NS_OK, &err);
    CHECK_MSG(memcmp(b.pos, c.pos, 3 * 500 * sizeof(float)) == 0, "positions differ");
    CHECK_MSG(memcmp(b.radius, c.radius, 500 * sizeof(float)) == 0, "radii differ");
    check_set_context("ns_sim_settled(%zu, 1)", n);
    CHECK(all_finite(a.pos, 3 * n) && all_finite(a.radius, n));
    double worst = max_overlap_fraction(n, a.pos, a.radius, NULL, "settled n=3000");
    CHECK_MSG(worst <= MAX_OVERLAP_FRACTION, "largest overlap %.4f of the smaller radius", worst);
    /* uniform spheres: one radius, the uniform workload's */
    tl_set u;
    tl_generate(tl_workload("uniform"), n, 1, &u);
    for (size_t i = 0; i < n; i++)
        if (tl_bits(a.radius[i]) != tl_bits(u.radius[i])) {
            CHECK_MSG(0, "radius %zu is %.9g, the uniform workload's %.9g", i, (double)a.radius[i],
                      (double)u.radius[i]);
            break;
        }
    tl_set_free(&u);

    /* a table workload through ns_workload_generate equals its generator */
    check_set_context("ns_workload_generate(a table workload)");
    for (size_t w = 0; w < ns_workload_count(); w++) {
        const ns_workload *W = ns_workload_at(w);
        tl_set g;
        tl_generate(W, 500, 9, &g);
        CHECK_STATUS(ns_workload_generate(W->name, 500, 9, 2, c.pos, c.radius, &err), NS_OK, &err);
        CHECK_MSG(memcmp(g.pos, c.pos, 3 * 500 * sizeof(float)) == 0, "%s: positions differ",
                  W->name);
        tl_set_free(&g);
    }
    check_set_context("ns_workload_generate(unknown name)");
    tl_poison_error(&err);
    ns_status st = ns_workload_generate("tornado", 10, 1, 1, c.pos, c.radius, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
    tl_check_error(st, &err);
    check_set_context("ns_workload_generate(NULL name)");
    st = ns_workload_generate(NULL, 10, 1, 1, c.pos, c.radius, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
    check_set_context("ns_sim_settled(n, NULL arrays)");
    st = ns_sim_settled(10, 1, 1, NULL, c.radius, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
    st = ns_sim_settled(10, 1, 1, c.pos, NULL, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
    check_set_context("ns_sim_settled(0) and (1)");
    CHECK_STATUS(ns_sim_settled(0, 1, 1, c.pos, c.radius, &err), NS_OK, &err);
    CHECK_STATUS(ns_sim_settled(1, 1, 1, c.pos, c.radius, &err), NS_OK, &err);
    CHECK(all_finite(c.pos, 3) && isfinite(c.radius[0]) && c.radius[0] > 0.0f);
    tl_set_free(&a);
    tl_set_free(&b);
    tl_set_free(&c);
}

/* ---- determinism ---- */

static size_t first_float_difference(const float *a, const float *b, size_t count)
{
    for (size_t k = 0; k < count; k++)
        if (tl_bits(a[k]) != tl_bits(b[k]))
            return k;
    return SIZE_MAX;
}

/* sim b's frame equals sim a's bit for bit: positions, velocities and the
 * sorted contacts. Returns 1 when equal. */
static int same_frame(const ns_sim *a, const ns_sim *b, ns_contact_list *ca, ns_contact_list *cb,
                      const char *what)
{
    /* ca == NULL: before the first frame, no contacts to compare */
    size_t n = ns_sim_count(a);
    CHECK_EQ_U(ns_sim_count(b), n);
    int ok = 1;
    size_t k = first_float_difference(ns_sim_positions(a), ns_sim_positions(b), 3 * n);
    CHECK_COUNT_();
    if (k != SIZE_MAX) {
        ok = 0;
        if (check_fail(__FILE__, __LINE__))
            fprintf(stderr, "  %s: positions differ first at particle %zu axis %zu: %.9g vs %.9g\n",
                    what, k / 3, k % 3, (double)ns_sim_positions(a)[k],
                    (double)ns_sim_positions(b)[k]);
    }
    k = first_float_difference(ns_sim_velocities(a), ns_sim_velocities(b), 3 * n);
    CHECK_COUNT_();
    if (k != SIZE_MAX) {
        ok = 0;
        if (check_fail(__FILE__, __LINE__))
            fprintf(stderr,
                    "  %s: velocities differ first at particle %zu axis %zu: %.9g vs %.9g\n", what,
                    k / 3, k % 3, (double)ns_sim_velocities(a)[k], (double)ns_sim_velocities(b)[k]);
    }
    if (ca == NULL)
        return ok;
    tl_copy_list(ca, ns_sim_contacts(a));
    tl_copy_list(cb, ns_sim_contacts(b));
    ns_contact_list_sort(ca);
    ns_contact_list_sort(cb);
    if (!tl_lists_equal(ca, cb, what))
        ok = 0;
    return ok;
}

static void t_deterministic(int argc, char **argv)
{
    REQUIRE(argc == 1);
    const char *layout = argv[0];
    const size_t n = 1500, frames = 100;
    spawned sp;
    spawn(layout, n, 11, &sp);
    ns_sim_params prm = params_for(&sp);
    const ns_kernel *K = tl_kernel("grid_sorted");
    ns_sim *a = make_sim(K, 1, &prm, &sp.s);
    ns_sim *b = make_sim(K, 1, &prm, &sp.s);
    ns_sim *c = make_sim(K, 3, &prm, &sp.s);
    ns_sim *d = make_sim(K, 8, &prm, &sp.s);
    ns_contact_list ca, cb;
    ns_contact_list_init(&ca);
    ns_contact_list_init(&cb);
    size_t differing = 0;
    check_set_context("deterministic %s: after create", layout);
    same_frame(a, b, NULL, NULL, "threads 1 twice");
    same_frame(a, c, NULL, NULL, "threads 1 vs 3");
    same_frame(a, d, NULL, NULL, "threads 1 vs 8");
    for (size_t f = 1; f <= frames && differing < 3; f++) {
        ns_sim_frame fa, fb, fc, fd;
        check_set_context("deterministic %s: frame %zu", layout, f);
        step(a, &fa);
        step(b, &fb);
        step(c, &fc);
        step(d, &fd);
        CHECK_EQ_U(fa.contacts, fb.contacts);
        CHECK_EQ_U(fa.contacts, fc.contacts);
        CHECK_EQ_U(fa.contacts, fd.contacts);
        if (!same_frame(a, b, &ca, &cb, "threads 1 twice") ||
            !same_frame(a, c, &ca, &cb, "threads 1 vs threads 3") ||
            !same_frame(a, d, &ca, &cb, "threads 1 vs threads 8"))
            differing++;
    }
    printf("deterministic %s: n=%zu, %zu frames, %zu contacts at the end\n", layout, n, frames,
           ns_sim_contacts(a)->count);
    ns_contact_list_free(&ca);
    ns_contact_list_free(&cb);
    ns_sim_destroy(a);
    ns_sim_destroy(b);
    ns_sim_destroy(c);
    ns_sim_destroy(d);
    tl_set_free(&sp.s);
}

/* ---- every kernel runs the same simulation ---- */

/* The layout's own (overlapping) positions in a box with room of two
 * largest radii around them: ns_sim_create relaxes the overlaps, and every
 * frame has many contacts. */
static void raw_layout(const char *layout, size_t n, uint64_t seed, spawned *sp)
{
    tl_generate(tl_workload(layout), n, seed, &sp->s);
    float rmax = 0.0f;
    for (size_t i = 0; i < n; i++)
        rmax = sp->s.radius[i] > rmax ? sp->s.radius[i] : rmax;
    for (int k = 0; k < 3; k++) {
        sp->lo[k] = INFINITY;
        sp->hi[k] = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            sp->lo[k] = sp->s.pos[3 * i + k] < sp->lo[k] ? sp->s.pos[3 * i + k] : sp->lo[k];
            sp->hi[k] = sp->s.pos[3 * i + k] > sp->hi[k] ? sp->s.pos[3 * i + k] : sp->hi[k];
        }
        sp->lo[k] -= 2.0f * rmax;
        sp->hi[k] += 2.0f * rmax;
    }
}

static void t_kernels_agree(int argc, char **argv)
{
    REQUIRE(argc == 1 || (argc == 2 && strcmp(argv[1], "raw") == 0));
    const char *layout = argv[0];
    const int raw = argc == 2;
    const size_t n = 1000, frames = 50;
    spawned sp;
    if (raw)
        raw_layout(layout, n, 5, &sp);
    else
        spawn(layout, n, 5, &sp);
    ns_sim_params prm = params_for(&sp);
    /* a longer step: spawned layers land on each other within the 50 frames */
    if (!raw)
        prm.dt = 0.02f;
    size_t nk = ns_kernel_count();
    ns_sim **sims = calloc(nk, sizeof *sims);
    REQUIRE(sims != NULL);
    size_t ref = SIZE_MAX;
    for (size_t k = 0; k < nk; k++) {
        const ns_kernel *K = ns_kernel_at(k);
        if (strcmp(K->name, "naive") == 0)
            ref = k;
        ns_config cfg = ns_config_default();
        cfg.threads = 3;
        cfg.exact_threads = true; /* the parallel code at every n */
        ns_error err;
        tl_poison_error(&err);
        check_set_context("kernels_agree %s: ns_sim_create(%s)", layout, K->name);
        ns_status st = ns_sim_create(K, &cfg, &prm, n, sp.s.pos, sp.s.radius, &sims[k], &err);
        if (st == NS_ERR_TOO_LARGE && K->domain_memory) {
            printf("%s: refused (%s), skipped\n", K->name, err.message);
            CHECK(sims[k] == NULL);
            sims[k] = NULL;
            continue;
        }
        CHECK_STATUS(st, NS_OK, &err);
        REQUIRE(st == NS_OK);
    }
    REQUIRE(ref != SIZE_MAX);
    ns_contact_list cr, cg;
    ns_contact_list_init(&cr);
    ns_contact_list_init(&cg);
    size_t total_contacts = 0;
    for (size_t f = 1; f <= frames; f++) {
        check_set_context("kernels_agree %s: naive frame %zu", layout, f);
        ns_sim_frame fr;
        step(sims[ref], &fr);
        total_contacts += fr.contacts;
        for (size_t k = 0; k < nk; k++) {
            if (k == ref || sims[k] == NULL)
                continue;
            const ns_kernel *K = ns_kernel_at(k);
            check_set_context("kernels_agree %s: %s frame %zu", layout, K->name, f);
            ns_error err;
            tl_poison_error(&err);
            ns_sim_frame fk;
            ns_status st = ns_sim_step(sims[k], &fk, &err);
            if (st == NS_ERR_TOO_LARGE && K->domain_memory) {
                printf("%s: refused at frame %zu (%s), skipped\n", K->name, f, err.message);
                ns_sim_destroy(sims[k]);
                sims[k] = NULL;
                continue;
            }
            CHECK_STATUS(st, NS_OK, &err);
            if (st != NS_OK) {
                ns_sim_destroy(sims[k]);
                sims[k] = NULL;
                continue;
            }
            CHECK_EQ_U(fk.contacts, fr.contacts);
            if (!same_frame(sims[ref], sims[k], &cr, &cg, K->name)) {
                ns_sim_destroy(sims[k]); /* one report per kernel */
                sims[k] = NULL;
            }
        }
    }
    printf("kernels_agree %s%s: n=%zu, %zu frames, %.1f searched pairs per frame\n", layout,
           raw ? " (raw)" : "", n, frames, (double)total_contacts / frames);
    check_set_context("kernels_agree %s", layout);
    CHECK_MSG(total_contacts > 0, "no contact in %zu frames: the test tests nothing", frames);
    for (size_t k = 0; k < nk; k++)
        ns_sim_destroy(sims[k]);
    free(sims);
    ns_contact_list_free(&cr);
    ns_contact_list_free(&cg);
    tl_set_free(&sp.s);
}

/* ---- the simulation with a skin ---- */

static void t_skin_sim(void)
{
    const size_t n = 1000, frames = 600;
    const float skins[] = {0.1f, 0.3f, 0.2f};
    const char *skin_kernels[] = {"grid_sorted", "grid_sorted", "hash_parallel"};
    const size_t ns = sizeof skins / sizeof skins[0];
    spawned sp;
    spawn("uniform", n, 2, &sp);
    ns_sim_params prm = params_for(&sp);
    const ns_kernel *K = tl_kernel("grid_sorted");
    ns_sim *plain = make_sim(K, 1, &prm, &sp.s);
    ns_sim *with[3];
    for (size_t s = 0; s < ns; s++) {
        ns_sim_params ps = prm;
        ps.skin = skins[s];
        with[s] = make_sim(tl_kernel(skin_kernels[s]), s == 2 ? 2 : 3, &ps, &sp.s);
    }
    size_t rebuilt[3] = {0, 0, 0}, reused_late[3] = {0, 0, 0}, failed[3] = {0, 0, 0};
    ns_contact_list ca, cb;
    ns_contact_list_init(&ca);
    ns_contact_list_init(&cb);
    for (size_t f = 1; f <= frames; f++) {
        check_set_context("skin_sim: frame %zu without a skin", f);
        ns_sim_frame fp;
        step(plain, &fp);
        CHECK(fp.rebuilt);
        for (size_t s = 0; s < ns; s++) {
            if (failed[s])
                continue;
            check_set_context("skin_sim: frame %zu, %s skin %g", f, skin_kernels[s],
                              (double)skins[s]);
            ns_sim_frame fs;
            step(with[s], &fs);
            rebuilt[s] += fs.rebuilt;
            if (!fs.rebuilt && f > frames / 2)
                reused_late[s]++;
            CHECK_EQ_U(fs.contacts, fp.contacts);
            CHECK_EQ_U(fs.contacts, ns_sim_contacts(with[s])->count);
            if (!same_frame(plain, with[s], &ca, &cb, "no skin vs skin"))
                failed[s] = 1;
        }
    }
    for (size_t s = 0; s < ns; s++) {
        printf("skin_sim: %s skin %g: %zu of %zu frames rebuilt (%zu reused in the second "
               "half)\n",
               skin_kernels[s], (double)skins[s], rebuilt[s], frames, reused_late[s]);
        check_set_context("skin_sim: %s skin %g", skin_kernels[s], (double)skins[s]);
        CHECK_MSG(rebuilt[s] >= 1, "never rebuilt");
        CHECK_MSG(rebuilt[s] < frames, "every frame rebuilt: the skin never reused a search");
        CHECK_MSG(reused_late[s] > 0, "no reuse once the pile rests");
        ns_sim_destroy(with[s]);
    }
    printf("skin_sim: kinetic / released at the end %.3g\n",
           ns_sim_kinetic_energy(plain) /
               (ns_sim_potential_energy(plain) > 0 ? ns_sim_potential_energy(plain) : 1.0));
    ns_sim_destroy(plain);
    ns_contact_list_free(&ca);
    ns_contact_list_free(&cb);
    tl_set_free(&sp.s);
}

/* ---- ns_skin against naive ---- */

static double max_abs_coord(const tl_set *s)
{
    double m = 0.0;
    for (size_t k = 0; k < 3 * s->n; k++)
        m = fabs(s->pos[k]) > m ? fabs(s->pos[k]) : m;
    return m;
}

static double max_move(const tl_set *s, const tl_set *base)
{
    double m = 0.0;
    size_t n = s->n < base->n ? s->n : base->n;
    for (size_t i = 0; i < n; i++) {
        double dx = (double)s->pos[3 * i] - base->pos[3 * i];
        double dy = (double)s->pos[3 * i + 1] - base->pos[3 * i + 1];
        double dz = (double)s->pos[3 * i + 2] - base->pos[3 * i + 2];
        double d = sqrt(dx * dx + dy * dy + dz * dz);
        m = d > m ? d : m;
    }
    return m;
}

static void set_copy(tl_set *dst, const tl_set *src)
{
    tl_set_free(dst);
    tl_set_init(dst, src->n);
    memcpy(dst->pos, src->pos, 3 * src->n * sizeof(float));
    memcpy(dst->radius, src->radius, src->n * sizeof(float));
}

/* One search through the skin and through naive, compared exactly; returns
 * the skin's status. */
static ns_status skin_vs_naive(ns_skin *sk, const ns_particles *p, ns_contact_list *ref,
                               ns_contact_list *got, const char *what)
{
    ns_error err;
    tl_poison_error(&err);
    REQUIRE(tl_find(tl_kernel("naive"), p, NULL, ref, &err) == NS_OK);
    tl_poison_error(&err);
    ns_status st = ns_skin_search(sk, p, got, &err);
    CHECK_STATUS(st, NS_OK, &err);
    if (st == NS_OK) {
        ns_contact_list_sort(got);
        tl_lists_equal(ref, got, what);
    }
    return st;
}

/* A sequence of `steps` moving particle sets through one skin. */
static void skin_sequence(const char *workload, size_t n0, uint64_t seed, const char *kernel,
                          float skin_rel, int threads, size_t steps)
{
    tl_set cur, base = {0};
    tl_generate(tl_workload(workload), n0, seed, &cur);
    float rmax = 0.0f;
    for (size_t i = 0; i < cur.n; i++)
        rmax = cur.radius[i] > rmax ? cur.radius[i] : rmax;
    const float skin = skin_rel * rmax;
    ns_config cfg = ns_config_default();
    cfg.threads = threads;
    cfg.exact_threads = true; /* the parallel code at every n */
    ns_skin *sk = NULL;
    ns_error err;
    tl_poison_error(&err);
    check_set_context("skin %s %s n=%zu skin %g", workload, kernel, n0, (double)skin);
    REQUIRE(ns_skin_create(tl_kernel(kernel), &cfg, skin, &sk, &err) == NS_OK);
    REQUIRE(sk != NULL);
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    uint64_t rng = seed * 7919u + 17u;
    size_t searches = 0, rebuilds = 0, forced = 0, reused = 0, contacts = 0;
    int have_base = 0;
    for (size_t t = 0; t < steps; t++) {
        unsigned ev = (unsigned)(tl_rng(&rng) % 24);
        int must_rebuild = !have_base; /* the first search */
        const char *what = "small moves";
        if (t > 0 && ev == 0) { /* one particle jumps further than the skin */
            what = "a jump";
            size_t i = tl_rng(&rng) % cur.n;
            int k = (int)(tl_rng(&rng) % 3);
            cur.pos[3 * i + k] += (tl_rng(&rng) & 1 ? 1.0f : -1.0f) * 1.5f * skin;
        } else if (t > 0 && ev == 1) { /* one radius changes */
            what = "a radius change";
            size_t i = tl_rng(&rng) % cur.n;
            cur.radius[i] *= tl_rng(&rng) & 1 ? 0.9f : 1.1f;
            must_rebuild = 1;
        } else if (t > 0 && ev == 2) { /* n changes: drop or add particles */
            what = "an n change";
            size_t m = cur.n / 10 + 1;
            if (tl_rng(&rng) & 1 && cur.n > m + 2) {
                cur.n -= m; /* the arrays keep their size; only the prefix is used */
            } else {
                tl_set extra;
                tl_set_init(&extra, m);
                for (size_t e = 0; e < m; e++) {
                    size_t src = tl_rng(&rng) % cur.n;
                    for (int k = 0; k < 3; k++)
                        extra.pos[3 * e + k] =
                            cur.pos[3 * src + k] + tl_rng_float(&rng, -1.0f, 1.0f) * rmax;
                    extra.radius[e] = cur.radius[src];
                }
                tl_set_append(&cur, &extra);
                tl_set_free(&extra);
            }
            must_rebuild = 1;
        } else if (t > 0 && ev == 3) { /* coherent motion: halves move towards each other */
            what = "halves approach";
            int k = (int)(tl_rng(&rng) % 3);
            for (size_t i = 0; i < cur.n; i++)
                cur.pos[3 * i + k] += (i & 1 ? 0.2f : -0.2f) * skin;
        } else if (t > 0) { /* every particle moves a little */
            float a = skin / 16.0f;
            for (size_t k = 0; k < 3 * cur.n; k++)
                cur.pos[k] += tl_rng_float(&rng, -a, a);
        }
        double moved = have_base ? max_move(&cur, &base) : INFINITY;
        if (moved > 0.5 * skin)
            must_rebuild = 1;
        int too_small = skin < ldexp(max_abs_coord(&cur), -12);
        check_set_context("skin %s %s n=%zu skin %g, step %zu (%s, moved %.3g skin)", workload,
                          kernel, cur.n, (double)skin, t, what, moved / skin);
        ns_particles p = tl_particles(&cur);
        ns_status st = skin_vs_naive(sk, &p, &ref, &got, "skin vs naive");
        if (st != NS_OK)
            break;
        searches++;
        contacts += ref.count;
        ns_skin_info info;
        memset(&info, 0xAB, sizeof info);
        ns_skin_get_info(sk, &info);
        CHECK_EQ_U(info.searches, searches);
        rebuilds += info.rebuilt;
        CHECK_EQ_U(info.rebuilds, rebuilds);
        CHECK(info.bytes > 0);
        if (must_rebuild) {
            forced++;
            CHECK_MSG(info.rebuilt, "the search did not rebuild (%s; moved %.3g skin)", what,
                      moved / skin);
        } else if (moved < 0.4 * skin && !too_small) {
            CHECK_MSG(!info.rebuilt, "rebuilt though nothing moved 0.45 skin (moved %.3g skin)",
                      moved / skin);
        }
        if (info.rebuilt) {
            CHECK_CMP_U(info.candidates, >=, ref.count);
            set_copy(&base, &cur);
            have_base = 1;
        } else {
            reused++;
        }
    }
    printf("skin %-12s %-13s n=%5zu skin %.4g threads %d: %zu searches, %zu rebuilds (%zu "
           "forced), %zu reused, %.0f contacts per search\n",
           workload, kernel, n0, (double)skin, threads, searches, rebuilds, forced, reused,
           searches ? (double)contacts / searches : 0.0);
    CHECK_MSG(rebuilds < searches, "every search rebuilt");
    CHECK_MSG(reused > steps / 4, "only %zu of %zu searches reused the candidates", reused, steps);
    ns_skin_destroy(sk);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&cur);
    tl_set_free(&base);
}

static void t_skin_api(void)
{
    skin_sequence("uniform", 1500, 1, "grid_sorted", 0.3f, 3, 60);
    skin_sequence("polydisperse", 2500, 2, "grid_sorted", 0.2f, 1, 50);
    skin_sequence("clusters", 3000, 3, "grid_sorted", 0.25f, 3, 40);
    skin_sequence("uniform", 800, 4, "hash_parallel", 0.5f, 2, 50);
    skin_sequence("polydisperse", 600, 5, "naive", 0.3f, 1, 50);
    skin_sequence("clusters", 500, 6, "hash_serial", 0.1f, 1, 50);
    skin_sequence("dambreak", 1200, 7, "grid_dense", 0.3f, 1, 40);
    skin_sequence("sheet", 1000, 8, "naive_omp", 0.3f, 3, 40);
}

static void t_skin_edges(void)
{
    const ns_kernel *K = tl_kernel("grid_sorted");
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    ns_skin *sk = NULL;
    ns_skin_info info;

    /* ns_skin_create refusals */
    const float bad_skins[] = {-1.0f, -1e-30f, NAN, -INFINITY};
    for (size_t b = 0; b < sizeof bad_skins / sizeof bad_skins[0]; b++) {
        check_set_context("ns_skin_create(skin %g)", (double)bad_skins[b]);
        sk = (ns_skin *)&err; /* not NULL */
        tl_poison_error(&err);
        ns_status st = ns_skin_create(K, NULL, bad_skins[b], &sk, &err);
        CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
        tl_check_error(st, &err);
        CHECK(sk == NULL);
        if (st == NS_OK)
            ns_skin_destroy(sk);
    }
    check_set_context("ns_skin_create(NULL kernel / NULL out)");
    sk = NULL;
    CHECK_STATUS(ns_skin_create(NULL, NULL, 0.1f, &sk, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK(sk == NULL);
    CHECK_STATUS(ns_skin_create(K, NULL, 0.1f, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_skin_create(K, NULL, 0.1f, NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
    ns_skin_destroy(NULL);

    tl_set s;
    tl_generate(tl_workload("uniform"), 1000, 21, &s);
    ns_particles p = tl_particles(&s);

    /* NULL arguments, a NaN coordinate */
    check_set_context("ns_skin_search: NULL arguments and a NaN coordinate");
    REQUIRE(ns_skin_create(K, NULL, 0.2f, &sk, &err) == NS_OK);
    CHECK_STATUS(ns_skin_search(NULL, &p, &got, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_skin_search(sk, NULL, &got, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_skin_search(sk, &p, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
    ns_particles nopos = p;
    nopos.pos = NULL;
    CHECK_STATUS(ns_skin_search(sk, &nopos, &got, &err), NS_ERR_INVALID_ARGUMENT, &err);
    ns_skin_get_info(sk, &info);
    CHECK_EQ_U(info.searches, 0);
    skin_vs_naive(sk, &p, &ref, &got, "first search");
    float keep = s.pos[3 * 417 + 1];
    s.pos[3 * 417 + 1] = NAN;
    tl_poison_error(&err);
    ns_status st = ns_skin_search(sk, &p, &got, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_INPUT, &err);
    tl_check_error(st, &err);
    CHECK_EQ_U(got.count, 0);
    CHECK_EQ_U(err.particle, 417);
    ns_skin_get_info(sk, &info);
    CHECK_EQ_U(info.searches, 1);
    s.pos[3 * 417 + 1] = keep;
    s.radius[5] = -1.0f;
    st = ns_skin_search(sk, &p, &got, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_INPUT, &err);
    CHECK_EQ_U(got.count, 0);
    s.radius[5] = s.radius[6];
    check_set_context("ns_skin_search: after the failures");
    skin_vs_naive(sk, &p, &ref, &got, "after failed searches");
    skin_vs_naive(sk, &p, &ref, &got, "the same set again");
    ns_skin_get_info(sk, &info);
    CHECK_EQ_U(info.searches, 3);
    CHECK(!info.rebuilt); /* nothing moved since the last search */

    /* radius NULL: radius_uniform, and a change of it rebuilds */
    check_set_context("ns_skin_search: radius_uniform");
    ns_particles pu = p;
    pu.radius = NULL;
    pu.radius_uniform = 0.5f;
    skin_vs_naive(sk, &pu, &ref, &got, "radius_uniform 0.5");
    ns_skin_get_info(sk, &info);
    size_t rb = info.rebuilds;
    skin_vs_naive(sk, &pu, &ref, &got, "radius_uniform 0.5 again");
    ns_skin_get_info(sk, &info);
    CHECK_EQ_U(info.rebuilds, rb);
    pu.radius_uniform = 0.55f;
    skin_vs_naive(sk, &pu, &ref, &got, "radius_uniform 0.55");
    ns_skin_get_info(sk, &info);
    CHECK(info.rebuilt);
    pu.radius_uniform = 0.45f;
    skin_vs_naive(sk, &pu, &ref, &got, "radius_uniform 0.45");
    ns_skin_get_info(sk, &info);
    CHECK(info.rebuilt);
    /* n = 0 and n = 1 */
    check_set_context("ns_skin_search: n = 0, 1");
    ns_particles p0 = p;
    p0.n = 0;
    skin_vs_naive(sk, &p0, &ref, &got, "n = 0");
    CHECK_EQ_U(got.count, 0);
    p0.n = 1;
    skin_vs_naive(sk, &p0, &ref, &got, "n = 1");
    skin_vs_naive(sk, &p, &ref, &got, "n = 1000 again");
    ns_skin_destroy(sk);

    /* skin 0: always exact; a move always rebuilds */
    check_set_context("skin 0");
    REQUIRE(ns_skin_create(K, NULL, 0.0f, &sk, &err) == NS_OK);
    uint64_t rng = 99;
    for (int t = 0; t < 12; t++) {
        if (t % 3 != 2)
            for (size_t k = 0; k < 3 * s.n; k++)
                s.pos[k] += tl_rng_float(&rng, -0.01f, 0.01f);
        check_set_context("skin 0, step %d", t);
        skin_vs_naive(sk, &p, &ref, &got, "skin 0");
        ns_skin_get_info(sk, &info);
        if (t % 3 != 2)
            CHECK(info.rebuilt);
    }
    ns_skin_destroy(sk);

    /* a skin too small for the coordinates: exact, and every search rebuilds
     * (1e6 * 2^-13 = 122 is above any skin the radii 0.5 allow) */
    tl_set far;
    tl_generate(tl_workload("uniform"), 1000, 22, &far);
    for (size_t k = 0; k < 3 * far.n; k++)
        far.pos[k] += 1e6f;
    ns_particles pf = tl_particles(&far);
    const float tiny[] = {1e-6f, 0.5f, 1.0f};
    for (size_t q = 0; q < sizeof tiny / sizeof tiny[0]; q++) {
        REQUIRE(ns_skin_create(K, NULL, tiny[q], &sk, &err) == NS_OK);
        for (int t = 0; t < 10; t++) {
            check_set_context("coordinates ~1e6, skin %g, step %d", (double)tiny[q], t);
            if (t % 2 == 1) /* a few ulps (0.0625 at 1e6), or nothing */
                for (size_t k = 0; k < 3 * far.n; k++)
                    far.pos[k] += (float)((int)(tl_rng(&rng) % 5) - 2) * 0.0625f;
            skin_vs_naive(sk, &pf, &ref, &got, "far coordinates");
            ns_skin_get_info(sk, &info);
            CHECK_MSG(info.rebuilt, "skin %g below 2^-13 of coordinates 1e6 must always rebuild",
                      (double)tiny[q]);
        }
        ns_skin_get_info(sk, &info);
        CHECK_EQ_U(info.rebuilds, info.searches);
        printf("coordinates ~1e6, skin %g: %zu searches, %zu rebuilds, %zu contacts\n",
               (double)tiny[q], info.searches, info.rebuilds, ref.count);
        ns_skin_destroy(sk);
    }
    tl_set_free(&far);

    /* max_contacts: counts contacts, not candidates; enforced on reuse too */
    check_set_context("max_contacts");
    REQUIRE(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err) == NS_OK);
    size_t c0 = ref.count;
    REQUIRE(c0 > 100);
    ns_config cfg = ns_config_default();
    cfg.max_contacts = c0;
    const float skin = 0.3f;
    REQUIRE(ns_skin_create(K, &cfg, skin, &sk, &err) == NS_OK);
    check_set_context("max_contacts = the set's %zu contacts (fewer than the candidates)", c0);
    skin_vs_naive(sk, &p, &ref, &got, "exactly max_contacts");
    ns_skin_get_info(sk, &info);
    printf("max_contacts %zu: %zu candidates\n", c0, info.candidates);
    /* move a little (no rebuild) until there are more contacts than the limit */
    tl_set moved = {0};
    int found = 0;
    for (int tries = 0; tries < 200 && !found; tries++) {
        set_copy(&moved, &s);
        for (size_t k = 0; k < 3 * moved.n; k++)
            moved.pos[k] += tl_rng_float(&rng, -skin / 8, skin / 8);
        ns_particles pm = tl_particles(&moved);
        REQUIRE(tl_find(tl_kernel("naive"), &pm, NULL, &ref, &err) == NS_OK);
        found = ref.count > c0;
    }
    REQUIRE(found);
    ns_particles pm = tl_particles(&moved);
    check_set_context("max_contacts %zu, a small move to %zu contacts (reuse path)", c0, ref.count);
    tl_poison_error(&err);
    st = ns_skin_search(sk, &pm, &got, &err);
    CHECK_STATUS(st, NS_ERR_TOO_MANY_CONTACTS, &err);
    tl_check_error(st, &err);
    CHECK_EQ_U(got.count, 0);
    check_set_context("max_contacts %zu, back to the first set", c0);
    skin_vs_naive(sk, &p, &ref, &got, "back under the limit");
    /* the rebuild path: a radius change */
    s.radius[0] *= 1.5f;
    REQUIRE(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err) == NS_OK);
    check_set_context("max_contacts %zu, a rebuild with %zu contacts", c0, ref.count);
    tl_poison_error(&err);
    st = ns_skin_search(sk, &p, &got, &err);
    if (ref.count > c0)
        CHECK_STATUS(st, NS_ERR_TOO_MANY_CONTACTS, &err);
    else
        CHECK_STATUS(st, NS_OK, &err);
    s.radius[0] = s.radius[1];
    for (size_t k = 0; k < 3 * s.n; k++)
        s.pos[k] *= 0.9f; /* denser: more contacts, and a rebuild */
    REQUIRE(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err) == NS_OK);
    REQUIRE(ref.count > c0);
    check_set_context("max_contacts %zu, compressed to %zu contacts", c0, ref.count);
    tl_poison_error(&err);
    st = ns_skin_search(sk, &p, &got, &err);
    CHECK_STATUS(st, NS_ERR_TOO_MANY_CONTACTS, &err);
    CHECK_EQ_U(got.count, 0);
    ns_skin_destroy(sk);
    tl_set_free(&moved);

    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* ---- the skin's limits ---- */

static void t_skin_limits(void)
{
    const ns_kernel *K = tl_kernel("grid_sorted");
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    ns_skin *sk = NULL;
    tl_set s;
    tl_generate(tl_workload("uniform"), 1000, 31, &s); /* radii 0.5: diameter 1 */
    ns_particles p = tl_particles(&s);

    /* ns_skin_search: the skin at most the largest diameter */
    const float skins[] = {1.0f, nextafterf(1.0f, 2.0f), 60.0f, 1e6f};
    for (size_t k = 0; k < sizeof skins / sizeof skins[0]; k++) {
        check_set_context("ns_skin_search, radii 0.5, skin %.9g", (double)skins[k]);
        REQUIRE(ns_skin_create(K, NULL, skins[k], &sk, &err) == NS_OK);
        if (skins[k] <= 1.0f) {
            skin_vs_naive(sk, &p, &ref, &got, "skin = the diameter");
        } else {
            tl_poison_error(&err);
            ns_status st = ns_skin_search(sk, &p, &got, &err);
            CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
            tl_check_error(st, &err);
            CHECK_STR_CONTAINS(err.message, "largest diameter");
            CHECK_EQ_U(err.particle, NS_NO_PARTICLE);
            CHECK_EQ_U(got.count, 0);
            /* with larger particles the same skin is fine */
            ns_particles big = p;
            big.radius = NULL;
            big.radius_uniform = skins[k];
            skin_vs_naive(sk, &big, &ref, &got, "radius_uniform = the skin");
        }
        ns_skin_destroy(sk);
    }
    /* every radius 0: no contact is possible, any skin is accepted */
    check_set_context("ns_skin_search, every radius 0, skin 5");
    REQUIRE(ns_skin_create(K, NULL, 5.0f, &sk, &err) == NS_OK);
    ns_particles zero = p;
    zero.radius = NULL;
    zero.radius_uniform = 0.0f;
    skin_vs_naive(sk, &zero, &ref, &got, "radii 0");
    CHECK_EQ_U(got.count, 0);
    ns_skin_destroy(sk);

    /* ns_sim_create: the same limit on params.skin */
    ns_sim_params prm = ns_sim_params_default();
    ns_sim_box_around(s.n, s.pos, s.radius, 2.0f, 2.0f, prm.box_lo, prm.box_hi);
    ns_sim *sim = NULL;
    prm.skin = 1.0f;
    check_set_context("ns_sim_create, skin = the diameter");
    CHECK_STATUS(ns_sim_create(K, NULL, &prm, s.n, s.pos, s.radius, &sim, &err), NS_OK, &err);
    ns_sim_destroy(sim);
    prm.skin = 1.01f;
    check_set_context("ns_sim_create, skin 1.01 > the diameter");
    sim = (ns_sim *)&err;
    ns_status st = ns_sim_create(K, NULL, &prm, s.n, s.pos, s.radius, &sim, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
    tl_check_error(st, &err);
    CHECK_STR_CONTAINS(err.message, "largest diameter");
    CHECK(sim == NULL);

    /* ns_sim_create: search radii r + margin x largest / 2 in the exact range */
    tl_set t;
    tl_set_init(&t, 3);
    tl_set_put(&t, 0, 0.0f, 0.0f, 0.0f, 0x1p60f);
    tl_set_put(&t, 1, 1e19f, 0.0f, 0.0f, 0x1p59f);
    tl_set_put(&t, 2, 0.0f, 1e19f, 0.0f, 0.0f);
    ns_sim_params big = ns_sim_params_default();
    for (int k = 0; k < 3; k++) {
        big.box_lo[k] = -1e20f;
        big.box_hi[k] = 1e20f;
    }
    check_set_context("ns_sim_create, radius 2^60 with margin 0.2");
    st = ns_sim_create(K, NULL, &big, t.n, t.pos, t.radius, &sim, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_INPUT, &err);
    CHECK_EQ_U(err.particle, 0);
    CHECK_STR_CONTAINS(err.message, "search radius");
    big.margin = 0.0f;
    check_set_context("ns_sim_create, radius 2^60 with margin 0");
    CHECK_STATUS(ns_sim_create(K, NULL, &big, t.n, t.pos, t.radius, &sim, &err), NS_OK, &err);
    CHECK_STATUS(ns_sim_step(sim, NULL, &err), NS_OK, &err);
    ns_sim_destroy(sim);
    /* the largest radius 2^-60: a radius 0 searched with 0.1 x 2^-60 */
    tl_set_put(&t, 0, 0.0f, 0.0f, 0.0f, 0x1p-60f);
    tl_set_put(&t, 1, 0.0f, 0.0f, 0.0f, 0x1p-60f);
    tl_set_put(&t, 2, 0.0f, 0.0f, 0.0f, 0.0f);
    big.margin = 0.2f;
    for (int k = 0; k < 3; k++) {
        big.box_lo[k] = -1e-10f;
        big.box_hi[k] = 1e-10f;
    }
    check_set_context("ns_sim_create, radii 2^-60 and 0 with margin 0.2");
    st = ns_sim_create(K, NULL, &big, t.n, t.pos, t.radius, &sim, &err);
    CHECK_STATUS(st, NS_ERR_INVALID_INPUT, &err);
    CHECK_EQ_U(err.particle, 2);
    tl_set_free(&t);

    /* candidates over 2 x max_contacts: each rebuild searches directly, with
     * the caller's limit; at the limit and above it like naive */
    REQUIRE(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err) == NS_OK);
    const size_t c0 = ref.count;
    const char *kernels[] = {"grid_sorted", "hash_parallel", "naive_omp", "hash_serial"};
    for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
        ns_config cfg = ns_config_default();
        cfg.threads = 3;
        cfg.exact_threads = true; /* the parallel code at every n */
        cfg.max_contacts = c0;
        check_set_context("%s: skin 1 (about 8x the contacts as candidates), max_contacts %zu",
                          kernels[k], c0);
        REQUIRE(ns_skin_create(tl_kernel(kernels[k]), &cfg, 1.0f, &sk, &err) == NS_OK);
        ns_skin_info info;
        for (int step = 0; step < 3; step++) {
            skin_vs_naive(sk, &p, &ref, &got, "over the candidates' limit");
            ns_skin_get_info(sk, &info);
            CHECK(info.rebuilt); /* no candidates kept: every search is direct */
            CHECK_EQ_U(info.candidates, c0);
        }
        cfg.max_contacts = c0 - 1; /* and the refusal is naive's */
        ns_skin_destroy(sk);
        REQUIRE(ns_skin_create(tl_kernel(kernels[k]), &cfg, 1.0f, &sk, &err) == NS_OK);
        ns_error ref_err;
        CHECK_STATUS(tl_find(tl_kernel("naive"), &p, &cfg, &ref, &ref_err),
                     NS_ERR_TOO_MANY_CONTACTS, &ref_err);
        tl_poison_error(&err);
        CHECK_STATUS(ns_skin_search(sk, &p, &got, &err), NS_ERR_TOO_MANY_CONTACTS, &err);
        CHECK_MSG(strcmp(err.message, ref_err.message) == 0, "\"%s\" != naive's \"%s\"",
                  err.message, ref_err.message);
        ns_skin_destroy(sk);

        /* candidates between max_contacts and 2 x: reused, filtered by a
         * counting pass first */
        cfg.max_contacts = c0 + c0 / 50;
        check_set_context("%s: skin 0.2, max_contacts %zu (under the candidates)", kernels[k],
                          cfg.max_contacts);
        REQUIRE(ns_skin_create(tl_kernel(kernels[k]), &cfg, 0.2f, &sk, &err) == NS_OK);
        skin_vs_naive(sk, &p, &ref, &got, "first search");
        ns_skin_get_info(sk, &info);
        CHECK_CMP_U(info.candidates, >, cfg.max_contacts);
        uint64_t rng = 5 + k;
        tl_set moved = {0};
        size_t refusals = 0, reused = 0;
        for (int step = 0; step < 30; step++) {
            tl_set_free(&moved);
            tl_set_init(&moved, s.n);
            memcpy(moved.pos, s.pos, 3 * s.n * sizeof(float));
            memcpy(moved.radius, s.radius, s.n * sizeof(float));
            /* compressed by up to 1.5% (at most 0.08 for coordinates up to
             * 5.2, under 0.45 x skin): more contacts, the candidates reused */
            float f = 1.0f - 0.0005f * (float)step;
            for (size_t i = 0; i < moved.n; i++)
                for (int c = 0; c < 3; c++)
                    moved.pos[3 * i + c] =
                        moved.pos[3 * i + c] * f + tl_rng_float(&rng, -0.005f, 0.005f);
            ns_particles pm = tl_particles(&moved);
            ns_error ref_e;
            ns_status want = tl_find(tl_kernel("naive"), &pm, &cfg, &ref, &ref_e);
            tl_poison_error(&err);
            st = ns_skin_search(sk, &pm, &got, &err);
            CHECK_STATUS(st, want, &err);
            if (st == NS_OK && want == NS_OK) {
                ns_contact_list_sort(&got);
                tl_lists_equal(&ref, &got, "counted filter");
            } else if (st == want) {
                refusals++;
                CHECK_MSG(strcmp(err.message, ref_e.message) == 0, "\"%s\" != naive's \"%s\"",
                          err.message, ref_e.message);
                CHECK_EQ_U(got.count, 0);
            }
            ns_skin_get_info(sk, &info);
            reused += st == NS_OK && !info.rebuilt; /* a refusal leaves info as it was */
        }
        printf("skin_limits %s: %zu of 30 moved searches refused, %zu reused\n", kernels[k],
               refusals, reused);
        CHECK_CMP_U(reused, >, 0);
        CHECK_CMP_U(refusals, >, 0);
        tl_set_free(&moved);
        ns_skin_destroy(sk);
    }
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* ---- any finite skin ---- */

/* ns_skin_create takes every finite skin >= 0; a search refuses one above
 * the largest diameter, and with every radius 0 searches directly. Skins at
 * the end of the radius range (2^60, 2^61) neither overflow nor lose a
 * contact. */
static void t_skin_huge(void)
{
    const ns_kernel *K = tl_kernel("grid_sorted");
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    ns_skin *sk = NULL;
    ns_skin_info info;
    tl_set s;
    tl_generate(tl_workload("uniform"), 500, 41, &s); /* radii 0.5: diameter 1 */
    ns_particles p = tl_particles(&s), zero = p;
    zero.radius = NULL;
    zero.radius_uniform = 0.0f;

    const float huge[] = {nextafterf(1e30f, INFINITY), 2e30f, 0x1p100f, FLT_MAX};
    for (size_t k = 0; k < sizeof huge / sizeof huge[0]; k++) {
        check_set_context("ns_skin_create(skin %g)", (double)huge[k]);
        sk = NULL;
        tl_poison_error(&err);
        CHECK_STATUS(ns_skin_create(K, NULL, huge[k], &sk, &err), NS_OK, &err);
        if (!sk)
            continue;
        for (int t = 0; t < 2; t++) {
            skin_vs_naive(sk, &zero, &ref, &got, "every radius 0");
            CHECK_EQ_U(got.count, 0);
            ns_skin_get_info(sk, &info);
            CHECK(info.rebuilt); /* direct */
        }
        tl_poison_error(&err);
        ns_status st = ns_skin_search(sk, &p, &got, &err);
        CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
        tl_check_error(st, &err);
        CHECK_STR_CONTAINS(err.message, "largest diameter");
        ns_skin_destroy(sk);
    }
    check_set_context("ns_skin_create(skin inf)");
    sk = (ns_skin *)&err; /* not NULL */
    CHECK_STATUS(ns_skin_create(K, NULL, INFINITY, &sk, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STR_CONTAINS(err.message, "finite");
    CHECK(sk == NULL);

    /* radius 2^59, skin 2^60: widened to 2^60, reused; radius 2^60, skin
     * 2^61: widened past the range, direct */
    for (int big = 0; big < 2; big++) {
        const float r = big ? 0x1p60f : 0x1p59f, skin = 2.0f * r; /* the diameter */
        tl_set t;
        tl_set_init(&t, 6);
        for (size_t i = 0; i < t.n; i++) /* neighbours 1.9 r apart: touching */
            tl_set_put(&t, i, 1.9f * r * (float)i, (float)(i % 2) * 0.5f * r, 0.0f, r);
        ns_particles pt = tl_particles(&t);
        check_set_context("radius %g, skin %g", (double)r, (double)skin);
        REQUIRE(ns_skin_create(K, NULL, skin, &sk, &err) == NS_OK);
        skin_vs_naive(sk, &pt, &ref, &got, "first search");
        CHECK_CMP_U(got.count, >=, 5);
        t.pos[3] += 0.1f * skin; /* under 0.45 x skin */
        skin_vs_naive(sk, &pt, &ref, &got, "a small move");
        ns_skin_get_info(sk, &info);
        CHECK_EQ_U(info.searches, 2);
        CHECK(info.rebuilt == (bool)big);
        ns_skin_destroy(sk);
        tl_set_free(&t);
    }
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* ---- ns_skin_info after failed searches ---- */

static void check_info_kept(const ns_skin *sk, const ns_skin_info *was)
{
    ns_skin_info now;
    ns_skin_get_info(sk, &now);
    CHECK_EQ_U(now.searches, was->searches);
    CHECK_EQ_U(now.rebuilds, was->rebuilds);
    CHECK_EQ_U(now.candidates, was->candidates);
    CHECK_EQ_I(now.rebuilt, was->rebuilt);
}

/* Two searches that fail, each leaving the info as it was: particle 7 at
 * NaN (in s, which p reads), then `small`, whose diameter is under the skin. */
static void two_failures_keep_info(ns_skin *sk, tl_set *s, const ns_particles *p,
                                   const ns_particles *small, ns_contact_list *got)
{
    ns_error err;
    ns_skin_info was;
    ns_skin_get_info(sk, &was);
    const float keep = s->pos[3 * 7];
    s->pos[3 * 7] = NAN;
    CHECK_STATUS(ns_skin_search(sk, p, got, &err), NS_ERR_INVALID_INPUT, &err);
    check_info_kept(sk, &was);
    s->pos[3 * 7] = keep;
    CHECK_STATUS(ns_skin_search(sk, small, got, &err), NS_ERR_INVALID_ARGUMENT, &err);
    check_info_kept(sk, &was);
}

/* A failed search leaves every field but bytes as it was: searches and
 * rebuilds count the searches that succeeded, rebuilds <= searches. */
static void t_skin_info_failures(void)
{
    const ns_kernel *K = tl_kernel("grid_sorted");
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    ns_skin *sk = NULL;
    ns_skin_info info, was;
    tl_set s;
    tl_generate(tl_workload("uniform"), 1000, 51, &s); /* radii 0.5 */
    ns_particles p = tl_particles(&s), small = p;
    small.radius = NULL;
    small.radius_uniform = 0.05f; /* diameter 0.1, under the skin */
    REQUIRE(ns_skin_create(K, NULL, 0.2f, &sk, &err) == NS_OK);

    /* before any search: NaN twice, a skin over the diameter */
    check_set_context("failures before the first search");
    for (int t = 0; t < 2; t++)
        two_failures_keep_info(sk, &s, &p, &small, &got);

    check_set_context("a rebuild, a reuse, then failures");
    skin_vs_naive(sk, &p, &ref, &got, "first search");
    skin_vs_naive(sk, &p, &ref, &got, "reuse");
    ns_skin_get_info(sk, &was);
    CHECK_EQ_U(was.searches, 2);
    CHECK_EQ_U(was.rebuilds, 1);
    CHECK(!was.rebuilt);
    two_failures_keep_info(sk, &s, &p, &small, &got);

    check_set_context("after the failures: a rebuild, then failures");
    skin_vs_naive(sk, &p, &ref, &got, "after failed searches");
    ns_skin_get_info(sk, &was);
    CHECK_EQ_U(was.searches, 3);
    CHECK_EQ_U(was.rebuilds, 2); /* a failed search keeps no candidates */
    CHECK(was.rebuilt);
    two_failures_keep_info(sk, &s, &p, &small, &got);
    ns_skin_destroy(sk);

    /* too many contacts: after the kernel ran (a rebuild) and on the reuse
     * path */
    p.n = 900;
    REQUIRE(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err) == NS_OK);
    ns_config cfg = ns_config_default();
    cfg.max_contacts = ref.count; /* 900 particles' contacts */
    check_set_context("max_contacts %zu", cfg.max_contacts);
    REQUIRE(ns_skin_create(K, &cfg, 0.2f, &sk, &err) == NS_OK);
    ns_skin_get_info(sk, &was);
    p.n = 1000;
    REQUIRE(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err) == NS_OK);
    REQUIRE(ref.count > cfg.max_contacts);
    CHECK_STATUS(ns_skin_search(sk, &p, &got, &err), NS_ERR_TOO_MANY_CONTACTS, &err);
    check_info_kept(sk, &was);
    p.n = 900;
    skin_vs_naive(sk, &p, &ref, &got, "900 particles");
    skin_vs_naive(sk, &p, &ref, &got, "900 particles again (reuse)");
    ns_skin_get_info(sk, &was);
    CHECK_EQ_U(was.searches, 2);
    CHECK_EQ_U(was.rebuilds, 1);
    CHECK(!was.rebuilt);
    float moved = 0.0f;
    for (size_t k = 0; k < 3 * p.n; k++) { /* compressed: more contacts, no rebuild */
        float c = s.pos[k] * 0.995f;
        moved = fabsf(c - s.pos[k]) > moved ? fabsf(c - s.pos[k]) : moved;
        s.pos[k] = c;
    }
    REQUIRE(sqrtf(3.0f) * moved < 0.4f * 0.2f);
    REQUIRE(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err) == NS_OK);
    REQUIRE(ref.count > cfg.max_contacts);
    CHECK_STATUS(ns_skin_search(sk, &p, &got, &err), NS_ERR_TOO_MANY_CONTACTS, &err);
    check_info_kept(sk, &was);
    ns_skin_get_info(sk, &info);
    CHECK_CMP_U(info.rebuilds, <=, info.searches);
    ns_skin_destroy(sk);

    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* ---- degenerate particle sets ---- */

/* Runs the set in a cube [lo, hi]^3 with naive (threads 1), grid_sorted
 * (threads 3) and hash_parallel with a skin (threads 2) for `frames` frames:
 * identical frames, everything finite and inside the box. */
static void degenerate_run(const char *what, const tl_set *s, float lo, float hi, size_t frames)
{
    ns_sim_params prm = ns_sim_params_default();
    for (int k = 0; k < 3; k++) {
        prm.box_lo[k] = lo;
        prm.box_hi[k] = hi;
    }
    ns_sim_params pskin = prm;
    pskin.skin = 0.05f * (hi - lo);
    ns_sim *a = make_sim(tl_kernel("naive"), 1, &prm, s);
    ns_sim *b = make_sim(tl_kernel("grid_sorted"), 3, &prm, s);
    ns_sim *c = make_sim(tl_kernel("hash_parallel"), 2, &pskin, s);
    const float blo[3] = {lo, lo, lo}, bhi[3] = {hi, hi, hi};
    ns_contact_list ca, cb;
    ns_contact_list_init(&ca);
    ns_contact_list_init(&cb);
    check_set_context("%s: after create", what);
    check_inside(a, blo, bhi, 0);
    same_frame(a, b, NULL, NULL, "naive vs grid_sorted");
    same_frame(a, c, NULL, NULL, "naive vs hash_parallel with a skin");
    for (size_t f = 1; f <= frames; f++) {
        check_set_context("%s: frame %zu", what, f);
        step(a, NULL);
        step(b, NULL);
        step(c, NULL);
        if (check_inside(a, blo, bhi, f) || !same_frame(a, b, &ca, &cb, "naive vs grid_sorted") ||
            !same_frame(a, c, &ca, &cb, "naive vs hash_parallel with a skin"))
            break;
        CHECK(isfinite(ns_sim_kinetic_energy(a)) && isfinite(ns_sim_potential_energy(a)));
    }
    printf("%s: n=%zu, %zu frames, %zu contacts at the end\n", what, s->n, frames,
           ns_sim_contacts(a)->count);
    ns_sim_destroy(a);
    ns_sim_destroy(b);
    ns_sim_destroy(c);
    ns_contact_list_free(&ca);
    ns_contact_list_free(&cb);
}

static void t_degenerate(void)
{
    tl_set s;
    /* every third radius 0 (massless particles), the rest polydisperse */
    tl_generate(tl_workload("polydisperse"), 600, 1, &s);
    for (size_t i = 0; i < s.n; i += 3)
        s.radius[i] = 0.0f;
    degenerate_run("every third radius 0", &s, -1.0f, 5.0f, 100);
    /* every radius 0 */
    for (size_t i = 0; i < s.n; i++)
        s.radius[i] = 0.0f;
    degenerate_run("every radius 0", &s, -1.0f, 5.0f, 50);
    tl_set_free(&s);
    /* 60 coincident spheres (zero normals), and 40 more at another point */
    tl_set_init(&s, 100);
    for (size_t i = 0; i < s.n; i++)
        tl_set_put(&s, i, i < 60 ? 1.0f : 2.5f, 1.0f, i < 60 ? 1.0f : 0.0f, 0.5f);
    degenerate_run("coincident spheres", &s, -1.0f, 5.0f, 100);
    /* a very small scale: radii 5e-4 */
    tl_set_free(&s);
    tl_generate(tl_workload("uniform"), 500, 2, &s);
    for (size_t i = 0; i < s.n; i++) {
        for (int k = 0; k < 3; k++)
            s.pos[3 * i + k] *= 1e-3f;
        s.radius[i] = 5e-4f;
    }
    degenerate_run("radii 5e-4", &s, -1e-3f, 1e-2f, 100);
    /* a box exactly one diameter wide: every centre clamped to (0, 0, 0) */
    tl_set_free(&s);
    tl_set_init(&s, 20);
    for (size_t i = 0; i < s.n; i++)
        tl_set_put(&s, i, 0.1f * (float)i, -0.05f * (float)i, (float)i * 0.9f, 0.5f);
    degenerate_run("20 spheres in a box one diameter wide", &s, -0.5f, 0.5f, 30);
    tl_set_free(&s);
}

/* ---- ns_sim_create's refusals ---- */

/* want_particle: the particle err must name (NS_NO_PARTICLE: not checked). */
static void expect_create_fails_at(const char *what, const ns_kernel *K, const ns_sim_params *prm,
                                   size_t n, const float *pos, const float *radius, ns_status want,
                                   size_t want_particle)
{
    check_set_context("ns_sim_create: %s", what);
    ns_error err;
    tl_poison_error(&err);
    ns_sim *sim = (ns_sim *)&err; /* not NULL: must be set to NULL */
    ns_status st = ns_sim_create(K, NULL, prm, n, pos, radius, &sim, &err);
    CHECK_STATUS(st, want, &err);
    tl_check_error(st, &err);
    CHECK_MSG(sim == NULL, "*out not NULL after a failed create");
    if (want_particle != NS_NO_PARTICLE && st == want)
        CHECK_EQ_U(err.particle, want_particle);
    if (st == NS_OK && sim != NULL && sim != (ns_sim *)&err)
        ns_sim_destroy(sim);
    else if (st != NS_OK)
        printf("%s: %s: %s\n", what, ns_status_str(st), err.message);
    /* and without an ns_error */
    sim = NULL;
    st = ns_sim_create(K, NULL, prm, n, pos, radius, &sim, NULL);
    CHECK_STATUS(st, want, NULL);
    if (st == NS_OK)
        ns_sim_destroy(sim);
}

static void expect_create_fails(const char *what, const ns_kernel *K, const ns_sim_params *prm,
                                size_t n, const float *pos, const float *radius, ns_status want)
{
    expect_create_fails_at(what, K, prm, n, pos, radius, want, NS_NO_PARTICLE);
}

static void t_errors(void)
{
    const ns_kernel *K = tl_kernel("grid_sorted");
    tl_set s;
    tl_set_init(&s, 3);
    tl_set_put(&s, 0, 0.0f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 1, 1.5f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&s, 2, 0.0f, 2.0f, 1.0f, 0.25f);
    ns_sim_params good = ns_sim_params_default();
    for (int k = 0; k < 3; k++) {
        good.box_lo[k] = -3.0f;
        good.box_hi[k] = 3.0f;
    }
    /* the good case works */
    ns_sim *sim = make_sim(K, 1, &good, &s);
    step(sim, NULL);
    ns_sim_destroy(sim);

    const ns_status ARG = NS_ERR_INVALID_ARGUMENT, INP = NS_ERR_INVALID_INPUT;
    ns_sim_params p;
    struct {
        const char *what;
        float *field;
        float value;
    } bad_floats[] = {
        {"dt 0", &p.dt, 0.0f},
        {"dt -0.01", &p.dt, -0.01f},
        {"dt NaN", &p.dt, NAN},
        {"dt inf", &p.dt, INFINITY},
        {"gravity NaN", &p.gravity, NAN},
        {"gravity inf", &p.gravity, INFINITY},
        {"relaxation NaN", &p.relaxation, NAN},
        {"damping NaN", &p.damping, NAN},
        {"shock NaN", &p.shock, NAN},
        {"margin NaN", &p.margin, NAN},
        {"skin NaN", &p.skin, NAN},
        {"skin -0.1", &p.skin, -0.1f},
        {"box_lo[0] NaN", &p.box_lo[0], NAN},
        {"box_hi[2] NaN", &p.box_hi[2], NAN},
        {"box_lo[1] -inf", &p.box_lo[1], -INFINITY},
        {"empty box: lo[0] == hi[0]", &p.box_lo[0], 3.0f},
        {"empty box: lo[1] > hi[1]", &p.box_lo[1], 4.0f},
        {"empty box: hi[2] < lo[2]", &p.box_hi[2], -3.5f},
        {"a box narrower than a particle (x)", &p.box_hi[0], -2.5f},
        {"a box narrower than a particle (z)", &p.box_lo[2], 2.2f},
    };
    for (size_t b = 0; b < sizeof bad_floats / sizeof bad_floats[0]; b++) {
        p = good;
        *bad_floats[b].field = bad_floats[b].value;
        expect_create_fails(bad_floats[b].what, K, &p, s.n, s.pos, s.radius, ARG);
    }
    p = good;
    p.iterations = 0;
    expect_create_fails("iterations 0", K, &p, s.n, s.pos, s.radius, ARG);
    p.iterations = -3;
    expect_create_fails("iterations -3", K, &p, s.n, s.pos, s.radius, ARG);
    p = ns_sim_params_default();
    expect_create_fails("the default (empty) box", K, &p, s.n, s.pos, s.radius, ARG);

    expect_create_fails("NULL params", K, NULL, s.n, s.pos, s.radius, ARG);
    expect_create_fails("NULL kernel", NULL, &good, s.n, s.pos, s.radius, ARG);
    expect_create_fails("NULL pos", K, &good, s.n, NULL, s.radius, ARG);
    expect_create_fails("NULL radius", K, &good, s.n, s.pos, NULL, ARG);

    s.pos[3 * 1 + 2] = NAN;
    expect_create_fails_at("a NaN coordinate", K, &good, s.n, s.pos, s.radius, INP, 1);
    s.pos[3 * 1 + 2] = INFINITY;
    expect_create_fails_at("an infinite coordinate", K, &good, s.n, s.pos, s.radius, INP, 1);
    s.pos[3 * 1 + 2] = 0.0f;
    s.radius[2] = NAN;
    expect_create_fails_at("a NaN radius", K, &good, s.n, s.pos, s.radius, INP, 2);
    s.radius[2] = -0.25f;
    expect_create_fails_at("a negative radius", K, &good, s.n, s.pos, s.radius, INP, 2);
    s.radius[2] = 3.5f;
    expect_create_fails("a particle larger than the box", K, &good, s.n, s.pos, s.radius, ARG);
    s.radius[2] = 0.25f;

    check_set_context("ns_sim_create: NULL out");
    ns_error err;
    tl_poison_error(&err);
    ns_status st = ns_sim_create(K, NULL, &good, s.n, s.pos, s.radius, NULL, &err);
    CHECK_STATUS(st, ARG, &err);
    tl_check_error(st, &err);

    check_set_context("ns_sim_step(NULL)");
    CHECK_STATUS(ns_sim_step(NULL, NULL, &err), ARG, &err);
    ns_sim_destroy(NULL);

    /* n = 0: nothing to simulate, nothing to fail */
    check_set_context("ns_sim_create: n = 0");
    sim = NULL;
    st = ns_sim_create(K, NULL, &good, 0, s.pos, s.radius, &sim, &err);
    CHECK_STATUS(st, NS_OK, &err);
    if (st == NS_OK) {
        step(sim, NULL);
        CHECK_EQ_U(ns_sim_count(sim), 0);
        CHECK_EQ_U(ns_sim_contacts(sim)->count, 0);
        CHECK(ns_sim_kinetic_energy(sim) == 0.0 && ns_sim_potential_energy(sim) == 0.0);
        ns_sim_destroy(sim);
    }
    tl_set_free(&s);
}

/* ---- settled piles ---- */

static void t_settled_tiles(void)
{
    const size_t n = 1201, block = 400;
    tl_set a, b;
    tl_set_init(&a, n);
    tl_set_init(&b, n);
    ns_error err;
    check_set_context("ns__sim_settled_piles(%zu, block %zu), threads 1", n, block);
    tl_poison_error(&err);
    CHECK_STATUS(ns__sim_settled_piles(n, 4, 1, block, a.pos, a.radius, &err), NS_OK, &err);
    CHECK(all_finite(a.pos, 3 * n) && all_finite(a.radius, n));
    check_set_context("ns__sim_settled_piles(%zu, block %zu), threads 3", n, block);
    CHECK_STATUS(ns__sim_settled_piles(n, 4, 3, block, b.pos, b.radius, &err), NS_OK, &err);
    CHECK_MSG(memcmp(a.pos, b.pos, 3 * n * sizeof(float)) == 0, "positions differ");
    CHECK_MSG(memcmp(a.radius, b.radius, n * sizeof(float)) == 0, "radii differ");
    check_set_context("ns__sim_settled_piles(%zu, block %zu)", n, block);
    double worst = max_overlap_fraction(n, a.pos, a.radius, NULL, "settled piles n=1201");
    CHECK_MSG(worst <= MAX_OVERLAP_FRACTION, "largest overlap %.4f of the smaller radius", worst);
    /* piles side by side: the footprint is wider than one pile's */
    float lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = INFINITY;
        hi[k] = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            lo[k] = a.pos[3 * i + k] < lo[k] ? a.pos[3 * i + k] : lo[k];
            hi[k] = a.pos[3 * i + k] > hi[k] ? a.pos[3 * i + k] : hi[k];
        }
    }
    printf("piles: extent x %.3g y %.3g z %.3g\n", (double)(hi[0] - lo[0]), (double)(hi[1] - lo[1]),
           (double)(hi[2] - lo[2]));

    /* n == block: one pile, the same for any larger block and for the public call */
    tl_set c, d;
    tl_set_init(&c, block);
    tl_set_init(&d, block);
    check_set_context("ns__sim_settled_piles(%zu, block %zu vs 1000)", block, block);
    CHECK_STATUS(ns__sim_settled_piles(block, 4, 3, block, c.pos, c.radius, &err), NS_OK, &err);
    CHECK_STATUS(ns__sim_settled_piles(block, 4, 1, 1000, d.pos, d.radius, &err), NS_OK, &err);
    CHECK_MSG(memcmp(c.pos, d.pos, 3 * block * sizeof(float)) == 0, "positions differ");
    CHECK_MSG(memcmp(c.radius, d.radius, block * sizeof(float)) == 0, "radii differ");
    check_set_context("ns_sim_settled(%zu) vs ns__sim_settled_piles(block %zu)", block, block);
    CHECK_STATUS(ns_sim_settled(block, 4, 2, d.pos, d.radius, &err), NS_OK, &err);
    CHECK_MSG(memcmp(c.pos, d.pos, 3 * block * sizeof(float)) == 0, "positions differ");
    double w1 = max_overlap_fraction(block, c.pos, c.radius, NULL, "one pile n=400");
    CHECK_MSG(w1 <= MAX_OVERLAP_FRACTION, "largest overlap %.4f", w1);
    /* block + 1: two piles, and deterministic across thread counts */
    tl_set e, f;
    tl_set_init(&e, block + 1);
    tl_set_init(&f, block + 1);
    check_set_context("ns__sim_settled_piles(%zu, block %zu)", block + 1, block);
    CHECK_STATUS(ns__sim_settled_piles(block + 1, 8, 1, block, e.pos, e.radius, &err), NS_OK, &err);
    CHECK_STATUS(ns__sim_settled_piles(block + 1, 8, 2, block, f.pos, f.radius, &err), NS_OK, &err);
    CHECK_MSG(memcmp(e.pos, f.pos, 3 * (block + 1) * sizeof(float)) == 0, "positions differ");
    CHECK(all_finite(e.pos, 3 * (block + 1)));
    double w2 = max_overlap_fraction(block + 1, e.pos, e.radius, NULL, "two piles n=401");
    CHECK_MSG(w2 <= MAX_OVERLAP_FRACTION, "largest overlap %.4f", w2);
    tl_set_free(&a);
    tl_set_free(&b);
    tl_set_free(&c);
    tl_set_free(&d);
    tl_set_free(&e);
    tl_set_free(&f);
}

/* box: three layouts as spawned, two also raw (overlapping) and violent */
static void box_ctests(void)
{
    const char *as_spawned[] = {"uniform", "dambreak", "polydisperse"};
    const char *varied[] = {"polydisperse", "clusters"};
    const char *variants[] = {"raw", "violent"};
    char name[200];
    for (size_t l = 0; l < 3; l++) {
        snprintf(name, sizeof name, "sim/box/%s", as_spawned[l]);
        tl_ctest(name, NULL, 0, "box", as_spawned[l], NULL);
    }
    for (size_t l = 0; l < 2; l++)
        for (size_t v = 0; v < 2; v++) {
            snprintf(name, sizeof name, "sim/box/%s_%s", varied[l], variants[v]);
            tl_ctest(name, NULL, 0, "box", varied[l], variants[v]);
        }
}

/* deterministic: set their own thread counts (OMP_NUM_THREADS unset) */
static void deterministic_ctests(void)
{
    tl_ctest("sim/deterministic/uniform", NULL, -1, "deterministic", "uniform", NULL);
    tl_ctest("sim/deterministic/polydisperse", NULL, -1, "deterministic", "polydisperse", NULL);
}

static void kernels_agree_ctests(void)
{
    const char *layouts[] = {"uniform", "polydisperse", "dambreak"};
    const char *raw[] = {"polydisperse", "clusters"};
    char name[200];
    for (size_t l = 0; l < 3; l++) {
        snprintf(name, sizeof name, "sim/kernels_agree/%s", layouts[l]);
        tl_ctest(name, NULL, -1, "kernels_agree", layouts[l], NULL);
    }
    for (size_t l = 0; l < 2; l++) {
        snprintf(name, sizeof name, "sim/kernels_agree/%s_raw", raw[l]);
        tl_ctest(name, NULL, -1, "kernels_agree", raw[l], "raw");
    }
}

/* The caller's contact list through a skin whose candidates grow a little at
 * every rebuild: it must grow with room, as a kernel's does, not to the exact
 * count each time (a reallocation, a copy and fresh pages per rebuild: the
 * simulation's search at 100,000 particles took 21 ms a frame instead of
 * 4). */
static void t_skin_growth(void)
{
    enum { N = 5000, FRAMES = 40 };
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    ns_skin *sk = NULL;
    tl_set s;
    tl_generate(tl_workload("uniform"), N, 7, &s); /* radii 0.5 */
    ns_particles p = tl_particles(&s);
    REQUIRE(ns_skin_create(tl_kernel("grid_sorted"), NULL, 0.2f, &sk, &err) == NS_OK);
    size_t grown = 0, capacity = 0, rebuilds = 0, last_candidates = 0, more = 0;
    for (int f = 0; f < FRAMES && check_failures == 0; f++) {
        check_set_context("frame %d", f);
        for (size_t i = 0; i < 3 * (size_t)N; i++)
            s.pos[i] *= 0.997f; /* every particle moves towards the origin */
        skin_vs_naive(sk, &p, &ref, &got, "skin vs naive");
        ns_skin_info info;
        ns_skin_get_info(sk, &info);
        CHECK_CMP_U(got.capacity, >=, info.candidates);
        grown += got.capacity != capacity;
        capacity = got.capacity;
        if (info.rebuilt) {
            rebuilds++;
            more += info.candidates > last_candidates;
            last_candidates = info.candidates;
        }
    }
    /* the premise: many rebuilds, most with more candidates than the last */
    CHECK_CMP_U(rebuilds, >=, 10);
    CHECK_CMP_U(more, >=, rebuilds / 2);
    CHECK_CMP_U(grown, <=, 3);
    ns_skin_destroy(sk);
    tl_set_free(&s);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
}

static const tl_case cases[] = {
    {"spawn", .run = t_spawn},
    {"box", .run_args = t_box, .ctests = box_ctests},
    {"free_fall", .run = t_free_fall},
    {"settle", .run = t_settle},
    {"settled", .run = t_settled},
    {"deterministic", .run_args = t_deterministic, .ctests = deterministic_ctests},
    {"kernels_agree", .run_args = t_kernels_agree, .ctests = kernels_agree_ctests},
    {"skin_sim", .run = t_skin_sim},
    {"skin_api", .run = t_skin_api},
    {"skin_edges", .run = t_skin_edges},
    {"skin_limits", .run = t_skin_limits},
    {"skin_huge", .run = t_skin_huge},
    {"skin_info_failures", .run = t_skin_info_failures},
    {"skin_growth", .run = t_skin_growth},
    {"degenerate", .run = t_degenerate},
    {"errors", .run = t_errors},
    {"settled_tiles", .run = t_settled_tiles},
};

int main(int argc, char **argv)
{
    static const tl_suite suite = {"sim", "sim", 3, 0};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

/* test_grid_sorted_parts.c - white-box tests of grid_sorted's parts
 * (kernels/grid_sorted/), each against a reference written here from the
 * part's contract, not from its code.
 *
 * usage: test_grid_sorted_parts CASE     (no argument: list the cases;
 *        --ctest: the ctests, see testlib.h)
 *
 * The program includes the kernel's source, kernels/grid_sorted.c, to reach
 * its static functions. It is compiled with the library's numerics (CMake:
 * nsearch_library_flags) for the build's baseline code path (the portable
 * one on x86-64 without NS_NATIVE); the differential tests check the code
 * paths against each other. The included file defines the kernel's ops as
 * NS__OPS(grid_sorted), whose name ends in NS_ISA_PATH (kernel.h): defined
 * here as parts_test, this program's copy is ns__grid_sorted_ops_parts_test,
 * which clashes with none of the library's (ns__grid_sorted_ops_avx512,
 * _avx2, _generic, _native).
 *
 * Cases (ctest label unit: unit/grid_sorted_parts/CASE):
 *   radius_classes  radius_class(), by the bits and by comparing the limits, against
 *                   the halvings counted in double: at and either side of every limit,
 *                   0, -0, subnormals, for largest radii from 2^-149 to FLT_MAX
 *   level_planning  plan_levels() on radii made for its rule (a class starts a level
 *                   only when it fills LEVEL_FILL cells of its own and crowds the
 *                   coarser level's cells with LEVEL_CROWD; at most LEVELS), and on
 *                   powder (two levels) and polydisperse (one); then build(): each
 *                   level holds the particles of its classes, in the caller's order
 *   compress8       COMPRESS8 on all 256 masks: each entry's lanes, and the entry
 *                   applied as simd_avx2.h applies it (vpermps), against the set bits
 *   plan_units      plan_units() on made-up cell counts and on built levels of each
 *                   layout: the units cover every cell once, in order, break at UNIT
 *                   steps, hold at least UNIT_PARTICLES each but the last, and are
 *                   joined no further than that
 *   span_of         span_of() against a brute-force reference on every cell of dense,
 *                   blocked and hashed levels with made-up cell counts
 *   sort_stable     the counting sort (sort_by_key(), and sort_stable() at 1 to 13
 *                   shares on 1 to 4 threads, for all particles and for a level's):
 *                   a permutation grouped by key, each key's particles in the caller's
 *                   order, group[k] the first of key k */
#define NS_ISA_PATH parts_test
#include "grid_sorted.c"

#include "testlib.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    REQUIRE(p != NULL);
    return p;
}

/* The search layer's input for particles pos (radius NULL: ru for all):
 * their bounding box and largest radius, the cells set. */
static void input_of(const float *pos, const float *radius, float ru, size_t n, int threads,
                     ns__input *in)
{
    memset(in, 0, sizeof *in);
    in->n = n;
    in->pos = pos;
    in->radius = radius;
    in->radius_uniform = ru;
    in->threads = threads;
    in->table_size = 2 * n + 1;
    in->grid_max_bytes = SIZE_MAX;
    in->max_contacts = SIZE_MAX;
    ns__grid *g = &in->grid;
    for (int a = 0; a < 3; a++)
        g->lo[a] = INFINITY, g->hi[a] = -INFINITY;
    g->max_radius = radius ? 0.0f : ru;
    for (size_t i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) {
            float x = pos[3 * i + (size_t)a];
            g->lo[a] = x < g->lo[a] ? x : g->lo[a];
            g->hi[a] = x > g->hi[a] ? x : g->hi[a];
        }
        if (radius && radius[i] > g->max_radius)
            g->max_radius = radius[i];
    }
    REQUIRE(ns__grid_set_cells(g) < 0);
}

/* n positions uniform in [lo, hi)^3. */
static float *uniform_positions(size_t n, float lo, float hi, uint64_t seed)
{
    float *pos = xcalloc(3 * n, sizeof *pos);
    for (size_t k = 0; k < 3 * n; k++)
        pos[k] = tl_rng_float(&seed, lo, hi);
    return pos;
}

/* ---- radius_classes ---- */

/* The class of r by its definition: the halvings from r_max to r, r in
 * (r_max / 2^(k+1), r_max / 2^k], the smallest radii in the last class;
 * in double, where every r_max / 2^k is exact. */
static int class_by_halvings(float rmax, float r)
{
    int k = 0;
    while (k < CLASSES - 1 && (double)r <= ldexp((double)rmax, -(k + 1)))
        k++;
    return k;
}

/* The class of r by its limits as classes_of() makes them (floats, which
 * round for a subnormal r_max): how many it does not exceed. */
static int class_by_limits(float rmax, float r)
{
    int k = 0;
    for (int j = 0; j < CLASSES - 1; j++)
        k += !((double)r > (double)ldexpf(rmax, -(j + 1)));
    return k;
}

static void check_class(float rmax, float r)
{
    if (!(r <= rmax)) /* radius_class() takes validated radii, at most r_max */
        return;
    classes cl;
    classes_of(rmax, &cl);
    int got = radius_class(&cl, r);
    check_set_context("r_max %a, r %a (by the bits: %d)", (double)rmax, (double)r, cl.by_bits);
    CHECK_EQ_I(got, class_by_limits(rmax, r));
    if (cl.by_bits) { /* r_max normal enough that every limit is exact */
        CHECK_EQ_I(got, class_by_halvings(rmax, r));
        classes loop = cl; /* the other way, comparing the limits in turn */
        loop.by_bits = false;
        CHECK_EQ_I(radius_class(&loop, r), got);
    }
    size_t count[CLASSES] = {0};
    float top[CLASSES] = {0};
    count_class(&cl, r, count, top);
    CHECK_EQ_U(count[got], 1);
    CHECK(top[got] == (r > 0.0f ? r : 0.0f));
}

static void t_radius_classes(void)
{
    const float rmaxes[] = {FLT_MAX,   1e30f,          1.0f,    0.5f,        0.3f,
                            0.1f,      0x1.8p-3f,      1e-10f,  0x1p-100f,   0x1.fffffep-101f,
                            1e-35f,    0x1p-120f,      FLT_MIN, 0x1.8p-130f, 0x3p-149f,
                            0x1p-149f, 0x1.234568p+20f};
    uint64_t seed = 7;
    for (size_t i = 0; i < sizeof rmaxes / sizeof rmaxes[0]; i++) {
        float rmax = rmaxes[i];
        const float fixed[] = {0.0f, -0.0f, rmax, 0x1p-149f, 0x3p-149f, FLT_MIN, 0x1p-100f};
        for (size_t j = 0; j < sizeof fixed / sizeof fixed[0]; j++)
            check_class(rmax, fixed[j]);
        for (int k = 0; k <= CLASSES + 2; k++) {
            float limit = ldexpf(rmax, -(k + 1));
            check_class(rmax, limit);
            check_class(rmax, nextafterf(limit, 0.0f));
            check_class(rmax, nextafterf(limit, INFINITY));
            check_class(rmax, nextafterf(nextafterf(limit, INFINITY), INFINITY));
        }
        for (int t = 0; t < 2000; t++) /* spread over the classes: r_max times 2^-u */
            check_class(rmax,
                        ldexpf(rmax, -(int)(tl_rng(&seed) % 20)) * tl_rng_float(&seed, 0.5f, 1.0f));
    }
    /* r_max 1: the classes are the halvings, the last holding the rest */
    classes cl;
    classes_of(1.0f, &cl);
    check_set_context("r_max 1");
    CHECK_EQ_I(radius_class(&cl, 1.0f), 0);
    CHECK_EQ_I(radius_class(&cl, 0.75f), 0);
    CHECK_EQ_I(radius_class(&cl, 0.5f), 1);
    CHECK_EQ_I(radius_class(&cl, 0.3f), 1);
    CHECK_EQ_I(radius_class(&cl, 0.25f), 2);
    CHECK_EQ_I(radius_class(&cl, 0x1p-15f), CLASSES - 1);
    CHECK_EQ_I(radius_class(&cl, 0x1.000002p-15f), CLASSES - 2);
    CHECK_EQ_I(radius_class(&cl, 0x1p-40f), CLASSES - 1);
    CHECK_EQ_I(radius_class(&cl, 0.0f), CLASSES - 1);
}

/* ---- level_planning ---- */

/* plan_levels() on n[c] radii r[c] for c < groups (a box of edge box from
 * the origin: only its volume matters). */
static void plan_radii(const size_t *n, const float *r, int groups, float box, int threads,
                       plan *pl)
{
    size_t all = 0;
    float rmax = 0.0f;
    for (int c = 0; c < groups; c++) {
        all += n[c];
        rmax = r[c] > rmax ? r[c] : rmax;
    }
    float *rad = xcalloc(all, sizeof *rad);
    for (int c = 0, i = 0; c < groups; c++) /* interleaved: each share sees every class */
        for (size_t k = 0; k < n[c]; k++)
            rad[(size_t)i++] = r[c];
    for (size_t i = all; i-- > 1;) { /* shuffled */
        uint64_t s = i * 0x9e3779b97f4a7c15u;
        size_t j = (size_t)(tl_rng(&s) % (i + 1));
        float t = rad[i];
        rad[i] = rad[j], rad[j] = t;
    }
    ns__input in;
    memset(&in, 0, sizeof in);
    in.n = all;
    in.radius = rad;
    in.threads = threads;
    in.grid.max_radius = rmax;
    for (int a = 0; a < 3; a++)
        in.grid.lo[a] = 0.0f, in.grid.hi[a] = box;
    size_t *share = xcalloc((size_t)threads * CLASSES, sizeof *share);
    plan_levels(&in, share, pl);
    /* what every plan keeps: the classes in order, the counts, the radii */
    size_t count[CLASSES] = {0}, total = 0;
    float top[CLASSES] = {0};
    for (size_t i = 0; i < all; i++) {
        int k = class_by_halvings(rmax, rad[i]);
        count[k]++;
        top[k] = rad[i] > top[k] ? rad[i] : top[k];
    }
    REQUIRE(pl->levels >= 1 && pl->levels <= LEVELS);
    CHECK_EQ_I(pl->level_of_class[0], 0);
    for (int k = 1; k < CLASSES; k++)
        CHECK(pl->level_of_class[k] == pl->level_of_class[k - 1] ||
              pl->level_of_class[k] == pl->level_of_class[k - 1] + 1);
    CHECK_EQ_I(pl->level_of_class[CLASSES - 1], pl->levels - 1);
    for (int l = 0; l < pl->levels; l++) {
        size_t in_level = 0;
        float largest = 0.0f;
        for (int k = 0; k < CLASSES; k++)
            if (pl->level_of_class[k] == l) {
                in_level += count[k];
                largest = top[k] > largest ? top[k] : largest;
            }
        CHECK_EQ_U(pl->count[l], in_level);
        CHECK(pl->max_radius[l] == largest);
        total += pl->count[l];
    }
    CHECK_EQ_U(total, all);
    free(share);
    free(rad);
}

/* Particles of radius 1 (class 0) and n1 of radius r1 (a later class) in a
 * box of 10: the later class's particles fill cells of 2 r1 with
 * n1 (2 r1)^3 / 1000 each and cells of 2 with n1 8 / 1000. */
static int levels_of(size_t n1, float r1, int threads)
{
    const size_t n[2] = {500, n1};
    const float r[2] = {1.0f, r1};
    plan pl;
    plan_radii(n, r, 2, 10.0f, threads, &pl);
    return pl.levels;
}

/* Every particle of each level listed once, in the caller's order, its
 * class one of the level's; each level's sorted order a permutation of its
 * particles. */
static void check_built_levels(const ns__input *in, const state *S)
{
    classes cl;
    classes_of(in->grid.max_radius, &cl);
    plan pl;
    size_t *share = xcalloc((size_t)in->threads * CLASSES, sizeof *share);
    plan_levels(in, share, &pl);
    free(share);
    REQUIRE(S->levels == pl.levels);
    unsigned char *seen = xcalloc(in->n, 1);
    if (S->levels == 1) { /* all the particles, no ids kept */
        CHECK_EQ_U(S->level[0].n, in->n);
        CHECK(S->ids.a == NULL);
        for (size_t q = 0; q < S->level[0].n; q++) {
            uint32_t i = S->level[0].order.a[q];
            REQUIRE(i < in->n);
            seen[i]++;
        }
    }
    for (int l = 0; l < S->levels && S->levels > 1; l++) {
        check_set_context("level %d of %d", l, S->levels);
        size_t first = S->particle_first[l], end = S->particle_first[l + 1];
        CHECK_EQ_U(end - first, pl.count[l]);
        CHECK_EQ_U(S->level[l].n, end - first);
        CHECK(S->level[l].grid.max_radius == pl.max_radius[l]);
        for (size_t p = first; p < end; p++) {
            uint32_t i = S->ids.a[p];
            REQUIRE(i < in->n);
            CHECK(p == first || S->ids.a[p - 1] < i);
            CHECK_EQ_I(pl.level_of_class[radius_class(&cl, in->radius[i])], l);
            seen[i]++;
        }
        unsigned char *mine = xcalloc(in->n, 1);
        for (size_t p = first; p < end; p++)
            mine[S->ids.a[p]] = 1;
        for (size_t q = 0; q < S->level[l].n; q++) {
            uint32_t i = S->level[l].order.a[q];
            CHECK(i < in->n && mine[i] == 1);
            if (i < in->n)
                mine[i] = 2;
        }
        free(mine);
    }
    for (size_t i = 0; i < in->n; i++)
        CHECK_EQ_U(seen[i], 1);
    free(seen);
}

static void t_level_planning(void)
{
    for (int threads = 1; threads <= 3; threads += 2) {
        /* r1 0.4: fills 2 of its own cells at n1 3906, crowds at 4000 */
        check_set_context("r1 0.4, n1 3850 (neither), %d threads", threads);
        CHECK_EQ_I(levels_of(3850, 0.4f, threads), 1);
        check_set_context("r1 0.4, n1 3950 (fills, does not crowd), %d threads", threads);
        CHECK_EQ_I(levels_of(3950, 0.4f, threads), 1);
        check_set_context("r1 0.4, n1 4050 (fills and crowds), %d threads", threads);
        CHECK_EQ_I(levels_of(4050, 0.4f, threads), 2);
        /* r1 0.3: crowds at n1 4000, fills at 9260 */
        check_set_context("r1 0.3, n1 8000 (crowds, does not fill), %d threads", threads);
        CHECK_EQ_I(levels_of(8000, 0.3f, threads), 1);
        check_set_context("r1 0.3, n1 9500 (crowds and fills), %d threads", threads);
        CHECK_EQ_I(levels_of(9500, 0.3f, threads), 2);
    }
    { /* 8 classes of 40 coincident particles each, every one dense: LEVELS
       * levels, the classes past the last joining it */
        size_t n[8];
        float r[8];
        for (int c = 0; c < 8; c++)
            n[c] = 40, r[c] = ldexpf(1.0f, -c);
        plan pl;
        check_set_context("8 dense classes");
        plan_radii(n, r, 8, 1e-6f, 2, &pl);
        CHECK_EQ_I(pl.levels, LEVELS);
        for (int k = 0; k < LEVELS; k++)
            CHECK_EQ_I(pl.level_of_class[k], k);
        CHECK_EQ_I(pl.level_of_class[7], LEVELS - 1);
    }
    { /* one radius for all, or per-particle radii all of one class */
        float *pos = uniform_positions(1000, 0.0f, 10.0f, 3);
        float *rad = xcalloc(1000, sizeof *rad);
        for (size_t i = 0; i < 1000; i++)
            rad[i] = 0.3f + 0.2f * (float)(i % 7) / 7.0f;
        ns__input in;
        size_t share[2 * CLASSES];
        plan pl;
        check_set_context("one radius for all");
        input_of(pos, NULL, 0.5f, 1000, 2, &in);
        plan_levels(&in, share, &pl);
        CHECK_EQ_I(pl.levels, 1);
        CHECK_EQ_U(pl.count[0], 1000);
        check_set_context("one class");
        input_of(pos, rad, 0.0f, 1000, 2, &in);
        plan_levels(&in, share, &pl);
        CHECK_EQ_I(pl.levels, 1);
        free(rad);
        free(pos);
    }
    /* the workloads docs/kernels.md names: powder two levels, the first its
     * largest class; polydisperse one; then their builds */
    const char *names[] = {"powder", "polydisperse"};
    for (int w = 0; w < 2; w++) {
        tl_set set;
        tl_generate(tl_workload(names[w]), 20000, 11, &set);
        ns__input in;
        input_of(set.pos, set.radius, 0.0f, set.n, 3, &in);
        size_t share[3 * CLASSES];
        plan pl;
        plan_levels(&in, share, &pl);
        check_set_context("%s", names[w]);
        if (w == 0) {
            CHECK_EQ_I(pl.levels, 2);
            CHECK_EQ_I(pl.level_of_class[0], 0);
            CHECK_EQ_I(pl.level_of_class[1], 1);
        } else {
            CHECK_EQ_I(pl.levels, 1);
        }
        void *st = NULL;
        ns_error err;
        CHECK_STATUS(build(&st, &in, &err), NS_OK, &err);
        if (st) {
            check_built_levels(&in, st);
            destroy(st);
        }
        tl_set_free(&set);
    }
    /* a made-up set of two levels (533 of radius 1, 4267 of 0.4, crowding
     * the coarser cells with 34), built at 1 to 4 threads */
    size_t n = 4800;
    float *pos = uniform_positions(n, 0.0f, 10.0f, 5);
    float *rad = xcalloc(n, sizeof *rad);
    for (size_t i = 0; i < n; i++)
        rad[i] = i % 9 == 4 ? 1.0f : 0.4f;
    for (int threads = 1; threads <= 4; threads++) {
        ns__input in;
        input_of(pos, rad, 0.0f, n, threads, &in);
        void *st = NULL;
        ns_error err;
        CHECK_STATUS(build(&st, &in, &err), NS_OK, &err);
        if (st) {
            CHECK_EQ_I(((state *)st)->levels, 2);
            check_built_levels(&in, st);
            destroy(st);
        }
    }
    free(rad);
    free(pos);
}

/* ---- compress8 ---- */

static void t_compress8(void)
{
    for (unsigned m = 0; m < 256; m++) {
        check_set_context("mask 0x%02x, entry 0x%08x", m, (unsigned)COMPRESS8[m]);
        unsigned set[8], count = 0;
        for (unsigned i = 0; i < 8; i++)
            if (m >> i & 1u)
                set[count++] = i;
        /* the entry: 4 bits per output lane, the set bits' lanes in order */
        for (unsigned j = 0; j < count; j++)
            CHECK_EQ_U((COMPRESS8[m] >> (4 * j)) & 15u, set[j]);
        /* applied as compress_permutation() and vpermps do: output lane j
         * takes input lane (entry >> 4j) & 7, its low 3 bits */
        const float lanes[8] = {10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f, 16.0f, 17.0f};
        float out[8];
        for (unsigned j = 0; j < 8; j++)
            out[j] = lanes[(COMPRESS8[m] >> (4 * j)) & 7u];
        for (unsigned j = 0; j < count; j++)
            CHECK(out[j] == lanes[set[j]]);
    }
}

/* ---- plan_units ---- */

/* The units of a level (its cells and start[]) against their contract. */
static void check_units(const level *s)
{
    const uint32_t *start = s->start.a, *first = s->unit_cell.a;
    size_t units = s->units;
    CHECK_EQ_U(first[0], 0);
    CHECK_EQ_U(first[units], s->cells); /* every cell, none past the last */
    CHECK(s->cells == 0 ? units == 0 : units >= 1);
    for (size_t u = 0; u < units; u++) {
        size_t c0 = first[u], c1 = first[u + 1];
        CHECK_MSG(c0 < c1, "unit %zu: cells %zu .. %zu", u, c0, c1);
        if (!(c0 < c1))
            return;
        CHECK_MSG(u + 1 == units || c1 % UNIT == 0, "unit %zu ends at %zu", u, c1);
        CHECK_MSG(u + 1 == units || start[c1] - start[c0] >= UNIT_PARTICLES,
                  "unit %zu holds %u particles", u, start[c1] - start[c0]);
        /* joined no further: short at each UNIT step inside it */
        for (size_t e = (c0 / UNIT + 1) * UNIT; e < c1; e += UNIT)
            CHECK_MSG(start[e] - start[c0] < UNIT_PARTICLES,
                      "unit %zu (%zu .. %zu) already held %u at %zu", u, c0, c1,
                      start[e] - start[c0], e);
    }
}

/* plan_units() on cells whose counts cell_count(c, seed) gives. */
static void units_of_counts(size_t cells, unsigned (*cell_count)(size_t, uint64_t *), uint64_t seed,
                            const char *what)
{
    level lv;
    memset(&lv, 0, sizeof lv);
    lv.cells = cells;
    REQUIRE(ns__u32s_reserve(&lv.start, cells + 1));
    lv.start.a[0] = 0;
    for (size_t c = 0; c < cells; c++)
        lv.start.a[c + 1] = lv.start.a[c] + cell_count(c, &seed);
    check_set_context("plan_units: %zu cells, %s", cells, what);
    REQUIRE(plan_units(&lv));
    check_units(&lv);
    level_free(&lv);
}

static unsigned count_none(size_t c, uint64_t *seed)
{
    (void)c, (void)seed;
    return 0;
}
static unsigned count_one(size_t c, uint64_t *seed)
{
    (void)c, (void)seed;
    return 1;
}
static unsigned count_16(size_t c, uint64_t *seed) /* exactly UNIT_PARTICLES per UNIT cells */
{
    (void)c, (void)seed;
    return 16;
}
static unsigned count_few(size_t c, uint64_t *seed)
{
    (void)c;
    return (unsigned)(tl_rng(seed) % 4);
}
static unsigned count_sparse(size_t c, uint64_t *seed)
{
    (void)c;
    return tl_rng(seed) % 97 == 0 ? (unsigned)(tl_rng(seed) % 700) : 0;
}
static unsigned count_one_crowded(size_t c, uint64_t *seed)
{
    (void)seed;
    return c == 300 ? 5000 : c % 5 == 0;
}

/* A level of layout want built from the caller's particles. */
static void units_of_build(const float *pos, size_t n, layout want, const char *what)
{
    ns__input in;
    input_of(pos, NULL, 0.5f, n, 3, &in);
    level lv;
    memset(&lv, 0, sizeof lv);
    ns_error err;
    check_set_context("plan_units: %s", what);
    CHECK_STATUS(build_level(&lv, &in, NULL, &err), NS_OK, &err);
    CHECK_EQ_I(lv.layout, want);
    check_units(&lv);
    level_free(&lv);
}

static void t_plan_units(void)
{
    const size_t sizes[] = {0, 1, 63, 64, 65, 127, 128, 129, 1000, 4113, 100000};
    struct {
        unsigned (*count)(size_t, uint64_t *);
        const char *what;
    } counts[] = {{count_none, "empty"},    {count_one, "1 a cell"},
                  {count_16, "16 a cell"},  {count_few, "0-3 a cell"},
                  {count_sparse, "sparse"}, {count_one_crowded, "one crowded cell"}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (size_t j = 0; j < sizeof counts / sizeof counts[0]; j++)
            units_of_counts(sizes[i], counts[j].count, 17 + i, counts[j].what);
    /* built: dense (uniform), blocked (clusters in a large empty box),
     * hashed (particles far apart) */
    size_t n = 20000;
    float *pos = uniform_positions(n, 0.0f, 27.0f, 9);
    units_of_build(pos, n, DENSE, "dense");
    for (size_t i = 0; i < n; i++) /* 8 clusters at the corners of a box of 80 */
        for (int a = 0; a < 3; a++)
            pos[3 * i + (size_t)a] = pos[3 * i + (size_t)a] / 9.0f + (float)(i >> a & 1u) * 80.0f;
    units_of_build(pos, n, BLOCKED, "blocked");
    free(pos);
    pos = uniform_positions(3000, 0.0f, 1e5f, 10);
    units_of_build(pos, 3000, HASHED, "hashed");
    free(pos);
}

/* ---- span_of ---- */

/* The span from cell c by its definition: cells c .. c + m - 1 of one row
 * (of the grid's inner cells, or of a block), before c1, at most
 * SPAN_CELLS, holding at most SPAN_PARTICLES particles in all; at least c. */
static size_t span_by_definition(const level *s, const uint32_t *start, size_t c, size_t c1)
{
    size_t m = 1;
    for (;; m++) {
        size_t next = c + m;
        bool same_row;
        if (s->layout == DENSE) {
            size_t dx = (size_t)s->dim[0];
            same_row = next / dx == c / dx && next % dx != dx - 1;
        } else {
            size_t e = (size_t)1 << s->shift;
            same_row = next / e == c / e;
        }
        if (m >= SPAN_CELLS || next >= c1 || !same_row ||
            start[next + 1] - start[c] > SPAN_PARTICLES)
            return m;
    }
}

static void spans_of(layout lay, int64_t dx, int shift, size_t cells, uint64_t seed)
{
    level lv;
    memset(&lv, 0, sizeof lv);
    lv.layout = lay;
    lv.dim[0] = dx;
    lv.shift = shift;
    lv.cells = cells;
    REQUIRE(ns__u32s_reserve(&lv.start, cells + 1));
    uint32_t *start = lv.start.a;
    start[0] = 0;
    for (size_t c = 0; c < cells; c++) { /* mostly 0 to 4 particles, some crowded */
        uint64_t u = tl_rng(&seed) % 100;
        start[c + 1] = start[c] + (u < 30 ? 0 : u < 90 ? (uint32_t)(u % 5) : (uint32_t)u / 7);
    }
    view v;
    memset(&v, 0, sizeof v);
    v.start = start;
    for (size_t c = 0; c < cells; c++) {
        const size_t ends[] = {cells, c + 1, c + 2, c + 3, c + 4, c + 1 + tl_rng(&seed) % 9};
        for (size_t j = 0; j < sizeof ends / sizeof ends[0]; j++) {
            size_t c1 = ends[j] < cells ? ends[j] : cells;
            check_set_context("span_of: layout %d, dx %lld, shift %d, cell %zu, up to %zu",
                              (int)lay, (long long)dx, shift, c, c1);
            CHECK_EQ_U(span_of(&lv, &v, c, c1), span_by_definition(&lv, start, c, c1));
        }
    }
    level_free(&lv);
}

static void t_span_of(void)
{
    const int64_t dxs[] = {3, 4, 5, 6, 7, 12, 33};
    for (size_t i = 0; i < sizeof dxs / sizeof dxs[0]; i++)
        spans_of(DENSE, dxs[i], 0, (size_t)dxs[i] * 5 * 4, 100 + i);
    for (int shift = 0; shift <= BLOCK_SHIFT; shift++) {
        spans_of(BLOCKED, 0, shift, (size_t)7 << (3 * shift), 200 + (uint64_t)shift);
        spans_of(HASHED, 0, shift, (size_t)5 << (3 * shift), 300 + (uint64_t)shift);
    }
}

/* ---- sort_stable ---- */

/* order[] of the particles of s (ids NULL: all of in's) sorted by key into
 * group[0 .. keys]: a permutation of them, grouped by key, each key's in the
 * caller's order (stable), group[k] its first. */
static void check_sorted(const level *s, const ns__input *in, const uint32_t *group, size_t keys)
{
    size_t n = in->n, callers = 0;
    const uint32_t *order = s->order.a;
    CHECK_EQ_U(group[0], 0);
    CHECK_EQ_U(group[keys], n);
    /* the key of each caller's particle, through its place among the level's */
    for (size_t i = 0; i < n; i++)
        callers = caller_index(s, i) >= callers ? caller_index(s, i) + 1 : callers;
    uint32_t *key_of = xcalloc(callers, sizeof *key_of);
    unsigned char *seen = xcalloc(callers, 1);
    for (size_t i = 0; i < n; i++)
        key_of[caller_index(s, i)] = particle_key(s, in, i);
    for (size_t k = 0; k < keys; k++) {
        CHECK(group[k] <= group[k + 1]);
        for (uint32_t p = group[k]; p < group[k + 1] && p < n; p++) {
            uint32_t i = order[p];
            REQUIRE(i < callers);
            CHECK_MSG(key_of[i] == k, "place %u: particle %u of key %u in key %zu's group", p, i,
                      key_of[i], k);
            CHECK_MSG(p == group[k] || order[p - 1] < i, "key %zu: particle %u after %u", k, i,
                      order[p - 1]);
            CHECK(seen[i] == 0);
            seen[i] = 1;
        }
    }
    free(seen);
    free(key_of);
}

/* A dense level of in's particles (ids: a level's, or NULL) ready to sort. */
static void dense_level(level *s, const ns__input *in, const uint32_t *ids)
{
    memset(s, 0, sizeof *s);
    s->n = in->n;
    s->ids = ids;
    s->grid = in->grid;
    s->layout = DENSE;
    REQUIRE(choose_dense(s, in));
    REQUIRE(ns__u32s_reserve(&s->order, in->n + SLACK) && ns__u32s_reserve(&s->key, in->n) &&
            ns__u32s_reserve(&s->start, s->cells + 1) &&
            ns__buf_reserve(&s->soa, 3 * in->n + SLACK, sizeof(float)));
}

static void t_sort_stable(void)
{
    /* 6000 particles in a box of 12 cells a side, a third of them on 40
     * points (many of one key, from every share) */
    size_t n = 6000;
    float *pos = uniform_positions(n, 0.0f, 12.0f, 21);
    for (size_t i = 0; i < n; i += 3)
        memcpy(pos + 3 * i, pos + 3 * (i % 120), 3 * sizeof(float));
    uint32_t *every_third = xcalloc(n / 3, sizeof *every_third);
    for (size_t i = 0; i < n / 3; i++)
        every_third[i] = (uint32_t)(3 * i + 1);
    for (int threads = 1; threads <= 4; threads++) {
        ns__input in;
        input_of(pos, NULL, 0.5f, n, threads, &in);
        level lv;
        dense_level(&lv, &in, NULL);
        check_set_context("sort_by_key, %d threads, %zu keys", threads, lv.cells);
        CHECK(sort_by_key(&lv, &in, lv.start.a, lv.cells)); /* the stable sort: its tables fit */
        check_sorted(&lv, &in, lv.start.a, lv.cells);
        for (long long shares = 1; shares <= 13; shares++) {
            uint32_t *table = xcalloc((size_t)shares * lv.cells, sizeof *table);
            check_set_context("sort_stable, %d threads, %lld shares", threads, shares);
            sort_stable(&lv, &in, lv.start.a, lv.cells, shares, table);
            check_sorted(&lv, &in, lv.start.a, lv.cells);
            free(table);
        }
        level_free(&lv);
        /* a level of several: its particles every third of the caller's,
         * read through ids; order[] holds the caller's indices */
        ns__input sub = in;
        sub.n = n / 3;
        dense_level(&lv, &sub, every_third);
        for (long long shares = 1; shares <= 5; shares += 2) {
            uint32_t *table = xcalloc((size_t)shares * lv.cells, sizeof *table);
            check_set_context("sort_stable of a level, %d threads, %lld shares", threads, shares);
            sort_stable(&lv, &sub, lv.start.a, lv.cells, shares, table);
            check_sorted(&lv, &sub, lv.start.a, lv.cells);
            free(table);
        }
        level_free(&lv);
    }
    free(every_third);
    free(pos);
}

static const tl_case cases[] = {
    {"radius_classes", .run = t_radius_classes},
    {"level_planning", .run = t_level_planning},
    {"compress8", .run = t_compress8},
    {"plan_units", .run = t_plan_units},
    {"span_of", .run = t_span_of},
    {"sort_stable", .run = t_sort_stable},
};

int main(int argc, char **argv)
{
    static const tl_suite suite = {"unit/grid_sorted_parts", "unit", 3, 0};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

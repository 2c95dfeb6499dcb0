/* test_unit.c - unit tests of the public API.
 *
 * usage: test_unit NAME [ARGS...]     (no argument: list the names;
 *        test_unit --ctest: the ctests, see testlib.h) */
/* mmap, mincore (contact_list_grow) */
#define _DEFAULT_SOURCE

#include "testlib.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

/* ---- status names ---- */

static void t_status_str(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const ns_status all[] = {NS_OK,
                             NS_ERR_INVALID_ARGUMENT,
                             NS_ERR_INVALID_INPUT,
                             NS_ERR_OUT_OF_MEMORY,
                             NS_ERR_TOO_LARGE,
                             NS_ERR_TOO_MANY_CONTACTS,
                             NS_ERR_IO};
    const size_t n = sizeof all / sizeof all[0];
    CHECK_EQ_I(NS_OK, 0);
    for (size_t a = 0; a < n; a++) {
        const char *s = ns_status_str(all[a]);
        check_set_context("ns_status_str(%d)", (int)all[a]);
        REQUIRE(s != NULL);
        CHECK(s[0] != '\0');
        CHECK(strchr(s, '\n') == NULL);
        printf("%d: %s\n", (int)all[a], s);
        for (size_t b = 0; b < a; b++)
            CHECK_MSG(strcmp(s, ns_status_str(all[b])) != 0, "status %d and %d share \"%s\"",
                      (int)all[a], (int)all[b], s);
    }
    check_set_context("ns_status_str of an unknown value");
    CHECK(ns_status_str((ns_status)99) != NULL);
    CHECK(ns_status_str((ns_status)-1) != NULL);
}

/* ---- tables ---- */

static void t_kernel_table(void)
{
    size_t count = ns_kernel_count();
    check_set_context("kernel table");
    CHECK_CMP_U(count, >=, 5);
    for (size_t k = 0; k < count; k++) {
        const ns_kernel *K = ns_kernel_at(k);
        REQUIRE(K != NULL);
        check_set_context("kernel %zu (%s)", k, K->name ? K->name : "(null)");
        REQUIRE(K->name != NULL);
        CHECK(K->name[0] != '\0');
        CHECK(K->description != NULL && K->description[0] != '\0');
        CHECK(K->description == NULL || strchr(K->description, '\n') == NULL);
        CHECK(K->ops != NULL);
        CHECK(ns_kernel_find(K->name) == K);
        for (size_t j = 0; j < k; j++)
            CHECK_MSG(strcmp(K->name, ns_kernel_at(j)->name) != 0, "duplicate name %s", K->name);
        printf("%-14s parallel=%d table=%d quadratic=%d domain_memory=%d  %s\n", K->name,
               (int)K->parallel, (int)K->uses_table_size, (int)K->quadratic, (int)K->domain_memory,
               K->description);
    }
    /* the roles: one reference (1), a chain 2, 3, ... without gaps or
     * repeats, one bound kernel, and it can count */
    check_set_context("kernel roles");
    int with_rank[64] = {0}, bounds = 0, highest = 0;
    for (size_t k = 0; k < count; k++) {
        const ns_kernel *K = ns_kernel_at(k);
        CHECK(K->reference >= 0 && K->reference < 64);
        if (K->reference > 0 && K->reference < 64) {
            with_rank[K->reference]++;
            highest = K->reference > highest ? K->reference : highest;
        }
        if (K->bound) {
            bounds++;
            ns_index *index = NULL;
            ns_error err;
            CHECK_STATUS(ns_index_create(K, NULL, &index, &err), NS_OK, &err);
            CHECK_MSG(ns_index_can_count(index), "the bound kernel %s cannot count", K->name);
            ns_index_destroy(index);
        }
    }
    CHECK_EQ_I(bounds, 1);
    CHECK_MSG(highest >= 3, "reference ranks up to %d: want a reference and a chain of two",
              highest);
    for (int r = 1; r <= highest; r++) {
        CHECK_MSG(with_rank[r] == 1, "%d kernels with reference %d", with_rank[r], r);
        const ns_kernel *K = ns_kernel_with_reference(r);
        CHECK_MSG(K != NULL && K->reference == r, "ns_kernel_with_reference(%d)", r);
    }
    CHECK(ns_kernel_with_reference(0) == NULL);
    CHECK(ns_kernel_with_reference(highest + 1) == NULL);
    CHECK(ns_kernel_with_reference(-1) == NULL);

    check_set_context("kernel lookups");
    CHECK(ns_kernel_at(count) == NULL);
    CHECK(ns_kernel_at(count + 1) == NULL);
    CHECK(ns_kernel_at(SIZE_MAX) == NULL);
    CHECK(ns_kernel_find("no_such_kernel") == NULL);
    CHECK(ns_kernel_find("") == NULL);
    CHECK(ns_kernel_find("naive_") == NULL);
    CHECK(ns_kernel_find("nai") == NULL);

    /* the documented kernels and their flags (docs/kernels.md's kernel table) */
    const struct {
        const char *name;
        bool parallel, table, quadratic, domain_memory, stable_order;
        int reference;
        bool bound, radius_levels;
    } known[] = {{"naive", false, false, true, false, true, 1, false, false},
                 {"naive_omp", true, false, true, false, false, 0, false, false},
                 {"grid_dense", false, false, false, true, true, 3, false, false},
                 {"hash_serial", false, true, false, false, true, 2, false, false},
                 {"hash_parallel", true, true, false, false, false, 4, false, false},
                 {"grid_sorted", true, false, false, false, true, 0, true, true}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        const ns_kernel *K = ns_kernel_find(known[i].name);
        check_set_context("documented kernel %s", known[i].name);
        CHECK(K != NULL);
        if (K == NULL)
            continue;
        CHECK_EQ_I(K->parallel, known[i].parallel);
        CHECK_EQ_I(K->uses_table_size, known[i].table);
        CHECK_EQ_I(K->quadratic, known[i].quadratic);
        CHECK_EQ_I(K->domain_memory, known[i].domain_memory);
        CHECK_EQ_I(K->stable_order, known[i].stable_order);
        CHECK_EQ_I(K->reference, known[i].reference);
        CHECK_EQ_I(K->bound, known[i].bound);
        CHECK_EQ_I(K->radius_levels, known[i].radius_levels);
    }
}

static void t_workload_table(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    size_t count = ns_workload_count();
    check_set_context("workload table");
    CHECK_CMP_U(count, >=, 5);
    const char *names[] = {"uniform", "dambreak", "clusters", "polydisperse", "sheet"};
    for (size_t i = 0; i < 5; i++)
        CHECK_MSG(ns_workload_find(names[i]) != NULL, "no workload '%s'", names[i]);
    for (size_t k = 0; k < count; k++) {
        const ns_workload *W = ns_workload_at(k);
        REQUIRE(W != NULL && W->name != NULL);
        check_set_context("workload %zu (%s)", k, W->name);
        CHECK(W->name[0] != '\0');
        CHECK(W->description != NULL && W->description[0] != '\0');
        CHECK(W->generate != NULL);
        CHECK(ns_workload_find(W->name) == W);
        for (size_t j = 0; j < k; j++)
            CHECK(strcmp(W->name, ns_workload_at(j)->name) != 0);
        printf("%-14s %s\n", W->name, W->description);
    }
    /* the properties: one headline workload; the documented ones' values */
    check_set_context("workload properties");
    int headlines = 0;
    for (size_t k = 0; k < count; k++) {
        const ns_workload *W = ns_workload_at(k);
        headlines += W->headline;
        CHECK(W->cache_version >= 0);
    }
    CHECK_EQ_I(headlines, 1);
    CHECK(ns_workload_find("uniform")->headline);
    CHECK_EQ_I(ns_workload_find("uniform")->cache_version, 0);
    const ns_workload *settled = ns_workload_find("settled");
    REQUIRE(settled != NULL);
    CHECK_EQ_I(settled->cache_version, NS_SETTLED_VERSION);
    CHECK(settled->at_rest && !settled->headline);
    /* wide_radii says what the generated radii do: span two decades or more */
    for (size_t k = 0; k < count; k++) {
        const ns_workload *W = ns_workload_at(k);
        if (W->cache_version > 0) /* simulated: equal spheres, seconds to make */
            continue;
        enum { N = 20000 };
        static float pos[3 * N], radius[N];
        REQUIRE(W->generate(N, 1, 1, pos, radius, NULL) == NS_OK);
        float lo = radius[0], hi = radius[0];
        for (size_t i = 1; i < N; i++) {
            lo = radius[i] < lo ? radius[i] : lo;
            hi = radius[i] > hi ? radius[i] : hi;
        }
        check_set_context("workload %s: radii %g to %g", W->name, lo, hi);
        CHECK_EQ_I(W->wide_radii, hi >= 100.0f * lo);
    }

    check_set_context("workload lookups");
    CHECK(ns_workload_at(count) == NULL);
    CHECK(ns_workload_at(SIZE_MAX) == NULL);
    CHECK(ns_workload_find("no_such_workload") == NULL);
    CHECK(ns_workload_find("") == NULL);
}

/* ---- workloads ---- */

/* W's particles with one thread; the generator must succeed. */
static void generate(const ns_workload *W, size_t n, uint64_t seed, float *pos, float *radius)
{
    ns_error err;
    CHECK_STATUS(W->generate(n, seed, 1, pos, radius, &err), NS_OK, &err);
}

static void t_workload_determinism(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const size_t sizes[] = {1, 2, 100, 1000, 5000};
    for (size_t w = 0; w < ns_workload_count(); w++) {
        const ns_workload *W = ns_workload_at(w);
        if (W->cache_version > 0)
            continue; /* a simulated workload: test_sim's settled tests */
        for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
            size_t n = sizes[t];
            check_set_context("workload %s n=%zu", W->name, n);
            tl_set a, b, c;
            tl_set_init(&a, n);
            tl_set_init(&b, n);
            tl_set_init(&c, n);
            /* different prior contents: the generator must write everything */
            memset(a.pos, 0xFF, 3 * n * sizeof(float));
            memset(a.radius, 0xFF, n * sizeof(float));
            memset(b.pos, 0x00, 3 * n * sizeof(float));
            memset(b.radius, 0x00, n * sizeof(float));
            generate(W, n, 1, a.pos, a.radius);
            generate(W, n, 1, b.pos, b.radius);
            generate(W, n, 2, c.pos, c.radius);
            CHECK_MSG(memcmp(a.pos, b.pos, 3 * n * sizeof(float)) == 0,
                      "same (n, seed) gave different positions");
            CHECK_MSG(memcmp(a.radius, b.radius, n * sizeof(float)) == 0,
                      "same (n, seed) gave different radii");
            if (n >= 100)
                CHECK_MSG(memcmp(a.pos, c.pos, 3 * n * sizeof(float)) != 0,
                          "seeds 1 and 2 gave the same positions");
            tl_set_free(&a);
            tl_set_free(&b);
            tl_set_free(&c);
        }
    }
}

/* Smallest and largest eigenvalue of the positions' covariance matrix
 * (closed form for symmetric 3x3 matrices). */
static void principal_spread(const float *pos, size_t n, double *lmin, double *lmax)
{
    double m[3] = {0, 0, 0}, c[3][3] = {{0}};
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            m[a] += pos[3 * i + a] / (double)n;
    for (size_t i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                c[a][b] += (pos[3 * i + a] - m[a]) * (pos[3 * i + b] - m[b]) / (double)n;
    double p1 = c[0][1] * c[0][1] + c[0][2] * c[0][2] + c[1][2] * c[1][2];
    double q = (c[0][0] + c[1][1] + c[2][2]) / 3.0;
    double p2 = (c[0][0] - q) * (c[0][0] - q) + (c[1][1] - q) * (c[1][1] - q) +
                (c[2][2] - q) * (c[2][2] - q) + 2.0 * p1;
    double p = sqrt(p2 / 6.0);
    if (p == 0.0) {
        *lmin = *lmax = q;
        return;
    }
    double bm[3][3];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            bm[a][b] = (c[a][b] - (a == b ? q : 0.0)) / p;
    double det = bm[0][0] * (bm[1][1] * bm[2][2] - bm[1][2] * bm[2][1]) -
                 bm[0][1] * (bm[1][0] * bm[2][2] - bm[1][2] * bm[2][0]) +
                 bm[0][2] * (bm[1][0] * bm[2][1] - bm[1][1] * bm[2][0]);
    double r = det / 2.0;
    double phi = r <= -1.0 ? acos(-1.0) / 3.0 : r >= 1.0 ? 0.0 : acos(r) / 3.0;
    *lmax = q + 2.0 * p * cos(phi);
    *lmin = q + 2.0 * p * cos(phi + 2.0 * acos(-1.0) / 3.0);
}

static void t_workload_sanity(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const size_t sizes[] = {1, 2, 10, 1000, 20000};
    for (size_t w = 0; w < ns_workload_count(); w++) {
        const ns_workload *W = ns_workload_at(w);
        if (W->cache_version > 0)
            continue; /* a simulated workload: test_sim's settled tests */
        /* n = 0 writes nothing */
        float guard_pos[6], guard_r[2];
        for (int i = 0; i < 6; i++)
            guard_pos[i] = 1234.5f;
        guard_r[0] = guard_r[1] = 6789.0f;
        check_set_context("workload %s n=0", W->name);
        generate(W, 0, 1, guard_pos, guard_r);
        for (int i = 0; i < 6; i++)
            CHECK_EQ_F32_BITS(guard_pos[i], 1234.5f);
        CHECK_EQ_F32_BITS(guard_r[0], 6789.0f);

        for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
            size_t n = sizes[t];
            check_set_context("workload %s n=%zu", W->name, n);
            tl_set s;
            tl_set_init(&s, n);
            memset(s.pos, 0xFF, 3 * n * sizeof(float)); /* NaN: unwritten shows up */
            memset(s.radius, 0xFF, n * sizeof(float));
            generate(W, n, 7, s.pos, s.radius);
            ns_particles p = tl_particles(&s);
            ns_error err;
            CHECK_STATUS(ns_particles_validate(&p, &err), NS_OK, &err);
            size_t bad = 0;
            float rmin = FLT_MAX, rmax = 0.0f;
            for (size_t i = 0; i < n; i++) {
                for (int c = 0; c < 3; c++)
                    bad += !isfinite(s.pos[3 * i + c]);
                float r = s.radius[i];
                bad += !isfinite(r) || !(r >= 0.0f);
                if (r < rmin)
                    rmin = r;
                if (r > rmax)
                    rmax = r;
            }
            CHECK_EQ_U(bad, 0);
            CHECK_CMP_D(rmax, >, 0.0);
            if (strcmp(W->name, "polydisperse") == 0 && n >= 1000) {
                /* "radii spread over 10:1" */
                CHECK_CMP_D(rmin, >, 0.0);
                CHECK_CMP_D(rmax / rmin, >=, 3.0);
                CHECK_CMP_D(rmax / rmin, <=, 11.0);
            }
            if (strcmp(W->name, "powder") == 0 && n >= 1000) {
                /* "radii over two decades (0.004 to 0.5)" */
                CHECK_CMP_D(rmin, >=, 0.5 / 256.0);
                CHECK_CMP_D(rmax, <=, 0.5);
                CHECK_CMP_D(rmax / rmin, >=, 100.0);
            }
            if (strcmp(W->name, "sheet") == 0 && n >= 1000) {
                /* "particles on a thin plane" (possibly tilted): the smallest
                 * principal spread is much smaller than the largest */
                double lmin, lmax;
                principal_spread(s.pos, n, &lmin, &lmax);
                printf("sheet n=%zu: principal spreads %.4g .. %.4g\n", n, sqrt(lmin), sqrt(lmax));
                CHECK_CMP_D(sqrt(lmin), <=, 0.1 * sqrt(lmax));
            }
            tl_set_free(&s);
        }
    }
}

static const ns_kernel *fast_kernel(void)
{
    const ns_kernel *k = ns_kernel_find("hash_serial");
    return k ? k : tl_kernel("naive");
}

static void t_uniform_density(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const ns_kernel *K = fast_kernel();
    for (uint64_t seed = 1; seed <= 2; seed++) {
        const size_t sizes[] = {5000, 20000};
        for (size_t t = 0; t < 2; t++) {
            size_t n = sizes[t];
            tl_set s;
            tl_generate(tl_workload("uniform"), n, seed, &s);
            ns_particles p = tl_particles(&s);
            ns_contact_list got;
            ns_contact_list_init(&got);
            ns_error err;
            check_set_context("uniform n=%zu seed=%llu (kernel %s)", n, (unsigned long long)seed,
                              K->name);
            CHECK_STATUS(tl_find(K, &p, NULL, &got, &err), NS_OK, &err);
            double per = 2.0 * (double)got.count / (double)n;
            printf("uniform n=%zu seed=%llu: %zu contacts, %.2f per particle\n", n,
                   (unsigned long long)seed, got.count, per);
            CHECK_CMP_D(per, >=, 20.0);
            CHECK_CMP_D(per, <=, 40.0);
            ns_contact_list_free(&got);
            tl_set_free(&s);
        }
    }
}

/* ---- config ---- */

static void t_config_default(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    ns_config d = ns_config_default();
    check_set_context("ns_config_default()");
    CHECK_EQ_I(d.threads, 0);
    CHECK_EQ_U(d.table_size, 0);
    CHECK_EQ_U(d.max_contacts, 0);
    CHECK(!d.exact_threads);
    CHECK(d.grid_max_bytes == 0 || d.grid_max_bytes == NS_DEFAULT_GRID_MAX_BYTES);
    /* max_contacts 0 means a limit that fits in memory: 24-byte contacts in at
     * most a quarter of it (here: at least a million, at most NS_MAX_CONTACTS) */
    size_t limit = ns_default_max_contacts();
    CHECK_CMP_U(limit, >=, 1000000);
    CHECK_CMP_U(limit, <=, NS_MAX_CONTACTS);
    CHECK_EQ_U(limit, ns_default_max_contacts());

    ns_config z;
    memset(&z, 0, sizeof z);
    tl_set s;
    tl_generate(tl_workload("clusters"), 1500, 4, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list a, b, c;
    ns_contact_list_init(&a);
    ns_contact_list_init(&b);
    ns_contact_list_init(&c);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_error err;
        check_set_context("kernel %s: NULL config vs ns_config_default() vs zeroed", K->name);
        CHECK_STATUS(tl_find(K, &p, NULL, &a, &err), NS_OK, &err);
        CHECK_STATUS(tl_find(K, &p, &d, &b, &err), NS_OK, &err);
        CHECK_STATUS(tl_find(K, &p, &z, &c, &err), NS_OK, &err);
        CHECK(a.count > 0);
        tl_lists_equal(&a, &b, "ns_config_default()");
        tl_lists_equal(&a, &c, "zeroed config");
    }
    ns_contact_list_free(&a);
    ns_contact_list_free(&b);
    ns_contact_list_free(&c);
    tl_set_free(&s);
}

/* ---- NULL arguments ---- */

static void t_null_arguments(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tl_set s;
    tl_generate(tl_workload("uniform"), 50, 1, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list list;
    ns_contact_list_init(&list);
    ns_error err;

    check_set_context("ns_find_contacts(NULL kernel)");
    CHECK_STATUS(tl_find(NULL, &p, NULL, &list, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_find_contacts(NULL, &p, NULL, &list, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
    check_set_context("ns_particles_validate(NULL)");
    CHECK_STATUS(ns_particles_validate(NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_EQ_I(err.status, NS_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(ns_particles_validate(NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);

    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        check_set_context("kernel %s: NULL particles", K->name);
        CHECK_STATUS(tl_find(K, NULL, NULL, &list, &err), NS_ERR_INVALID_ARGUMENT, &err);
        check_set_context("kernel %s: NULL contact list", K->name);
        err.status = NS_OK;
        CHECK_STATUS(ns_find_contacts(K, &p, NULL, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_EQ_I(err.status, NS_ERR_INVALID_ARGUMENT);
        CHECK_STATUS(ns_find_contacts(K, &p, NULL, NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
        check_set_context("kernel %s: pos NULL with n = 50", K->name);
        ns_particles bad = p;
        bad.pos = NULL;
        CHECK_STATUS(tl_find(K, &bad, NULL, &list, &err), NS_ERR_INVALID_ARGUMENT, &err);
        check_set_context("kernel %s: radius NULL means radius_uniform", K->name);
        ns_particles uni = p;
        uni.radius = NULL;
        uni.radius_uniform = 0.3f;
        CHECK_STATUS(tl_find(K, &uni, NULL, &list, &err), NS_OK, &err);

        check_set_context("kernel %s: index calls with NULL", K->name);
        CHECK_STATUS(ns_index_create(K, NULL, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
        ns_index *index = NULL;
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        CHECK_STATUS(ns_index_build(index, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_STATUS(ns_index_build(index, &bad, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_STATUS(ns_index_query(index, NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
        ns_index_destroy(index);
    }
    check_set_context("index calls with a NULL index or kernel");
    ns_index *index = NULL;
    CHECK_STATUS(ns_index_create(NULL, NULL, &index, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_index_create(NULL, NULL, &index, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
    CHECK_STATUS(ns_index_build(NULL, &p, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_index_query(NULL, &list, &err), NS_ERR_INVALID_ARGUMENT, &err);
    check_set_context("ns_contact_list_reserve(NULL)");
    CHECK_STATUS(ns_contact_list_reserve(NULL, 10, &err), NS_ERR_INVALID_ARGUMENT, &err);
    ns_contact_list_free(&list);
    tl_set_free(&s);
}

/* ---- index ---- */

static int has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void t_index_api(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tl_set a, b;
    tl_generate(tl_workload("uniform"), 1000, 1, &a);
    tl_generate(tl_workload("clusters"), 700, 2, &b);
    ns_particles pa = tl_particles(&a), pb = tl_particles(&b);
    ns_contact_list ra, rb, got;
    ns_contact_list_init(&ra);
    ns_contact_list_init(&rb);
    ns_contact_list_init(&got);
    ns_error err;
    CHECK_STATUS(tl_find(tl_kernel("naive"), &pa, NULL, &ra, &err), NS_OK, &err);
    CHECK_STATUS(tl_find(tl_kernel("naive"), &pb, NULL, &rb, &err), NS_OK, &err);
    REQUIRE(ra.count > 0 && rb.count > 0 && ra.count != rb.count);

    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_index *index = NULL;
        check_set_context("kernel %s: create", K->name);
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        REQUIRE(index != NULL);

        check_set_context("kernel %s: query before build", K->name);
        CHECK_STATUS(tl_find(K, &pa, NULL, &got, &err), NS_OK, &err); /* fill the list */
        ns_status st = ns_index_query(index, &got, &err);
        CHECK_MSG(st != NS_OK, "query before any build returned NS_OK with %zu contacts",
                  got.count);
        if (st != NS_OK) {
            CHECK_EQ_I(err.status, st);
            CHECK_EQ_U(got.count, 0);
        }

        check_set_context("kernel %s: build A, query; build B, query", K->name);
        CHECK_STATUS(ns_index_build(index, &pa, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
        ns_contact_list_sort(&got);
        tl_lists_equal(&ra, &got, "first build");
        CHECK_STATUS(ns_index_build(index, &pb, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
        ns_contact_list_sort(&got);
        tl_lists_equal(&rb, &got, "second build (a different set)");
        CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
        ns_contact_list_sort(&got);
        tl_lists_equal(&rb, &got, "second query of the same build");
        CHECK_STATUS(ns_index_build(index, &pa, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
        ns_contact_list_sort(&got);
        tl_lists_equal(&ra, &got, "third build (back to A)");

        check_set_context("kernel %s: build over n = 0", K->name);
        ns_particles empty = pa;
        empty.n = 0;
        CHECK_STATUS(ns_index_build(index, &empty, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
        CHECK_EQ_U(got.count, 0);
        ns_index_destroy(index);

        /* the config is copied at create */
        check_set_context("kernel %s: config copied at create", K->name);
        ns_config cfg = ns_config_default();
        cfg.max_contacts = ra.count;
        REQUIRE(ns_index_create(K, &cfg, &index, &err) == NS_OK);
        cfg.max_contacts = 1;
        CHECK_STATUS(ns_index_build(index, &pa, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
        CHECK_EQ_U(got.count, ra.count);
        ns_index_destroy(index);
    }
    ns_contact_list_free(&ra);
    ns_contact_list_free(&rb);
    ns_contact_list_free(&got);
    tl_set_free(&a);
    tl_set_free(&b);
}

static void t_index_info(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tl_set s;
    tl_generate(tl_workload("polydisperse"), 2000, 3, &s);
    ns_particles p = tl_particles(&s);
    float rmax = 0;
    for (size_t i = 0; i < s.n; i++)
        rmax = s.radius[i] > rmax ? s.radius[i] : rmax;

    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_index *index = NULL;
        ns_error err;
        ns_index_info info;
        check_set_context("kernel %s: index info after a build of polydisperse n=2000", K->name);
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
        memset(&info, 0xAB, sizeof info);
        ns_index_get_info(index, &info);
        printf("%-14s bytes=%zu table_size=%zu nonempty=%zu cells=%zu cell_size=%g\n", K->name,
               info.bytes, info.table_size, info.nonempty_buckets, info.cells, info.cell_size);
        int hash = has_prefix(K->name, "hash");
        int grid = has_prefix(K->name, "grid");
        if (hash || grid) {
            CHECK_CMP_U(info.bytes, >, 0);
            CHECK_CMP_U(info.bytes, <, (size_t)1 << 30);
            /* docs/design.md: the cell size is 2 max(r) */
            CHECK_CMP_D(fabs(info.cell_size - 2.0 * (double)rmax), <=, 1e-6 * 2.0 * rmax);
            CHECK_CMP_U(info.nonempty_buckets, >=, 1);
            CHECK_CMP_U(info.nonempty_buckets, <=, s.n);
        }
        if (hash) {
            CHECK_CMP_U(info.table_size, >=, 1);
            CHECK_CMP_U(info.nonempty_buckets, <=, info.table_size);
        }
        if (grid) {
            CHECK_EQ_U(info.table_size, 0);
            CHECK_CMP_U(info.cells, >=, info.nonempty_buckets);
        }
        if (has_prefix(K->name, "naive")) {
            CHECK_EQ_U(info.table_size, 0);
            CHECK_EQ_U(info.cells, 0);
            CHECK_CMP_D(info.cell_size, ==, 0.0);
        }
        ns_index_destroy(index);
    }
    tl_set_free(&s);
}

/* ---- contact lists ---- */

static void t_contact_list_sort(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    ns_contact_list l;
    ns_contact_list_init(&l);
    check_set_context("ns_contact_list_init");
    CHECK(l.items == NULL);
    CHECK_EQ_U(l.count, 0);
    CHECK_EQ_U(l.capacity, 0);
    ns_contact_list_sort(&l); /* empty: nothing to do */
    CHECK_EQ_U(l.count, 0);

    /* distinct pairs, including indices near UINT32_MAX (a comparator that
     * subtracts would overflow), shuffled */
    const size_t n = 3000;
    ns_error err;
    REQUIRE(ns_contact_list_reserve(&l, n, &err) == NS_OK);
    uint64_t rng = 5;
    const uint32_t special[][2] = {{0, 1},
                                   {0, 0xFFFFFFFFu},
                                   {0, 0x80000001u},
                                   {0x7FFFFFFFu, 0x80000000u},
                                   {0xFFFFFFF0u, 0xFFFFFFF1u},
                                   {0xFFFFFFF0u, 0xFFFFFFFFu},
                                   {0x80000000u, 0x80000005u}};
    const size_t nspecial = sizeof special / sizeof special[0];
    for (size_t k = 0; k < n; k++) {
        ns_contact c;
        if (k < nspecial) {
            c.i = special[k][0];
            c.j = special[k][1];
        } else {
            c.i = (uint32_t)(k / 7) + 1;
            c.j = c.i + 1 + (uint32_t)(k % 7) * 1000u;
        }
        c.overlap = (float)(c.i & 0xFFFFu); /* payload tied to the pair */
        c.nx = (float)(c.j & 0xFFFFu);
        c.ny = (float)(c.j >> 16);
        c.nz = (float)(c.i >> 16);
        l.items[l.count++] = c;
    }
    for (size_t k = n - 1; k > 0; k--) { /* Fisher-Yates */
        size_t r = (size_t)(tl_rng(&rng) % (k + 1));
        ns_contact t = l.items[k];
        l.items[k] = l.items[r];
        l.items[r] = t;
    }
    ns_contact_list_sort(&l);
    check_set_context("ns_contact_list_sort of %zu shuffled contacts", n);
    CHECK_EQ_U(l.count, n);
    size_t disorder = 0, payload = 0;
    for (size_t k = 0; k < l.count; k++) {
        const ns_contact *c = &l.items[k];
        if (k > 0) {
            const ns_contact *p = &l.items[k - 1];
            disorder += !(p->i < c->i || (p->i == c->i && p->j < c->j));
        }
        payload += c->overlap != (float)(c->i & 0xFFFFu) || c->nx != (float)(c->j & 0xFFFFu) ||
                   c->ny != (float)(c->j >> 16) || c->nz != (float)(c->i >> 16);
    }
    CHECK_EQ_U(disorder, 0);
    CHECK_EQ_U(payload, 0);
    CHECK_EQ_U(l.items[0].i, 0);
    CHECK_EQ_U(l.items[0].j, 1);
    CHECK_EQ_U(l.items[1].j, 0x80000001u);
    CHECK_EQ_U(l.items[2].j, 0xFFFFFFFFu);
    CHECK_EQ_U(l.items[n - 2].i, 0xFFFFFFF0u);
    CHECK_EQ_U(l.items[n - 2].j, 0xFFFFFFF1u);
    CHECK_EQ_U(l.items[n - 1].j, 0xFFFFFFFFu);
    CHECK_EQ_U(l.items[n - 3].i, 0x80000000u);
    CHECK_EQ_U(l.items[n - 4].i, 0x7FFFFFFFu);

    /* sorting a sorted list changes nothing */
    ns_contact_list copy;
    ns_contact_list_init(&copy);
    REQUIRE(ns_contact_list_reserve(&copy, n, &err) == NS_OK);
    memcpy(copy.items, l.items, n * sizeof(ns_contact));
    copy.count = n;
    ns_contact_list_sort(&l);
    tl_lists_equal(&copy, &l, "sorting twice");

    /* indices dense enough for the counting sort: a particle with 600
     * contacts given in falling j (a crowded pile's bucket, longer than the
     * insertion sort takes), others with a few, shuffled; every pair once
     * in the result, in (i, j) order, with its payload */
    const uint32_t particles = 1000;
    l.count = 0;
    for (uint32_t j = 600; j >= 1; j--)
        l.items[l.count++] = (ns_contact){.i = 0, .j = j, .overlap = (float)j};
    for (uint32_t i = 1; i + 5 < particles && l.count < n - 1; i++)
        for (uint32_t d = 1 + i % 5; d >= 1 && l.count < n - 1; d--)
            l.items[l.count++] = (ns_contact){.i = i, .j = i + d, .nx = (float)i};
    /* and one pair given as (j, i), its i past every j: a caller's list */
    l.items[l.count++] = (ns_contact){.i = 5 * particles, .j = 1, .nx = 5.0f * particles};
    for (size_t k = l.count - 1; k > 0; k--) {
        size_t r = (size_t)(tl_rng(&rng) % (k + 1));
        ns_contact t = l.items[k];
        l.items[k] = l.items[r];
        l.items[r] = t;
    }
    size_t dense = l.count;
    ns_contact_list_sort(&l);
    check_set_context("ns_contact_list_sort of %zu contacts among %u particles", dense,
                      (unsigned)particles);
    CHECK_EQ_U(l.count, dense);
    disorder = payload = 0;
    for (size_t k = 0; k < l.count; k++) {
        const ns_contact *c = &l.items[k];
        if (k > 0) {
            const ns_contact *p = &l.items[k - 1];
            disorder += !(p->i < c->i || (p->i == c->i && p->j < c->j));
        }
        payload += c->i == 0 ? c->overlap != (float)c->j : c->nx != (float)c->i;
    }
    CHECK_EQ_U(disorder, 0);
    CHECK_EQ_U(payload, 0);
    CHECK_EQ_U(l.items[0].j, 1);
    CHECK_EQ_U(l.items[599].j, 600);
    CHECK_EQ_U(l.items[600].i, 1);
    CHECK_EQ_U(l.items[dense - 1].i, 5 * particles);
    ns_contact_list_free(&copy);
    ns_contact_list_free(&l);
}

static void t_contact_list_reserve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    ns_contact_list l;
    ns_error err;
    ns_contact_list_init(&l);
    check_set_context("ns_contact_list_reserve");
    CHECK_STATUS(ns_contact_list_reserve(&l, 0, &err), NS_OK, &err);
    CHECK_EQ_U(l.count, 0);
    CHECK_STATUS(ns_contact_list_reserve(&l, 10, &err), NS_OK, &err);
    CHECK_CMP_U(l.capacity, >=, 10);
    CHECK(l.items != NULL);
    CHECK_EQ_U(l.count, 0);
    for (uint32_t k = 0; k < 10; k++) {
        ns_contact c = {k, k + 1, (float)k, 0.0f, 0.0f, 1.0f};
        l.items[l.count++] = c;
    }
    CHECK_STATUS(ns_contact_list_reserve(&l, 100000, &err), NS_OK, &err);
    CHECK_CMP_U(l.capacity, >=, 100000);
    CHECK_EQ_U(l.count, 10);
    size_t ok = 0;
    for (uint32_t k = 0; k < 10; k++)
        ok += l.items[k].i == k && l.items[k].j == k + 1 && l.items[k].overlap == (float)k;
    CHECK_EQ_U(ok, 10);
    l.items[99999].i = 7; /* the capacity is really there (ASan would see) */
    size_t cap = l.capacity;
    CHECK_STATUS(ns_contact_list_reserve(&l, 5, &err), NS_OK, &err);
    CHECK_EQ_U(l.capacity, cap); /* never shrinks */
    CHECK_EQ_U(l.count, 10);
    CHECK_EQ_U(l.items[9].j, 10);
    ns_contact_list_free(&l);
}

#if defined(__linux__)
/* Blocks mapped afresh for each allocation, in pages of the system's size
 * (no huge pages), so that mincore() shows which of them a call made
 * present. A block's first 64 bytes hold its size. */
enum { FRESH_HEAD = 64 };
static void *fresh_malloc(size_t size, void *ctx)
{
    (void)ctx;
    void *m =
        mmap(NULL, size + FRESH_HEAD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
#if defined(MADV_NOHUGEPAGE)
    (void)madvise(m, size + FRESH_HEAD, MADV_NOHUGEPAGE);
#endif
    memcpy(m, &size, sizeof size);
    return (char *)m + FRESH_HEAD;
}
static size_t fresh_size(void *ptr)
{
    size_t size;
    memcpy(&size, (char *)ptr - FRESH_HEAD, sizeof size);
    return size;
}
static void fresh_free(void *ptr, void *ctx)
{
    (void)ctx;
    if (ptr)
        munmap((char *)ptr - FRESH_HEAD, fresh_size(ptr) + FRESH_HEAD);
}
static void *fresh_realloc(void *ptr, size_t size, void *ctx)
{
    void *to = fresh_malloc(size, ctx);
    if (to && ptr) {
        size_t had = fresh_size(ptr);
        memcpy(to, ptr, had < size ? had : size);
        fresh_free(ptr, ctx);
    }
    return to;
}

/* Of the whole pages inside [from, to) (*whole of them), how many are
 * present; SIZE_MAX when mincore() cannot say. */
static size_t present_pages(const void *from, const void *to, size_t *whole)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)from + page - 1) & ~(page - 1), hi = (uintptr_t)to & ~(page - 1);
    *whole = hi > lo ? (hi - lo) / page : 0;
    if (*whole == 0)
        return 0;
    size_t present = 0;
    unsigned char *in = malloc(*whole);
    if (!in || mincore((void *)lo, hi - lo, in) != 0) {
        free(in);
        return SIZE_MAX;
    }
    for (size_t k = 0; k < *whole; k++)
        present += in[k] & 1u;
    free(in);
    return present;
}

/* Whether pages made present show as present here (not under an emulator
 * that accepts MADV_POPULATE_WRITE and does nothing; where the kernel
 * refuses it the library writes a byte per page, which shows). */
static bool populate_shows(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    char *m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return false;
    unsigned char in = 0;
    int refused = madvise(m, page, 23 /* MADV_POPULATE_WRITE */);
    bool shows = mincore(m, page, &in) == 0 && (refused || (in & 1u));
    munmap(m, page);
    return shows;
}
#endif

/* Private (src/core/core.h): a list grown for a search about to fill it. */
ns_status ns__contact_list_grow(ns_contact_list *list, size_t filled, size_t max_contacts,
                                int threads, ns_error *err);

/* Growing a list for a search, its new pages made present first (by 1 to 3
 * threads, several pages each): what it held is kept byte for byte, the
 * room is there (the contacts to be filled and an eighth more, never past
 * the limit), and a refusal leaves the list as it was. On Linux, through an
 * allocator that maps every block afresh: every page up to the contacts to
 * be filled is present and none past them, and a list with room is left
 * untouched. */
static void t_contact_list_grow(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    enum { HELD = 1000, FILLED = 250000, LIMIT = 300000 }; /* 6.75 MB: over 2 MiB */
    const size_t WANTED = FILLED + FILLED / 8;                /* within LIMIT */
#if defined(__linux__)
    ns_allocator fresh = {fresh_malloc, fresh_realloc, fresh_free, NULL};
    ns_set_allocator(&fresh);
    bool shows = populate_shows();
#endif
    for (int threads = 1; threads <= 3; threads++) {
        check_set_context("ns__contact_list_grow, %d threads", threads);
        ns_contact_list l;
        ns_error err;
        ns_contact_list_init(&l);
        REQUIRE(ns_contact_list_reserve(&l, HELD, &err) == NS_OK);
        memset(l.items, 0xA5, HELD * sizeof(ns_contact));
        l.count = HELD;
        CHECK_STATUS(ns__contact_list_grow(&l, FILLED, LIMIT, threads, &err), NS_OK, &err);
        CHECK_EQ_U(l.capacity, WANTED);
        CHECK_EQ_U(l.count, HELD);
        size_t kept = 0;
        for (size_t b = 0; b < HELD * sizeof(ns_contact); b++)
            kept += ((const unsigned char *)l.items)[b] == 0xA5;
        CHECK_EQ_U(kept, HELD * sizeof(ns_contact));
        size_t cap = l.capacity;
        ns_contact *items = l.items;
        CHECK_STATUS(ns__contact_list_grow(&l, WANTED, LIMIT, threads, &err), NS_OK, &err);
        CHECK(l.capacity == cap && l.items == items); /* room already: not grown */
#if defined(__linux__)
        size_t whole, present = present_pages(items + HELD, items + FILLED, &whole);
        if (shows && present != SIZE_MAX) {
            CHECK_CMP_U(whole, >, 3); /* several pages for each thread */
            CHECK_EQ_U(present, whole);
            CHECK_EQ_U(present_pages(items + FILLED, items + WANTED, &whole), 0);
            CHECK_CMP_U(whole, >, 0);
        }
#endif
        for (size_t k = HELD; k < WANTED; k++) /* the room is there (ASan would see) */
            l.items[k].i = (uint32_t)k;
        CHECK_STATUS(ns__contact_list_grow(&l, HELD, LIMIT, threads, &err), NS_OK, &err);
        CHECK(l.capacity == cap && l.items == items);
        CHECK_EQ_U(l.items[WANTED - 1].i, WANTED - 1);
        ns_status st = ns__contact_list_grow(&l, SIZE_MAX, SIZE_MAX, threads, &err);
        CHECK_EQ_I(st, NS_ERR_TOO_LARGE);
        CHECK(l.capacity == cap && l.items == items && l.count == HELD);
        CHECK_EQ_U(l.items[HELD - 1].i, 0xA5A5A5A5u);
        ns_contact_list_free(&l);
        /* the eighth more would pass the limit: exactly the contacts */
        CHECK_STATUS(ns__contact_list_grow(&l, FILLED, FILLED + 10, threads, &err), NS_OK, &err);
        CHECK_EQ_U(l.capacity, FILLED);
        ns_contact_list_free(&l);
    }
#if defined(__linux__)
    ns_set_allocator(NULL);
#endif
}

/* An allocator refusing blocks over 1 GiB, so that huge requests fail
 * cleanly (the C library or a sanitizer might abort on them instead). */
static void *cap_malloc(size_t size, void *ctx)
{
    size_t *largest = ctx;
    if (size > *largest)
        *largest = size;
    return size > ((size_t)1 << 30) ? NULL : malloc(size ? size : 1);
}
static void *cap_realloc(void *ptr, size_t size, void *ctx)
{
    size_t *largest = ctx;
    if (size > *largest)
        *largest = size;
    return size > ((size_t)1 << 30) ? NULL : realloc(ptr, size ? size : 1);
}
static void cap_free(void *ptr, void *ctx)
{
    (void)ctx;
    free(ptr);
}

static void t_reserve_huge(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    static size_t largest = 0;
    ns_allocator a = {cap_malloc, cap_realloc, cap_free, &largest};
    ns_set_allocator(&a);

    ns_contact_list l;
    ns_error err;
    ns_contact_list_init(&l);
    check_set_context("reserve through a capped allocator");
    CHECK_STATUS(ns_contact_list_reserve(&l, 1000, &err), NS_OK, &err);
    CHECK_CMP_U(largest, >=, 1000 * sizeof(ns_contact)); /* the hook is used */
    l.items[0].i = 42;
    l.count = 1;
    size_t cap = l.capacity;
    const size_t huge[] = {SIZE_MAX, SIZE_MAX / sizeof(ns_contact) + 2,
                           SIZE_MAX / sizeof(ns_contact), (size_t)1 << 40, NS_MAX_CONTACTS + 1};
    for (size_t h = 0; h < sizeof huge / sizeof huge[0]; h++) {
        check_set_context("ns_contact_list_reserve(%zu)", huge[h]);
        ns_status st = ns_contact_list_reserve(&l, huge[h], &err);
        CHECK_MSG(st == NS_ERR_OUT_OF_MEMORY || st == NS_ERR_TOO_LARGE,
                  "status %d (%s), want out of memory or too large", (int)st, ns_status_str(st));
        if (st != NS_OK) {
            CHECK_EQ_I(err.status, st);
            CHECK_EQ_U(l.capacity, cap); /* unchanged */
            CHECK_EQ_U(l.count, 1);
            CHECK_EQ_U(l.items[0].i, 42);
        }
    }
    check_set_context("reserve after failed huge reserves");
    CHECK_STATUS(ns_contact_list_reserve(&l, 5000, &err), NS_OK, &err);
    CHECK_EQ_U(l.items[0].i, 42);
    ns_contact_list_free(&l);
    ns_set_allocator(NULL);
}

static int refusal(ns_status st)
{
    return st == NS_ERR_OUT_OF_MEMORY || st == NS_ERR_TOO_LARGE || st == NS_ERR_INVALID_ARGUMENT;
}

static void t_huge_settings(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    /* huge table sizes and memory caps fail cleanly (no overflow, no crash);
     * the allocator refuses blocks over 1 GiB */
    static size_t largest = 0;
    ns_allocator a = {cap_malloc, cap_realloc, cap_free, &largest};
    ns_set_allocator(&a);
    tl_set s;
    tl_generate(tl_workload("uniform"), 1000, 1, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK, &err);

    const size_t tables[] = {SIZE_MAX, SIZE_MAX / 2, SIZE_MAX / sizeof(void *) + 1,
                             (size_t)1 << 40};
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        if (!K->uses_table_size)
            continue;
        for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
            ns_config cfg = ns_config_default();
            cfg.table_size = tables[t];
            check_set_context("kernel %s, table_size = %zu", K->name, tables[t]);
            ns_status st = tl_find(K, &p, &cfg, &got, &err);
            CHECK_MSG(refusal(st),
                      "status %d (%s): want out of memory, too large or invalid "
                      "argument",
                      (int)st, ns_status_str(st));
        }
        check_set_context("kernel %s after huge table sizes", K->name);
        CHECK_STATUS(tl_find(K, &p, NULL, &got, &err), NS_OK, &err);
        tl_lists_equal(&ref, &got, check_context);
    }

    /* a dense grid with no cap over a layout whose cell count overflows 64 bits */
    tl_set far;
    tl_set_init(&far, 4);
    tl_set_put(&far, 0, -1e12f, -1e12f, -1e12f, 1e5f);
    tl_set_put(&far, 1, -1e12f, -1e12f, -1e12f, 1e5f);
    tl_set_put(&far, 2, 1e12f, 1e12f, 1e12f, 1e5f);
    tl_set_put(&far, 3, 0.0f, 0.0f, 0.0f, 1e5f);
    ns_particles fp = tl_particles(&far);
    tl_set mid;
    tl_set_init(&mid, 2);
    tl_set_put(&mid, 0, 0.0f, 0.0f, 0.0f, 0.5f);
    tl_set_put(&mid, 1, 1e5f, 1e5f, 1e5f, 0.5f); /* ~1e15 cells */
    ns_particles mp = tl_particles(&mid);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_config cfg = ns_config_default();
        cfg.grid_max_bytes = SIZE_MAX;
        for (int c = 0; c < 2; c++) {
            check_set_context("kernel %s, grid_max_bytes = SIZE_MAX, %s", K->name,
                              c ? "1e15 cells" : "1e21 cells (overflows size_t)");
            ns_status st = tl_find(K, c ? &mp : &fp, &cfg, &got, &err);
            if (K->domain_memory) {
                CHECK_MSG(st == NS_ERR_TOO_LARGE || st == NS_ERR_OUT_OF_MEMORY,
                          "status %d (%s): want too large or out of memory", (int)st,
                          ns_status_str(st));
            } else {
                CHECK_STATUS(st, NS_OK, &err);
                CHECK_EQ_U(got.count, c ? 0 : 1);
            }
        }
    }
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
    tl_set_free(&far);
    tl_set_free(&mid);
    ns_set_allocator(NULL);
}

/* ---- threads ---- */

static void t_explicit_threads(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const int threads[] = {1, 2, 3, 8};
    const char *workloads[] = {"uniform", "clusters", "dambreak"};
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    int parallel_seen = 0;
    for (size_t w = 0; w < 3; w++) {
        tl_set s;
        tl_generate(tl_workload(workloads[w]), 3000, 9, &s);
        ns_particles p = tl_particles(&s);
        ns_error err;
        CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK, &err);
        CHECK(ref.count > 0);
        for (size_t k = 0; k < ns_kernel_count(); k++) {
            const ns_kernel *K = ns_kernel_at(k);
            parallel_seen |= K->parallel;
            for (size_t t = 0; t < 4; t++) {
                if (!K->parallel && threads[t] != 3)
                    continue; /* serial kernels ignore threads: one check suffices */
                ns_config cfg = ns_config_default();
                cfg.threads = threads[t];
                cfg.exact_threads = true; /* the parallel code at every n */
                char what[120];
                snprintf(what, sizeof what, "kernel %s, config.threads = %d, %s n=3000", K->name,
                         threads[t], workloads[w]);
                check_set_context("%s", what);
                CHECK_STATUS(tl_find(K, &p, &cfg, &got, &err), NS_OK, &err);
                tl_lists_equal(&ref, &got, what);
                CHECK_STATUS(tl_find_index(K, &p, &cfg, &got, &err), NS_OK, &err);
                tl_lists_equal(&ref, &got, what);
            }
        }
        tl_set_free(&s);
    }
    /* more threads than particles */
    for (size_t n = 0; n <= 5; n++) {
        tl_set s;
        tl_generate(tl_workload("clusters"), n, 1, &s);
        for (size_t i = 0; i < n; i++)
            s.pos[3 * i] = s.pos[0]; /* bring them together: some contacts */
        ns_particles p = tl_particles(&s);
        ns_error err;
        CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK, &err);
        for (size_t k = 0; k < ns_kernel_count(); k++) {
            const ns_kernel *K = ns_kernel_at(k);
            if (!K->parallel)
                continue;
            ns_config cfg = ns_config_default();
            cfg.threads = ns_max_threads() < 64 ? ns_max_threads() : 64;
            cfg.exact_threads = true; /* the parallel code at every n */
            check_set_context("kernel %s, config.threads = %d, n = %zu", K->name, cfg.threads, n);
            CHECK_STATUS(tl_find(K, &p, &cfg, &got, &err), NS_OK, &err);
            tl_lists_equal(&ref, &got, check_context);
        }
        tl_set_free(&s);
    }
    check_set_context("a parallel kernel exists");
    CHECK(parallel_seen);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
}

static void t_bad_threads(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tl_set s;
    tl_generate(tl_workload("uniform"), 100, 1, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list got;
    ns_contact_list_init(&got);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        if (!K->parallel)
            continue;
        ns_config cfg = ns_config_default();
        ns_error err;
        const int bad[] = {-1, -8, INT32_MIN};
        for (int b = 0; b < 3; b++) {
            cfg.threads = bad[b];
            check_set_context("kernel %s, config.threads = %d (a bad setting)", K->name, bad[b]);
            CHECK_STATUS(tl_find(K, &p, &cfg, &got, &err), NS_ERR_INVALID_ARGUMENT, &err);
        }
    }
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* ns_contact_between over every pair i < j (and j > i, swapped) gives the
 * reference's contacts bit for bit, uniform radii too. */
static void t_contact_between(void)
{
    for (size_t w = 0; w < ns_workload_count(); w++) {
        const ns_workload *W = ns_workload_at(w);
        if (!tl_affordable(W, 600))
            continue;
        for (int uniform = 0; uniform < 2; uniform++) {
            check_set_context("%s, %s radii", W->name, uniform ? "uniform" : "per-particle");
            tl_set s;
            tl_generate(W, 600, 3, &s);
            ns_particles p = tl_particles(&s);
            if (uniform)
                p.radius = NULL, p.radius_uniform = s.radius[0];
            ns_contact_list ref, got;
            ns_contact_list_init(&ref);
            ns_contact_list_init(&got);
            ns_error err;
            CHECK_STATUS(tl_find(tl_reference_kernel(), &p, NULL, &ref, &err), NS_OK, &err);
            ns_contact_list_sort(&ref);
            CHECK_STATUS(ns_contact_list_reserve(&got, p.n * (p.n - 1) / 2, &err), NS_OK, &err);
            for (uint32_t i = 0; i < p.n; i++)
                for (uint32_t j = i + 1; j < p.n; j++) {
                    ns_contact c, swapped;
                    bool touch = ns_contact_between(&p, i, j, &c);
                    CHECK(ns_contact_between(&p, j, i, &swapped) == touch);
                    if (touch) {
                        CHECK(memcmp(&c, &swapped, sizeof c) == 0);
                        got.items[got.count++] = c;
                    }
                }
            tl_lists_equal(&ref, &got, W->name);
            ns_contact_list_free(&ref);
            ns_contact_list_free(&got);
            tl_set_free(&s);
        }
    }
}

static void t_concurrent_searches(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    /* different lists and indexes from different threads at once; parallel
     * kernels inside the region follow OpenMP nesting (one thread by default) */
    tl_set s;
    tl_generate(tl_workload("clusters"), 2000, 6, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list ref;
    ns_contact_list_init(&ref);
    ns_error err;
    CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK, &err);
    enum { T = 4, ROUNDS = 3 };
    size_t nk = ns_kernel_count();
    int *ok = calloc(T * nk, sizeof(int));
    REQUIRE(ok != NULL);
#pragma omp parallel num_threads(T)
    {
        int t = omp_get_thread_num();
        ns_contact_list mine;
        ns_contact_list_init(&mine);
        for (int r = 0; r < ROUNDS; r++)
            for (size_t k = 0; k < nk; k++) {
                const ns_kernel *K = ns_kernel_at((k + (size_t)t) % nk);
                ns_error e;
                int good = ns_find_contacts(K, &p, NULL, &mine, &e) == NS_OK;
                if (good) {
                    ns_contact_list_sort(&mine);
                    good = tl_first_difference(&ref, &mine) == SIZE_MAX;
                }
                ns_index *index = NULL;
                if (good && ns_index_create(K, NULL, &index, &e) == NS_OK) {
                    good = ns_index_build(index, &p, &e) == NS_OK &&
                           ns_index_query(index, &mine, &e) == NS_OK;
                    ns_contact_list_sort(&mine);
                    good = good && tl_first_difference(&ref, &mine) == SIZE_MAX;
                    ns_index_destroy(index);
                } else {
                    good = 0;
                }
                ok[(size_t)t * nk + (k + (size_t)t) % nk] += good;
            }
        ns_contact_list_free(&mine);
    }
    for (int t = 0; t < T; t++)
        for (size_t k = 0; k < nk; k++) {
            check_set_context("thread %d, kernel %s", t, ns_kernel_at(k)->name);
            CHECK_EQ_I(ok[(size_t)t * nk + k], ROUNDS);
        }
    free(ok);
    ns_contact_list_free(&ref);
    tl_set_free(&s);
}

/* ---- every public function with NULL pointers ---- */

/* Valid objects for the other arguments of the calls below. */
static struct {
    const ns_kernel *kernel;
    tl_set set;
    ns_particles p, no_pos;
    ns_contact_list list;
    ns_index *index;
    ns_skin *skin;
    ns_sim *sim;
    ns_sim_params params;
    size_t count;
    ns_index *out_index;
    ns_skin *out_skin;
    ns_sim *out_sim;
} fx;

#define NULL_CASE(name, expr)                                                                      \
    static ns_status name(ns_error *err)                                                           \
    {                                                                                              \
        return expr;                                                                               \
    }
NULL_CASE(nc_validate, ns_particles_validate(NULL, err))
NULL_CASE(nc_validate_pos, ns_particles_validate(&fx.no_pos, err))
NULL_CASE(nc_reserve, ns_contact_list_reserve(NULL, 10, err))
NULL_CASE(nc_create_kernel, ns_index_create(NULL, NULL, &fx.out_index, err))
NULL_CASE(nc_create_out, ns_index_create(fx.kernel, NULL, NULL, err))
NULL_CASE(nc_create_config, ns_index_create(fx.kernel, NULL, &fx.out_index, err))
NULL_CASE(nc_build_index, ns_index_build(NULL, &fx.p, err))
NULL_CASE(nc_build_particles, ns_index_build(fx.index, NULL, err))
NULL_CASE(nc_build_pos, ns_index_build(fx.index, &fx.no_pos, err))
NULL_CASE(nc_query_index, ns_index_query(NULL, &fx.list, err))
NULL_CASE(nc_query_list, ns_index_query(fx.index, NULL, err))
NULL_CASE(nc_count_index, ns_index_count(NULL, &fx.count, err))
NULL_CASE(nc_count_out, ns_index_count(fx.index, NULL, err))
NULL_CASE(nc_find_kernel, ns_find_contacts(NULL, &fx.p, NULL, &fx.list, err))
NULL_CASE(nc_find_particles, ns_find_contacts(fx.kernel, NULL, NULL, &fx.list, err))
NULL_CASE(nc_find_pos, ns_find_contacts(fx.kernel, &fx.no_pos, NULL, &fx.list, err))
NULL_CASE(nc_find_list, ns_find_contacts(fx.kernel, &fx.p, NULL, NULL, err))
NULL_CASE(nc_find_config, ns_find_contacts(fx.kernel, &fx.p, NULL, &fx.list, err))
NULL_CASE(nc_skin_kernel, ns_skin_create(NULL, NULL, 0.1f, &fx.out_skin, err))
NULL_CASE(nc_skin_out, ns_skin_create(fx.kernel, NULL, 0.1f, NULL, err))
NULL_CASE(nc_skin_search_skin, ns_skin_search(NULL, &fx.p, &fx.list, err))
NULL_CASE(nc_skin_search_particles, ns_skin_search(fx.skin, NULL, &fx.list, err))
NULL_CASE(nc_skin_search_pos, ns_skin_search(fx.skin, &fx.no_pos, &fx.list, err))
NULL_CASE(nc_skin_search_list, ns_skin_search(fx.skin, &fx.p, NULL, err))
NULL_CASE(nc_generate_name, ns_workload_generate(NULL, 10, 1, 1, fx.set.pos, fx.set.radius, err))
NULL_CASE(nc_generate_pos, ns_workload_generate("uniform", 10, 1, 1, NULL, fx.set.radius, err))
NULL_CASE(nc_generate_radius, ns_workload_generate("uniform", 10, 1, 1, fx.set.pos, NULL, err))
NULL_CASE(nc_generate_settled_pos,
          ns_workload_generate("settled", 10, 1, 1, NULL, fx.set.radius, err))
NULL_CASE(nc_generate_empty, ns_workload_generate("uniform", 0, 1, 1, NULL, NULL, err))
NULL_CASE(nc_sim_kernel, ns_sim_create(NULL, NULL, &fx.params, fx.set.n, fx.set.pos, fx.set.radius,
                                       &fx.out_sim, err))
NULL_CASE(nc_sim_params, ns_sim_create(fx.kernel, NULL, NULL, fx.set.n, fx.set.pos, fx.set.radius,
                                       &fx.out_sim, err))
NULL_CASE(nc_sim_pos, ns_sim_create(fx.kernel, NULL, &fx.params, fx.set.n, NULL, fx.set.radius,
                                    &fx.out_sim, err))
NULL_CASE(nc_sim_radius,
          ns_sim_create(fx.kernel, NULL, &fx.params, fx.set.n, fx.set.pos, NULL, &fx.out_sim, err))
NULL_CASE(nc_sim_out, ns_sim_create(fx.kernel, NULL, &fx.params, fx.set.n, fx.set.pos,
                                    fx.set.radius, NULL, err))
NULL_CASE(nc_step_sim, ns_sim_step(NULL, NULL, err))
NULL_CASE(nc_step_frame, ns_sim_step(fx.sim, NULL, err))
NULL_CASE(nc_settled_pos, ns_sim_settled(10, 1, 1, NULL, fx.set.radius, err))
NULL_CASE(nc_settled_radius, ns_sim_settled(10, 1, 1, fx.set.pos, NULL, err))
NULL_CASE(nc_settled_empty, ns_sim_settled(0, 1, 1, NULL, NULL, err))
#undef NULL_CASE

static void t_null_table(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fx.kernel = tl_kernel("grid_sorted");
    tl_generate(tl_workload("uniform"), 50, 1, &fx.set);
    fx.p = tl_particles(&fx.set);
    fx.no_pos = fx.p;
    fx.no_pos.pos = NULL;
    ns_contact_list_init(&fx.list);
    ns_error err;
    REQUIRE(ns_index_create(fx.kernel, NULL, &fx.index, &err) == NS_OK);
    REQUIRE(ns_index_build(fx.index, &fx.p, &err) == NS_OK);
    REQUIRE(ns_skin_create(fx.kernel, NULL, 0.2f, &fx.skin, &err) == NS_OK);
    fx.params = ns_sim_params_default();
    for (int k = 0; k < 3; k++) {
        fx.params.box_lo[k] = -1.0f;
        fx.params.box_hi[k] = 10.0f;
    }
    REQUIRE(ns_sim_create(fx.kernel, NULL, &fx.params, fx.set.n, fx.set.pos, fx.set.radius, &fx.sim,
                          &err) == NS_OK);

    /* the fallible calls: a NULL in each pointer argument; the ns_error
     * given, then NULL */
    const ns_status ARG = NS_ERR_INVALID_ARGUMENT;
    const struct {
        const char *what;
        ns_status (*run)(ns_error *err);
        ns_status want;
    } calls[] = {
        {"ns_particles_validate(NULL)", nc_validate, ARG},
        {"ns_particles_validate(pos NULL, n 50)", nc_validate_pos, ARG},
        {"ns_contact_list_reserve(NULL, 10)", nc_reserve, ARG},
        {"ns_index_create(NULL kernel)", nc_create_kernel, ARG},
        {"ns_index_create(out NULL)", nc_create_out, ARG},
        {"ns_index_create(config NULL): the defaults", nc_create_config, NS_OK},
        {"ns_index_build(NULL index)", nc_build_index, ARG},
        {"ns_index_build(NULL particles)", nc_build_particles, ARG},
        {"ns_index_build(pos NULL)", nc_build_pos, ARG},
        {"ns_index_query(NULL index)", nc_query_index, ARG},
        {"ns_index_query(NULL list)", nc_query_list, ARG},
        {"ns_index_count(NULL index)", nc_count_index, ARG},
        {"ns_index_count(NULL count)", nc_count_out, ARG},
        {"ns_find_contacts(NULL kernel)", nc_find_kernel, ARG},
        {"ns_find_contacts(NULL particles)", nc_find_particles, ARG},
        {"ns_find_contacts(pos NULL)", nc_find_pos, ARG},
        {"ns_find_contacts(NULL list)", nc_find_list, ARG},
        {"ns_find_contacts(config NULL): the defaults", nc_find_config, NS_OK},
        {"ns_skin_create(NULL kernel)", nc_skin_kernel, ARG},
        {"ns_skin_create(out NULL)", nc_skin_out, ARG},
        {"ns_skin_search(NULL skin)", nc_skin_search_skin, ARG},
        {"ns_skin_search(NULL particles)", nc_skin_search_particles, ARG},
        {"ns_skin_search(pos NULL)", nc_skin_search_pos, ARG},
        {"ns_skin_search(NULL list)", nc_skin_search_list, ARG},
        {"ns_workload_generate(NULL name)", nc_generate_name, ARG},
        {"ns_workload_generate(pos NULL)", nc_generate_pos, ARG},
        {"ns_workload_generate(radius NULL)", nc_generate_radius, ARG},
        {"ns_workload_generate(settled, pos NULL)", nc_generate_settled_pos, ARG},
        {"ns_workload_generate(n 0, pos and radius NULL)", nc_generate_empty, NS_OK},
        {"ns_sim_create(NULL kernel)", nc_sim_kernel, ARG},
        {"ns_sim_create(NULL params)", nc_sim_params, ARG},
        {"ns_sim_create(pos NULL)", nc_sim_pos, ARG},
        {"ns_sim_create(radius NULL)", nc_sim_radius, ARG},
        {"ns_sim_create(out NULL)", nc_sim_out, ARG},
        {"ns_sim_step(NULL sim)", nc_step_sim, ARG},
        {"ns_sim_step(frame NULL)", nc_step_frame, NS_OK},
        {"ns_sim_settled(pos NULL)", nc_settled_pos, ARG},
        {"ns_sim_settled(radius NULL)", nc_settled_radius, ARG},
        {"ns_sim_settled(n 0, pos and radius NULL)", nc_settled_empty, NS_OK},
    };
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        for (int with_err = 1; with_err >= 0; with_err--) {
            check_set_context("%s, ns_error %s", calls[c].what, with_err ? "given" : "NULL");
            tl_poison_error(&err);
            fx.out_index = (ns_index *)&err, fx.out_skin = (ns_skin *)&err;
            fx.out_sim = (ns_sim *)&err; /* not NULL: a failure sets them to NULL */
            ns_status st = calls[c].run(with_err ? &err : NULL);
            CHECK_STATUS(st, calls[c].want, with_err ? &err : NULL);
            if (with_err && st != NS_OK) {
                tl_check_error(st, &err);
                CHECK_EQ_U(err.particle, NS_NO_PARTICLE);
            }
            if (with_err && st == NS_OK)
                CHECK_MSG(err.status == NS_OK && err.message[0] == '\0', "err not cleared");
            if (st != NS_OK) {
                CHECK(fx.out_index == NULL || fx.out_index == (ns_index *)&err);
                CHECK(fx.out_skin == NULL || fx.out_skin == (ns_skin *)&err);
                CHECK(fx.out_sim == NULL || fx.out_sim == (ns_sim *)&err);
            }
            if (st == NS_OK && fx.out_index != (ns_index *)&err)
                ns_index_destroy(fx.out_index);
        }
    }

    /* the calls without a status: nothing happens, or NULL / 0 / false */
    check_set_context("calls without a status, with NULL");
    ns_contact_list_init(NULL);
    ns_contact_list_free(NULL);
    ns_contact_list_sort(NULL);
    ns_index_destroy(NULL);
    ns_skin_destroy(NULL);
    ns_sim_destroy(NULL);
    CHECK(ns_kernel_find(NULL) == NULL);
    CHECK(ns_workload_find(NULL) == NULL);
    CHECK(!ns_index_can_count(NULL));
    ns_index_info info;
    memset(&info, 0xAB, sizeof info);
    ns_index_get_info(NULL, &info);
    CHECK(info.bytes == 0 && info.table_size == 0 && info.cells == 0 && info.candidates == 0);
    ns_index_get_info(fx.index, NULL);
    ns_skin_info sinfo;
    memset(&sinfo, 0xAB, sizeof sinfo);
    ns_skin_get_info(NULL, &sinfo);
    CHECK(sinfo.searches == 0 && sinfo.rebuilds == 0 && sinfo.bytes == 0 && !sinfo.rebuilt);
    ns_skin_get_info(fx.skin, NULL);
    CHECK_EQ_U(ns_sim_count(NULL), 0);
    CHECK(ns_sim_contacts(NULL) == NULL);
    CHECK(ns_sim_positions(NULL) == NULL);
    CHECK(ns_sim_velocities(NULL) == NULL);
    CHECK(ns_sim_radii(NULL) == NULL);
    CHECK_CMP_D(ns_sim_kinetic_energy(NULL), ==, 0.0);
    CHECK_CMP_D(ns_sim_potential_energy(NULL), ==, 0.0);
    CHECK_EQ_U(ns_format_float(NULL, 1.5f), 0);

    /* ns_sim_spawn refuses a NULL, and it and ns_sim_box_around write nothing */
    float lo[3] = {7, 7, 7}, hi[3] = {7, 7, 7};
    const ns_workload *w = tl_workload("uniform");
    ns_error spawn_err;
    CHECK_STATUS(ns_sim_spawn(NULL, fx.set.n, 1, 1, fx.set.pos, fx.set.radius, lo, hi, &spawn_err),
                 NS_ERR_INVALID_ARGUMENT, &spawn_err);
    CHECK_STATUS(ns_sim_spawn(w, fx.set.n, 1, 1, NULL, fx.set.radius, lo, hi, &spawn_err),
                 NS_ERR_INVALID_ARGUMENT, &spawn_err);
    CHECK_STATUS(ns_sim_spawn(w, fx.set.n, 1, 1, fx.set.pos, NULL, lo, hi, &spawn_err),
                 NS_ERR_INVALID_ARGUMENT, &spawn_err);
    CHECK_STATUS(ns_sim_spawn(w, fx.set.n, 1, 1, fx.set.pos, fx.set.radius, NULL, hi, &spawn_err),
                 NS_ERR_INVALID_ARGUMENT, &spawn_err);
    CHECK_STATUS(ns_sim_spawn(w, fx.set.n, 1, 1, fx.set.pos, fx.set.radius, lo, NULL, &spawn_err),
                 NS_ERR_INVALID_ARGUMENT, &spawn_err);
    ns_sim_box_around(fx.set.n, NULL, fx.set.radius, 2.0f, 0.0f, lo, hi);
    ns_sim_box_around(fx.set.n, fx.set.pos, NULL, 2.0f, 0.0f, lo, hi);
    ns_sim_box_around(fx.set.n, fx.set.pos, fx.set.radius, 2.0f, 0.0f, NULL, hi);
    ns_sim_box_around(fx.set.n, fx.set.pos, fx.set.radius, 2.0f, 0.0f, lo, NULL);
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_F32_BITS(lo[k], 7.0f);
        CHECK_EQ_F32_BITS(hi[k], 7.0f);
    }
    ns_sim_box_around(0, NULL, NULL, 2.0f, 0.0f, lo, hi); /* n = 0: arrays may be NULL */
    CHECK_EQ_F32_BITS(lo[0], 0.0f);
    CHECK_EQ_F32_BITS(hi[0], 1.0f);
    CHECK_STATUS(ns_sim_spawn(w, 0, 1, 1, NULL, NULL, lo, hi, &spawn_err), NS_OK, &spawn_err);

    /* ns_set_allocator: NULL, and a hook with a NULL function, restore the
     * C library (searches still work) */
    ns_allocator partial = {NULL, NULL, NULL, NULL};
    ns_set_allocator(&partial);
    CHECK_STATUS(ns_find_contacts(fx.kernel, &fx.p, NULL, &fx.list, &err), NS_OK, &err);
    ns_set_allocator(NULL);
    CHECK_STATUS(ns_find_contacts(fx.kernel, &fx.p, NULL, &fx.list, &err), NS_OK, &err);

    ns_sim_destroy(fx.sim);
    ns_skin_destroy(fx.skin);
    ns_index_destroy(fx.index);
    ns_contact_list_free(&fx.list);
    tl_set_free(&fx.set);
}

/* Every fallible call clears a stale ns_error when it succeeds. */
static void expect_cleared(const char *what, ns_status st, const ns_error *err)
{
    check_set_context("%s: success clears err", what);
    CHECK_STATUS(st, NS_OK, err);
    CHECK_EQ_I(err->status, NS_OK);
    CHECK_EQ_U(err->particle, NS_NO_PARTICLE);
    CHECK_EQ_U(err->line, 0);
    CHECK_MSG(err->message[0] == '\0', "message \"%s\" left", err->message);
}

static void t_err_cleared(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tl_set s;
    tl_generate(tl_workload("uniform"), 500, 3, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list list;
    ns_contact_list_init(&list);
    ns_error err;
#define CLEARED(call)                                                                              \
    do {                                                                                           \
        tl_poison_error(&err);                                                                     \
        err.line = 12;                                                                             \
        expect_cleared(#call, (call), &err);                                                       \
    } while (0)
    CLEARED(ns_particles_validate(&p, &err));
    CLEARED(ns_contact_list_reserve(&list, 100, &err)); /* grows */
    CLEARED(ns_contact_list_reserve(&list, 10, &err));  /* already has it */
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        ns_index *index = NULL;
        CLEARED(ns_index_create(K, NULL, &index, &err));
        CLEARED(ns_index_build(index, &p, &err));
        CLEARED(ns_index_query(index, &list, &err));
        if (ns_index_can_count(index)) {
            size_t count;
            CLEARED(ns_index_count(index, &count, &err));
        }
        ns_index_destroy(index);
        CLEARED(ns_find_contacts(K, &p, NULL, &list, &err));
    }
    ns_skin *skin = NULL;
    CLEARED(ns_skin_create(tl_kernel("grid_sorted"), NULL, 0.2f, &skin, &err));
    CLEARED(ns_skin_search(skin, &p, &list, &err)); /* a rebuild */
    CLEARED(ns_skin_search(skin, &p, &list, &err)); /* reuse */
    ns_skin_destroy(skin);
    CLEARED(ns_skin_create(tl_kernel("hash_serial"), NULL, 0.0f, &skin, &err));
    CLEARED(ns_skin_search(skin, &p, &list, &err)); /* direct */
    ns_skin_destroy(skin);
    tl_set w;
    tl_set_init(&w, 60);
    CLEARED(ns_workload_generate("clusters", w.n, 1, 1, w.pos, w.radius, &err));
    CLEARED(ns_workload_generate("settled", w.n, 1, 1, w.pos, w.radius, &err));
    CLEARED(ns_sim_settled(w.n, 2, 1, w.pos, w.radius, &err));
    ns_sim_params prm = ns_sim_params_default();
    ns_sim_box_around(w.n, w.pos, w.radius, 2.0f, 2.0f, prm.box_lo, prm.box_hi);
    ns_sim *sim = NULL;
    CLEARED(ns_sim_create(tl_kernel("grid_sorted"), NULL, &prm, w.n, w.pos, w.radius, &sim, &err));
    ns_sim_frame frame;
    CLEARED(ns_sim_step(sim, &frame, &err));
    ns_sim_destroy(sim);
    prm.skin = 0.1f;
    CLEARED(
        ns_sim_create(tl_kernel("hash_parallel"), NULL, &prm, w.n, w.pos, w.radius, &sim, &err));
    CLEARED(ns_sim_step(sim, NULL, &err));
    CLEARED(ns_sim_step(sim, NULL, &err));
    ns_sim_destroy(sim);
#undef CLEARED
    tl_set_free(&w);
    ns_contact_list_free(&list);
    tl_set_free(&s);
}

/* ---- the thread cap ---- */

/* Every call that resolves a thread count refuses `threads` (a config
 * count, or 0 with OpenMP's default too high) with NS_ERR_INVALID_ARGUMENT
 * and a message containing `says`, before it starts a thread. */
static void expect_threads_refused(int threads, const char *says)
{
    tl_set s;
    tl_generate(tl_workload("uniform"), 200, 1, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list list;
    ns_contact_list_init(&list);
    ns_config cfg = ns_config_default();
    cfg.threads = threads;
    ns_error err;
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        if (!K->parallel && threads == 0)
            continue; /* a serial kernel does not use OpenMP's default */
        check_set_context("threads %d: kernel %s", threads, K->name);
        ns_index *index = (ns_index *)&err;
        tl_poison_error(&err);
        CHECK_STATUS(ns_index_create(K, &cfg, &index, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_STR_CONTAINS(err.message, says);
        CHECK(index == NULL);
        CHECK_STATUS(tl_find(K, &p, &cfg, &list, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_STR_CONTAINS(err.message, says);
        ns_skin *skin = (ns_skin *)&err;
        CHECK_STATUS(ns_skin_create(K, &cfg, 0.1f, &skin, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_STR_CONTAINS(err.message, says);
        CHECK(skin == NULL);
        ns_sim_params prm = ns_sim_params_default();
        ns_sim_box_around(s.n, s.pos, s.radius, 2.0f, 2.0f, prm.box_lo, prm.box_hi);
        ns_sim *sim = (ns_sim *)&err;
        CHECK_STATUS(ns_sim_create(K, &cfg, &prm, s.n, s.pos, s.radius, &sim, &err),
                     NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_STR_CONTAINS(err.message, says);
        CHECK(sim == NULL);
    }
    check_set_context("threads %d: the settled workload", threads);
    tl_set w;
    tl_set_init(&w, 30);
    CHECK_STATUS(ns_sim_settled(w.n, 1, threads, w.pos, w.radius, &err), NS_ERR_INVALID_ARGUMENT,
                 &err);
    CHECK_STR_CONTAINS(err.message, says);
    CHECK_STATUS(ns_workload_generate("settled", w.n, 1, threads, w.pos, w.radius, &err),
                 NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STR_CONTAINS(err.message, says);
    tl_set_free(&w);
    ns_contact_list_free(&list);
    tl_set_free(&s);
}

static void t_thread_cap(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const int cap = ns_max_threads();
    check_set_context("ns_max_threads()");
    CHECK_EQ_I(cap, NS_THREADS_PER_CORE * omp_get_num_procs());
    printf("ns_max_threads() = %d (%d processors)\n", cap, omp_get_num_procs());
    char says[160];
    snprintf(says, sizeof says, "is more than the %d this machine allows (%d per processor)", cap,
             NS_THREADS_PER_CORE);
    expect_threads_refused(INT_MAX, says);
    expect_threads_refused(cap + 1, says);
    char exact[80];
    snprintf(exact, sizeof exact, "threads = %d is more", cap + 1);
    ns_config cfg = ns_config_default();
    cfg.threads = cap + 1;
    ns_error err;
    ns_index *index;
    check_set_context("the message names the count");
    CHECK_STATUS(ns_index_create(tl_kernel("naive"), &cfg, &index, &err), NS_ERR_INVALID_ARGUMENT,
                 &err);
    CHECK_STR_CONTAINS(err.message, exact);

    /* exactly the cap works, and gives naive's contacts */
    tl_set s;
    tl_generate(tl_workload("clusters"), 3000, 5, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK, &err);
    cfg.threads = cap;
    cfg.exact_threads = true; /* the parallel code at every n */
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        check_set_context("kernel %s, threads = the cap %d", K->name, cap);
        CHECK_STATUS(tl_find(K, &p, &cfg, &got, &err), NS_OK, &err);
        tl_lists_equal(&ref, &got, check_context);
        ns_skin *skin = NULL;
        REQUIRE(ns_skin_create(K, &cfg, 0.2f, &skin, &err) == NS_OK);
        CHECK_STATUS(ns_skin_search(skin, &p, &got, &err), NS_OK, &err);
        ns_contact_list_sort(&got);
        tl_lists_equal(&ref, &got, "ns_skin_search at the cap");
        ns_skin_destroy(skin);
    }
    check_set_context("a simulation and the settled workload at the cap");
    ns_sim_params prm = ns_sim_params_default();
    ns_sim_box_around(s.n, s.pos, s.radius, 2.0f, 2.0f, prm.box_lo, prm.box_hi);
    ns_sim *sim = NULL;
    CHECK_STATUS(
        ns_sim_create(tl_kernel("grid_sorted"), &cfg, &prm, s.n, s.pos, s.radius, &sim, &err),
        NS_OK, &err);
    CHECK_STATUS(ns_sim_step(sim, NULL, &err), NS_OK, &err);
    ns_sim_destroy(sim);
    tl_set w;
    tl_set_init(&w, 30);
    CHECK_STATUS(ns_sim_settled(w.n, 1, cap, w.pos, w.radius, &err), NS_OK, &err);

    /* OpenMP's default above the cap (omp_set_num_threads, as OMP_NUM_THREADS
     * would): refused where threads is 0; explicit counts and serial kernels
     * still work */
    omp_set_num_threads(cap + 1);
    expect_threads_refused(0, "OMP_NUM_THREADS");
    cfg.threads = 2;
    cfg.exact_threads = true; /* the parallel code at every n */
    check_set_context("default above the cap, threads = 2");
    CHECK_STATUS(tl_find(tl_kernel("hash_parallel"), &p, &cfg, &got, &err), NS_OK, &err);
    tl_lists_equal(&ref, &got, check_context);
    check_set_context("default above the cap, a serial kernel with threads = 0");
    CHECK_STATUS(tl_find(tl_kernel("hash_serial"), &p, NULL, &got, &err), NS_OK, &err);
    tl_lists_equal(&ref, &got, check_context);

    /* the default checked again at build: it may change after the create */
    omp_set_num_threads(2);
    check_set_context("default changed between create and build");
    REQUIRE(ns_index_create(tl_kernel("naive_omp"), NULL, &index, &err) == NS_OK);
    omp_set_num_threads(cap + 1);
    CHECK_STATUS(ns_index_build(index, &p, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STR_CONTAINS(err.message, "OMP_NUM_THREADS");
    CHECK_STATUS(ns_index_query(index, &got, &err), NS_ERR_INVALID_ARGUMENT, &err);
    omp_set_num_threads(2);
    CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
    CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
    ns_contact_list_sort(&got);
    tl_lists_equal(&ref, &got, check_context);
    ns_index_destroy(index);

    tl_set_free(&w);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* Run with OMP_NUM_THREADS above any machine's cap (CMake sets it): every
 * call that would use OpenMP's default refuses, nothing starts a thread. */
static void t_threads_env_over_cap(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const char *env = getenv("OMP_NUM_THREADS");
    printf("OMP_NUM_THREADS=%s, omp_get_max_threads() = %d, ns_max_threads() = %d\n",
           env ? env : "(unset)", omp_get_max_threads(), ns_max_threads());
    check_set_context("OMP_NUM_THREADS above the cap");
    REQUIRE(omp_get_max_threads() > ns_max_threads());
    expect_threads_refused(0, "OMP_NUM_THREADS");
    /* explicit counts and serial kernels are unaffected */
    tl_set s;
    tl_generate(tl_workload("uniform"), 2000, 2, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK, &err);
    ns_config cfg = ns_config_default();
    cfg.threads = 3;
    cfg.exact_threads = true; /* the parallel code at every n */
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        check_set_context("OMP_NUM_THREADS above the cap: kernel %s, threads %d", K->name,
                          K->parallel ? 3 : 0);
        CHECK_STATUS(tl_find(K, &p, K->parallel ? &cfg : NULL, &got, &err), NS_OK, &err);
        tl_lists_equal(&ref, &got, check_context);
    }
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* ---- the streaming query ---- */

typedef struct sink_state {
    ns_contact_list got;
    size_t blocks, stop_after; /* stop_after 0: never stop */
} sink_state;

static bool collect(const ns_contact *c, size_t count, void *user)
{
    sink_state *st = user;
    tl_append_contacts(&st->got, c, count);
    return ++st->blocks != st->stop_after;
}

static void t_stream_api(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    tl_set s;
    tl_generate(tl_workload("uniform"), 20000, 5, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list full;
    ns_contact_list_init(&full);
    ns_error err;
    bool streamed_somewhere = false;
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        check_set_context("kernel %s", K->name);
        ns_index *index = NULL;
        sink_state st = {.stop_after = 0};
        ns_contact_list_init(&st.got);
        REQUIRE(ns_index_create(K, NULL, &index, &err) == NS_OK);
        CHECK_STATUS(ns_index_query_stream(index, NULL, &st, &err), NS_ERR_INVALID_ARGUMENT, &err);
        CHECK_STATUS(ns_index_query_stream(NULL, collect, &st, &err), NS_ERR_INVALID_ARGUMENT,
                     &err);
        if (!ns_index_can_stream(index)) {
            CHECK_STATUS(ns_index_query_stream(index, collect, &st, &err), NS_ERR_INVALID_ARGUMENT,
                         &err);
            CHECK_STR_CONTAINS(err.message, "no streaming query");
            ns_index_destroy(index);
            continue;
        }
        streamed_somewhere = true;
        /* before a build: refused, nothing handed out */
        CHECK_STATUS(ns_index_query_stream(index, collect, &st, &err), NS_ERR_INVALID_ARGUMENT,
                     &err);
        CHECK_EQ_U(st.blocks, 0);
        CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &full, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query_stream(index, collect, &st, &err), NS_OK, &err);
        CHECK_CMP_U(st.blocks, >=, 2); /* 20,000 particles stream in several batches */
        CHECK(st.got.count == full.count &&
              memcmp(st.got.items, full.items, full.count * sizeof *full.items) == 0);
        /* a sink that stops after its first block: NS_OK, that block alone,
         * the first of the query's contacts */
        size_t first_block = 0;
        {
            sink_state one = {.stop_after = 1};
            ns_contact_list_init(&one.got);
            CHECK_STATUS(ns_index_query_stream(index, collect, &one, &err), NS_OK, &err);
            CHECK_EQ_U(one.blocks, 1);
            first_block = one.got.count;
            CHECK(first_block >= 1 && first_block < full.count &&
                  memcmp(one.got.items, full.items, first_block * sizeof *full.items) == 0);
            ns_contact_list_free(&one.got);
        }
        /* a batch over max_contacts is refused, like a query over it */
        ns_index_destroy(index);
        ns_config small = ns_config_default();
        small.max_contacts = first_block / 2;
        REQUIRE(ns_index_create(K, &small, &index, &err) == NS_OK);
        CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
        sink_state none = {.stop_after = 0};
        ns_contact_list_init(&none.got);
        CHECK_STATUS(ns_index_query_stream(index, collect, &none, &err), NS_ERR_TOO_MANY_CONTACTS,
                     &err);
        CHECK_EQ_U(none.blocks, 0);
        ns_contact_list_free(&none.got);
        ns_contact_list_free(&st.got);
        ns_index_destroy(index);
    }
    check_set_context("the kernel table");
    CHECK_MSG(streamed_somewhere, "no kernel has a streaming query: nothing was tested");
    ns_contact_list_free(&full);
    tl_set_free(&s);
}

/* ---- a parallel kernel's threads follow its work ---- */

/* The threads an index of kernel K runs a search of n particles on, asked
 * for `threads`, exactly or not; and its contacts, which must be the same
 * kernel's on one thread (the kernels tests compare those with naive's). */
static int threads_used(const ns_kernel *K, size_t n, int threads, bool exact)
{
    tl_set s;
    tl_generate(tl_workload("uniform"), n, 3, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    ns_config cfg = ns_config_default();
    cfg.threads = 1;
    CHECK_STATUS(tl_find(K, &p, &cfg, &ref, &err), NS_OK, &err);
    cfg.threads = threads;
    cfg.exact_threads = exact;
    ns_index *index = NULL;
    ns_index_info info;
    CHECK_STATUS(ns_index_create(K, &cfg, &index, &err), NS_OK, &err);
    ns_index_get_info(index, &info);
    CHECK_EQ_I(info.threads, 0); /* no build yet */
    CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
    CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
    ns_contact_list_sort(&got);
    tl_lists_equal(&ref, &got, check_context);
    ns_index_get_info(index, &info);
    ns_index_destroy(index);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
    return info.threads;
}

static void t_threads_from_work(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    bool limited = false;
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        size_t per = K->min_per_thread;
        check_set_context("kernel %s, min_per_thread %zu", K->name, per);
        if (!K->parallel) {
            CHECK_EQ_U(per, 0); /* a serial kernel has no threads to choose */
            CHECK_EQ_I(threads_used(K, 500, 2, false), 1);
            continue;
        }
        if (per == 0) {
            CHECK_EQ_I(threads_used(K, 500, 2, false), 2);
            continue;
        }
        limited = true;
        size_t small = per + per / 2; /* one thread's worth, not two */
        CHECK_EQ_I(threads_used(K, small, 2, false), 1);
        CHECK_EQ_I(threads_used(K, small, 2, true), 2);
        CHECK_EQ_I(threads_used(K, 2 * per, 2, false), 2);
        CHECK_EQ_I(threads_used(K, 3 * per, 8, false), 3);
        CHECK_EQ_I(threads_used(K, 3 * per, 1, false), 1);
    }
    check_set_context("the kernel table");
    CHECK_MSG(limited, "no parallel kernel has a min_per_thread: nothing was tested");
}

/* ---- table_size is clamped ---- */

static void t_table_clamp(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const size_t ns[] = {2, 100, 1000, 5000};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        size_t n = ns[t];
        size_t cap = NS_TABLE_SIZE_PER_PARTICLE * n;
        cap = cap > NS_TABLE_SIZE_FLOOR ? cap : NS_TABLE_SIZE_FLOOR;
        tl_set s;
        tl_generate(tl_workload("clusters"), n, 7, &s);
        ns_particles p = tl_particles(&s);
        ns_contact_list ref, got;
        ns_contact_list_init(&ref);
        ns_contact_list_init(&got);
        ns_error err;
        CHECK_STATUS(tl_find(tl_kernel("naive"), &p, NULL, &ref, &err), NS_OK, &err);
        const size_t asked[] = {UINT32_MAX, 100000000, cap + 1, cap, cap - 1, 7};
        for (size_t k = 0; k < ns_kernel_count(); k++) {
            const ns_kernel *K = ns_kernel_at(k);
            if (!K->uses_table_size)
                continue;
            for (size_t a = 0; a < sizeof asked / sizeof asked[0]; a++) {
                ns_config cfg = ns_config_default();
                cfg.table_size = asked[a];
                size_t want = asked[a] < cap ? asked[a] : cap;
                check_set_context("kernel %s, n %zu, table_size %zu (used: %zu)", K->name, n,
                                  asked[a], want);
                ns_index *index = NULL;
                REQUIRE(ns_index_create(K, &cfg, &index, &err) == NS_OK);
                CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
                ns_index_info info;
                ns_index_get_info(index, &info);
                CHECK_EQ_U(info.table_size, want);
                /* the index's memory follows the table used, not the one asked */
                CHECK_CMP_U(info.bytes, <=, 64 * n + 16 * want + 4096);
                CHECK_STATUS(ns_index_query(index, &got, &err), NS_OK, &err);
                ns_contact_list_sort(&got);
                tl_lists_equal(&ref, &got, check_context);
                ns_index_destroy(index);
            }
        }
        ns_contact_list_free(&ref);
        ns_contact_list_free(&got);
        tl_set_free(&s);
    }
}

/* ---- config.isa: a code path for one index ---- */

/* NS_ISA set to value, or unset for NULL. */
static void set_ns_isa(const char *value)
{
    if (value)
        setenv("NS_ISA", value, 1);
    else
        unsetenv("NS_ISA");
}

/* Each path of the build: taken when this CPU runs it (as NS_ISA is), with
 * the default's contacts. A name the build lacks, "" included, is refused
 * with one line naming the paths, whatever NS_ISA says; a path's name
 * overrides a bad NS_ISA. An empty NS_ISA counts as unset. */
static void t_isa_config(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char saved[64] = "", paths[200];
    const char *env = getenv("NS_ISA");
    if (env)
        snprintf(saved, sizeof saved, "%s", env);
    set_ns_isa(NULL);
    const ns_kernel *K = tl_kernel("grid_sorted");
    tl_set s;
    tl_generate(tl_workload("uniform"), 800, 3, &s);
    ns_particles p = tl_particles(&s);
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error err;
    ns_config cfg = ns_config_default();
    CHECK_STATUS(tl_find(K, &p, NULL, &ref, &err), NS_OK, &err);

    snprintf(paths, sizeof paths, "%s", ns_isa_paths());
    for (char *path = strtok(paths, " "); path; path = strtok(NULL, " ")) {
        set_ns_isa(path);
        bool runs = ns_isa(&err) != NULL;
        set_ns_isa(NULL);
        check_set_context("config.isa = %s (this CPU %s it)", path, runs ? "runs" : "cannot run");
        cfg.isa = path;
        tl_poison_error(&err);
        ns_status st = tl_find(K, &p, &cfg, &got, &err);
        CHECK_STATUS(st, runs ? NS_OK : NS_ERR_INVALID_ARGUMENT, &err);
        if (st == NS_OK)
            tl_lists_equal(&ref, &got, "config.isa");
        else
            CHECK_STR_CONTAINS(err.message, "cannot run");
    }

    const char *bad[] = {"", "bogus", "generic ", " generic"};
    const char *envs[] = {NULL, "bogus", ""};
    for (size_t e = 0; e < sizeof envs / sizeof envs[0]; e++) {
        set_ns_isa(envs[e]);
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            check_set_context("config.isa = \"%s\", NS_ISA %s%s", bad[b], envs[e] ? "=" : "unset",
                              envs[e] ? envs[e] : "");
            cfg.isa = bad[b];
            ns_index *ix = (ns_index *)&err; /* not NULL */
            tl_poison_error(&err);
            ns_status st = ns_index_create(K, &cfg, &ix, &err);
            CHECK_STATUS(st, NS_ERR_INVALID_ARGUMENT, &err);
            tl_check_error(st, &err);
            CHECK(ix == NULL);
            if (st == NS_OK)
                ns_index_destroy(ix);
            CHECK_STR_CONTAINS(err.message, "is not a code path of this build (it has: ");
            CHECK_STR_CONTAINS(err.message, ns_isa_paths());
            CHECK(strchr(err.message, '\n') == NULL);
            if (!bad[b][0])
                CHECK_STR_CONTAINS(err.message, "isa = \"\" is not");
        }
        /* NULL: NS_ISA's path (none when bogus), else the best */
        check_set_context("config.isa NULL, NS_ISA %s%s", envs[e] ? "=" : "unset",
                          envs[e] ? envs[e] : "");
        bool bogus = envs[e] && envs[e][0];
        CHECK((ns_isa(&err) == NULL) == bogus);
        cfg.isa = NULL;
        tl_poison_error(&err);
        ns_status st = tl_find(K, &p, &cfg, &got, &err);
        CHECK_STATUS(st, bogus ? NS_ERR_INVALID_ARGUMENT : NS_OK, &err);
        if (bogus)
            CHECK_STR_CONTAINS(err.message, "NS_ISA=bogus is not a code path");
        /* a path's name: NS_ISA is not read */
        check_set_context("config.isa = %s, NS_ISA %s%s", tl_portable_path(),
                          envs[e] ? "=" : "unset", envs[e] ? envs[e] : "");
        cfg.isa = tl_portable_path();
        CHECK_STATUS(tl_find(K, &p, &cfg, &got, &err), NS_OK, &err);
        tl_lists_equal(&ref, &got, "the portable path");
    }
    set_ns_isa(env ? saved : NULL);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
}

/* ---- the test library itself: the comparisons can fail ---- */

static void t_testlib_selftest(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    ns_contact_list a, b;
    ns_contact_list_init(&a);
    ns_contact_list_init(&b);
    ns_error err;
    REQUIRE(ns_contact_list_reserve(&a, 4, &err) == NS_OK);
    REQUIRE(ns_contact_list_reserve(&b, 4, &err) == NS_OK);
    ns_contact c0 = {0, 1, 0.5f, 1.0f, 0.0f, 0.0f}, c1 = {0, 2, 0.25f, 0.0f, 0.6f, 0.8f};
    a.items[0] = b.items[0] = c0;
    a.items[1] = b.items[1] = c1;
    a.count = b.count = 2;
    check_set_context("testlib self-test");
    CHECK_EQ_U(tl_first_difference(&a, &b), SIZE_MAX);
    b.items[1].overlap = nextafterf(0.25f, 1.0f); /* one ulp */
    CHECK_EQ_U(tl_first_difference(&a, &b), 1);
    b.items[1] = c1;
    b.items[0].ny = -0.0f; /* sign of zero */
    CHECK_EQ_U(tl_first_difference(&a, &b), 0);
    b.items[0] = c0;
    b.count = 1;
    CHECK_EQ_U(tl_first_difference(&a, &b), 1);
    b.count = 2;
    b.items[1].j = 3;
    CHECK_EQ_U(tl_first_difference(&a, &b), 1);

    /* the property check flags -0 and duplicates (its failures are expected) */
    float pos[9] = {0, 0, 0, 1, 0, 0, 0, 0.6f, 0.8f};
    float rad[3] = {1, 1, 1};
    ns_particles p = {3, pos, rad, 0};
    b.items[1] = c1;
    int before = check_failures;
    fprintf(stderr, "--- expected failure reports follow ---\n");
    tl_check_contacts(&p, &b, "self-test: a correct list");
    int after_good = check_failures;
    b.items[0].ny = -0.0f;
    tl_check_contacts(&p, &b, "self-test: -0 in a normal");
    int after_neg = check_failures;
    b.items[0] = c0;
    b.items[1] = c0;
    tl_check_contacts(&p, &b, "self-test: duplicate");
    int after_dup = check_failures;
    b.items[1] = c1;
    b.items[1].nz = 0.9f;
    tl_check_contacts(&p, &b, "self-test: normal not unit");
    int after_len = check_failures;
    fprintf(stderr, "--- end of expected failure reports ---\n");
    check_failures = before;
    CHECK_EQ_I(after_good, before);
    CHECK_EQ_I(after_neg, after_good + 1);
    CHECK_EQ_I(after_dup, after_neg + 1);
    CHECK_EQ_I(after_len, after_dup + 1);

    /* the reference predicate: touching is no contact, 0.999 is */
    float tp[12] = {0, 0, 0, 1, 0, 0, 10, 0, 0, 10.999f, 0, 0};
    ns_particles tpp = {4, tp, NULL, 0.5f};
    tl_reference(&tpp, &a);
    CHECK_EQ_U(a.count, 1);
    CHECK_EQ_U(a.items[0].i, 2);
    ns_contact_list_free(&a);
    ns_contact_list_free(&b);
}

static const tl_case cases[] = {
    {"status_str", .run_args = t_status_str},
    {"kernel_table", .run = t_kernel_table},
    {"workload_table", .run_args = t_workload_table},
    {"workload_determinism", .run_args = t_workload_determinism},
    {"workload_sanity", .run_args = t_workload_sanity},
    {"uniform_density", .run_args = t_uniform_density},
    {"config_default", .run_args = t_config_default},
    {"null_arguments", .run_args = t_null_arguments},
    {"index_api", .run_args = t_index_api},
    {"index_info", .run_args = t_index_info},
    {"contact_list_sort", .run_args = t_contact_list_sort},
    {"contact_list_reserve", .run_args = t_contact_list_reserve},
    {"contact_list_grow", .run_args = t_contact_list_grow},
    {"reserve_huge", .run_args = t_reserve_huge},
    {"huge_settings", .run_args = t_huge_settings},
    {"explicit_threads", .run_args = t_explicit_threads},
    {"bad_threads", .run_args = t_bad_threads},
    {"threads_from_work", .run_args = t_threads_from_work},
    {"stream_api", .run_args = t_stream_api},
    {"contact_between", .run = t_contact_between},
    {"concurrent_searches", .run_args = t_concurrent_searches},
    {"null_table", .run_args = t_null_table},
    {"err_cleared", .run_args = t_err_cleared},
    {"thread_cap", .run_args = t_thread_cap},
    /* OpenMP's default above the thread cap of any machine (8 per processor):
     * every call that would use it refuses before starting a thread */
    {"threads_env_over_cap", .run_args = t_threads_env_over_cap, .threads = 100000},
    {"table_clamp", .run_args = t_table_clamp},
    {"isa_config", .run_args = t_isa_config},
    {"testlib_selftest", .run_args = t_testlib_selftest},
};

int main(int argc, char **argv)
{
    static const tl_suite suite = {"unit", "unit", 3, 0};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

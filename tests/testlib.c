/* testlib.c - see testlib.h. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

int check_failures = 0;
int check_count = 0;
char check_context[512] = "";

void check_set_context(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(check_context, sizeof check_context, fmt, ap);
    va_end(ap);
}

int check_fail(const char *file, int line)
{
    check_failures++;
    if (check_failures > CHECK_PRINT_LIMIT) {
        if (check_failures == CHECK_PRINT_LIMIT + 1)
            fprintf(stderr, "(further failures are counted, not printed)\n");
        return 0;
    }
    fprintf(stderr, "%s:%d: FAIL [%s]\n", file, line, check_context);
    return 1;
}

int check_report(const char *test_name)
{
    if (check_failures == 0) {
        printf("PASS %s (%d checks)\n", test_name, check_count);
        return 0;
    }
    fprintf(stderr, "FAIL %s: %d of %d checks failed\n", test_name, check_failures, check_count);
    return 1;
}

/* ---- particle sets ---- */

static void *xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    REQUIRE(p != NULL);
    return p;
}

void tl_set_init(tl_set *s, size_t n)
{
    s->n = n;
    s->pos = xmalloc(3 * n * sizeof(float) + sizeof(float));
    s->radius = xmalloc(n * sizeof(float) + sizeof(float));
    memset(s->pos, 0, 3 * n * sizeof(float) + sizeof(float));
    memset(s->radius, 0, n * sizeof(float) + sizeof(float));
}

void tl_set_free(tl_set *s)
{
    free(s->pos);
    free(s->radius);
    s->pos = NULL;
    s->radius = NULL;
    s->n = 0;
}

void tl_set_put(tl_set *s, size_t i, float x, float y, float z, float r)
{
    REQUIRE(i < s->n);
    s->pos[3 * i + 0] = x;
    s->pos[3 * i + 1] = y;
    s->pos[3 * i + 2] = z;
    s->radius[i] = r;
}

void tl_set_append(tl_set *a, const tl_set *b)
{
    tl_set c;
    tl_set_init(&c, a->n + b->n);
    memcpy(c.pos, a->pos, 3 * a->n * sizeof(float));
    memcpy(c.pos + 3 * a->n, b->pos, 3 * b->n * sizeof(float));
    memcpy(c.radius, a->radius, a->n * sizeof(float));
    memcpy(c.radius + a->n, b->radius, b->n * sizeof(float));
    tl_set_free(a);
    *a = c;
}

void tl_add_particle(tl_set *s, float x, float y, float z, float r)
{
    tl_set one;
    tl_set_init(&one, 1);
    tl_set_put(&one, 0, x, y, z, r);
    tl_set_append(s, &one);
    tl_set_free(&one);
}

void tl_copy_list(ns_contact_list *dst, const ns_contact_list *src)
{
    ns_error err;
    REQUIRE(ns_contact_list_reserve(dst, src->count, &err) == NS_OK);
    if (src->count > 0)
        memcpy(dst->items, src->items, src->count * sizeof(ns_contact));
    dst->count = src->count;
}

void tl_append_contacts(ns_contact_list *list, const ns_contact *c, size_t count)
{
    CHECK(count >= 1);
    REQUIRE(ns_contact_list_reserve(list, list->count + count, NULL) == NS_OK);
    memcpy(list->items + list->count, c, count * sizeof *c);
    list->count += count;
}

ns_particles tl_particles(const tl_set *s)
{
    ns_particles p;
    p.n = s->n;
    p.pos = s->pos;
    p.radius = s->radius;
    p.radius_uniform = 0.0f;
    return p;
}

void tl_generate(const ns_workload *w, size_t n, uint64_t seed, tl_set *s)
{
    tl_set_init(s, n);
    ns_error err;
    /* one thread: the settled piles are the same at any count, and a test
     * run with OMP_NUM_THREADS=8 on two cores would crawl */
    ns_status st = w->generate(n, seed, 1, s->pos, s->radius, &err);
    if (st != NS_OK)
        fprintf(stderr, "workload %s n=%zu: %s\n", w->name, n, err.message);
    REQUIRE(st == NS_OK);
}

bool tl_affordable(const ns_workload *w, size_t n)
{
    return w->cache_version == 0 || n <= TL_COSTLY_MAX_N;
}

const ns_kernel *tl_reference_kernel(void)
{
    const ns_kernel *k = ns_kernel_with_reference(1);
    REQUIRE(k != NULL);
    return k;
}

const ns_kernel *tl_kernel(const char *name)
{
    const ns_kernel *k = ns_kernel_find(name);
    if (k == NULL)
        fprintf(stderr, "no kernel named '%s'\n", name);
    REQUIRE(k != NULL);
    return k;
}

const ns_workload *tl_workload(const char *name)
{
    const ns_workload *w = ns_workload_find(name);
    if (w == NULL)
        fprintf(stderr, "no workload named '%s'\n", name);
    REQUIRE(w != NULL);
    return w;
}

float tl_radius(const ns_particles *p, size_t i)
{
    return p->radius ? p->radius[i] : p->radius_uniform;
}

uint32_t tl_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

uint64_t tl_rng(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float tl_rng_float(uint64_t *state, float lo, float hi)
{
    double u = (double)(tl_rng(state) >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
    float f = (float)(lo + (hi - lo) * u);
    if (f >= hi)
        f = lo;
    return f;
}

/* ---- running kernels ---- */

void tl_check_error(ns_status st, const ns_error *err)
{
    if (st == NS_OK)
        return;
    CHECK_MSG(err->status == st, "err.status %d (%s) != returned %d (%s)", (int)err->status,
              ns_status_str(err->status), (int)st, ns_status_str(st));
    CHECK_MSG(err->message[0] != '\0', "empty error message for status %s", ns_status_str(st));
    CHECK_MSG(memchr(err->message, '\0', sizeof err->message) != NULL,
              "error message not NUL-terminated");
}

static void check_failure_contract(ns_status st, const ns_error *err,
                                   const ns_contact_list *contacts)
{
    if (st == NS_OK)
        return;
    tl_check_error(st, err);
    CHECK_MSG(contacts->count == 0, "count %zu after a failed search (want 0)", contacts->count);
    if (st == NS_ERR_OUT_OF_MEMORY || st == NS_ERR_TOO_MANY_CONTACTS ||
        st == NS_ERR_INVALID_ARGUMENT)
        CHECK_MSG(err->particle == NS_NO_PARTICLE,
                  "err.particle = %zu for status %s, which has no offending particle "
                  "(want NS_NO_PARTICLE)",
                  err->particle, ns_status_str(st));
}

void tl_poison_error(ns_error *err)
{
    err->status = (ns_status)-12345;
    err->particle = 0xDEADBEEFu;
    memset(err->message, 0, sizeof err->message);
}

const char *tl_portable_path(void)
{
    static char last[32];
    const char *paths = ns_isa_paths(), *space = strrchr(paths, ' ');
    snprintf(last, sizeof last, "%s", space ? space + 1 : paths);
    return last;
}

ns_status tl_find(const ns_kernel *k, const ns_particles *p, const ns_config *cfg,
                  ns_contact_list *contacts, ns_error *err)
{
    ns_error local;
    if (err == NULL)
        err = &local;
    tl_poison_error(err);
    /* the reference always on the portable path: a kernel run on another
     * path (NS_ISA, `--isa`) is compared with it, not with itself */
    ns_config portable = cfg ? *cfg : ns_config_default();
    if (k && k->reference == 1 && !portable.isa) {
        portable.isa = tl_portable_path();
        cfg = &portable;
    }
    ns_status st = ns_find_contacts(k, p, cfg, contacts, err);
    if (st == NS_OK)
        ns_contact_list_sort(contacts);
    else
        check_failure_contract(st, err, contacts);
    return st;
}

ns_status tl_find_index(const ns_kernel *k, const ns_particles *p, const ns_config *cfg,
                        ns_contact_list *contacts, ns_error *err)
{
    ns_error local;
    if (err == NULL)
        err = &local;
    tl_poison_error(err);
    ns_index *index = NULL;
    ns_status st = ns_index_create(k, cfg, &index, err);
    if (st != NS_OK) {
        CHECK_MSG(err->status == st, "index_create: err.status != returned status");
        return st;
    }
    CHECK(index != NULL);
    st = ns_index_build(index, p, err);
    if (st == NS_OK)
        st = ns_index_query(index, contacts, err);
    else
        contacts->count = 0; /* the query did not run; nothing to check there */
    if (st == NS_OK)
        ns_contact_list_sort(contacts);
    else
        check_failure_contract(st, err, contacts);
    ns_index_destroy(index);
    return st;
}

/* ---- comparison ---- */

static int contact_equal(const ns_contact *a, const ns_contact *b)
{
    return a->i == b->i && a->j == b->j && tl_bits(a->overlap) == tl_bits(b->overlap) &&
           tl_bits(a->nx) == tl_bits(b->nx) && tl_bits(a->ny) == tl_bits(b->ny) &&
           tl_bits(a->nz) == tl_bits(b->nz);
}

size_t tl_first_difference(const ns_contact_list *a, const ns_contact_list *b)
{
    size_t m = a->count < b->count ? a->count : b->count;
    for (size_t k = 0; k < m; k++)
        if (!contact_equal(&a->items[k], &b->items[k]))
            return k;
    return a->count == b->count ? SIZE_MAX : m;
}

void tl_print_contact(const char *label, const ns_contact *c)
{
    fprintf(stderr,
            "    %s: i=%lu j=%lu overlap=%.9g (0x%08lx) normal=(%.9g, %.9g, %.9g) "
            "(0x%08lx 0x%08lx 0x%08lx)\n",
            label, (unsigned long)c->i, (unsigned long)c->j, (double)c->overlap,
            (unsigned long)tl_bits(c->overlap), (double)c->nx, (double)c->ny, (double)c->nz,
            (unsigned long)tl_bits(c->nx), (unsigned long)tl_bits(c->ny),
            (unsigned long)tl_bits(c->nz));
}

int tl_lists_equal(const ns_contact_list *ref, const ns_contact_list *got, const char *what)
{
    size_t k = tl_first_difference(ref, got);
    CHECK_COUNT_();
    if (k == SIZE_MAX)
        return 1;
    if (check_fail(__FILE__, __LINE__)) {
        fprintf(stderr, "  %s: contact lists differ (reference %zu contacts, got %zu)\n", what,
                ref->count, got->count);
        fprintf(stderr, "    first difference at sorted position %zu\n", k);
        if (k < ref->count)
            tl_print_contact("reference", &ref->items[k]);
        else
            fprintf(stderr, "    reference: (end of list)\n");
        if (k < got->count)
            tl_print_contact("got      ", &got->items[k]);
        else
            fprintf(stderr, "    got      : (end of list)\n");
    }
    return 0;
}

/* ---- properties and the independent reference ---- */

void tl_check_contacts(const ns_particles *p, const ns_contact_list *c, const char *what)
{
    int reported = 0; /* one failure report per list is enough */
    for (size_t k = 0; k < c->count && !reported; k++) {
        const ns_contact *t = &c->items[k];
        const char *bad = NULL;
        if (!(t->i < t->j))
            bad = "i < j";
        else if (!((size_t)t->j < p->n))
            bad = "j < n";
        else if (k > 0 && !(c->items[k - 1].i < t->i ||
                            (c->items[k - 1].i == t->i && c->items[k - 1].j < t->j)))
            bad = "strictly increasing (i, j) after sort (a duplicate?)";
        else if (!isfinite(t->overlap) || !(t->overlap >= 0.0f))
            bad = "overlap finite and >= 0";
        else if (tl_bits(t->overlap) == 0x80000000u)
            bad = "overlap is not -0";
        else if (!isfinite(t->nx) || !isfinite(t->ny) || !isfinite(t->nz))
            bad = "normal finite (no NaN/inf)";
        else if (tl_bits(t->nx) == 0x80000000u || tl_bits(t->ny) == 0x80000000u ||
                 tl_bits(t->nz) == 0x80000000u)
            bad = "no -0 in the normal";
        if (bad == NULL) {
            const float *pi = p->pos + 3 * (size_t)t->i, *pj = p->pos + 3 * (size_t)t->j;
            float ri = tl_radius(p, t->i), rj = tl_radius(p, t->j);
            float dx = pj[0] - pi[0], dy = pj[1] - pi[1], dz = pj[2] - pi[2];
            float d2 = dx * dx + dy * dy + dz * dz;
            float rs = ri + rj;
            int zero = t->nx == 0.0f && t->ny == 0.0f && t->nz == 0.0f;
            double len2 = (double)t->nx * t->nx + (double)t->ny * t->ny + (double)t->nz * t->nz;
            if (!(t->overlap <= rs))
                bad = "overlap <= r_i + r_j";
            else if (!(d2 < rs * rs))
                bad = "the pair satisfies d2 < (r_i + r_j)^2";
            else if (d2 < FLT_MIN && !zero)
                bad = "normal == (0,0,0) for coincident centres (d2 < FLT_MIN)";
            else if (d2 >= FLT_MIN && zero)
                bad = "normal != (0,0,0) for distinct centres (d2 >= FLT_MIN)";
            else if (d2 >= FLT_MIN && fabs(len2 - 1.0) > 1e-5)
                bad = "|normal| == 1 within float rounding";
        }
        if (bad != NULL) {
            reported = 1;
            CHECK_COUNT_();
            if (check_fail(__FILE__, __LINE__)) {
                fprintf(stderr, "  %s: contact %zu of %zu violates: %s\n", what, k, c->count, bad);
                tl_print_contact("contact", t);
            }
        }
    }
    CHECK_COUNT_();
}

static void push_contact(ns_contact_list *out, const ns_contact *c)
{
    if (out->count == out->capacity) {
        ns_error err;
        size_t want = out->capacity ? 2 * out->capacity : 1024;
        ns_status st = ns_contact_list_reserve(out, want, &err);
        REQUIRE(st == NS_OK);
        REQUIRE(out->capacity >= want);
    }
    out->items[out->count++] = *c;
}

void tl_reference(const ns_particles *p, ns_contact_list *out)
{
    out->count = 0;
    for (size_t i = 0; i < p->n; i++) {
        const float *pi = p->pos + 3 * i;
        float ri = tl_radius(p, i);
        for (size_t j = i + 1; j < p->n; j++) {
            const float *pj = p->pos + 3 * j;
            float dx = pj[0] - pi[0];
            float dy = pj[1] - pi[1];
            float dz = pj[2] - pi[2];
            float d2 = dx * dx + dy * dy + dz * dz;
            float rs = ri + tl_radius(p, j);
            if (!(d2 < rs * rs))
                continue;
            ns_contact c;
            float d = sqrtf(d2);
            c.i = (uint32_t)i;
            c.j = (uint32_t)j;
            c.overlap = rs - d;
            if (d2 < FLT_MIN) { /* coincident: d2 is 0 or subnormal */
                c.nx = c.ny = c.nz = 0.0f;
            } else {
                c.nx = dx / d + 0.0f; /* + 0.0f turns -0 into +0 */
                c.ny = dy / d + 0.0f;
                c.nz = dz / d + 0.0f;
            }
            push_contact(out, &c);
        }
    }
}

void tl_compare_reference(const ns_contact_list *ref, const ns_contact_list *got, const char *what)
{
    CHECK_COUNT_();
    if (ref->count != got->count) {
        if (check_fail(__FILE__, __LINE__))
            fprintf(stderr, "  %s: %zu contacts, the test's own reference has %zu\n", what,
                    got->count, ref->count);
    }
    size_t m = ref->count < got->count ? ref->count : got->count;
    for (size_t k = 0; k < m; k++) {
        const ns_contact *a = &ref->items[k], *b = &got->items[k];
        const char *bad = NULL;
        if (a->i != b->i || a->j != b->j)
            bad = "a different pair";
        else if (tl_bits(a->overlap) != tl_bits(b->overlap))
            bad = "a different overlap (bitwise)";
        else if (fabsf(a->nx - b->nx) > 1e-6f || fabsf(a->ny - b->ny) > 1e-6f ||
                 fabsf(a->nz - b->nz) > 1e-6f)
            bad = "a normal more than 1e-6 from (dx, dy, dz) / d";
        if (bad != NULL) {
            if (check_fail(__FILE__, __LINE__)) {
                fprintf(stderr, "  %s: sorted contact %zu differs from the test's reference: %s\n",
                        what, k, bad);
                tl_print_contact("reference", a);
                tl_print_contact("got      ", b);
            }
            return;
        }
    }
}

static const tl_suite *listed_suite; /* the suite tl_ctest() lists for */
static const char *listed_path;      /* and the code path, when not the default */

const char *tl_kernel_label(const ns_kernel *K, const char *label)
{
    static char both[64];
    if (!label)
        label = listed_suite->label;
    if (K->parallel)
        return label;
    snprintf(both, sizeof both, "%s,serial", label);
    return both;
}

void tl_ctest(const char *name, const char *label, int threads, const char *arg0, const char *arg1,
              const char *arg2)
{
    const tl_suite *suite = listed_suite;
    if (threads == 0)
        threads = suite->threads;
    if (listed_path && suite->every_path > 0 && threads != suite->every_path)
        return; /* another path's rerun: one thread count suffices */
    if (listed_path)
        printf("%s/isa-%s\t%s,isa\t", name, listed_path, label ? label : suite->label);
    else
        printf("%s\t%s\t", name, label ? label : suite->label);
    if (threads > 0)
        printf("%d", threads);
    else
        printf("-");
    if (listed_path)
        printf("\t--isa\t%s", listed_path);
    const char *args[3] = {arg0, arg1, arg2};
    for (int a = 0; a < 3 && args[a]; a++)
        printf("\t%s", args[a]);
    printf("\n");
}

static void list_suite_ctests(const tl_suite *suite, const tl_case *cases, size_t ncases)
{
    listed_suite = suite;
    for (size_t i = 0; i < ncases; i++) {
        char name[200];
        if (cases[i].ctests) {
            cases[i].ctests();
            continue;
        }
        if (cases[i].each_kernel) {
            for (size_t k = 0; k < ns_kernel_count(); k++) {
                const ns_kernel *K = ns_kernel_at(k);
                snprintf(name, sizeof name, "%s/%s/%s", suite->name, cases[i].name, K->name);
                tl_ctest(name, tl_kernel_label(K, cases[i].label), cases[i].threads, cases[i].name,
                         K->name, NULL);
            }
            continue;
        }
        snprintf(name, sizeof name, "%s/%s", suite->name, cases[i].name);
        tl_ctest(cases[i].ctest_name ? cases[i].ctest_name : name, cases[i].label, cases[i].threads,
                 cases[i].name, NULL, NULL);
    }
}

/* The suite's ctests; with every_path, again for each code path this CPU
 * runs other than the one chosen by default (which the first listing runs). */
static void list_ctests(const tl_suite *suite, const tl_case *cases, size_t ncases)
{
    list_suite_ctests(suite, cases, ncases);
    if (!suite->every_path || getenv("NS_ISA"))
        return;
    ns_error err;
    const char *chosen = ns_isa(&err);
    char paths[200];
    snprintf(paths, sizeof paths, "%s", ns_isa_paths());
    for (char *path = strtok(paths, " "); path; path = strtok(NULL, " ")) {
        setenv("NS_ISA", path, 1);
        bool runs = ns_isa(&err) != NULL;
        unsetenv("NS_ISA");
        if (!runs || (chosen && strcmp(path, chosen) == 0))
            continue;
        listed_path = path;
        list_suite_ctests(suite, cases, ncases);
        listed_path = NULL;
    }
}

int tl_main(const tl_suite *suite, const tl_case *cases, size_t ncases, int argc, char **argv)
{
    const char *path = NULL;
    if (argc >= 3 && strcmp(argv[1], "--isa") == 0) { /* a code path's run of the cases */
        path = argv[2];
        setenv("NS_ISA", path, 1);
        ns_error err;
        if (!ns_isa(&err)) { /* e.g. a build tree moved to another CPU */
            fprintf(stderr, "%s: SKIP: %s\n", suite->name, err.message);
            return TL_SKIP;
        }
        argv[2] = argv[0];
        argc -= 2, argv += 2;
    }
    if (argc < 2) {
        for (size_t i = 0; i < ncases; i++)
            printf("%s\n", cases[i].name);
        return argc == 1 ? 0 : 2;
    }
    if (strcmp(argv[1], "--ctest") == 0 && argc == 2) {
        list_ctests(suite, cases, ncases);
        return fflush(stdout) == 0 ? 0 : 1;
    }
    for (size_t i = 0; i < ncases; i++) {
        if (strcmp(argv[1], cases[i].name) != 0)
            continue;
        if (cases[i].run_args)
            cases[i].run_args(argc - 2, argv + 2);
        else if (argc == 2)
            cases[i].run();
        else
            break;
        char name[200];
        int len = snprintf(name, sizeof name, "%s/%s", suite->name, cases[i].name);
        for (int a = 2; a < argc && len > 0 && (size_t)len < sizeof name; a++)
            len += snprintf(name + len, sizeof name - (size_t)len, " %s", argv[a]);
        if (path && len > 0 && (size_t)len < sizeof name)
            snprintf(name + len, sizeof name - (size_t)len, " (code path %s)", path);
        return check_report(name);
    }
    fprintf(stderr, "%s: unknown case or arguments: %s (run without arguments for the list)\n",
            suite->name, argv[1]);
    return 2;
}

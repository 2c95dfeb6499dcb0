/* test_alloc.c - allocation failures: every failure is NS_ERR_OUT_OF_MEMORY
 * and leaks nothing.
 *
 * usage: test_alloc kernel KERNEL | io | sim     (--ctest: the ctests, see testlib.h)
 *
 * Installs an allocator (ns_set_allocator) that fails on the k-th
 * malloc/realloc call of a run (mode "once"), or on the k-th and every later
 * one (mode "from"), for k = 1, 2, ... until a run makes fewer than k calls.
 * Each run searches a 2000-particle workload with config.threads = 2, through
 * ns_find_contacts and through create/build/query/destroy. A run either
 * succeeds with the right contacts or returns NS_ERR_OUT_OF_MEMORY, and once
 * its index and contact list are freed no block is still allocated. The
 * allocator is thread-safe: parallel kernels allocate inside OpenMP regions.
 * `test_alloc io` does the same for the particle-file parser and reader
 * (from memory and from a FILE) and the particle and contact writers (CSV
 * and binary), `test_alloc sim` for the simulation (with and without a
 * skin) and the settled piles. */
#include "testlib.h"

/* private (src/sim/sim.h): ns_sim_settled with piles of at most `block` */
ns_status ns__sim_settled_piles(size_t n, uint64_t seed, int threads, size_t block, float *pos,
                                float *radius, ns_error *err);

#include <stdatomic.h>

enum { MODE_ONCE = 0, MODE_FROM = 1 };
#define MAX_K 5000

static atomic_long calls;   /* malloc + realloc calls since the last reset */
static atomic_long fail_at; /* 0: never fail */
static atomic_int fail_mode;
static atomic_long injected; /* failures handed out since the last reset */
static atomic_long live;     /* outstanding blocks */
static atomic_long bad_free; /* free of a pointer we never handed out (approximate) */

static int should_fail(void)
{
    long c = atomic_fetch_add(&calls, 1) + 1;
    long k = atomic_load(&fail_at);
    if (k == 0)
        return 0;
    int fail = atomic_load(&fail_mode) == MODE_FROM ? c >= k : c == k;
    if (fail)
        atomic_fetch_add(&injected, 1);
    return fail;
}

static void *hook_malloc(size_t size, void *ctx)
{
    (void)ctx;
    if (should_fail())
        return NULL;
    void *p = malloc(size ? size : 1);
    if (p != NULL)
        atomic_fetch_add(&live, 1);
    return p;
}

static void *hook_realloc(void *ptr, size_t size, void *ctx)
{
    (void)ctx;
    if (should_fail())
        return NULL; /* ptr stays valid and allocated */
    void *q = realloc(ptr, size ? size : 1);
    if (q != NULL && ptr == NULL)
        atomic_fetch_add(&live, 1);
    return q;
}

static void hook_free(void *ptr, void *ctx)
{
    (void)ctx;
    if (ptr == NULL)
        return;
    if (atomic_fetch_sub(&live, 1) <= 0)
        atomic_fetch_add(&bad_free, 1);
    free(ptr);
}

static void arm(long k, int mode)
{
    atomic_store(&calls, 0);
    atomic_store(&injected, 0);
    atomic_store(&fail_mode, mode);
    atomic_store(&fail_at, k);
}

static void disarm(void)
{
    atomic_store(&fail_at, 0);
}

/* One search; returns its status. path 0: ns_find_contacts; 1: index API. */
static ns_status search(const ns_kernel *K, const ns_particles *p, const ns_config *cfg, int path,
                        ns_contact_list *list, ns_error *err)
{
    if (path == 0)
        return ns_find_contacts(K, p, cfg, list, err);
    ns_index *index = NULL;
    ns_status st = ns_index_create(K, cfg, &index, err);
    if (st != NS_OK)
        return st;
    st = ns_index_build(index, p, err);
    if (st == NS_OK)
        st = ns_index_query(index, list, err);
    ns_index_destroy(index);
    return st;
}

/* One reader or writer call of the io sweep. */
typedef struct io_case {
    const char *name;
    ns_status (*run)(const char *text, size_t len, const ns_contact_list *contacts, ns_error *err);
} io_case;

static ns_status io_parse(const char *text, size_t len, const ns_contact_list *contacts,
                          ns_error *err)
{
    (void)contacts;
    ns_particle_file f;
    ns_status st = ns_particle_file_parse(text, len, &f, err);
    if (st == NS_OK) {
        CHECK_EQ_U(f.n, 3000);
        ns_particle_file_free(&f);
    } else {
        CHECK(f.n == 0 && f.pos == NULL && f.radius == NULL && f.skips == NULL);
    }
    return st;
}

/* The streaming reader, from a temporary file (whose own buffers are the C
 * library's, not the hook's). */
static ns_status io_read(const char *text, size_t len, const ns_contact_list *contacts,
                         ns_error *err)
{
    (void)contacts;
    FILE *in = tmpfile();
    REQUIRE(in != NULL);
    REQUIRE(fwrite(text, 1, len, in) == len);
    rewind(in);
    ns_particle_file f;
    ns_status st = ns_particle_file_read(in, &f, err);
    fclose(in);
    if (st == NS_OK) {
        CHECK_EQ_U(f.n, 3000);
        CHECK_EQ_U(ns_particle_file_line_of(&f, 2999), 3000 + 1 + 3000 / 50);
        ns_particle_file_free(&f);
    } else {
        CHECK(f.n == 0 && f.pos == NULL && f.radius == NULL && f.skips == NULL);
    }
    return st;
}

static ns_status io_write(const ns_contact_list *contacts, int what, ns_error *err)
{
    FILE *out = tmpfile();
    REQUIRE(out != NULL);
    ns_status st;
    if (what == 2) {
        float pos[6] = {0, 0, 0, 1, 2, 3}, rad[2] = {1, 2};
        ns_particles p = {2, pos, rad, 0.0f};
        st = ns_particles_write(out, &p, err);
    } else {
        st = ns_contacts_write(out, contacts, what ? NS_FORMAT_BIN : NS_FORMAT_CSV, err);
    }
    fclose(out);
    return st;
}

static ns_status io_csv(const char *t, size_t l, const ns_contact_list *c, ns_error *e)
{
    (void)t, (void)l;
    return io_write(c, 0, e);
}
static ns_status io_bin(const char *t, size_t l, const ns_contact_list *c, ns_error *e)
{
    (void)t, (void)l;
    return io_write(c, 1, e);
}
static ns_status io_particles(const char *t, size_t l, const ns_contact_list *c, ns_error *e)
{
    (void)t, (void)l;
    return io_write(c, 2, e);
}

/* The reader and the writers, each with its k-th allocation failing. */
static void t_io(void)
{
    enum { N = 3000 };
    char *text = malloc((size_t)N * 64);
    REQUIRE(text != NULL);
    size_t len = 0;
    len += (size_t)sprintf(text, "x,y,z,r\n");
    for (int i = 0; i < N; i++) { /* a comment every 50 lines: the line map grows too */
        if (i % 50 == 0)
            len += (size_t)sprintf(text + len, "# block %d\n", i / 50);
        len += (size_t)sprintf(text + len, "%d.5,%d.25,-%d,0.%d\n", i, i % 7, i % 13, 1 + i % 9);
    }
    ns_contact *items = malloc(50000 * sizeof(ns_contact));
    REQUIRE(items != NULL);
    for (uint32_t k = 0; k < 50000; k++)
        items[k] = (ns_contact){k, k + 1, 0.125f * (float)(k % 8), 1.0f, 0.0f, -0.0f};
    ns_contact_list contacts = {items, 50000, 50000};
    static const io_case cases[] = {{"parse", io_parse},
                                    {"read", io_read},
                                    {"write csv", io_csv},
                                    {"write bin", io_bin},
                                    {"write particles", io_particles}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int mode = 0; mode < 2; mode++) {
            long k;
            size_t failed = 0;
            for (k = 1; k <= MAX_K; k++) {
                check_set_context("io %s, failing allocation %ld (%s)", cases[c].name, k,
                                  mode == MODE_FROM ? "and later" : "only");
                ns_error err;
                memset(&err, 0, sizeof err);
                arm(k, mode);
                ns_status st = cases[c].run(text, len, &contacts, &err);
                disarm();
                long inj = atomic_load(&injected);
                if (st != NS_OK) {
                    failed++;
                    CHECK_STATUS(st, NS_ERR_OUT_OF_MEMORY, &err);
                    CHECK(err.message[0] != '\0');
                    CHECK(inj > 0);
                }
                CHECK_MSG(atomic_load(&live) == 0, "%ld block(s) leaked", atomic_load(&live));
                atomic_store(&live, 0);
                if (st == NS_OK && inj == 0)
                    break;
            }
            check_set_context("io %s", cases[c].name);
            CHECK_MSG(k <= MAX_K, "no successful run within %d failing calls", MAX_K);
            printf("io %-16s %-10s: %zu runs failed cleanly\n", cases[c].name,
                   mode == MODE_FROM ? "from k on" : "only k", failed);
        }
    CHECK_EQ_I(atomic_load(&bad_free), 0);
    free(items);
    free(text);
}

/* One simulation run of the sim sweep: 300 uniform spheres, create and 8
 * frames (what = 0 without a skin, 1 with one: ns_skin's allocations too),
 * or (what = 2) a settled pile of 300 in piles of at most 150. The final
 * positions go to out (3 * 300 floats). */
static ns_status sim_run(int what, float *out, ns_error *err)
{
    enum { N = 300 };
    float pos[3 * N], radius[N];
    if (what == 2) {
        ns_status st = ns__sim_settled_piles(N, 1, 2, N / 2, pos, radius, err);
        if (st == NS_OK)
            memcpy(out, pos, sizeof pos);
        return st;
    }
    ns_sim_params prm = ns_sim_params_default();
    ns_status st =
        ns_sim_spawn(tl_workload("uniform"), N, 1, 1, pos, radius, prm.box_lo, prm.box_hi, err);
    if (st != NS_OK)
        return st;
    prm.skin = what == 1 ? 0.2f : 0.0f;
    ns_config cfg = ns_config_default();
    cfg.threads = 2;
    cfg.exact_threads = true; /* the parallel code at every n */
    ns_sim *sim = NULL;
    st = ns_sim_create(tl_kernel("grid_sorted"), &cfg, &prm, N, pos, radius, &sim, err);
    for (int f = 0; f < 8 && st == NS_OK; f++)
        st = ns_sim_step(sim, NULL, err);
    if (st == NS_OK)
        memcpy(out, ns_sim_positions(sim), sizeof pos);
    ns_sim_destroy(sim);
    return st;
}

/* test_alloc sim: the simulation, the skin and the settled piles under
 * every failing allocation: NS_ERR_OUT_OF_MEMORY or the same frames. */
static void t_sim(void)
{
    static const char *names[] = {"sim", "sim with a skin", "settled piles"};
    float ref[900], got[900];
    for (int what = 0; what < 3; what++) {
        ns_error err;
        arm(0, MODE_ONCE);
        REQUIRE(sim_run(what, ref, &err) == NS_OK);
        for (int mode = 0; mode < 2; mode++) {
            long k;
            size_t failed = 0;
            for (k = 1; k <= MAX_K; k++) {
                check_set_context("%s, failing allocation %ld (%s)", names[what], k,
                                  mode == MODE_FROM ? "and later" : "only");
                memset(&err, 0, sizeof err);
                arm(k, mode);
                ns_status st = sim_run(what, got, &err);
                disarm();
                long inj = atomic_load(&injected);
                if (st == NS_OK) {
                    CHECK_MSG(memcmp(ref, got, sizeof ref) == 0,
                              "the frames differ after a failed allocation was survived");
                } else {
                    failed++;
                    CHECK_STATUS(st, NS_ERR_OUT_OF_MEMORY, &err);
                    CHECK(inj > 0);
                }
                CHECK_MSG(atomic_load(&live) == 0, "%ld block(s) leaked", atomic_load(&live));
                atomic_store(&live, 0);
                if (st == NS_OK && inj == 0)
                    break;
            }
            check_set_context("%s", names[what]);
            CHECK_MSG(k <= MAX_K, "no successful run within %d failing calls", MAX_K);
            printf("%-16s %-10s: %zu runs failed cleanly\n", names[what],
                   mode == MODE_FROM ? "from k on" : "only k", failed);
        }
    }
    CHECK_EQ_I(atomic_load(&bad_free), 0);
}

static void t_kernel(int argc, char **argv)
{
    REQUIRE(argc == 1);
    const ns_kernel *K = tl_kernel(argv[0]);
    tl_set s;
    tl_generate(tl_workload("uniform"), 2000, 1, &s);
    ns_particles p = tl_particles(&s);
    ns_config cfg = ns_config_default();
    cfg.threads = 2;
    cfg.exact_threads = true; /* the parallel code at every n */
    ns_error err;

    /* the expected result, copied out of the library's memory */
    ns_contact_list list;
    ns_contact_list_init(&list);
    check_set_context("kernel %s: a run without failures", K->name);
    arm(0, MODE_ONCE);
    REQUIRE(ns_find_contacts(K, &p, &cfg, &list, &err) == NS_OK);
    long calls_ok = atomic_load(&calls);
    CHECK_MSG(calls_ok > 0, "no allocation went through the hook (the contact list should)");
    ns_contact_list_sort(&list);
    size_t ref_count = list.count;
    REQUIRE(ref_count > 0);
    ns_contact *ref_items = malloc(ref_count * sizeof(ns_contact));
    REQUIRE(ref_items != NULL);
    memcpy(ref_items, list.items, ref_count * sizeof(ns_contact));
    ns_contact_list_free(&list);
    CHECK_EQ_I(atomic_load(&live), 0);
    ns_contact_list ref = {ref_items, ref_count, ref_count};

    /* reserve alone */
    check_set_context("ns_contact_list_reserve with the first allocation failing");
    ns_contact_list_init(&list);
    arm(1, MODE_FROM);
    CHECK_STATUS(ns_contact_list_reserve(&list, 1000, &err), NS_ERR_OUT_OF_MEMORY, &err);
    disarm();
    CHECK_CMP_U(list.capacity, <, 1000);
    ns_contact_list_free(&list);
    CHECK_EQ_I(atomic_load(&live), 0);

    for (int path = 0; path < 2; path++)
        for (int mode = 0; mode < 2; mode++) {
            const char *what = path ? "index create/build/query" : "ns_find_contacts";
            const char *mname = mode == MODE_FROM ? "from the k-th call on" : "only the k-th call";
            long k, last_calls = 0;
            size_t failed = 0, recovered = 0;
            for (k = 1; k <= MAX_K; k++) {
                check_set_context("kernel %s via %s, failing %s, k = %ld", K->name, what, mname, k);
                ns_contact_list_init(&list);
                memset(&err, 0, sizeof err);
                err.particle = 12345;
                arm(k, mode);
                ns_status st = search(K, &p, &cfg, path, &list, &err);
                disarm();
                long inj = atomic_load(&injected);
                last_calls = atomic_load(&calls);
                if (st == NS_OK) {
                    ns_contact_list_sort(&list);
                    tl_lists_equal(&ref, &list, check_context);
                    if (inj > 0)
                        recovered++; /* allowed: the library coped without the block */
                } else {
                    failed++;
                    CHECK_STATUS(st, NS_ERR_OUT_OF_MEMORY, &err);
                    CHECK_EQ_I(err.status, st);
                    CHECK(err.message[0] != '\0');
                    CHECK_EQ_U(err.particle, NS_NO_PARTICLE);
                    CHECK_MSG(inj > 0, "status %s without any failed allocation",
                              ns_status_str(st));
                    CHECK_EQ_U(list.count, 0);
                }
                ns_contact_list_free(&list);
                long still = atomic_load(&live);
                CHECK_MSG(still == 0,
                          "%ld block(s) still allocated after the run (status %s, "
                          "%ld calls)",
                          still, ns_status_str(st), atomic_load(&calls));
                atomic_store(&live, 0); /* report each leak once */
                if (st == NS_OK && inj == 0)
                    break; /* fewer than k calls: every call has been failed once */
            }
            check_set_context("kernel %s via %s, failing %s", K->name, what, mname);
            CHECK_MSG(k <= MAX_K, "no successful run within %d failing calls", MAX_K);
            CHECK_MSG(failed > 0, "no run failed: the hook is not used");
            printf("%-14s %-26s %-22s: %ld calls per run, %zu runs failed cleanly, %zu "
                   "recovered\n",
                   K->name, what, mname, last_calls, failed, recovered);
        }
    check_set_context("kernel %s: frees", K->name);
    CHECK_EQ_I(atomic_load(&bad_free), 0);
    free(ref_items);
    tl_set_free(&s);
}

/* alloc/KERNEL for every kernel, with two threads */
static void kernel_ctests(void)
{
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        char name[200];
        snprintf(name, sizeof name, "alloc/%s", ns_kernel_at(k)->name);
        tl_ctest(name, tl_kernel_label(ns_kernel_at(k), NULL), 2, "kernel", ns_kernel_at(k)->name,
                 NULL);
    }
}

static const tl_case cases[] = {
    {"kernel", .run_args = t_kernel, .ctests = kernel_ctests},
    {"io", .run = t_io},
    {"sim", .run = t_sim},
};

int main(int argc, char **argv)
{
    static const ns_allocator hooks = {hook_malloc, hook_realloc, hook_free, NULL};
    ns_set_allocator(&hooks); /* before any other library call */
    static const tl_suite suite = {"alloc", "alloc", -1, 0};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

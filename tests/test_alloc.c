/* test_alloc.c - allocation failures: every failure is NS_ERR_OUT_OF_MEMORY
 * and leaks nothing.
 *
 * usage: test_alloc KERNEL
 *
 * Installs an allocator (ns_set_allocator) that fails on the k-th
 * malloc/realloc call of a run (mode "once"), or on the k-th and every later
 * one (mode "from"), for k = 1, 2, ... until a run makes fewer than k calls.
 * Each run searches a 2000-particle workload with config.threads = 2, through
 * ns_find_contacts and through create/build/query/destroy. A run either
 * succeeds with the right contacts or returns NS_ERR_OUT_OF_MEMORY, and once
 * its index and contact list are freed no block is still allocated. The
 * allocator is thread-safe: parallel kernels allocate inside OpenMP regions. */
#include "testlib.h"

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

int main(int argc, char **argv)
{
    static const ns_allocator hooks = {hook_malloc, hook_realloc, hook_free, NULL};
    ns_set_allocator(&hooks); /* before any other library call */
    if (argc != 2) {
        fprintf(stderr, "usage: %s KERNEL\n", argv[0]);
        return 2;
    }
    const ns_kernel *K = tl_kernel(argv[1]);
    tl_set s;
    tl_generate(tl_workload("uniform"), 2000, 1, &s);
    ns_particles p = tl_particles(&s);
    ns_config cfg = ns_config_default();
    cfg.threads = 2;
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
    char name[120];
    snprintf(name, sizeof name, "alloc/%s", K->name);
    return check_report(name);
}

/* test_diff.c - differential test: one kernel against the reference (the
 * kernel the table marks reference 1: naive).
 *
 * usage: test_diff diff KERNEL WORKLOAD     (--ctest: the ctests, see testlib.h)
 *
 * For n in {0, 1, 2, 10, 100, 1000, 5000} and seeds {1, 2} (a costly
 * workload, cache_version > 0, whose piles are simulated: up to 2000, seed
 * 1), generates the workload, runs the reference and KERNEL (config NULL:
 * threads = 0, i.e. OpenMP's default, which ctest sets through
 * OMP_NUM_THREADS), sorts both and requires bit-identical contact lists.
 * Also checks the contact properties, that the index API gives the same
 * list, that a second search into the same list gives the same result, and
 * that a kernel's streaming query streams exactly what its query lists. */
#include "testlib.h"

static const size_t sizes[] = {0, 1, 2, 10, 100, 1000, 5000};
static const size_t costly_sizes[] = {0, 1, 2, 10, 100, 1000, 2000};
static const uint64_t seeds[] = {1, 2};

/* The streamed blocks, appended. */
static bool append(const ns_contact *c, size_t count, void *user)
{
    tl_append_contacts(user, c, count);
    return true;
}

/* A kernel with a streaming query streams, block by block, exactly the
 * list its query writes from the same build: the same bytes in the same
 * order. A query again of the same build, which a kernel may answer from
 * what its last query kept (grid_sorted records the contacts its first pass
 * finds, room for as many as the last query had), lists the same bytes
 * too: once after a query of a quarter of the particles (room for part of
 * them: some units recorded, the others tested again), once after a query
 * of all. */
static void check_stream(const ns_kernel *kernel, const ns_particles *p, const char *what)
{
    ns_config cfg = ns_config_default();
    cfg.exact_threads = true; /* the parallel code at every n */
    ns_index *index = NULL;
    ns_error err;
    REQUIRE(ns_index_create(kernel, &cfg, &index, &err) == NS_OK);
    if (ns_index_can_stream(index)) {
        ns_contact_list full, streamed, again;
        ns_contact_list_init(&full);
        ns_contact_list_init(&streamed);
        ns_contact_list_init(&again);
        ns_particles part = *p;
        part.n = p->n / 4;
        CHECK_STATUS(ns_index_build(index, &part, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &again, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_build(index, p, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_query(index, &full, &err), NS_OK, &err);
        ns_index_info info;
        ns_index_get_info(index, &info);
        size_t tested = info.candidates;
        CHECK_STATUS(ns_index_query_stream(index, append, &streamed, &err), NS_OK, &err);
        ns_index_get_info(index, &info);
        CHECK_EQ_U(info.candidates, tested);
        tl_lists_equal(&full, &streamed, what);
        for (int k = 0; k < 2; k++) {
            CHECK_STATUS(ns_index_query(index, &again, &err), NS_OK, &err);
            ns_index_get_info(index, &info);
            CHECK_EQ_U(info.candidates, tested);
            tl_lists_equal(&streamed, &again, "a query again of the same build");
        }
        ns_contact_list_free(&full);
        ns_contact_list_free(&streamed);
        ns_contact_list_free(&again);
    }
    ns_index_destroy(index);
}

static void t_diff(int argc, char **argv)
{
    REQUIRE(argc == 2);
    const ns_kernel *naive = tl_reference_kernel();
    const ns_kernel *kernel = tl_kernel(argv[0]);
    const ns_workload *workload = tl_workload(argv[1]);
    const char *wname = workload->name;
    bool costly = workload->cache_version > 0;
    const char *omp = getenv("OMP_NUM_THREADS");

    ns_contact_list ref, got, again;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_contact_list_init(&again);

    for (size_t s = 0; s < (costly ? 1 : sizeof seeds / sizeof seeds[0]); s++) {
        for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
            size_t n = costly ? costly_sizes[t] : sizes[t];
            uint64_t seed = seeds[s];
            char what[200];
            snprintf(what, sizeof what, "%s vs naive, %s n=%zu seed=%llu OMP_NUM_THREADS=%s",
                     kernel->name, wname, n, (unsigned long long)seed, omp ? omp : "unset");
            check_set_context("%s", what);

            tl_set set;
            tl_generate(workload, n, seed, &set);
            ns_particles p = tl_particles(&set);
            ns_error err;

            ns_config cfg = ns_config_default();
            cfg.threads = 0;          /* OpenMP's default: OMP_NUM_THREADS */
            cfg.exact_threads = true; /* the parallel code at every n */
            ns_status st = tl_find(naive, &p, NULL, &ref, &err);
            CHECK_STATUS(st, NS_OK, &err);
            st = tl_find(kernel, &p, &cfg, &got, &err);
            CHECK_STATUS(st, NS_OK, &err);
            if (n >= 1000)
                CHECK_MSG(ref.count > 0,
                          "workload %s n=%zu has no contacts: the comparison "
                          "is vacuous",
                          wname, n);
            if (n < 2)
                CHECK_EQ_U(ref.count, 0);
            tl_lists_equal(&ref, &got, what);
            tl_check_contacts(&p, &got, what);

            if (n == 1000 || n == 10) {
                /* the same list again: identical result, capacity kept */
                size_t cap = got.capacity;
                st = tl_find(kernel, &p, NULL, &got, &err);
                CHECK_STATUS(st, NS_OK, &err);
                CHECK_CMP_U(got.capacity, >=, cap);
                tl_lists_equal(&ref, &got, "second search into the same list");
                /* the index API */
                st = tl_find_index(kernel, &p, NULL, &again, &err);
                CHECK_STATUS(st, NS_OK, &err);
                tl_lists_equal(&ref, &again, "through ns_index_build/query");
            }
            check_stream(kernel, &p, what);
            printf("%-14s %-12s n=%-5zu seed=%llu contacts=%zu\n", kernel->name, wname, n,
                   (unsigned long long)seed, ref.count);
            tl_set_free(&set);
        }
    }
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    ns_contact_list_free(&again);
}

/* Every kernel but the reference, on every workload, at 1, 2, 3 and 8
 * threads (OMP_NUM_THREADS): diff/KERNEL/WORKLOAD/tT. A kernel that uses no
 * threads (the table's parallel false) runs the same code at every count:
 * at 1 and 2 only, which shows that it ignores them (2 is the count each
 * other code path reruns: see tl_ctest). */
static void diff_ctests(void)
{
    static const int threads[] = {1, 2, 3, 8};
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        if (K->reference == 1)
            continue;
        for (size_t w = 0; w < ns_workload_count(); w++)
            for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
                if (!K->parallel && threads[t] > 2)
                    continue;
                char name[200];
                snprintf(name, sizeof name, "diff/%s/%s/t%d", K->name, ns_workload_at(w)->name,
                         threads[t]);
                tl_ctest(name, tl_kernel_label(K, NULL), threads[t], "diff", K->name,
                         ns_workload_at(w)->name);
            }
    }
}

static const tl_case cases[] = {
    {"diff", .run_args = t_diff, .ctests = diff_ctests},
};

int main(int argc, char **argv)
{
    static const tl_suite suite = {"diff", "kernels", -1, 2};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

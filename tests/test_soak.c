/* test_soak - every kernel against naive on random particle sets for a while.
 *
 * usage: test_soak [SECONDS]   (default 600)
 *
 * Each configuration draws a workload, a size (log-uniform up to 4000), a
 * seed, a radius scheme (the workload's radii, all equal, scaled by up to
 * 4x either way, or some set to 0), a thread count (1 to 8) and a hash table
 * size (default or small), then requires every kernel's sorted contacts to
 * equal naive's exactly (grid_dense may refuse for its memory cap) and
 * grid_sorted's count to equal its contacts. Reports how many
 * configurations it checked; label soak, excluded from the default run
 * (ctest --preset soak). */
#include "testlib.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 600.0;
    uint64_t rng = 0x5eed5eedULL;
    double start = omp_get_wtime();
    size_t configs = 0, searches = 0;
    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    tl_set s = {0};
    while (omp_get_wtime() - start < seconds && check_failures == 0) {
        const ns_workload *w = ns_workload_at(tl_rng(&rng) % ns_workload_count());
        size_t n = (size_t)(tl_rng_float(&rng, 0.0f, 1.0f) * tl_rng_float(&rng, 0.0f, 1.0f) * 4000);
        uint64_t seed = tl_rng(&rng) % 1000000;
        tl_set_free(&s);
        tl_generate(w, n, seed, &s);
        int scheme = (int)(tl_rng(&rng) % 4);
        float scale = tl_rng_float(&rng, 0.25f, 4.0f);
        for (size_t i = 0; i < n; i++) {
            if (scheme == 1)
                s.radius[i] *= scale;
            else if (scheme == 2 && tl_rng(&rng) % 8 == 0)
                s.radius[i] = 0.0f;
        }
        ns_particles p = tl_particles(&s);
        if (scheme == 3) { /* every radius the first one's, through radius_uniform */
            p.radius = NULL;
            p.radius_uniform = n ? s.radius[0] : 0.5f;
        }
        ns_config cfg = ns_config_default();
        cfg.threads = 1 + (int)(tl_rng(&rng) % 8);
        cfg.table_size = tl_rng(&rng) % 4 == 0 ? 1 + tl_rng(&rng) % 97 : 0;
        cfg.grid_max_bytes = 1u << 24;
        check_set_context("%s n=%zu seed=%llu scheme %d threads %d table %zu", w->name, n,
                          (unsigned long long)seed, scheme, cfg.threads, cfg.table_size);
        ns_error err;
        REQUIRE(tl_find(tl_kernel("naive"), &p, &cfg, &ref, &err) == NS_OK);
        for (size_t k = 0; k < ns_kernel_count(); k++) {
            const ns_kernel *K = ns_kernel_at(k);
            if (strcmp(K->name, "naive") == 0)
                continue;
            ns_status st = tl_find(K, &p, &cfg, &got, &err);
            searches++;
            if (st == NS_ERR_TOO_LARGE && tl_is_dense(K))
                continue;
            CHECK_STATUS(st, NS_OK, &err);
            if (st == NS_OK)
                tl_lists_equal(&ref, &got, K->name);
        }
        /* the counting pass agrees with the contacts */
        ns_index *index;
        REQUIRE(ns_index_create(tl_kernel("grid_sorted"), &cfg, &index, &err) == NS_OK);
        size_t counted = 0;
        CHECK_STATUS(ns_index_build(index, &p, &err), NS_OK, &err);
        CHECK_STATUS(ns_index_count(index, &counted, &err), NS_OK, &err);
        CHECK_EQ_U(counted, ref.count);
        ns_index_destroy(index);
        configs++;
    }
    printf("soak: %zu configurations checked (%zu kernel searches against naive) in %.0f s\n",
           configs, searches, omp_get_wtime() - start);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
    CHECK_MSG(configs >= 1, "no configuration checked");
    return check_report("soak");
}

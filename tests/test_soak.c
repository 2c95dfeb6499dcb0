/* test_soak - every kernel against naive on random particle sets for a while.
 *
 * usage: test_soak [SECONDS]   (default 600)
 *
 * Each configuration draws a workload, a size (log-uniform up to 4000), a
 * seed, a radius scheme (the workload's radii, all equal, scaled by up to
 * 4x either way, some set to 0, or the whole set scaled by 2^-55 to 2^60 so
 * the radii reach the ends of the exact range [2^-60, 2^60]), a thread
 * count (1 to 8) and a hash table size (default or small), then requires
 * every kernel's sorted contacts to equal naive's exactly (grid_dense may
 * refuse for its memory cap) and grid_sorted's count to equal its contacts.
 * One scheme in six puts one radius (or the uniform radius) just outside
 * the range or far from it: every kernel and ns_skin must then refuse like
 * naive, with the same status, particle and message. Then the same set moves
 * (its first 800 particles) through ns_skin (a random kernel and skin, 0
 * and too small included) for a few steps - small jitter, a particle jumping further than the skin,
 * halves approaching each other, a radius or n changing - and every step's
 * sorted contacts must equal a fresh naive search (or its refusal, when a
 * radius has left the range or the skin outgrown the diameter). Reports how many
 * configurations and skin steps it checked; label soak, excluded from the
 * default run (ctest --preset soak). */
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static size_t skin_sequences = 0, skin_steps = 0;
#define SKIN_MAX_N 800

/* The set s (with p's radius scheme) moving through one ns_skin. */
static void soak_skin(const tl_set *s, const ns_particles *p0, const ns_config *cfg, uint64_t *rng,
                      ns_contact_list *ref, ns_contact_list *got, const char *context)
{
    const ns_kernel *K = ns_kernel_at(tl_rng(rng) % ns_kernel_count());
    /* every step needs a fresh naive search: the first SKIN_MAX_N particles
     * keep that cheap enough for the soak's 10,000 configurations */
    size_t first = s->n < SKIN_MAX_N ? s->n : SKIN_MAX_N;
    tl_set cur;
    tl_set_init(&cur, first);
    memcpy(cur.pos, s->pos, 3 * first * sizeof(float));
    memcpy(cur.radius, s->radius, first * sizeof(float));
    const int uniform = p0->radius == NULL;
    float rmax = uniform ? p0->radius_uniform : 0.0f;
    for (size_t i = 0; i < cur.n && !uniform; i++)
        rmax = cur.radius[i] > rmax ? cur.radius[i] : rmax;
    if (!(rmax > 0.0f))
        rmax = 0.5f;
    unsigned kind = (unsigned)(tl_rng(rng) % 8);
    float skin = kind == 0   ? 0.0f
                 : kind == 1 ? 1e-6f * rmax
                             : rmax * tl_rng_float(rng, 0.02f, 1.0f);
    ns_skin *sk = NULL;
    ns_error err;
    REQUIRE(ns_skin_create(K, cfg, skin, &sk, &err) == NS_OK);
    size_t steps = 5 + tl_rng(rng) % 26, ok_searches = 0;
    float r_uniform = p0->radius_uniform;
    for (size_t t = 0; t < steps; t++) {
        unsigned ev = (unsigned)(tl_rng(rng) % 12);
        float reach = skin > 0.0f ? skin : 0.05f * rmax;
        if (t == 0 || cur.n == 0) {
            /* the set as drawn */
        } else if (ev == 0) { /* one particle jumps */
            size_t i = tl_rng(rng) % cur.n;
            cur.pos[3 * i + tl_rng(rng) % 3] +=
                tl_rng_float(rng, -1.0f, 1.0f) * (1.5f * reach + rmax);
        } else if (ev == 1) { /* a radius changes */
            if (uniform)
                r_uniform *= tl_rng(rng) & 1 ? 0.95f : 1.05f;
            else
                cur.radius[tl_rng(rng) % cur.n] *= tl_rng_float(rng, 0.5f, 1.5f);
        } else if (ev == 2) { /* n changes */
            size_t m = 1 + tl_rng(rng) % (cur.n / 8 + 1);
            if (tl_rng(rng) & 1 && cur.n > m) {
                cur.n -= m;
            } else {
                tl_set extra;
                tl_set_init(&extra, m);
                for (size_t e = 0; e < m; e++) {
                    size_t src = tl_rng(rng) % cur.n;
                    for (int k = 0; k < 3; k++)
                        extra.pos[3 * e + k] =
                            cur.pos[3 * src + k] + tl_rng_float(rng, -1.0f, 1.0f) * rmax;
                    extra.radius[e] = cur.radius[src];
                }
                tl_set_append(&cur, &extra);
                tl_set_free(&extra);
            }
        } else if (ev == 3) { /* halves approach each other */
            int k = (int)(tl_rng(rng) % 3);
            float a = tl_rng_float(rng, 0.0f, 0.3f) * reach;
            for (size_t i = 0; i < cur.n; i++)
                cur.pos[3 * i + k] += i & 1 ? a : -a;
        } else { /* jitter */
            float a = tl_rng_float(rng, 0.0f, 0.15f) * reach;
            for (size_t k = 0; k < 3 * cur.n; k++)
                cur.pos[k] += tl_rng_float(rng, -a, a);
        }
        ns_particles p = tl_particles(&cur);
        if (uniform) {
            p.radius = NULL;
            p.radius_uniform = r_uniform;
        }
        check_set_context("%s; skin %s %g, step %zu of %zu (event %u), n=%zu", context, K->name,
                          (double)skin, t, steps, ev, cur.n);
        ns_error ref_err;
        ns_status want = tl_find(tl_kernel("naive"), &p, cfg, ref, &ref_err);
        /* radius changes can take a radius out of the range, or the largest
         * diameter below the skin */
        float largest = uniform ? p.radius_uniform : 0.0f;
        for (size_t i = 0; i < cur.n && !uniform; i++)
            largest = cur.radius[i] > largest ? cur.radius[i] : largest;
        if (want == NS_OK && largest > 0.0f && skin > 2.0f * largest && cur.n > 0)
            want = NS_ERR_INVALID_ARGUMENT;
        REQUIRE(want == NS_OK || want == NS_ERR_INVALID_INPUT || want == NS_ERR_INVALID_ARGUMENT);
        ns_status st = ns_skin_search(sk, &p, got, &err);
        if (st == NS_ERR_TOO_LARGE && K->domain_memory)
            break;
        CHECK_STATUS(st, want, &err);
        if (want == NS_ERR_INVALID_INPUT && st == want)
            CHECK_MSG(strcmp(err.message, ref_err.message) == 0, "\"%s\" != naive's \"%s\"",
                      err.message, ref_err.message);
        if (st != NS_OK || want != NS_OK)
            break;
        ok_searches++;
        ns_contact_list_sort(got);
        tl_lists_equal(ref, got, "ns_skin_search vs naive");
        ns_skin_info info;
        ns_skin_get_info(sk, &info);
        CHECK_EQ_U(info.searches, ok_searches);
        CHECK_CMP_U(info.rebuilds, <=, info.searches);
        skin_steps++;
        if (check_failures)
            break;
    }
    skin_sequences++;
    ns_skin_destroy(sk);
    tl_set_free(&cur);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 600.0;
    uint64_t rng = 0x5eed5eedULL;
    double start = omp_get_wtime();
    size_t configs = 0, searches = 0, refusals = 0;
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
        int scheme = (int)(tl_rng(&rng) % 6);
        float scale = tl_rng_float(&rng, 0.25f, 4.0f);
        /* scheme 4: positions and radii times 2^-52 to 2^60 (exact): the
         * workloads' radii, 2^-8 (powder's smallest) to 0.5, then reach the
         * range's ends, 2^-60 and 2^59 */
        float power = ldexpf(1.0f, (int)(tl_rng(&rng) % 113) - 52);
        for (size_t i = 0; i < n; i++) {
            if (scheme == 1)
                s.radius[i] *= scale;
            else if (scheme == 2 && tl_rng(&rng) % 8 == 0)
                s.radius[i] = 0.0f;
            else if (scheme == 4) {
                s.radius[i] *= power;
                for (int k = 0; k < 3; k++)
                    s.pos[3 * i + k] *= power;
            }
        }
        ns_particles p = tl_particles(&s);
        /* scheme 5: a radius outside the range, per particle or uniform */
        static const float outside[] = {1e-30f,  3e38f,  0x1.000002p60f, 0x1.fffffep-61f,
                                        FLT_MIN, 1e-45f, FLT_MAX,        1e20f};
        float bad = outside[tl_rng(&rng) % (sizeof outside / sizeof outside[0])];
        bool uniform_bad = tl_rng(&rng) & 1;
        if (scheme == 5 && n > 0 && !uniform_bad)
            s.radius[tl_rng(&rng) % n] = bad;
        if (scheme == 3 || (scheme == 5 && uniform_bad)) {
            /* every radius the first one's, through radius_uniform */
            p.radius = NULL;
            p.radius_uniform = scheme == 5 ? bad : n ? s.radius[0] : 0.5f;
        }
        ns_config cfg = ns_config_default();
        cfg.threads = 1 + (int)(tl_rng(&rng) % 8);
        cfg.exact_threads = true; /* the parallel code at every n */
        cfg.table_size = tl_rng(&rng) % 4 == 0 ? 1 + tl_rng(&rng) % 97 : 0;
        cfg.grid_max_bytes = 1u << 24;
        check_set_context("%s n=%zu seed=%llu scheme %d threads %d table %zu", w->name, n,
                          (unsigned long long)seed, scheme, cfg.threads, cfg.table_size);
        ns_error err;
        if (scheme == 5 && (n > 0 || uniform_bad)) {
            /* a refusal: the same from every kernel (the two paths in turn) and a skin */
            ns_error ref_err;
            REQUIRE(tl_find(tl_kernel("naive"), &p, &cfg, &ref, &ref_err) == NS_ERR_INVALID_INPUT);
            for (size_t k = 0; k < ns_kernel_count(); k++) {
                const ns_kernel *K = ns_kernel_at(k);
                ns_status st = k % 2 ? tl_find(K, &p, &cfg, &got, &err)
                                     : tl_find_index(K, &p, &cfg, &got, &err);
                searches++;
                CHECK_STATUS(st, NS_ERR_INVALID_INPUT, &err);
                CHECK_MSG(strcmp(err.message, ref_err.message) == 0 &&
                              err.particle == ref_err.particle,
                          "%s: \"%s\" (particle %zu) != naive's \"%s\" (particle %zu)", K->name,
                          err.message, err.particle, ref_err.message, ref_err.particle);
            }
            ns_skin *sk;
            REQUIRE(ns_skin_create(ns_kernel_at(tl_rng(&rng) % ns_kernel_count()), &cfg, 0.0f, &sk,
                                   &err) == NS_OK);
            CHECK_STATUS(ns_skin_search(sk, &p, &got, &err), NS_ERR_INVALID_INPUT, &err);
            CHECK(strcmp(err.message, ref_err.message) == 0);
            ns_skin_destroy(sk);
            refusals++;
            configs++;
            continue;
        }
        REQUIRE(tl_find(tl_kernel("naive"), &p, &cfg, &ref, &err) == NS_OK);
        for (size_t k = 0; k < ns_kernel_count(); k++) {
            const ns_kernel *K = ns_kernel_at(k);
            if (strcmp(K->name, "naive") == 0)
                continue;
            ns_status st = tl_find(K, &p, &cfg, &got, &err);
            searches++;
            if (st == NS_ERR_TOO_LARGE && K->domain_memory)
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
        /* the same set moving through ns_skin */
        char context[sizeof check_context];
        snprintf(context, sizeof context, "%s", check_context);
        soak_skin(&s, &p, &cfg, &rng, &ref, &got, context);
        configs++;
    }
    printf("soak: %zu configurations checked (%zu kernel searches against naive, %zu sets "
           "refused alike, %zu skin steps in %zu sequences) in %.0f s\n",
           configs, searches, refusals, skin_steps, skin_sequences, omp_get_wtime() - start);
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    tl_set_free(&s);
    CHECK_MSG(configs >= 1, "no configuration checked");
    return check_report("soak");
}

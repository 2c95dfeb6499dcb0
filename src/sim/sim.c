/* sim.c - spheres under gravity in a box, on top of the contact search.
 *
 * Position-based dynamics (Mueller et al. 2007), because it is stable at a
 * fixed time step whatever the stiffness: contacts are constraints solved by
 * moving positions, never forces integrated, so a dense pile cannot blow up
 * and the overlap left after a frame is bounded by the projection passes, not
 * by a spring constant that would force tiny steps (a spring-dashpot needs
 * dt well below the contact's period, pi * sqrt(m / k), for every pair).
 *
 * Determinism: the contacts of a frame are turned into a neighbour list per
 * particle, each sorted by neighbour index, and the passes are Jacobi (every
 * particle reads the previous pass's positions and writes only its own), so
 * the result does not depend on the kernel's contact order or on the thread
 * count. */
#include "sim.h"

#include <omp.h>
#include <string.h>

/* ns_sim_spawn, ns__sim_spread: the layout's coordinates times these (x, y, z): a column
 * twice as wide and eight times as tall, which settles into a pile a few
 * particles deep. Powers of two: exact. */
static const float SPREAD[3] = {2.0f, 2.0f, 8.0f};
#define START_MAX_ROUNDS 200  /* relaxing the overlaps present at the start */
#define START_TOLERANCE 0.01f /* ... until none exceeds this share of the smaller radius */

struct ns_sim {
    ns_sim_params p;
    int threads;
    float shock; /* params.shock / (largest diameter) */
    size_t n;
    size_t frames;
    float *x;     /* positions at the end of the last frame, 3n */
    float *v;     /* velocities, 3n */
    float *q;     /* predicted, then projected positions, 3n */
    float *q2;    /* the other buffer of a Jacobi pass, 3n */
    float *r;     /* radii, n */
    float *rs;    /* radii for the search: widened by the margin, n */
    double *w;    /* inverse masses r^-3, n (0 for r = 0: it does not move); doubles, so
                     that no radius of the exact range (2^-60 to 2^60) leaves theirs */
    ns__u32s row; /* neighbour list: row[i] .. row[i + 1] in nbr */
    ns__u32s nbr;
    ns__u32s fill;
    ns__buf share;   /* per neighbour entry: this frame's share of the overlap */
    ns_index *index; /* without a skin */
    ns_skin *skin;   /* with one */
    ns_contact_list contacts;
};

const ns_kernel *ns_sim_default_kernel(void)
{
    return ns_kernel_find("grid_sorted");
}

ns_sim_params ns_sim_params_default(void)
{
    ns_sim_params p = {.dt = 0.01f,
                       .gravity = 9.81f,
                       .iterations = 10,
                       .relaxation = 1.5f,
                       .damping = 0.002f,
                       .shock = 1.0f,
                       .margin = 0.2f,
                       .skin = 0.0f};
    return p;
}

void ns_sim_box_around(size_t n, const float *pos, const float *radius, float room, float headroom,
                       float box_lo[3], float box_hi[3])
{
    if (!box_lo || !box_hi || (n && (!pos || !radius)))
        return;
    float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    float max_radius = 0.0f;
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            float c = pos[3 * i + k];
            lo[k] = c - radius[i] < lo[k] ? c - radius[i] : lo[k];
            hi[k] = c + radius[i] > hi[k] ? c + radius[i] : hi[k];
        }
        max_radius = radius[i] > max_radius ? radius[i] : max_radius;
    }
    for (int k = 0; k < 3; k++) {
        float above = k == 2 ? room + headroom : room;
        box_lo[k] = n ? lo[k] - room * max_radius : 0.0f;
        box_hi[k] = n ? hi[k] + above * max_radius : 1.0f;
    }
}

void ns__sim_spread(size_t n, float *pos, const float *radius, float box_lo[3], float box_hi[3])
{
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            pos[3 * i + k] *= SPREAD[k];
    ns_sim_box_around(n, pos, radius, 2.0f, 0.0f, box_lo, box_hi);
}

void ns_sim_place(const ns_workload *layout, size_t n, float *pos, const float *radius,
                  float box_lo[3], float box_hi[3])
{
    if (!layout || !box_lo || !box_hi || (n && (!pos || !radius)))
        return;
    if (layout->at_rest)
        ns_sim_box_around(n, pos, radius, 0.0f, 4.0f, box_lo, box_hi);
    else
        ns__sim_spread(n, pos, radius, box_lo, box_hi);
}

ns_status ns_sim_spawn(const ns_workload *layout, size_t n, uint64_t seed, int threads, float *pos,
                       float *radius, float box_lo[3], float box_hi[3], ns_error *err)
{
    if (!layout || !layout->generate || !box_lo || !box_hi || (n && (!pos || !radius)))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "a NULL layout, box, positions or radii");
    ns_status st = layout->generate(n, seed, threads, pos, radius, err);
    if (st == NS_OK)
        ns_sim_place(layout, n, pos, radius, box_lo, box_hi);
    return st;
}

void ns_sim_destroy(ns_sim *sim)
{
    if (!sim)
        return;
    ns__free(sim->x);
    ns__free(sim->v);
    ns__free(sim->q);
    ns__free(sim->q2);
    ns__free(sim->r);
    ns__free(sim->rs);
    ns__free(sim->w);
    ns__u32s_free(&sim->row);
    ns__u32s_free(&sim->nbr);
    ns__u32s_free(&sim->fill);
    ns__buf_free(&sim->share);
    ns_index_destroy(sim->index);
    ns_skin_destroy(sim->skin);
    ns_contact_list_free(&sim->contacts);
    ns__free(sim);
}

size_t ns_sim_count(const ns_sim *sim)
{
    return sim ? sim->n : 0;
}
const float *ns_sim_positions(const ns_sim *sim)
{
    return sim ? sim->x : NULL;
}
const float *ns_sim_velocities(const ns_sim *sim)
{
    return sim ? sim->v : NULL;
}
const float *ns_sim_radii(const ns_sim *sim)
{
    return sim ? sim->r : NULL;
}
const ns_contact_list *ns_sim_contacts(const ns_sim *sim)
{
    return sim ? &sim->contacts : NULL;
}

double ns_sim_kinetic_energy(const ns_sim *sim)
{
    double e = 0.0;
    for (size_t i = 0; sim && i < sim->n; i++) {
        double m = (double)sim->r[i] * sim->r[i] * sim->r[i];
        const float *v = sim->v + 3 * i;
        e += 0.5 * m * ((double)v[0] * v[0] + (double)v[1] * v[1] + (double)v[2] * v[2]);
    }
    return e;
}

double ns_sim_potential_energy(const ns_sim *sim)
{
    double e = 0.0;
    for (size_t i = 0; sim && i < sim->n; i++) {
        double m = (double)sim->r[i] * sim->r[i] * sim->r[i];
        e += m * sim->p.gravity * ((double)sim->x[3 * i + 2] - sim->p.box_lo[2]);
    }
    return e;
}

/* The search of the positions q into sim->contacts. */
static ns_status search(ns_sim *sim, const float *q, bool *rebuilt, ns_error *err)
{
    ns_particles p = {.n = sim->n, .pos = q, .radius = sim->rs};
    if (sim->skin) {
        ns_status st = ns_skin_search(sim->skin, &p, &sim->contacts, err);
        ns_skin_info info;
        ns_skin_get_info(sim->skin, &info);
        *rebuilt = info.rebuilt;
        return st;
    }
    *rebuilt = true;
    ns_status st = ns_index_build(sim->index, &p, err);
    return st == NS_OK ? ns_index_query(sim->index, &sim->contacts, err) : st;
}

/* Each particle's neighbours from the contacts, sorted by index. */
static ns_status neighbour_lists(ns_sim *sim, ns_error *err)
{
    size_t n = sim->n, c = sim->contacts.count;
    if (c > (UINT32_MAX - 1) / 2)
        return ns__fail(err, NS_ERR_TOO_LARGE, NS_NO_PARTICLE,
                        "%zu contacts are too many for the simulation's neighbour lists", c);
    if (!ns__u32s_reserve(&sim->row, n + 1) || !ns__u32s_reserve(&sim->fill, n + 1) ||
        !ns__u32s_grow(&sim->nbr, 2 * c) || !ns__buf_grow(&sim->share, 2 * c, sizeof(float)))
        return ns__fail_oom(err, "the simulation's neighbour lists");
    uint32_t *row = sim->row.a, *fill = sim->fill.a, *nbr = sim->nbr.a;
    memset(row, 0, (n + 1) * sizeof *row);
    const ns_contact *ct = sim->contacts.items;
    for (size_t k = 0; k < c; k++) {
        row[ct[k].i + 1]++;
        row[ct[k].j + 1]++;
    }
    for (size_t i = 0; i < n; i++)
        row[i + 1] += row[i];
    memcpy(fill, row, n * sizeof *fill);
    for (size_t k = 0; k < c; k++) {
        nbr[fill[ct[k].i]++] = ct[k].j;
        nbr[fill[ct[k].j]++] = ct[k].i;
    }
    long long nn = (long long)n;
#pragma omp parallel for num_threads(sim->threads) schedule(static) if (nn > 16384)
    for (long long i = 0; i < nn; i++) /* insertion sort: a row holds a few dozen at most */
        for (uint32_t a = row[i] + 1; a < row[i + 1]; a++) {
            uint32_t key = nbr[a], b = a;
            for (; b > row[i] && nbr[b - 1] > key; b--)
                nbr[b] = nbr[b - 1];
            nbr[b] = key;
        }
    return NS_OK;
}

static float clampf(float v, float lo, float hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* Keeps the centre at least r from every wall. */
static void clamp_to_box(const ns_sim *sim, float *c, float r)
{
    for (int k = 0; k < 3; k++)
        c[k] = clampf(c[k], sim->p.box_lo[k] + r, sim->p.box_hi[k] - r);
}

/* Each neighbour entry's share of the pair's overlap for this frame: by the
 * inverse masses w, with the higher particle made lighter by 2^(shock *
 * height difference / largest diameter), so that a pile's floor holds up the
 * layers above within a few passes instead of one layer per pass (shock
 * propagation, Guendelman et al. 2003). The heights are the predicted ones,
 * fixed for the frame's passes. */
static void pass_shares(ns_sim *sim)
{
    const uint32_t *row = sim->row.a, *nbr = sim->nbr.a;
    const float *q = sim->q;
    const double *w = sim->w;
    float *share = sim->share.a;
    const float shock = sim->shock;
    long long n = (long long)sim->n;
#pragma omp parallel for num_threads(sim->threads) schedule(static) if (n > 16384)
    for (long long i = 0; i < n; i++)
        for (uint32_t a = row[i]; a < row[i + 1]; a++) {
            uint32_t j = nbr[a];
            float e = shock * (q[3 * i + 2] - q[3 * (size_t)j + 2]);
            e = e < -100.0f ? -100.0f : e > 100.0f ? 100.0f : e;
            double ratio = w[i] > 0.0 ? w[j] * exp2(-(double)e) / w[i] : INFINITY;
            share[a] = (float)(1.0 / (1.0 + ratio));
        }
}

/* One Jacobi pass from q to out: each particle moves by relaxation / m of
 * the sum of its m pushes (its share of each overlap along the pair's
 * normal), then is clamped into the box. */
static void project(const ns_sim *sim, const float *q, float *out)
{
    const uint32_t *row = sim->row.a, *nbr = sim->nbr.a;
    const float *r = sim->r, *share = sim->share.a;
    const float relaxation = sim->p.relaxation;
    long long n = (long long)sim->n;
#pragma omp parallel for num_threads(sim->threads) schedule(static) if (n > 4096)
    for (long long i = 0; i < n; i++) {
        const float *pi = q + 3 * i;
        float sx = 0.0f, sy = 0.0f, sz = 0.0f;
        int pushes = 0;
        for (uint32_t a = row[i]; a < row[i + 1]; a++) {
            uint32_t j = nbr[a];
            const float *pj = q + 3 * (size_t)j;
            float dx = pj[0] - pi[0], dy = pj[1] - pi[1], dz = pj[2] - pi[2];
            float s = r[i] + r[j], d2 = dx * dx + dy * dy + dz * dz;
            if (!(d2 < s * s) || share[a] == 0.0f)
                continue;
            float d = sqrtf(d2), push = (s - d) * share[a];
            if (d > 0.0f) {
                float k = push / d;
                sx -= k * dx, sy -= k * dy, sz -= k * dz;
            } else { /* coincident: apart along the axis (i + j) mod 3, the lower
                      * index towards -, the other towards + */
                float signed_push = (uint32_t)i < j ? push : -push;
                int axis = (int)(((uint64_t)i + j) % 3);
                sx -= axis == 0 ? signed_push : 0.0f;
                sy -= axis == 1 ? signed_push : 0.0f;
                sz -= axis == 2 ? signed_push : 0.0f;
            }
            pushes++;
        }
        float *o = out + 3 * i;
        float k = pushes ? relaxation / (float)pushes : 0.0f;
        o[0] = pi[0] + k * sx, o[1] = pi[1] + k * sy, o[2] = pi[2] + k * sz;
        clamp_to_box(sim, o, r[i]);
    }
}

/* The projection passes on sim->q (result in sim->q). */
static void resolve(ns_sim *sim, int passes)
{
    pass_shares(sim);
    for (int it = 0; it < passes; it++) {
        project(sim, sim->q, sim->q2);
        float *t = sim->q;
        sim->q = sim->q2;
        sim->q2 = t;
    }
}

/* The largest overlap among the pairs of the neighbour lists, as a share of
 * the pair's smaller radius. */
static float worst_overlap(const ns_sim *sim)
{
    const uint32_t *row = sim->row.a, *nbr = sim->nbr.a;
    const float *q = sim->q, *r = sim->r;
    float worst = 0.0f;
    for (size_t i = 0; i < sim->n; i++)
        for (uint32_t a = row[i]; a < row[i + 1]; a++) {
            uint32_t j = nbr[a];
            float dx = q[3 * j] - q[3 * i], dy = q[3 * j + 1] - q[3 * i + 1],
                  dz = q[3 * j + 2] - q[3 * i + 2];
            float s = r[i] + r[j], d2 = dx * dx + dy * dy + dz * dz;
            float smaller = r[i] < r[j] ? r[i] : r[j];
            if (d2 < s * s && smaller > 0.0f && (s - sqrtf(d2)) / smaller > worst)
                worst = (s - sqrtf(d2)) / smaller;
        }
    return worst;
}

static ns_status check_params(const ns_sim_params *p, size_t n, const float *radius, ns_error *err)
{
    if (!(p->dt > 0.0f && p->dt <= 1e3f) || !(p->gravity >= 0.0f && p->gravity <= 1e9f) ||
        p->iterations < 1 || p->iterations > 10000 ||
        !(p->relaxation > 0.0f && p->relaxation < 2.0f) ||
        !(p->damping >= 0.0f && p->damping < 1.0f) || !(p->margin >= 0.0f && p->margin <= 10.0f) ||
        !(p->shock >= 0.0f && p->shock <= 60.0f) || !(p->skin >= 0.0f && isfinite(p->skin)))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "simulation parameters out of range (dt %g, gravity %g, iterations %d, "
                        "relaxation %g, damping %g, shock %g, margin %g, skin %g)",
                        (double)p->dt, (double)p->gravity, p->iterations, (double)p->relaxation,
                        (double)p->damping, (double)p->shock, (double)p->margin, (double)p->skin);
    for (int k = 0; k < 3; k++)
        if (!(isfinite(p->box_lo[k]) && isfinite(p->box_hi[k]) && p->box_lo[k] < p->box_hi[k]))
            return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                            "the box's axis %d, [%g, %g], is empty or not finite", k,
                            (double)p->box_lo[k], (double)p->box_hi[k]);
    float max_radius = 0.0f;
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++)
            if (!(2.0f * radius[i] <= p->box_hi[k] - p->box_lo[k]))
                return ns__fail(err, NS_ERR_INVALID_ARGUMENT, i,
                                "particle %zu (radius %g) does not fit in the box's axis %d", i,
                                (double)radius[i], k);
        max_radius = radius[i] > max_radius ? radius[i] : max_radius;
    }
    /* the skin's limit (see ns_skin_search) */
    if (max_radius > 0.0f && p->skin > 2.0f * max_radius)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "skin %g is more than the particles' largest diameter %g (2 x the largest "
                        "radius): every pair within it would be a candidate",
                        (double)p->skin, 2.0 * (double)max_radius);
    /* the search radii, r + margin x largest radius / 2, in the exact range */
    const float widen = 0.5f * p->margin * max_radius;
    for (size_t i = 0; i < n; i++)
        if (!ns__radius_in_range(radius[i] + widen))
            return ns__fail(err, NS_ERR_INVALID_INPUT, i,
                            "particle %zu: its search radius %.9g (radius %g + margin %g x the "
                            "largest radius / 2) is outside [%.9g, %.9g] (0 or 2^-60 to 2^60), the "
                            "range where contacts are computed exactly; change the length unit",
                            i, (double)(radius[i] + widen), (double)radius[i], (double)p->margin,
                            (double)NS__RADIUS_MIN, (double)NS__RADIUS_MAX);
    return NS_OK;
}

/* The particles copied in, centres clamped into the box, at rest; the
 * search radii, inverse masses and shock scale. */
static void place_particles(ns_sim *sim, const float *pos, const float *radius)
{
    size_t n = sim->n;
    float max_radius = 0.0f;
    for (size_t i = 0; i < n; i++)
        max_radius = radius[i] > max_radius ? radius[i] : max_radius;
    const float widen = 0.5f * sim->p.margin * max_radius;
    sim->shock = max_radius > 0.0f ? sim->p.shock / (2.0f * max_radius) : 0.0f;
    for (size_t i = 0; i < n; i++) {
        float ri = radius[i];
        sim->r[i] = ri;
        sim->rs[i] = ri + widen;
        sim->w[i] = ri > 0.0f ? 1.0 / ((double)ri * ri * ri) : 0.0;
        memcpy(sim->q + 3 * i, pos + 3 * i, 3 * sizeof(float));
        clamp_to_box(sim, sim->q + 3 * i, ri);
    }
    if (n)
        memset(sim->v, 0, 3 * n * sizeof(float));
}

/* Overlaps at the start: relaxed before anything moves. */
static ns_status relax_start(ns_sim *sim, ns_error *err)
{
    ns_status st = NS_OK;
    for (int round = 0; round < START_MAX_ROUNDS && st == NS_OK; round++) {
        bool rebuilt;
        st = search(sim, sim->q, &rebuilt, err);
        if (st == NS_OK)
            st = neighbour_lists(sim, err);
        if (st == NS_OK && worst_overlap(sim) <= START_TOLERANCE)
            break;
        if (st == NS_OK)
            resolve(sim, sim->p.iterations);
    }
    return st;
}

ns_status ns_sim_create(const ns_kernel *kernel, const ns_config *config,
                        const ns_sim_params *params, size_t n, const float *pos,
                        const float *radius, ns_sim **out, ns_error *err)
{
    if (out)
        *out = NULL;
    if (!out || !kernel || !kernel->ops || !params || (n && (!pos || !radius)))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "a NULL output, kernel, parameters, positions or radii");
    int threads;
    ns_status st = ns__resolve_threads(config ? config->threads : 0, &threads, err);
    if (st != NS_OK)
        return st;
    ns_particles given = {.n = n, .pos = pos, .radius = radius};
    st = ns_particles_validate(&given, err);
    if (st == NS_OK)
        st = check_params(params, n, radius, err);
    if (st != NS_OK)
        return st;
    ns_sim *sim = ns__malloc(sizeof *sim);
    if (!sim)
        return ns__fail_oom(err, "the simulation");
    memset(sim, 0, sizeof *sim);
    sim->p = *params;
    sim->n = n;
    sim->threads = threads;
    ns_contact_list_init(&sim->contacts);
    size_t m = n ? n : 1;
    sim->x = ns__malloc_array(3 * m, sizeof(float));
    sim->v = ns__malloc_array(3 * m, sizeof(float));
    sim->q = ns__malloc_array(3 * m, sizeof(float));
    sim->q2 = ns__malloc_array(3 * m, sizeof(float));
    sim->r = ns__malloc_array(m, sizeof(float));
    sim->rs = ns__malloc_array(m, sizeof(float));
    sim->w = ns__malloc_array(m, sizeof(double));
    if (!sim->x || !sim->v || !sim->q || !sim->q2 || !sim->r || !sim->rs || !sim->w) {
        ns_sim_destroy(sim);
        return ns__fail_oom(err, "the simulation's particles");
    }
    st = params->skin > 0.0f ? ns_skin_create(kernel, config, params->skin, &sim->skin, err)
                             : ns_index_create(kernel, config, &sim->index, err);
    if (st != NS_OK) {
        ns_sim_destroy(sim);
        return st;
    }
    place_particles(sim, pos, radius);
    st = relax_start(sim, err);
    if (st != NS_OK) {
        ns_sim_destroy(sim);
        return st;
    }
    if (n)
        memcpy(sim->x, sim->q, 3 * n * sizeof(float));
    *out = sim;
    ns__ok(err);
    return NS_OK;
}

ns_status ns_sim_step(ns_sim *sim, ns_sim_frame *frame, ns_error *err)
{
    if (!sim)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "sim is NULL");
    ns_sim_frame f = {0};
    const float dt = sim->p.dt, g = sim->p.gravity;
    long long n = (long long)sim->n;
    float *x = sim->x, *v = sim->v;

    double t0 = omp_get_wtime();
    float *q = sim->q;
#pragma omp parallel for num_threads(sim->threads) schedule(static) if (n > 16384)
    for (long long i = 0; i < n; i++) {
        v[3 * i + 2] -= g * dt;
        for (int k = 0; k < 3; k++)
            q[3 * i + k] = x[3 * i + k] + v[3 * i + k] * dt;
    }
    double t1 = omp_get_wtime();
    ns_status st = search(sim, sim->q, &f.rebuilt, err);
    double t2 = omp_get_wtime();
    if (st == NS_OK)
        st = neighbour_lists(sim, err);
    if (st != NS_OK)
        return st;
    resolve(sim, sim->p.iterations);
    double t3 = omp_get_wtime();
    q = sim->q;
    const float keep = 1.0f - sim->p.damping, inv_dt = 1.0f / dt;
#pragma omp parallel for num_threads(sim->threads) schedule(static) if (n > 16384)
    for (long long i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            v[3 * i + k] = (q[3 * i + k] - x[3 * i + k]) * inv_dt * keep;
            x[3 * i + k] = q[3 * i + k];
        }
    double t4 = omp_get_wtime();
    sim->frames++;
    f.frame = sim->frames;
    f.contacts = sim->contacts.count;
    f.integrate_s = (t1 - t0) + (t4 - t3);
    f.search_s = t2 - t1;
    f.resolve_s = t3 - t2;
    if (frame)
        *frame = f;
    ns__ok(err);
    return NS_OK;
}

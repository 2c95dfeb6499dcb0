/* skin.c - reuse of a search across frames with a skin (a Verlet list).
 *
 * A rebuild searches with every radius widened by skin/2, so it finds each
 * pair closer than r_i + r_j + skin: the candidates. While no particle has
 * moved more than LIMIT * skin from where it was at the rebuild, a pair that
 * touches now was closer than r_i + r_j + 2 LIMIT skin then, so it is a
 * candidate; each search only re-tests the candidates with the shared
 * predicate. The remaining (1 - 2 LIMIT) skin absorbs float rounding, which
 * is why a skin too small for the coordinates' magnitude disables reuse. */
#include "internal.h"

#include <omp.h>
#include <string.h>

#define LIMIT 0.45f
/* Reuse needs skin >= magnitude * 2^-13 (see nsearch.h). */
#define MIN_RELATIVE_SKIN 0x1p-13f

struct ns_skin {
    ns_index *index; /* created with the machine's contact limit: candidates */
    int threads;
    size_t max_contacts; /* the caller's limit, for the contacts */
    float skin;
    size_t n;        /* particles of the last rebuild */
    bool reusable;   /* the last rebuild's candidates may be reused */
    ns__buf ref;     /* positions at the last rebuild, 3n floats */
    ns__buf radius;  /* radii at the last rebuild, n floats */
    ns__buf widened; /* radii + skin/2, n floats */
    ns_contact_list candidates;
    ns_skin_info info;
};

ns_status ns_skin_create(const ns_kernel *kernel, const ns_config *config, float skin,
                         ns_skin **out, ns_error *err)
{
    if (!out)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "out is NULL");
    *out = NULL;
    if (!(skin >= 0.0f && skin <= 1e30f))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "skin %g is not a finite non-negative distance", (double)skin);
    ns_config c = config ? *config : ns_config_default();
    ns_skin *s = ns__malloc(sizeof *s);
    if (!s)
        return ns__fail_oom(err, "the skin");
    memset(s, 0, sizeof *s);
    s->threads = c.threads > 0 ? c.threads : omp_get_max_threads();
    s->max_contacts = c.max_contacts > 0 && c.max_contacts < NS_MAX_CONTACTS
                          ? c.max_contacts
                          : ns_default_max_contacts();
    s->skin = skin;
    ns_contact_list_init(&s->candidates);
    c.max_contacts = 0;
    ns_status st = ns_index_create(kernel, &c, &s->index, err);
    if (st != NS_OK) {
        ns__free(s);
        return st;
    }
    *out = s;
    return NS_OK;
}

void ns_skin_destroy(ns_skin *s)
{
    if (!s)
        return;
    ns_index_destroy(s->index);
    ns__buf_free(&s->ref);
    ns__buf_free(&s->radius);
    ns__buf_free(&s->widened);
    ns_contact_list_free(&s->candidates);
    ns__free(s);
}

void ns_skin_get_info(const ns_skin *s, ns_skin_info *info)
{
    if (!s || !info)
        return;
    *info = s->info;
    ns_index_info ii;
    ns_index_get_info(s->index, &ii);
    info->bytes = sizeof *s + ii.bytes +
                  (s->ref.capacity + s->radius.capacity + s->widened.capacity) * sizeof(float) +
                  s->candidates.capacity * sizeof(ns_contact);
}

static float radius_of(const ns_particles *p, size_t i)
{
    return p->radius ? p->radius[i] : p->radius_uniform;
}

/* True when the candidates of the last rebuild hold every contact of p:
 * same n, same radii, nobody moved more than LIMIT * skin (a NaN counts as
 * moved, so the rebuild's validation reports it). */
static bool still_valid(const ns_skin *s, const ns_particles *p)
{
    if (!s->reusable || p->n != s->n)
        return false;
    const float *ref = s->ref.a, *rad = s->radius.a;
    const float limit = LIMIT * s->skin, limit2 = limit * limit;
    long long n = (long long)p->n;
    int moved = 0;
#pragma omp parallel for num_threads(s->threads) schedule(static)                                  \
    reduction(|                                                                                    \
              : moved) if (n > 16384)
    for (long long i = 0; i < n; i++) {
        float dx = p->pos[3 * i] - ref[3 * i], dy = p->pos[3 * i + 1] - ref[3 * i + 1],
              dz = p->pos[3 * i + 2] - ref[3 * i + 2];
        moved |= !(dx * dx + dy * dy + dz * dz <= limit2) | (radius_of(p, (size_t)i) != rad[i]);
    }
    return !moved;
}

static ns_status too_many(ns_skin *s, ns_contact_list *contacts, ns_error *err)
{
    contacts->count = 0;
    return ns__too_many_contacts(err, s->max_contacts);
}

/* Runs the kernel with widened radii and keeps the candidates. When the skin
 * is too small for these coordinates (or 0), searches the particles
 * themselves into contacts (*direct) and marks the result not reusable. */
static ns_status rebuild(ns_skin *s, const ns_particles *p, ns_contact_list *contacts, bool *direct,
                         ns_error *err)
{
    s->reusable = false;
    ns_status st = ns_particles_validate(p, err);
    if (st != NS_OK)
        return st;
    size_t n = p->n;
    float magnitude = 0.0f, max_radius = 0.0f;
    for (size_t i = 0; i < 3 * n; i++)
        magnitude = fabsf(p->pos[i]) > magnitude ? fabsf(p->pos[i]) : magnitude;
    for (size_t i = 0; i < n; i++)
        max_radius = radius_of(p, i) > max_radius ? radius_of(p, i) : max_radius;
    magnitude += 2.0f * max_radius;
    float half = 0.5f * s->skin;
    *direct =
        !(s->skin > 0.0f && s->skin >= magnitude * MIN_RELATIVE_SKIN && max_radius + half <= 1e30f);
    if (*direct) {
        st = ns_index_build(s->index, p, err);
        if (st == NS_OK)
            st = ns_index_query(s->index, contacts, err);
        if (st == NS_OK && contacts->count > s->max_contacts)
            return too_many(s, contacts, err);
        s->info.candidates = contacts->count;
        return st;
    }
    if (!ns__buf_reserve(&s->ref, 3 * n, sizeof(float)) ||
        !ns__buf_reserve(&s->radius, n, sizeof(float)) ||
        !ns__buf_reserve(&s->widened, n, sizeof(float)))
        return ns__fail_oom(err, "the skin's copy of the particles");
    float *ref = s->ref.a, *rad = s->radius.a, *wide = s->widened.a;
    if (n) /* memcpy's arguments may not be NULL, even for 0 bytes */
        memcpy(ref, p->pos, 3 * n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        rad[i] = radius_of(p, i);
        wide[i] = rad[i] + half;
    }
    ns_particles widened = {.n = n, .pos = ref, .radius = wide};
    st = ns_index_build(s->index, &widened, err);
    if (st == NS_OK)
        st = ns_index_query(s->index, &s->candidates, err);
    if (st != NS_OK)
        return st;
    s->n = n;
    s->reusable = true;
    s->info.candidates = s->candidates.count;
    return NS_OK;
}

/* The contacts among the candidates, in their order: each thread tests a
 * contiguous share and writes its contacts at the start of the same share
 * of the output, then the shares are closed up. */
static ns_status filter(ns_skin *s, const ns_particles *p, ns_contact_list *contacts, ns_error *err)
{
    size_t m = s->candidates.count;
    ns_status st = ns_contact_list_reserve(contacts, m, err);
    if (st != NS_OK)
        return st;
    enum { MAX_SHARES = 256 };
    int shares = s->threads < MAX_SHARES ? s->threads : MAX_SHARES;
    if (m < 65536)
        shares = 1;
    size_t found[MAX_SHARES];
    const ns_contact *cand = s->candidates.items;
    ns_contact *items = contacts->items;
    ns__input in = {
        .n = p->n, .pos = p->pos, .radius = p->radius, .radius_uniform = p->radius_uniform};
#pragma omp parallel for num_threads(shares) schedule(static, 1)
    for (int t = 0; t < shares; t++) {
        size_t lo = m * (size_t)t / (size_t)shares, hi = m * (size_t)(t + 1) / (size_t)shares;
        size_t k = lo;
        for (size_t c = lo; c < hi; c++)
            k += ns__contact(&in, cand[c].i, cand[c].j, &items[k]);
        found[t] = k - lo;
    }
    size_t count = found[0];
    for (int t = 1; t < shares; t++) {
        size_t lo = m * (size_t)t / (size_t)shares;
        if (found[t])
            memmove(items + count, items + lo, found[t] * sizeof *items);
        count += found[t];
    }
    contacts->count = count;
    return count > s->max_contacts ? too_many(s, contacts, err) : NS_OK;
}

ns_status ns_skin_search(ns_skin *s, const ns_particles *particles, ns_contact_list *contacts,
                         ns_error *err)
{
    if (!s || !particles || !contacts)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "a NULL skin, particles or contact list");
    if (particles->n && !particles->pos)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "pos is NULL");
    contacts->count = 0;
    s->info.rebuilt = !still_valid(s, particles);
    ns_status st = NS_OK;
    bool direct = false;
    if (s->info.rebuilt) {
        s->info.rebuilds++;
        st = rebuild(s, particles, contacts, &direct, err);
    }
    if (st == NS_OK && !direct)
        st = filter(s, particles, contacts, err);
    if (st != NS_OK) {
        s->reusable = false;
        contacts->count = 0;
        return st;
    }
    s->info.searches++;
    return NS_OK;
}

/* skin.c - reuse of a search across frames with a skin (a Verlet list).
 *
 * A rebuild searches with every radius widened by skin/2, so it finds each
 * pair closer than r_i + r_j + skin: the candidates. While no particle has
 * moved more than LIMIT * skin from where it was at the rebuild, a pair that
 * touches now was closer than r_i + r_j + 2 LIMIT skin then, so it is a
 * candidate; each search only re-tests the candidates with the shared
 * predicate. The remaining (1 - 2 LIMIT) skin absorbs float rounding, which
 * is why a skin too small for the coordinates' magnitude disables reuse.
 *
 * Memory: the skin is at most the largest diameter (a larger one is
 * refused), so the candidates are pairs closer than twice the largest
 * interaction distance, no more than the pairs a kernel tests with cells of
 * that edge. They are also limited to CANDIDATES_PER_CONTACT x max_contacts:
 * a rebuild with more searches the particles directly (no reuse that frame),
 * with the caller's limit, like every search without candidates. */
#include "search.h"

#include <omp.h>
#include <string.h>

#define LIMIT 0.45f
/* Reuse needs skin >= magnitude * 2^-13 (see nsearch.h). */
#define MIN_RELATIVE_SKIN 0x1p-13f
/* The candidates' limit, as a multiple of the contacts' (see nsearch.h). */
#define CANDIDATES_PER_CONTACT 2

struct ns_skin {
    ns_index *index; /* the kernel's: candidates, or the contacts of a direct search */
    int threads;
    size_t max_contacts;   /* the caller's limit, for the contacts */
    size_t max_candidates; /* CANDIDATES_PER_CONTACT x max_contacts */
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
    /* any finite skin: a search refuses one above the largest diameter, and
     * with every radius 0 each search is direct */
    if (!(skin >= 0.0f && isfinite(skin)))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "skin %g is not a finite non-negative distance", (double)skin);
    if (!kernel || !kernel->ops)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "kernel is NULL");
    ns_config c = config ? *config : ns_config_default();
    int threads;
    ns_status st = ns__resolve_threads(c.threads, &threads, err);
    if (st != NS_OK)
        return st;
    ns_skin *s = ns__malloc(sizeof *s);
    if (!s)
        return ns__fail_oom(err, "the skin");
    memset(s, 0, sizeof *s);
    s->threads = threads;
    s->max_contacts = ns__resolve_max_contacts(c.max_contacts);
    /* at most the larger of the contacts' limit and the machine's default */
    size_t most = ns_default_max_contacts();
    most = most > s->max_contacts ? most : s->max_contacts;
    s->max_candidates = s->max_contacts <= most / CANDIDATES_PER_CONTACT
                            ? CANDIDATES_PER_CONTACT * s->max_contacts
                            : most;
    s->skin = skin;
    ns_contact_list_init(&s->candidates);
    st = ns_index_create(kernel, &c, &s->index, err);
    if (st != NS_OK) {
        ns__free(s);
        return st;
    }
    *out = s;
    ns__ok(err);
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
    if (!info)
        return;
    if (!s) {
        memset(info, 0, sizeof *info);
        return;
    }
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

/* The particles themselves searched into contacts with the caller's limit,
 * exactly like a search without a skin. */
static ns_status search_direct(ns_skin *s, const ns_particles *p, ns_contact_list *contacts,
                               ns_error *err)
{
    ns__index_set_max_contacts(s->index, s->max_contacts);
    ns_status st = ns_index_build(s->index, p, err);
    if (st == NS_OK)
        st = ns_index_query(s->index, contacts, err);
    s->info.candidates = st == NS_OK ? contacts->count : 0;
    return st;
}

/* Runs the kernel with widened radii and keeps the candidates. When the skin
 * is too small for these coordinates (or 0), the widened radii would leave
 * the exact range, no contact is possible, or the candidates are over their
 * limit, searches the particles themselves into contacts (*direct) and marks
 * the result not reusable. */
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
    if (max_radius > 0.0f && s->skin > 2.0f * max_radius)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "skin %g is more than the particles' largest diameter %g (2 x the largest "
                        "radius): every pair within it would be a candidate",
                        (double)s->skin, 2.0 * (double)max_radius);
    magnitude += 2.0f * max_radius;
    float half = 0.5f * s->skin;
    /* the widened radii, r + half, stay in the exact range (0 is widened too) */
    *direct = !(max_radius > 0.0f && s->skin > 0.0f && s->skin >= magnitude * MIN_RELATIVE_SKIN &&
                half >= NS__RADIUS_MIN && max_radius + half <= NS__RADIUS_MAX);
    if (*direct)
        return search_direct(s, p, contacts, err);
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
    ns__index_set_max_contacts(s->index, s->max_candidates);
    st = ns_index_build(s->index, &widened, err);
    if (st == NS_OK)
        st = ns_index_query(s->index, &s->candidates, err);
    if (st == NS_ERR_TOO_MANY_CONTACTS) { /* too many candidates: this time without */
        *direct = true;
        return search_direct(s, p, contacts, err);
    }
    if (st != NS_OK)
        return st;
    s->n = n;
    s->reusable = true;
    s->info.candidates = s->candidates.count;
    return NS_OK;
}

/* The contacts among candidates [lo, hi), written from out on, or only
 * counted when out is NULL. */
static size_t test_candidates(const ns__input *in, const ns_contact *cand, size_t lo, size_t hi,
                              ns_contact *out)
{
    size_t k = 0;
    ns_contact c;
    for (size_t e = lo; e < hi; e++) {
        bool touch = ns__contact(in, cand[e].i, cand[e].j, out ? &out[k] : &c);
        k += touch;
    }
    return k;
}

/* The contacts among the candidates, in their order. Each thread tests a
 * contiguous share. When the candidates fit in the contacts' limit, a share
 * writes its contacts at the start of the same share of the output, then
 * the shares are closed up; otherwise a first pass counts them (refusing
 * more than the limit) and a second writes each share at its offset, so the
 * list never holds more than max_contacts. */
static ns_status filter(ns_skin *s, const ns_particles *p, ns_contact_list *contacts, ns_error *err)
{
    size_t m = s->candidates.count;
    bool counted = m > s->max_contacts;
    enum { MAX_SHARES = 256 };
    int shares = s->threads < MAX_SHARES ? s->threads : MAX_SHARES;
    if (m < 65536)
        shares = 1;
    size_t found[MAX_SHARES], at[MAX_SHARES], count = 0;
    const ns_contact *cand = s->candidates.items;
    ns__input in = {
        .n = p->n, .pos = p->pos, .radius = p->radius, .radius_uniform = p->radius_uniform};
    for (int t = 0; t < shares; t++) /* where each share writes */
        at[t] = m * (size_t)t / (size_t)shares;
    if (counted) {
#pragma omp parallel for num_threads(shares) schedule(static, 1)
        for (int t = 0; t < shares; t++)
            found[t] = test_candidates(&in, cand, m * (size_t)t / (size_t)shares,
                                       m * (size_t)(t + 1) / (size_t)shares, NULL);
        for (int t = 0; t < shares; t++) {
            at[t] = count;
            count += found[t];
        }
        if (count > s->max_contacts)
            return too_many(s, contacts, err);
    }
    /* grown with room, its new pages touched by the threads (as a kernel's
     * list): a list grown to the exact count reallocated, copied and
     * faulted in fresh memory whenever a rebuild found a few more
     * candidates than any before */
    ns_status st =
        ns__contact_list_grow(contacts, counted ? count : m, s->max_contacts, s->threads, err);
    if (st != NS_OK)
        return st;
    ns_contact *items = contacts->items;
#pragma omp parallel for num_threads(shares) schedule(static, 1)
    for (int t = 0; t < shares; t++)
        found[t] = test_candidates(&in, cand, m * (size_t)t / (size_t)shares,
                                   m * (size_t)(t + 1) / (size_t)shares, items + at[t]);
    /* close up the shares (already in place after a counting pass) */
    count = 0;
    for (int t = 0; t < shares; t++) {
        if (found[t] && at[t] != count)
            memmove(items + count, items + at[t], found[t] * sizeof *items);
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
    const ns_skin_info kept = s->info; /* what a failed search leaves */
    bool rebuilt = !still_valid(s, particles), direct = false;
    ns_status st = rebuilt ? rebuild(s, particles, contacts, &direct, err) : NS_OK;
    if (st == NS_OK && !direct)
        st = filter(s, particles, contacts, err);
    if (st != NS_OK) {
        s->reusable = false;
        s->info = kept;
        contacts->count = 0;
        return st;
    }
    s->info.searches++;
    s->info.rebuilds += rebuilt;
    s->info.rebuilt = rebuilt;
    ns__ok(err);
    return NS_OK;
}

/* guide.c - the code of the library guide (docs/library.md and the README),
 * as one program that compiles and runs: every C block there is an excerpt
 * of this file (the test docs/code checks it), so none can rot.
 *
 *   guide [N]   N particles on a jittered lattice (default 20,000); each way
 *               of searching the guide shows finds their contacts, and the
 *               program says whether they all agree (exit 0) or not (1).
 */
#include <nsearch.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* Search once: a new list, one call. */
static size_t search_once(size_t n, const float *xyz, const float *radii)
{
    ns_particles p = {.n = n, .pos = xyz /* 3n floats */, .radius = radii /* or NULL */,
                      .radius_uniform = 0.5f /* used when radius == NULL */};
    ns_contact_list contacts;
    ns_contact_list_init(&contacts);
    ns_error err;
    if (ns_find_contacts(ns_kernel_find("grid_sorted"), &p, NULL, &contacts, &err) != NS_OK)
        fprintf(stderr, "%s: %s\n", ns_status_str(err.status), err.message);
    double overlap = 0.0;
    for (size_t k = 0; k < contacts.count; k++) {
        const ns_contact *c = &contacts.items[k]; /* c->i < c->j, c->overlap, c->nx, c->ny, c->nz */
        overlap += c->overlap;
    }
    size_t found = contacts.count;
    ns_contact_list_free(&contacts);
    printf("search once:        %zu contacts, overlap %.3f\n", found, overlap);
    return found;
}

/* The README's loop: one index and one list for every frame. */
static int every_frame(size_t n, const float *xyz, const float *radii, int frames, size_t *out)
{
    ns_particles p = {.n = n, .pos = xyz /* 3n floats */, .radius = radii /* or NULL */, .radius_uniform = 0.5f};
    size_t found = 0;
    ns_contact_list contacts;
    ns_contact_list_init(&contacts);
    ns_error err;
    ns_index *index;
    if (ns_index_create(ns_kernel_find("grid_sorted"), NULL, &index, &err) != NS_OK) {
        fprintf(stderr, "%s: %s\n", ns_status_str(err.status), err.message);
        return 1;
    }
    for (int frame = 0; frame < frames; frame++) {      /* the index and list keep their memory */
        if (ns_index_build(index, &p, &err) != NS_OK || ns_index_query(index, &contacts, &err) != NS_OK)
            fprintf(stderr, "%s: %s\n", ns_status_str(err.status), err.message);
        found = contacts.count; /* contacts.items[0 .. found): i < j, overlap, normal nx, ny, nz */
    }
    ns_index_destroy(index);
    ns_contact_list_free(&contacts);
    printf("every frame:        %zu contacts, %d frames\n", found, frames);
    *out = found;
    return 0;
}

/* Reuse an index with a configuration, and ask what it holds. */
static size_t reuse_index(const ns_particles *particles, int frames)
{
    ns_particles p = *particles;
    ns_contact_list contacts;
    ns_contact_list_init(&contacts);
    ns_error err;
    ns_config cfg = ns_config_default();
    cfg.threads = 0;        /* parallel kernels: 0 = OpenMP's default (OMP_NUM_THREADS) */
    cfg.table_size = 0;     /* hash kernels: buckets, 0 = 2n */
    cfg.grid_max_bytes = 0; /* grid_dense: cap on cell storage, 0 = 1 GiB */
    cfg.max_contacts = 0;   /* 0 = ns_default_max_contacts(): a quarter of memory */
    ns_index *index;
    if (ns_index_create(ns_kernel_find("grid_sorted"), &cfg, &index, &err) != NS_OK) {
        fprintf(stderr, "%s: %s\n", ns_status_str(err.status), err.message);
        return 0;
    }
    for (int frame = 0; frame < frames; frame++) {
        if (ns_index_build(index, &p, &err) != NS_OK ||   /* validates, then builds */
            ns_index_query(index, &contacts, &err) != NS_OK)
            break;
    }
    ns_index_info info;
    ns_index_get_info(index, &info); /* info.bytes: the index's own memory;
                                        info.layout: grid_sorted's choice */
    size_t count = 0; /* counted, nothing written */
    if (ns_index_can_count(index) && ns_index_count(index, &count, &err) != NS_OK)
        fprintf(stderr, "%s: %s\n", ns_status_str(err.status), err.message);
    ns_index_destroy(index);
    size_t found = contacts.count;
    ns_contact_list_free(&contacts);
    printf("reuse an index:     %zu contacts (counted %zu), index %zu bytes\n", found, count,
           info.bytes);
    return found == count ? found : 0;
}

/* Stream the contacts: blocks handed to a function instead of a list. */
struct totals {
    size_t contacts;
    double overlap;
};

static bool consume(const ns_contact *c, size_t count, void *user)
{
    struct totals *t = user; /* the caller's state */
    for (size_t k = 0; k < count; k++)
        t->overlap += c[k].overlap;
    t->contacts += count;
    return true; /* false: end the query here */
}

static size_t stream(const ns_particles *p)
{
    ns_error err;
    ns_index *index;
    struct totals totals = {0, 0.0};
    if (ns_index_create(ns_kernel_find("grid_sorted"), NULL, &index, &err) != NS_OK)
        return 0;
    if (ns_index_build(index, p, &err) == NS_OK) {
        if (ns_index_can_stream(index)) /* grid_sorted */
            ns_index_query_stream(index, consume, &totals, &err);
    }
    ns_index_destroy(index);
    printf("stream:             %zu contacts, overlap %.3f\n", totals.contacts, totals.overlap);
    return totals.contacts;
}

/* A skin: one search reused across frames while the particles move little. */
static size_t skin_frames(const ns_particles *particles, int frames)
{
    ns_contact_list contacts;
    ns_contact_list_init(&contacts);
    ns_error err;
    ns_skin_info info = {0};
    ns_skin *skin;
    if (ns_skin_create(ns_kernel_find("grid_sorted"), NULL, 0.1f, &skin, &err) != NS_OK)
        return 0;
    for (int frame = 0; frame < frames; frame++) { /* every frame: */
        if (ns_skin_search(skin, particles, &contacts, &err) != NS_OK)
            break;
    }
    ns_skin_get_info(skin, &info); /* searches, rebuilds, candidates, rebuilt, bytes */
    ns_skin_destroy(skin);
    size_t found = contacts.count;
    ns_contact_list_free(&contacts);
    printf("skin:               %zu contacts, %zu searches, %zu rebuilds\n", found,
           (size_t)info.searches, (size_t)info.rebuilds);
    return found;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
    if (n < 1 || n > 10000000) {
        fprintf(stderr, "guide: N from 1 to 10,000,000\n");
        return 2;
    }
    float *xyz = malloc(3 * n * sizeof *xyz), *radii = malloc(n * sizeof *radii);
    if (!xyz || !radii)
        return 1;
    size_t side = 1;
    while (side * side * side < n)
        side++;
    srand(1);
    for (size_t i = 0; i < n; i++) { /* a lattice of spacing 1, jittered; radii 0.45-0.6 */
        xyz[3 * i] = (float)(i % side) + 0.2f * (float)rand() / (float)RAND_MAX;
        xyz[3 * i + 1] = (float)(i / side % side) + 0.2f * (float)rand() / (float)RAND_MAX;
        xyz[3 * i + 2] = (float)(i / side / side) + 0.2f * (float)rand() / (float)RAND_MAX;
        radii[i] = 0.45f + 0.15f * (float)rand() / (float)RAND_MAX;
    }
    ns_particles particles = {.n = n, .pos = xyz, .radius = radii, .radius_uniform = 0.0f};
    size_t framed = 0;
    if (every_frame(n, xyz, radii, 3, &framed) != 0)
        framed = 0;
    size_t counts[] = {search_once(n, xyz, radii), framed, reuse_index(&particles, 3),
                       stream(&particles), skin_frames(&particles, 3)};
    bool same = counts[0] > 0;
    for (size_t k = 1; k < sizeof counts / sizeof *counts; k++)
        same = same && counts[k] == counts[0];
    printf("%s\n", same ? "all agree" : "they DIFFER");
    free(xyz);
    free(radii);
    return same ? 0 : 1;
}

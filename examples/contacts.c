/* contacts.c - the smallest use of nsearch: four spheres, their contacts. */
#include <nsearch.h>

#include <stdio.h>

int main(void)
{
    /* x, y, z of each particle */
    const float pos[] = {
        0.0f, 0.0f, 0.0f, /* 0 */
        0.9f, 0.0f, 0.0f, /* 1 touches 0 */
        1.8f, 0.0f, 0.0f, /* 2 touches 1 */
        5.0f, 5.0f, 5.0f, /* 3 alone */
    };
    ns_particles particles = {.n = 4, .pos = pos, .radius = NULL, .radius_uniform = 0.5f};

    ns_contact_list contacts;
    ns_contact_list_init(&contacts);
    ns_error err;
    if (ns_find_contacts(ns_kernel_find("grid_sorted"), &particles, NULL, &contacts, &err) !=
        NS_OK) {
        fprintf(stderr, "contacts: %s\n", err.message);
        return 1;
    }
    ns_contact_list_sort(&contacts);
    for (size_t k = 0; k < contacts.count; k++) {
        const ns_contact *c = &contacts.items[k];
        printf("%u %u overlap %.3f normal (%.3f, %.3f, %.3f)\n", (unsigned)c->i, (unsigned)c->j,
               (double)c->overlap, (double)c->nx, (double)c->ny, (double)c->nz);
    }
    ns_contact_list_free(&contacts);
    return 0;
}

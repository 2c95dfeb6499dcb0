// contacts.cpp - nsearch from C++: four spheres, their contacts, the code
// path the kernels ran.
#include <nsearch.h>

#include <cstdio>
#include <vector>

int main()
{
    const std::vector<float> pos = {0.0f, 0.0f, 0.0f, 0.9f, 0.0f, 0.0f,
                                    1.8f, 0.0f, 0.0f, 5.0f, 5.0f, 5.0f};
    ns_particles particles{};
    particles.n = pos.size() / 3;
    particles.pos = pos.data();
    particles.radius_uniform = 0.5f;

    ns_contact_list contacts;
    ns_contact_list_init(&contacts);
    ns_error err;
    if (ns_find_contacts(ns_kernel_find("grid_sorted"), &particles, nullptr, &contacts, &err) !=
        NS_OK) {
        std::fprintf(stderr, "contacts_cxx: %s\n", err.message);
        return 1;
    }
    ns_contact_list_sort(&contacts);
    for (size_t k = 0; k < contacts.count; k++) {
        const ns_contact &c = contacts.items[k];
        std::printf("%u %u overlap %.3f\n", unsigned(c.i), unsigned(c.j), double(c.overlap));
    }
    std::printf("code path %s\n", ns_isa(&err));
    ns_contact_list_free(&contacts);
    return 0;
}

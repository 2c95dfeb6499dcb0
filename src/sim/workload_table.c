/* workload_table.c - the workload table: the generated workloads of the data
 * layer and the simulated one (settled), in the order the tools list them.
 * It lives above the simulation because one of its entries runs it. */
#include "sim.h"

#include <string.h>

static const ns_workload workloads[] = {
    {.name = "uniform",
     .description = "uniform in a cube, about 30 contacts per particle at every n",
     .generate = ns__workload_uniform,
     .headline = true,
     .bulk = true},
    {.name = "dambreak",
     .description = "jittered lattice block in a corner of a domain 8x its side, plus 1% spray",
     .generate = ns__workload_dambreak},
    {.name = "clusters",
     .description = "8 Gaussian blobs, populations and densities differing 16:1",
     .generate = ns__workload_clusters},
    {.name = "polydisperse",
     .description = "uniform cube, radii spread 10:1 (0.05 to 0.5)",
     .generate = ns__workload_polydisperse,
     .bulk = true},
    {.name = "powder",
     .description = "uniform cube, radii over two decades (0.004 to 0.5) in 7 halving classes",
     .generate = ns__workload_powder,
     .bulk = true,
     .wide_radii = true},
    {.name = "sheet",
     .description = "thin sheet on a tilted plane: the bounding box is mostly empty",
     .generate = ns__workload_sheet},
    {.name = "settled",
     .description = "uniform spheres dropped into a box and simulated until at rest: a dense pile",
     .generate = ns_sim_settled,
     .cache_version = NS_SETTLED_VERSION,
     .at_rest = true,
     .bulk = true},
};

size_t ns_workload_count(void)
{
    return sizeof workloads / sizeof workloads[0];
}

const ns_workload *ns_workload_at(size_t k)
{
    return k < ns_workload_count() ? &workloads[k] : NULL;
}

const ns_workload *ns_workload_find(const char *name)
{
    for (size_t k = 0; name && k < ns_workload_count(); k++)
        if (strcmp(workloads[k].name, name) == 0)
            return &workloads[k];
    return NULL;
}

ns_status ns_workload_generate(const char *name, size_t n, uint64_t seed, int threads, float *pos,
                               float *radius, ns_error *err)
{
    if (!name)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "a NULL workload name");
    const ns_workload *w = ns_workload_find(name);
    if (!w)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "unknown workload '%s'",
                        name);
    return w->generate(n, seed, threads, pos, radius, err);
}

/* table.c - the kernel table, from kernel_list.h, and each kernel's ops for
 * every code path this build compiled it for (isa.c chooses the path). */
#include "kernel.h"

#include <string.h>

/* PATHS_OF(name): the kernel's ops on each path, in isa.c's order;
 * PORTABLE_OF(name): on the last, most portable one. */
#ifdef NS_ISA_DISPATCH
#include "isa_paths.h"
#define DECLARE_ON(path, name, ...) extern const ns_kernel_ops NS__OPS__(name, path);
#define OPS_ON(path, name, ...) &NS__OPS__(name, path),
#define DECLARE(name) NS_ISA_DISPATCH_PATHS(DECLARE_ON, name)
#define PATHS_OF(name)                                                                             \
    {                                                                                              \
        NS_ISA_DISPATCH_PATHS(OPS_ON, name)                                                        \
    }
#define PORTABLE_OF(name) &NS__OPS__(name, generic)
#define ONE(path, ...) +1
enum { PATHS = NS_ISA_DISPATCH_PATHS(ONE, ) };
#else
#define DECLARE(name) extern const ns_kernel_ops NS__OPS(name);
#define PATHS_OF(name)                                                                             \
    {                                                                                              \
        &NS__OPS(name)                                                                             \
    }
#define PORTABLE_OF(name) &NS__OPS(name)
enum { PATHS = 1 };
#endif

#define NS_KERNEL(name, description, ...) DECLARE(name)
#include "kernel_list.h"
#undef NS_KERNEL

static const ns_kernel_ops *const ops_by_path[][PATHS] = {
#define NS_KERNEL(name, description, ...) PATHS_OF(name),
#include "kernel_list.h"
#undef NS_KERNEL
};

/* The public table. Its ops field says that the kernel exists; an index
 * runs the ops ns__kernel_ops chooses. */
static const ns_kernel kernels[] = {
#define NS_KERNEL(kernel, text, ...)                                                               \
    {.name = #kernel, .description = text, __VA_ARGS__, .ops = PORTABLE_OF(kernel)},
#include "kernel_list.h"
#undef NS_KERNEL
};

size_t ns_kernel_count(void)
{
    return sizeof kernels / sizeof kernels[0];
}

const ns_kernel *ns_kernel_at(size_t k)
{
    return k < ns_kernel_count() ? &kernels[k] : NULL;
}

const ns_kernel *ns_kernel_find(const char *name)
{
    for (size_t k = 0; name && k < ns_kernel_count(); k++)
        if (strcmp(kernels[k].name, name) == 0)
            return &kernels[k];
    return NULL;
}

int ns_kernel_threads(const ns_kernel *kernel, size_t n, int threads)
{
    if (!kernel || !kernel->parallel || threads < 1)
        return 1;
    size_t per = kernel->min_per_thread, most = per ? n / per : (size_t)threads;
    return (size_t)threads <= most ? threads : most > 1 ? (int)most : 1;
}

const ns_kernel *ns_kernel_with_reference(int rank)
{
    for (size_t k = 0; rank > 0 && k < ns_kernel_count(); k++)
        if (kernels[k].reference == rank)
            return &kernels[k];
    return NULL;
}

const ns_kernel_ops *ns__kernel_ops(const ns_kernel *k, const char *wanted, ns_error *err)
{
    int path = ns__isa_path(wanted, err);
    if (path < 0)
        return NULL;
    for (size_t row = 0; row < ns_kernel_count(); row++)
        if (&kernels[row] == k)
            return ops_by_path[row][path];
    return k->ops; /* a kernel made outside the table runs its own ops */
}

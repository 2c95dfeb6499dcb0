/* table.c - the kernel table, from kernel_list.h. */
#include "kernel.h"

#include <string.h>

#define NS_KERNEL(name, description, parallel, uses_table_size, quadratic, domain_memory,          \
                  stable_order, reference, bound)                                                  \
    extern const ns_kernel_ops ns__##name##_ops;
#include "kernel_list.h"
#undef NS_KERNEL

static const ns_kernel kernels[] = {
#define NS_KERNEL(name, description, parallel, uses_table_size, quadratic, domain_memory,          \
                  stable_order, reference, bound)                                                  \
    {#name,         description,  parallel,  uses_table_size, quadratic,                           \
     domain_memory, stable_order, reference, bound,           &ns__##name##_ops},
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

const ns_kernel *ns_kernel_with_reference(int rank)
{
    for (size_t k = 0; rank > 0 && k < ns_kernel_count(); k++)
        if (kernels[k].reference == rank)
            return &kernels[k];
    return NULL;
}

/* table_json.c - the library's tables as JSON (table_json.h). */
#include "table_json.h"

#include "nsearch.h"

void table_json_string(FILE *f, const char *text)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

static const char *boolean(bool b)
{
    return b ? "true" : "false";
}

void table_json_open(FILE *f, size_t k, const char *name, const char *description)
{
    fprintf(f, "%s{\"name\": ", k ? ",\n " : "");
    table_json_string(f, name);
    fprintf(f, ", \"description\": ");
    table_json_string(f, description);
}

void table_json_kernels(FILE *f)
{
    fputc('[', f);
    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *K = ns_kernel_at(k);
        table_json_open(f, k, K->name, K->description);
        fprintf(f,
                ", \"parallel\": %s, \"uses_table_size\": %s, \"quadratic\": %s, "
                "\"domain_memory\": %s, \"stable_order\": %s, \"reference\": %d, \"bound\": %s, "
                "\"min_per_thread\": %zu, \"radius_levels\": %s}",
                boolean(K->parallel), boolean(K->uses_table_size), boolean(K->quadratic),
                boolean(K->domain_memory), boolean(K->stable_order), K->reference,
                boolean(K->bound), K->min_per_thread, boolean(K->radius_levels));
    }
    fputs("]\n", f);
}

void table_json_workloads(FILE *f)
{
    fputc('[', f);
    for (size_t k = 0; k < ns_workload_count(); k++) {
        const ns_workload *W = ns_workload_at(k);
        table_json_open(f, k, W->name, W->description);
        fprintf(f,
                ", \"cache_version\": %d, \"at_rest\": %s, \"headline\": %s, \"bulk\": %s, "
                "\"wide_radii\": %s}",
                W->cache_version, boolean(W->at_rest), boolean(W->headline), boolean(W->bulk),
                boolean(W->wide_radii));
    }
    fputs("]\n", f);
}

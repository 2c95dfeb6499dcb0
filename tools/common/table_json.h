/* table_json.h - the library's kernel and workload tables as JSON, for
 * `nsearch kernels --json`, `nsearch workloads --json` and the context of
 * nsearch-bench's results (which the Python tools read the tables from). */
#ifndef NS_TABLE_JSON_H
#define NS_TABLE_JSON_H

#include <stdio.h>

/* An array with one object per kernel, in table order: every field of
 * struct ns_kernel but ops. */
void table_json_kernels(FILE *f);
/* The same for the workloads: every field of struct ns_workload but
 * generate. */
void table_json_workloads(FILE *f);
/* A JSON string: quotes, backslashes and control characters escaped. */
void table_json_string(FILE *f, const char *text);
/* The opening of entry k of such an array (the comma before it when k > 0):
 * {"name": ..., "description": ...; the caller writes the other fields and
 * the closing brace. */
void table_json_open(FILE *f, size_t k, const char *name, const char *description);

#endif /* NS_TABLE_JSON_H */

/* atomic_file.h - a file written whole or not at all: the tools write into
 * a temporary beside it and rename it over the file when it is complete, so
 * a reader (another process of a sweep, a user, a crash) never sees half a
 * file, and a failure leaves the file there was.
 *
 *     atomic_file a;
 *     FILE *f = atomic_file_open(&a, "out.csv");
 *     if (f && fprintf(f, ...) > 0 && atomic_file_commit(&a)) ... written
 *     else ... atomic_file_commit (or atomic_file_discard) removed the temporary
 *
 * The temporary is ".NAME.tmp.XXXXXX" in the file's folder (the same file
 * system, so the rename is atomic; hidden; NAME cut so the name stays within
 * 255 bytes). nsearch's output files add what they need around the same
 * name (cli/output.c: the replaced file's owner and mode, signals). */
#ifndef NS_TOOL_ATOMIC_FILE_H
#define NS_TOOL_ATOMIC_FILE_H

#include <stdbool.h>
#include <stdio.h>

/* The longest path it takes: Linux's PATH_MAX, which <limits.h> declares
 * only outside strict ISO C. */
enum { ATOMIC_FILE_PATH_MAX = 4096 };

typedef struct atomic_file {
    char target[ATOMIC_FILE_PATH_MAX + 1];
    char temp[ATOMIC_FILE_PATH_MAX + 16];
    FILE *f;
} atomic_file;

/* The temporary's name for target, into temp (a mkstemp template); false
 * when it does not fit. */
bool atomic_temp_name(const char *target, char *temp, size_t size);

/* A new temporary for target, open for writing ("wb"); NULL (errno set) when
 * it cannot be made. */
FILE *atomic_file_open(atomic_file *a, const char *target);

/* Closes the temporary (unless the caller closed it and had another program
 * write it: a->f NULL) and renames it over the target: true when the file
 * is complete in place; false (errno set) when writing, closing or renaming
 * failed, the temporary then removed and the target as it was. */
bool atomic_file_commit(atomic_file *a);

/* Closes and removes the temporary: the target stays as it was. */
void atomic_file_discard(atomic_file *a);

#endif /* NS_TOOL_ATOMIC_FILE_H */

/* output.h - where the tool writes, without ever destroying what is there.
 *
 * What happens depends on what the path is (after following symbolic links):
 *   nothing yet, or a regular file   a temporary file beside it, renamed over
 *                                    it only when complete; an existing file
 *                                    keeps its mode, owner and group
 *   "-" or standard output's file    standard output, written directly
 *   a character device or a FIFO     written directly (/dev/null, a pipe)
 * and it is refused (exit 1, nothing touched) when the path is a folder, a
 * block device or another kind of file, a symbolic link to nothing, a file
 * with other hard links, with an access control list, one the caller may
 * not write, or one whose owner or group the caller cannot give to a new
 * file. A run that fails or is stopped by a signal removes its temporary
 * file, so the target stays exactly as it was. */
#ifndef NS_CLI_OUTPUT_H
#define NS_CLI_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

typedef struct output {
    const char *path; /* as given; NULL for standard output */
    FILE *f;          /* where to write */
    bool replace;     /* a temporary to rename over target */
    bool own_file;    /* f was opened here (close it) */
} output;

/* Installs the signal handling: the catchable signals that end a process
 * remove the temporary file first; SIGPIPE and SIGXFSZ are ignored, so a
 * closed pipe or a file-size limit is a write error with a message. Call
 * once, first thing in main. */
void output_init(void);

/* Prepares the output at path (NULL or "-": standard output). Returns 0, or
 * prints one line and returns the exit status (1). */
int output_open(output *o, const char *path);

/* Finishes the output: flushes it and, for a file, renames the temporary
 * over the target. With last set, the signals that would end the process
 * stay blocked from the rename on, so a run that reports success and the
 * new file go together. Prints one line and returns false on failure (the
 * temporary removed, the target untouched). */
bool output_commit(output *o, bool last);

/* Drops a partial output: the temporary is removed, the target untouched. */
void output_discard(output *o);

/* "path" or "standard output", for messages. */
const char *output_name(const output *o);

/* A set of files written together into one folder (the frames of `sim`).
 * Each is written into a private folder made inside it
 * (".nsearch.XXXXXX"), and only when the last is complete are they all
 * moved into place; a run that fails or is stopped by a signal removes
 * that private folder and what it holds, so the folder keeps exactly what
 * it had. Each name is a plain file of the folder: a regular file there is
 * replaced keeping its mode, owner and group, as output_open() replaces
 * one; a symbolic link, a folder, a device, a FIFO or a socket, a file with
 * other hard links, one the caller may not replace, or with an access
 * control list, is refused (exit 1). The names are those name(k, ctx,
 * buffer) writes for k = 0 .. count - 1: it is called from the signal
 * handler too, so it may only compute (no allocation, no stdio). One set
 * at a time. */
enum { OUTPUT_NAME_MAX = 64 };
typedef void (*output_name_fn)(size_t k, const void *ctx, char name[OUTPUT_NAME_MAX]);

/* Checks every name, then makes the private folder. Returns 0, or prints
 * one line and returns the exit status (1). */
int output_set_open(const char *dir, size_t count, output_name_fn name, const void *ctx);

/* Opens file k of the set for writing (o->f); 0, or one line and 1. Finish
 * it with output_set_close(). */
int output_set_file(size_t k, output *o);

/* Flushes and closes file k; false (one line printed) on a write error. */
bool output_set_close(output *o);

/* Moves every file of the set into the folder; from then on the signals
 * that would end the process stay blocked, so a run that reports success
 * and the new files go together. Prints one line and returns false on
 * failure. */
bool output_set_commit(void);

/* Removes the private folder and what it holds; the folder untouched. */
void output_set_discard(void);

#endif /* NS_CLI_OUTPUT_H */

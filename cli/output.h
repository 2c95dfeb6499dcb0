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

#endif /* NS_CLI_OUTPUT_H */

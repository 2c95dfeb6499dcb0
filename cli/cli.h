/* cli.h - what the commands of the nsearch tool share: exit statuses,
 * messages, option parsing that ends in a usage error, kernels by name,
 * reading a particle file. */
#ifndef NS_CLI_CLI_H
#define NS_CLI_CLI_H

#include <nsearch.h>

#include "options.h"

/* Exit statuses (docs/cli.md, "Exit status"). */
enum {
    EXIT_FAIL = 1,   /* not the input's fault: memory, a refusal, writing, the output path */
    EXIT_USAGE = 2,  /* a usage error or invalid input */
    EXIT_INVALID = 3 /* --check found a difference from naive */
};

/* The command being run, for messages ("pairs"); NULL before one is known. */
extern const char *cli_command;

/* One line on standard error: "nsearch: " and the message. */
void cli_say(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* A usage error: the message, where to find help; exits EXIT_USAGE. */
_Noreturn void cli_usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Writes text to standard output and exits: 0, or 1 when it cannot be
 * written (a full disk, a closed pipe). */
_Noreturn void cli_print_and_exit(const char *text);

/* Parses a command's options; --help prints help and exits 0, an error
 * is a usage error. */
void cli_parse(int argc, char **argv, opt *opts, int nopts, const char *help);

/* The kernel of that name, or a usage error listing the kernels. */
const ns_kernel *cli_kernel(const char *name);

/* The --threads option's range: 1 to ns_max_threads(). */
opt cli_threads_option(void);

/* Reads a particle file ("-": standard input) into file. Returns 0, or
 * prints one line (path:line: what) and returns the exit status. */
int cli_read_particles(const char *path, ns_particle_file *file);

/* A library error about particles of file read from path: "path:line: ...". */
void cli_say_particle_error(const char *path, const ns_particle_file *file, const char *who,
                            const ns_error *err);

/* The exit status for a library status: invalid input or argument is the
 * caller's (2), anything else 1. */
int cli_exit_status(ns_status s);

/* The commands: argv holds the command's own arguments; return the exit status. */
int cli_gen(int argc, char **argv);
int cli_pairs(int argc, char **argv);
int cli_sim(int argc, char **argv);


#endif /* NS_CLI_CLI_H */

/* cli.c - what the commands of the nsearch tool share (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cli_command = NULL;

void cli_say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nsearch: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

_Noreturn void cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nsearch: ", stderr);
    if (cli_command)
        fprintf(stderr, "%s: ", cli_command);
    vfprintf(stderr, fmt, ap);
    if (cli_command)
        fprintf(stderr, " (see 'nsearch %s --help')\n", cli_command);
    else
        fputs(" (see 'nsearch --help')\n", stderr);
    va_end(ap);
    exit(EXIT_USAGE);
}

_Noreturn void cli_print_and_exit(const char *text)
{
    if (fputs(text, stdout) == EOF || fflush(stdout) != 0 || ferror(stdout)) {
        cli_say("standard output: cannot write: %s", strerror(errno));
        exit(EXIT_FAIL);
    }
    exit(0);
}

void cli_parse(int argc, char **argv, opt *opts, int nopts, const char *help)
{
    char message[512];
    int s = opt_parse(argc, argv, opts, nopts, message, sizeof message);
    if (s == OPT_HELP)
        cli_print_and_exit(help);
    if (s != OPT_OK)
        cli_usage_error("%s", message);
}

const ns_kernel *cli_kernel(const char *name)
{
    const ns_kernel *k = ns_kernel_find(name);
    if (!k) {
        char names[512] = "", shown[96];
        for (size_t i = 0; i < ns_kernel_count(); i++) {
            strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
            strncat(names, ns_kernel_at(i)->name, sizeof names - strlen(names) - 1);
        }
        opt_quote(shown, sizeof shown, name, 40);
        cli_usage_error("unknown kernel '%s' (kernels: %s)", shown, names);
    }
    return k;
}

opt cli_threads_option(void)
{
    return (opt)OPT_COUNT_ENTRY("--threads", 1, (unsigned long long)ns_max_threads());
}

int cli_exit_status(ns_status s)
{
    return s == NS_ERR_INVALID_INPUT || s == NS_ERR_INVALID_ARGUMENT ? EXIT_USAGE : EXIT_FAIL;
}

int cli_read_particles(const char *path, ns_particle_file *file)
{
    bool stdin_input = strcmp(path, "-") == 0;
    FILE *f = stdin_input ? stdin : fopen(path, "rb");
    if (!f) {
        cli_say("%s: cannot read: %s", path, strerror(errno));
        return EXIT_USAGE;
    }
    ns_error err;
    ns_status s = ns_particle_file_read(f, file, &err);
    if (!stdin_input)
        fclose(f);
    if (s == NS_OK)
        return 0;
    if (err.line)
        cli_say("%s:%zu: %s", path, err.line, err.message);
    else
        cli_say("%s: %s", path, err.message);
    return s == NS_ERR_OUT_OF_MEMORY ? EXIT_FAIL : EXIT_USAGE;
}

void cli_say_particle_error(const char *path, const ns_particle_file *file, const char *who,
                            const ns_error *err)
{
    size_t line =
        err->particle != NS_NO_PARTICLE && file ? ns_particle_file_line_of(file, err->particle) : 0;
    char where[32] = "";
    if (line)
        snprintf(where, sizeof where, ":%zu", line);
    cli_say("%s%s: %s: %s (%s)", path, where, who, err->message, ns_status_str(err->status));
}


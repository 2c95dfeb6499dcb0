/* fuzz_options - libFuzzer target for the command line's option parser
 * (cli/options.c).
 *
 * Input: the first byte picks a command's option table (pairs or sim, as
 * the tool declares them), the rest is split at NUL bytes into at most 24
 * arguments. Checked on every input:
 *   - opt_parse never crashes, reads only its arguments and returns one of
 *     its statuses; an error has a one-line message of printable ASCII;
 *   - on success every option given holds a value from the arguments, a
 *     whole number within its range, a float finite and within its range;
 *   - a float option's value is the particle-file parser's value for the
 *     same text (one rounding, the same accepted syntax), where the text can
 *     be a field of a particle file at all. */
#define _POSIX_C_SOURCE 200809L /* strnlen */

#include "options.h"

#include <nsearch.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_options: %s\n", what);
        abort();
    }
}

/* The file parser's reading of text as a radius, when text can be a field. */
static int file_radius(const char *text, float *out)
{
    size_t len = strlen(text);
    if (len == 0 || len > 4000 || strpbrk(text, ",\n\r#") || text[0] == ' ' || text[0] == '\t' ||
        text[len - 1] == ' ' || text[len - 1] == '\t')
        return -1; /* not comparable: the file format splits or trims it */
    static char buf[4100];
    snprintf(buf, sizeof buf, "x,y,z,r\n0,0,0,%s\n", text);
    ns_particle_file f;
    if (ns_particle_file_parse(buf, strlen(buf), &f, NULL) != NS_OK)
        return 0;
    *out = f.radius[0];
    ns_particle_file_free(&f);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > 4096)
        return 0;
    opt pairs[] = {OPT_TEXT_ENTRY("--kernel"),
                   OPT_FLOAT_ENTRY("--radius", 0.0f, FLT_MAX),
                   OPT_COUNT_ENTRY("--threads", 1, 64),
                   OPT_COUNT_ENTRY("--table-size", 1, UINT32_MAX),
                   OPT_COUNT_ENTRY("--max-contacts", 1, (unsigned long long)1 << 31),
                   OPT_COUNT_ENTRY("--seed", 0, UINT64_MAX),
                   OPT_FLAG_ENTRY("--check")};
    opt sim[] = {OPT_COUNT_ENTRY("--n", 1, 100000000), OPT_FLOAT_ENTRY("--dt", 1e-6f, 1.0f),
                 OPT_FLOAT_ENTRY("--skin", 0.0f, FLT_MAX), OPT_TEXT_ENTRY("--output-dir"),
                 OPT_FLAG_ENTRY("--stats")};
    opt *opts = data[0] & 1 ? sim : pairs;
    int nopts =
        data[0] & 1 ? (int)(sizeof sim / sizeof sim[0]) : (int)(sizeof pairs / sizeof pairs[0]);

    /* the arguments: a private NUL-terminated copy, split at NULs */
    char *copy = malloc(size);
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = '\0';
    char *args[24];
    int argc = 0;
    for (size_t at = 0; at < size - 1 && argc < 24;) {
        args[argc++] = copy + at;
        at += strlen(copy + at) + 1;
    }

    char message[256];
    int s = opt_parse(argc, args, opts, nopts, message, sizeof message);
    check(s == OPT_OK || s == OPT_HELP || s == OPT_ERROR, "unknown status");
    if (s == OPT_ERROR) {
        size_t len = strnlen(message, sizeof message);
        check(len > 0 && len < sizeof message, "error without a terminated message");
        for (size_t k = 0; k < len; k++)
            check(message[k] >= 0x20 && message[k] < 0x7f, "unprintable byte in a message");
    }
    if (s == OPT_OK) {
        for (int k = 0; k < nopts; k++) {
            const opt *o = &opts[k];
            if (!o->given)
                continue;
            check(o->text != NULL, "given without a text");
            bool from_args = o->kind == OPT_FLAG;
            for (int a = 0; a < argc && !from_args; a++)
                from_args = o->text >= args[a] && o->text <= args[a] + strlen(args[a]);
            check(from_args, "a value that is not in the arguments");
            if (o->kind == OPT_COUNT)
                check(o->count >= o->min && o->count <= o->max, "count out of range");
            if (o->kind == OPT_FLOAT) {
                check(isfinite(o->number) && o->number >= o->fmin && o->number <= o->fmax,
                      "float out of range");
                float r;
                int f = file_radius(o->text, &r);
                check(f != 0, "the file parser refuses a number the option accepts");
                check(f < 0 || memcmp(&r, &o->number, sizeof r) == 0,
                      "the option and the file read the same text as different floats");
            }
        }
    }
    /* the other direction: a number the file accepts in range, the option accepts too */
    for (int a = 0; a < argc; a++) {
        float r, v;
        if (file_radius(args[a], &r) == 1 && r <= FLT_MAX) {
            check(opt_read_float(args[a], 0.0f, FLT_MAX, &v), "the option refuses a file number");
            check(memcmp(&r, &v, sizeof r) == 0, "different floats for the same text");
        }
    }
    free(copy);
    return 0;
}

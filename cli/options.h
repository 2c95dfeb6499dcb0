/* options.h - the command line's one option parser.
 *
 * Every command declares its options in a table; opt_parse() fills the
 * table from argv and returns a status with a message instead of exiting,
 * so it can be tested and fuzzed on its own. Numbers are read the way the
 * particle-file parser reads them: a whole number is digits only (no sign,
 * no spaces), a real number is one C floating-point literal read straight
 * into a float (strtof: rounded once), finite, with no spaces around it. */
#ifndef NS_CLI_OPTIONS_H
#define NS_CLI_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

typedef enum opt_kind {
    OPT_FLAG,  /* --stats: no value */
    OPT_TEXT,  /* --kernel NAME: any non-empty text */
    OPT_COUNT, /* --n N: a whole number in [min, max] */
    OPT_FLOAT  /* --radius R: a float in [fmin, fmax] */
} opt_kind;

typedef struct opt {
    const char *name; /* "--kernel" */
    opt_kind kind;
    unsigned long long min, max; /* OPT_COUNT */
    float fmin, fmax;            /* OPT_FLOAT */
    /* filled by opt_parse */
    bool given;
    const char *text;         /* the value as given ("" for a flag) */
    unsigned long long count; /* OPT_COUNT */
    float number;             /* OPT_FLOAT */
} opt;

/* Table entries. */
#define OPT_FLAG_ENTRY(option_name)                                                                \
    {                                                                                              \
        .name = (option_name), .kind = OPT_FLAG                                                    \
    }
#define OPT_TEXT_ENTRY(option_name)                                                                \
    {                                                                                              \
        .name = (option_name), .kind = OPT_TEXT                                                    \
    }
#define OPT_COUNT_ENTRY(option_name, lo, hi)                                                       \
    {                                                                                              \
        .name = (option_name), .kind = OPT_COUNT, .min = (lo), .max = (hi)                         \
    }
#define OPT_FLOAT_ENTRY(option_name, lo, hi)                                                       \
    {                                                                                              \
        .name = (option_name), .kind = OPT_FLOAT, .fmin = (lo), .fmax = (hi)                       \
    }

enum opt_status {
    OPT_OK = 0,   /* every option parsed */
    OPT_HELP = 1, /* --help or -h was given (nothing else is checked) */
    OPT_ERROR = 2 /* message says what is wrong */
};

/* Parses args[0 .. argc) against opts[0 .. nopts). Accepted forms:
 * --name VALUE, --name=VALUE, --flag; "--" ends the options (nothing may
 * follow it: the commands take no other arguments). An option given twice,
 * an unknown option, a missing or malformed value are errors. message
 * (size bytes) receives one line without a newline on OPT_ERROR; bytes of
 * the arguments that are not printable ASCII appear as \xNN. */
int opt_parse(int argc, char *const *args, opt *opts, int nopts, char *message, size_t size);

/* The number rules on their own: true when s is a whole number in
 * [min, max] / a float in [fmin, fmax]. */
bool opt_read_count(const char *s, unsigned long long min, unsigned long long max,
                    unsigned long long *out);
bool opt_read_float(const char *s, float fmin, float fmax, float *out);

/* Copies s into buf (size bytes, always terminated), at most max_chars of
 * it, with bytes that are not printable ASCII as \xNN and "..." when cut. */
void opt_quote(char *buf, size_t size, const char *s, size_t max_chars);

#endif /* NS_CLI_OPTIONS_H */

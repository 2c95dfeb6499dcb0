/* options.c - the command line's one option parser (see options.h). */
#include "options.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void opt_quote(char *buf, size_t size, const char *s, size_t max_chars)
{
    if (size == 0)
        return;
    size_t at = 0, chars = 0;
    for (; *s && chars < max_chars; s++, chars++) {
        unsigned char c = (unsigned char)*s;
        char piece[8];
        int len = c >= 0x20 && c < 0x7f ? snprintf(piece, sizeof piece, "%c", c)
                                        : snprintf(piece, sizeof piece, "\\x%02x", c);
        if (at + (size_t)len + 4 > size) /* room for "..." and the terminator */
            break;
        memcpy(buf + at, piece, (size_t)len);
        at += (size_t)len;
    }
    if (*s && at + 4 <= size) {
        memcpy(buf + at, "...", 3);
        at += 3;
    }
    buf[at] = '\0';
}

bool opt_read_count(const char *s, unsigned long long min, unsigned long long max,
                    unsigned long long *out)
{
    if (!(s[0] >= '0' && s[0] <= '9'))
        return false;
    for (const char *c = s; *c; c++)
        if (!(*c >= '0' && *c <= '9'))
            return false;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno || v < min || v > max)
        return false;
    *out = v;
    return true;
}

/* The particle-file parser's rule for a field: one C floating-point literal
 * (strtof, so the decimal text is rounded to a float once), the whole text,
 * no leading space, finite. */
bool opt_read_float(const char *s, float fmin, float fmax, float *out)
{
    if (!s[0] || s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r'))
        return false;
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (*end || !isfinite(v) || !(v >= fmin && v <= fmax))
        return false;
    *out = v;
    return true;
}

static int fail(char *message, size_t size, const char *fmt, ...)
{
    if (size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(message, size, fmt, ap);
        va_end(ap);
    }
    return OPT_ERROR;
}

/* Checks and stores one option's value. */
static int take_value(opt *o, const char *value, char *message, size_t size)
{
    char shown[96];
    opt_quote(shown, sizeof shown, value, 40);
    o->given = true;
    o->text = value;
    switch (o->kind) {
    case OPT_FLAG: return OPT_OK;
    case OPT_TEXT:
        if (!value[0])
            return fail(message, size, "%s needs a value, not an empty text", o->name);
        return OPT_OK;
    case OPT_COUNT:
        if (!opt_read_count(value, o->min, o->max, &o->count))
            return fail(message, size, "%s '%s' is not a whole number from %llu to %llu", o->name,
                        shown, o->min, o->max);
        return OPT_OK;
    case OPT_FLOAT:
        if (!opt_read_float(value, o->fmin, o->fmax, &o->number))
            return fail(message, size, "%s '%s' is not a number from %.9g to %.9g", o->name, shown,
                        (double)o->fmin, (double)o->fmax);
        return OPT_OK;
    }
    return fail(message, size, "%s: unknown kind of option", o->name);
}

int opt_parse(int argc, char *const *args, opt *opts, int nopts, char *message, size_t size)
{
    if (size)
        message[0] = '\0';
    for (int k = 0; k < nopts; k++) {
        opts[k].given = false;
        opts[k].text = NULL;
        opts[k].count = 0;
        opts[k].number = 0.0f;
    }
    for (int a = 0; a < argc; a++)
        if (strcmp(args[a], "--") == 0)
            break;
        else if (strcmp(args[a], "--help") == 0 || strcmp(args[a], "-h") == 0)
            return OPT_HELP;
    for (int a = 0; a < argc; a++) {
        const char *arg = args[a];
        char shown[96];
        opt_quote(shown, sizeof shown, arg, 60);
        if (strcmp(arg, "--") == 0) {
            if (a + 1 < argc) {
                opt_quote(shown, sizeof shown, args[a + 1], 60);
                return fail(message, size,
                            "unexpected argument '%s' (there are no arguments "
                            "besides the options)",
                            shown);
            }
            break;
        }
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            return fail(message, size, "unexpected argument '%s' (options start with --)", shown);
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        opt *o = NULL;
        for (int k = 0; k < nopts && !o; k++)
            if (strlen(opts[k].name) == len && strncmp(opts[k].name, arg, len) == 0)
                o = &opts[k];
        if (!o) {
            opt_quote(shown, sizeof shown, arg, len < 60 ? len : 60);
            return fail(message, size, "unknown option '%s'", shown);
        }
        if (o->given)
            return fail(message, size, "%s is given twice", o->name);
        const char *value;
        if (o->kind == OPT_FLAG) {
            if (eq)
                return fail(message, size, "%s takes no value", o->name);
            value = "";
        } else if (eq) {
            value = eq + 1;
        } else if (a + 1 < argc) {
            value = args[++a];
        } else {
            return fail(message, size, "%s needs a value", o->name);
        }
        int s = take_value(o, value, message, size);
        if (s != OPT_OK)
            return s;
    }
    return OPT_OK;
}

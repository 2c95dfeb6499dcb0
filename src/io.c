/* io.c - particle files in, contact files out (formats: nsearch.h). */
#include "internal.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Lines */

typedef struct line_reader {
    const char *at, *end;
    size_t number; /* 1-based number of the last line read */
} line_reader;

/* The next line without its end (LF or CRLF); false at the end of text. */
static bool next_line(line_reader *r, const char **begin, const char **end)
{
    if (r->at >= r->end)
        return false;
    const char *nl = memchr(r->at, '\n', (size_t)(r->end - r->at));
    const char *stop = nl ? nl : r->end;
    *begin = r->at;
    *end = stop > r->at && stop[-1] == '\r' ? stop - 1 : stop;
    r->at = nl ? nl + 1 : r->end;
    r->number++;
    return true;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

static void trim(const char **b, const char **e)
{
    while (*b < *e && is_space(**b))
        (*b)++;
    while (*e > *b && is_space((*e)[-1]))
        (*e)--;
}

/* Blank or comment: skipped anywhere. */
static bool skipped(const char *b, const char *e)
{
    trim(&b, &e);
    return b == e || *b == '#';
}

/* Splits a line at commas into trimmed fields; returns the field count
 * (counting past max fields, which are not stored). */
static int split(const char *b, const char *e, const char **fb, const char **fe, int max)
{
    int count = 0;
    for (;;) {
        const char *comma = memchr(b, ',', (size_t)(e - b));
        const char *stop = comma ? comma : e;
        if (count < max) {
            fb[count] = b;
            fe[count] = stop;
            trim(&fb[count], &fe[count]);
        }
        count++;
        if (!comma)
            return count;
        b = comma + 1;
    }
}

static bool field_is(const char *b, const char *e, const char *word)
{
    size_t len = strlen(word);
    return (size_t)(e - b) == len && memcmp(b, word, len) == 0;
}

/* A header: x,y,z or x,y,z,r. Returns its column count, or 0. */
static int header_columns(const char *const *fb, const char *const *fe, int count)
{
    static const char *names[4] = {"x", "y", "z", "r"};
    if (count != 3 && count != 4)
        return 0;
    for (int k = 0; k < count; k++)
        if (!field_is(fb[k], fe[k], names[k]))
            return 0;
    return count;
}

/* Parsing */

enum { MAX_FIELD = 256, FIELDS = 5 };

/* "radius -1 is negative", "x 'abc' is not a number", with the line. */
static ns_status field_error(ns_error *err, size_t line, size_t particle, const char *what,
                             const char *b, const char *e, const char *problem)
{
    int len = (int)(e - b);
    bool quote = len == 0 || strcmp(problem, "is not a number") == 0;
    if (len > 64)
        len = 64;
    ns__fail(err, NS_ERR_INVALID_INPUT, particle, quote ? "%s '%.*s' %s" : "%s %.*s %s", what, len,
             b, problem);
    if (err)
        err->line = line;
    return NS_ERR_INVALID_INPUT;
}

/* One field as a float: the whole field is a C floating-point literal whose
 * value is finite and within a float's range. */
static ns_status parse_number(const char *b, const char *e, const char *what, float *out,
                              ns_error *err, size_t line, size_t particle)
{
    char buf[MAX_FIELD + 1];
    size_t len = (size_t)(e - b);
    if (len == 0)
        return field_error(err, line, particle, what, b, e, "is empty");
    if (len > MAX_FIELD)
        return field_error(err, line, particle, what, b, e, "is too long to be a number");
    memcpy(buf, b, len);
    buf[len] = '\0';
    char *stop;
    errno = 0;
    /* strtof, not strtod then a cast: rounding twice can miss the nearest float */
    float v = strtof(buf, &stop);
    if (stop != buf + len || isspace((unsigned char)buf[0]))
        return field_error(err, line, particle, what, b, e, "is not a number");
    if (isnan(v))
        return field_error(err, line, particle, what, b, e, "is not finite (NaN)");
    if (isinf(v))
        return field_error(err, line, particle, what, b, e,
                           errno == ERANGE ? "is outside the range of a float" : "is infinite");
    *out = v;
    return NS_OK;
}

static ns_status grow_particles(ns_particle_file *f, size_t *capacity, ns_error *err)
{
    size_t want = *capacity < 1024 ? 1024 : 2 * *capacity;
    if (want > SIZE_MAX / (3 * sizeof(float)))
        return ns__fail_oom(err, "particles");
    float *pos = ns__realloc(f->pos, want * 3 * sizeof(float));
    if (!pos)
        return ns__fail_oom(err, "particles");
    f->pos = pos;
    if (f->columns == 4) {
        float *rad = ns__realloc(f->radius, want * sizeof(float));
        if (!rad)
            return ns__fail_oom(err, "particle radii");
        f->radius = rad;
    }
    *capacity = want;
    return NS_OK;
}

ns_status ns_particle_file_parse(const char *text, size_t len, ns_particle_file *out,
                                 ns_error *err)
{
    if (!out || (!text && len))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "%s is NULL",
                        out ? "text" : "output");
    memset(out, 0, sizeof *out);
    line_reader r = {text, text + len, 0};
    const char *b, *e, *fb[FIELDS], *fe[FIELDS];
    size_t capacity = 0;
    static const char *names[4] = {"x", "y", "z", "radius"};
    ns_status s = NS_OK;
    bool first = true;
    while (s == NS_OK && next_line(&r, &b, &e)) {
        if (skipped(b, e))
            continue;
        int count = split(b, e, fb, fe, FIELDS);
        if (first) {
            first = false;
            out->columns = header_columns(fb, fe, count);
            out->header = out->columns != 0;
            if (out->header)
                continue;
            if (count != 3 && count != 4) {
                s = ns__fail(err, NS_ERR_INVALID_INPUT, 0,
                             "%d fields; a particle is x,y,z or x,y,z,r", count);
                break;
            }
            out->columns = count;
        }
        if (count != out->columns) {
            s = ns__fail(err, NS_ERR_INVALID_INPUT, out->n,
                         "%d fields, but the file's particles have %d (%s)", count,
                         out->columns, out->columns == 3 ? "x,y,z" : "x,y,z,r");
            break;
        }
        if (out->n == NS_MAX_PARTICLES) {
            s = ns__fail(err, NS_ERR_TOO_LARGE, out->n, "more than %zu particles",
                         NS_MAX_PARTICLES);
            break;
        }
        if (out->n == capacity && (s = grow_particles(out, &capacity, err)) != NS_OK)
            break;
        float v[4];
        for (int k = 0; k < count && s == NS_OK; k++)
            s = parse_number(fb[k], fe[k], names[k], &v[k], err, r.number, out->n);
        if (s != NS_OK)
            break;
        if (count == 4 && v[3] < 0.0f) {
            s = field_error(err, r.number, out->n, "radius", fb[3], fe[3], "is negative");
            break;
        }
        memcpy(out->pos + 3 * out->n, v, 3 * sizeof(float));
        if (count == 4)
            out->radius[out->n] = v[3];
        out->n++;
    }
    if (s != NS_OK) {
        if (err && err->line == 0 && s == NS_ERR_INVALID_INPUT)
            err->line = r.number;
        ns_particle_file_free(out);
        return s;
    }
    ns__ok(err);
    return NS_OK;
}

void ns_particle_file_free(ns_particle_file *f)
{
    if (!f)
        return;
    ns__free(f->pos);
    ns__free(f->radius);
    memset(f, 0, sizeof *f);
}

size_t ns_particle_file_line(const char *text, size_t len, size_t k)
{
    line_reader r = {text, text + len, 0};
    const char *b, *e, *fb[FIELDS], *fe[FIELDS];
    bool first = true;
    size_t particle = 0;
    while (next_line(&r, &b, &e)) {
        if (skipped(b, e))
            continue;
        if (first) {
            first = false;
            int count = split(b, e, fb, fe, FIELDS);
            if (header_columns(fb, fe, count))
                continue;
        }
        if (particle++ == k)
            return r.number;
    }
    return 0;
}

/* Writing */

static ns_status write_failed(ns_error *err)
{
    return ns__fail(err, NS_ERR_IO, NS_NO_PARTICLE, "write error: %s",
                    strerror(errno));
}

static char *put_u32(char *p, uint32_t v)
{
    char tmp[10];
    int len = 0;
    do {
        tmp[len++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (len)
        *p++ = tmp[--len];
    return p;
}

static char *put_float(char *p, float v)
{
    return p + ns_format_float(p, v);
}

ns_status ns_particles_write(FILE *out, const ns_particles *p, ns_error *err)
{
    ns_status s = ns_particles_validate(p, err);
    if (s != NS_OK)
        return s;
    if (fputs("x,y,z,r\n", out) == EOF)
        return write_failed(err);
    char line[128];
    for (size_t i = 0; i < p->n; i++) {
        char *c = line;
        for (int k = 0; k < 3; k++) {
            c = put_float(c, p->pos[3 * i + (size_t)k]);
            *c++ = ',';
        }
        c = put_float(c, p->radius ? p->radius[i] : p->radius_uniform);
        *c++ = '\n';
        if (fwrite(line, 1, (size_t)(c - line), out) != (size_t)(c - line))
            return write_failed(err);
    }
    return NS_OK;
}

/* Contacts formatted by blocks in parallel, written in order. */
enum { BLOCK = 16384, LINE_MAX_BYTES = 2 * 10 + 4 * 16 + 6 };

static ns_status write_csv(FILE *out, const ns_contact_list *list, ns_error *err)
{
    if (fputs("i,j,overlap,nx,ny,nz\n", out) == EOF)
        return write_failed(err);
    long long blocks = (long long)((list->count + BLOCK - 1) / BLOCK);
    int failed = 0; /* 1: out of memory, 2: write error */
    int write_errno = 0;
#pragma omp parallel if (blocks > 1)
    {
        char *buf = ns__malloc((size_t)BLOCK * LINE_MAX_BYTES);
        if (!buf) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for ordered schedule(static, 1)
        for (long long blk = 0; blk < blocks; blk++) {
            size_t len = 0;
            if (buf) {
                size_t lo = (size_t)blk * BLOCK, hi = lo + BLOCK < list->count ? lo + BLOCK
                                                                                 : list->count;
                char *c = buf;
                for (size_t k = lo; k < hi; k++) {
                    const ns_contact *x = &list->items[k];
                    c = put_u32(c, x->i);
                    *c++ = ',';
                    c = put_u32(c, x->j);
                    *c++ = ',';
                    c = put_float(c, x->overlap);
                    *c++ = ',';
                    c = put_float(c, x->nx);
                    *c++ = ',';
                    c = put_float(c, x->ny);
                    *c++ = ',';
                    c = put_float(c, x->nz);
                    *c++ = '\n';
                }
                len = (size_t)(c - buf);
            }
#pragma omp ordered
            {
                int f;
#pragma omp atomic read
                f = failed;
                if (buf && !f && fwrite(buf, 1, len, out) != len) {
                    write_errno = errno;
#pragma omp atomic write
                    failed = 2;
                }
            }
        }
        ns__free(buf);
    }
    if (failed == 1)
        return ns__fail_oom(err, "the contact formatter's buffers");
    if (failed == 2) {
        errno = write_errno;
        return write_failed(err);
    }
    return NS_OK;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int k = 0; k < 4; k++)
        p[k] = (unsigned char)(v >> (8 * k));
}

static ns_status write_bin(FILE *out, const ns_contact_list *list, ns_error *err)
{
    unsigned char header[24];
    memcpy(header, NS_BIN_MAGIC, 8);
    put_le32(header + 8, NS_BIN_VERSION);
    put_le32(header + 12, (uint32_t)sizeof(ns_contact));
    put_le32(header + 16, (uint32_t)(list->count & 0xffffffffu));
    put_le32(header + 20, (uint32_t)((uint64_t)list->count >> 32));
    if (fwrite(header, 1, sizeof header, out) != sizeof header)
        return write_failed(err);
    const uint32_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    if (first == 1) { /* little-endian host: the records as they are in memory */
        if (list->count && fwrite(list->items, sizeof(ns_contact), list->count, out) != list->count)
            return write_failed(err);
        return NS_OK;
    }
    for (size_t k = 0; k < list->count; k++) {
        unsigned char rec[24];
        uint32_t w[6];
        w[0] = list->items[k].i;
        w[1] = list->items[k].j;
        memcpy(&w[2], &list->items[k].overlap, 4 * sizeof(float));
        for (int f = 0; f < 6; f++)
            put_le32(rec + 4 * f, w[f]);
        if (fwrite(rec, 1, sizeof rec, out) != sizeof rec)
            return write_failed(err);
    }
    return NS_OK;
}

ns_status ns_contacts_write(FILE *out, const ns_contact_list *list, ns_format format,
                            ns_error *err)
{
    if (!out || !list)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "%s is NULL",
                        out ? "contact list" : "output");
    ns_status s = format == NS_FORMAT_BIN ? write_bin(out, list, err) : write_csv(out, list, err);
    if (s == NS_OK)
        ns__ok(err);
    return s;
}

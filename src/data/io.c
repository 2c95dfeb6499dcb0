/* io.c - particle files in, contact files out (formats: nsearch.h). */
#include "data.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Lines
 *
 * A particle file is read through one buffer, from a FILE or from text in
 * memory alike: a block is read in after the unfinished line, lines are
 * handed out in place (writable, so a field can be ended with a NUL where it
 * stands), and the unfinished line is moved to the front before the next
 * block. The buffer holds at most one line of NS_MAX_LINE bytes (plus a CR
 * and, on line 1, a byte-order mark) and one block. */

enum {
    READ_SIZE = 16384,                /* bytes read per block, at least */
    PENDING_MAX = NS_MAX_LINE + 1 + 3 /* an unfinished line: NS_MAX_LINE, a CR, a BOM */
};
#define BUFFER_MAX ((size_t)PENDING_MAX + READ_SIZE + 1) /* + 1: a NUL after the last field */
#define NONE SIZE_MAX

typedef struct source {
    FILE *file;       /* or NULL: text */
    const char *text; /* text[taken..len) not yet in the buffer */
    size_t len, taken;
    char *buf;
    size_t cap;
    size_t start, end; /* buf[start..end): what has not been handed out */
    size_t scan;       /* buf[start..scan) holds no LF */
    size_t nul;        /* the first NUL byte in the buffer, or NONE */
    bool eof;
    size_t line; /* 1-based number of the last line handed out */
} source;

static ns_status source_open(source *src, FILE *file, const char *text, size_t len, ns_error *err)
{
    memset(src, 0, sizeof *src);
    src->file = file;
    src->text = text;
    src->len = len;
    src->nul = NONE;
    /* text needs no more than itself (and the NUL after its last field) */
    src->cap = file || len >= BUFFER_MAX ? BUFFER_MAX : len + 1;
    src->buf = ns__malloc(src->cap);
    return src->buf ? NS_OK : ns__fail_oom(err, "the line buffer");
}

static void source_close(source *src)
{
    ns__free(src->buf);
    src->buf = NULL;
}

/* Reads up to room bytes into to; 0 at the end. */
static ns_status source_fill(source *src, char *to, size_t room, size_t *got, ns_error *err)
{
    if (!src->file) {
        size_t n = src->len - src->taken < room ? src->len - src->taken : room;
        if (n)
            memcpy(to, src->text + src->taken, n);
        src->taken += n;
        *got = n;
        return NS_OK;
    }
    errno = 0;
    *got = fread(to, 1, room, src->file);
    if (*got == 0 && ferror(src->file)) {
        int e = errno;
        return ns__fail(err, NS_ERR_IO, NS_NO_PARTICLE, "read error: %s",
                        e ? strerror(e) : "the stream reports an error");
    }
    return NS_OK;
}

static ns_status line_error(source *src, ns_error *err, const char *message)
{
    ns__fail(err, NS_ERR_INVALID_INPUT, NS_NO_PARTICLE, "%s", message);
    if (err)
        err->line = src->line;
    return NS_ERR_INVALID_INPUT;
}

static ns_status nul_error(source *src, ns_error *err)
{
    return line_error(src, err, "a NUL byte (this is not a text file)");
}

static ns_status too_long(source *src, ns_error *err)
{
    char message[64];
    snprintf(message, sizeof message, "line is longer than %d bytes", NS_MAX_LINE);
    return line_error(src, err, message);
}

/* The next line, [*b, *e) without its end (LF or CRLF) and, on line 1,
 * without a byte-order mark; *got is false at the end of the input. */
static ns_status next_line(source *src, char **b, char **e, bool *got, ns_error *err)
{
    static const char bom[3] = {'\xEF', '\xBB', '\xBF'};
    for (;;) {
        char *buf = src->buf;
        char *nl = memchr(buf + src->scan, '\n', src->end - src->scan);
        if (nl || src->eof) {
            size_t stop = nl ? (size_t)(nl - buf) : src->end;
            if (!nl && src->start == src->end) {
                *got = false;
                return NS_OK;
            }
            src->line++;
            if (src->nul < stop)
                return nul_error(src, err);
            *b = buf + src->start;
            *e = buf + stop;
            if (*e > *b && (*e)[-1] == '\r')
                (*e)--;
            if (src->line == 1 && *e - *b >= 3 && memcmp(*b, bom, 3) == 0)
                *b += 3;
            if ((size_t)(*e - *b) > NS_MAX_LINE)
                return too_long(src, err);
            src->start = src->scan = nl ? stop + 1 : stop;
            *got = true;
            return NS_OK;
        }
        /* an unfinished line: refused as soon as it cannot be a line */
        src->scan = src->end;
        if (src->nul != NONE || src->end - src->start > PENDING_MAX) {
            src->line++;
            return src->nul != NONE ? nul_error(src, err) : too_long(src, err);
        }
        if (src->start > 0) {
            memmove(buf, buf + src->start, src->end - src->start);
            src->end -= src->start;
            src->scan -= src->start;
            src->start = 0;
        }
        size_t got_bytes;
        ns_status s = source_fill(src, buf + src->end, src->cap - 1 - src->end, &got_bytes, err);
        if (s != NS_OK)
            return s;
        if (got_bytes == 0)
            src->eof = true;
        char *zero = memchr(buf + src->end, '\0', got_bytes);
        if (zero)
            src->nul = (size_t)(zero - buf);
        src->end += got_bytes;
    }
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

static void trim(char **b, char **e)
{
    while (*b < *e && is_space(**b))
        (*b)++;
    while (*e > *b && is_space((*e)[-1]))
        (*e)--;
}

/* Blank or comment: skipped anywhere. */
static bool skipped(char *b, char *e)
{
    trim(&b, &e);
    return b == e || *b == '#';
}

/* Splits a line at commas into trimmed fields; returns the field count
 * (counting past max fields, which are not stored). */
static int split(char *b, char *e, char **fb, char **fe, int max)
{
    int count = 0;
    for (;;) {
        char *comma = memchr(b, ',', (size_t)(e - b));
        char *stop = comma ? comma : e;
        if (count < max) {
            fb[count] = b;
            fe[count] = stop;
            trim(&fb[count], &fe[count]);
        }
        if (count < INT_MAX)
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
static int header_columns(char *const *fb, char *const *fe, int count)
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

enum { FIELDS = 5, SHOWN = 64 };

/* Field text for a message: at most SHOWN characters, every byte that is not
 * printable ASCII (and the backslash) written as \xNN, "..." when cut. */
static void show(char out[SHOWN + 4], const char *b, const char *e)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = 0;
    for (; b < e; b++) {
        unsigned char c = (unsigned char)*b;
        bool plain = c >= 0x20 && c < 0x7f && c != '\\';
        if (len + (plain ? 1 : 4) > SHOWN) {
            memcpy(out + len, "...", 3);
            len += 3;
            break;
        }
        if (plain) {
            out[len++] = (char)c;
        } else {
            out[len++] = '\\';
            out[len++] = 'x';
            out[len++] = hex[c >> 4];
            out[len++] = hex[c & 15];
        }
    }
    out[len] = '\0';
}

/* "radius -1 is negative", "x 'abc' is not a number", with the line. */
static ns_status field_error(ns_error *err, size_t line, size_t particle, const char *what,
                             const char *b, const char *e, const char *problem)
{
    char text[SHOWN + 4];
    show(text, b, e);
    bool quote = b == e || strcmp(problem, "is not a number") == 0;
    ns__fail(err, NS_ERR_INVALID_INPUT, particle, quote ? "%s '%s' %s" : "%s %s %s", what, text,
             problem);
    if (err)
        err->line = line;
    return NS_ERR_INVALID_INPUT;
}

/* One field as a float: the whole field is a C floating-point literal whose
 * value is finite and within a float's range. The field is read where it
 * stands: *e (inside the line buffer) is overwritten with a NUL. */
static ns_status parse_number(char *b, char *e, const char *what, float *out, ns_error *err,
                              size_t line, size_t particle)
{
    if (b == e)
        return field_error(err, line, particle, what, b, e, "is empty");
    char saved = *e;
    *e = '\0';
    char *stop;
    errno = 0;
    /* strtof, not strtod then a cast: rounding twice can miss the nearest float */
    float v = strtof(b, &stop);
    bool range = errno == ERANGE;
    *e = saved;
    if (stop != e || isspace((unsigned char)b[0]))
        return field_error(err, line, particle, what, b, e, "is not a number");
    if (isnan(v))
        return field_error(err, line, particle, what, b, e, "is not finite (NaN)");
    if (isinf(v))
        return field_error(err, line, particle, what, b, e,
                           range ? "is outside the range of a float" : "is infinite");
    *out = v;
    return NS_OK;
}

static ns_status grow_particles(ns_particle_file *f, size_t *capacity, ns_error *err)
{
    size_t want = *capacity < 1024 ? 1024 : 2 * *capacity;
    if (want > NS_MAX_PARTICLES)
        want = NS_MAX_PARTICLES;
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

/* Records that `skipped` lines in all precede particle f->n. */
static ns_status add_skip(ns_particle_file *f, size_t *capacity, size_t skipped, ns_error *err)
{
    if (f->skip_count == *capacity) {
        size_t want = *capacity < 16 ? 16 : 2 * *capacity;
        if (want > SIZE_MAX / sizeof(ns_particle_file_skip))
            return ns__fail_oom(err, "the particles' line numbers");
        ns_particle_file_skip *s = ns__realloc(f->skips, want * sizeof *s);
        if (!s)
            return ns__fail_oom(err, "the particles' line numbers");
        f->skips = s;
        *capacity = want;
    }
    f->skips[f->skip_count++] = (ns_particle_file_skip){f->n, skipped};
    return NS_OK;
}

/* One line that is not skipped: the header, or a particle. */
static ns_status parse_line(source *src, char *b, char *e, ns_particle_file *out, bool *first,
                            size_t *capacity, ns_error *err)
{
    static const char *names[4] = {"x", "y", "z", "radius"};
    char *fb[FIELDS], *fe[FIELDS];
    int count = split(b, e, fb, fe, FIELDS);
    if (*first) {
        *first = false;
        out->columns = header_columns(fb, fe, count);
        out->header = out->columns != 0;
        if (out->header)
            return NS_OK;
        if (count != 3 && count != 4) {
            ns__fail(err, NS_ERR_INVALID_INPUT, 0, "%d fields; a particle is x,y,z or x,y,z,r",
                     count);
            if (err)
                err->line = src->line;
            return NS_ERR_INVALID_INPUT;
        }
        out->columns = count;
    }
    if (count != out->columns) {
        ns__fail(err, NS_ERR_INVALID_INPUT, out->n,
                 "%d fields, but the file's particles have %d (%s)", count, out->columns,
                 out->columns == 3 ? "x,y,z" : "x,y,z,r");
        if (err)
            err->line = src->line;
        return NS_ERR_INVALID_INPUT;
    }
    if (out->n == NS_MAX_PARTICLES)
        return ns__fail(err, NS_ERR_TOO_LARGE, out->n, "more than %zu particles", NS_MAX_PARTICLES);
    float v[4];
    for (int k = 0; k < count; k++) {
        ns_status s = parse_number(fb[k], fe[k], names[k], &v[k], err, src->line, out->n);
        if (s != NS_OK)
            return s;
    }
    if (count == 4 && v[3] < 0.0f)
        return field_error(err, src->line, out->n, "radius", fb[3], fe[3], "is negative");
    ns_status s;
    if (out->n == capacity[0] && (s = grow_particles(out, &capacity[0], err)) != NS_OK)
        return s;
    /* the lines before this one that are not particles */
    size_t before = src->line - 1 - out->n;
    size_t known = out->skip_count ? out->skips[out->skip_count - 1].lines : 0;
    if (before != known && (s = add_skip(out, &capacity[1], before, err)) != NS_OK)
        return s;
    memcpy(out->pos + 3 * out->n, v, 3 * sizeof(float));
    if (count == 4)
        out->radius[out->n] = v[3];
    out->n++;
    return NS_OK;
}

/* The one parser: every line of src into *out (already zeroed). */
static ns_status parse_source(source *src, ns_particle_file *out, ns_error *err)
{
    size_t capacity[2] = {0, 0}; /* particles, skips */
    bool first = true;
    ns_status s;
    for (;;) {
        char *b, *e;
        bool got;
        if ((s = next_line(src, &b, &e, &got, err)) != NS_OK || !got)
            break;
        if (skipped(b, e))
            continue;
        if ((s = parse_line(src, b, e, out, &first, capacity, err)) != NS_OK)
            break;
    }
    out->lines = src->line;
    return s;
}

static ns_status parse_from(FILE *file, const char *text, size_t len, ns_particle_file *out,
                            ns_error *err)
{
    memset(out, 0, sizeof *out);
    source src;
    ns_status s = source_open(&src, file, text, len, err);
    if (s == NS_OK)
        s = parse_source(&src, out, err);
    source_close(&src);
    if (s != NS_OK) {
        ns_particle_file_free(out);
        return s;
    }
    ns__ok(err);
    return NS_OK;
}

ns_status ns_particle_file_read(FILE *in, ns_particle_file *out, ns_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!in || !out)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "%s is NULL",
                        in ? "output" : "input stream");
    return parse_from(in, NULL, 0, out, err);
}

ns_status ns_particle_file_parse(const char *text, size_t len, ns_particle_file *out, ns_error *err)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!out || (!text && len))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "%s is NULL",
                        out ? "text" : "output");
    return parse_from(NULL, text ? text : "", len, out, err);
}

void ns_particle_file_free(ns_particle_file *f)
{
    if (!f)
        return;
    ns__free(f->pos);
    ns__free(f->radius);
    ns__free(f->skips);
    memset(f, 0, sizeof *f);
}

size_t ns_particle_file_line_of(const ns_particle_file *file, size_t k)
{
    if (!file || k >= file->n)
        return 0;
    /* the last run that starts at or before particle k */
    size_t lo = 0, hi = file->skip_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (file->skips[mid].particle <= k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return k + 1 + (lo ? file->skips[lo - 1].lines : 0);
}

size_t ns_particle_file_line(const char *text, size_t len, size_t k)
{
    ns_particle_file f;
    if (ns_particle_file_parse(text, len, &f, NULL) != NS_OK)
        return 0;
    size_t line = ns_particle_file_line_of(&f, k);
    ns_particle_file_free(&f);
    return line;
}

/* Writing */

static ns_status write_failed(ns_error *err)
{
    return ns__fail(err, NS_ERR_IO, NS_NO_PARTICLE, "write error: %s", strerror(errno));
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
    if (!out)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "output is NULL");
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
    ns__ok(err);
    return NS_OK;
}

/* Contacts formatted by blocks in parallel, written in order. */
enum { BLOCK = 16384, LINE_MAX_BYTES = 2 * 10 + 4 * 16 + 6 };

static ns_status csv_records(FILE *out, const ns_contact *items, size_t count, ns_error *err)
{
    long long blocks = (long long)((count + BLOCK - 1) / BLOCK);
    int failed = 0; /* 1: out of memory, 2: write error */
    int write_errno = 0;
    /* OpenMP's default team (OMP_NUM_THREADS, the user's) may be far larger
     * than the machine: at most ns_max_threads(), and no more than the
     * processors or the blocks, since formatting gains nothing from more and
     * each thread holds a buffer */
    int threads = omp_get_max_threads();
    int cap = ns_max_threads();
    if (cap > omp_get_num_procs())
        cap = omp_get_num_procs();
    if (threads > cap)
        threads = cap;
    if (threads > blocks)
        threads = (int)blocks;
    if (threads < 1)
        threads = 1;
#pragma omp parallel num_threads(threads) if (threads > 1)
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
                size_t lo = (size_t)blk * BLOCK, hi = lo + BLOCK < count ? lo + BLOCK : count;
                char *c = buf;
                for (size_t k = lo; k < hi; k++) {
                    const ns_contact *x = &items[k];
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

static ns_status bin_header(FILE *out, size_t count, ns_error *err)
{
    unsigned char header[24];
    memcpy(header, NS_BIN_MAGIC, 8);
    put_le32(header + 8, NS_BIN_VERSION);
    put_le32(header + 12, (uint32_t)sizeof(ns_contact));
    put_le32(header + 16, (uint32_t)(count & 0xffffffffu));
    put_le32(header + 20, (uint32_t)((uint64_t)count >> 32));
    if (fwrite(header, 1, sizeof header, out) != sizeof header)
        return write_failed(err);
    return NS_OK;
}

static ns_status bin_records(FILE *out, const ns_contact *items, size_t count, ns_error *err)
{
    const uint32_t probe = 1;
    unsigned char first;
    memcpy(&first, &probe, 1);
    if (first == 1) { /* little-endian host: the records as they are in memory */
        if (count && fwrite(items, sizeof(ns_contact), count, out) != count)
            return write_failed(err);
        return NS_OK;
    }
    for (size_t k = 0; k < count; k++) {
        unsigned char rec[24];
        uint32_t w[6];
        w[0] = items[k].i;
        w[1] = items[k].j;
        memcpy(&w[2], &items[k].overlap, 4 * sizeof(float));
        for (int f = 0; f < 6; f++)
            put_le32(rec + 4 * f, w[f]);
        if (fwrite(rec, 1, sizeof rec, out) != sizeof rec)
            return write_failed(err);
    }
    return NS_OK;
}

static ns_status check_format(FILE *out, ns_format format, ns_error *err)
{
    if (!out)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "output is NULL");
    if (format != NS_FORMAT_CSV && format != NS_FORMAT_BIN)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "unknown format %d",
                        (int)format);
    return NS_OK;
}

ns_status ns_contacts_write_header(FILE *out, ns_format format, size_t count, ns_error *err)
{
    ns_status s = check_format(out, format, err);
    if (s == NS_OK)
        s = format == NS_FORMAT_BIN                       ? bin_header(out, count, err)
            : fputs("i,j,overlap,nx,ny,nz\n", out) == EOF ? write_failed(err)
                                                          : NS_OK;
    if (s == NS_OK)
        ns__ok(err);
    return s;
}

ns_status ns_contacts_write_records(FILE *out, const ns_contact *contacts, size_t count,
                                    ns_format format, ns_error *err)
{
    ns_status s = check_format(out, format, err);
    if (s == NS_OK && count > 0 && !contacts)
        s = ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "the contacts are NULL");
    if (s == NS_OK)
        s = format == NS_FORMAT_BIN ? bin_records(out, contacts, count, err)
                                    : csv_records(out, contacts, count, err);
    if (s == NS_OK)
        ns__ok(err);
    return s;
}

ns_status ns_contacts_write(FILE *out, const ns_contact_list *list, ns_format format, ns_error *err)
{
    if (out && !list)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE, "contact list is NULL");
    if (list && list->count > 0 && !list->items)
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "the contact list's items are NULL");
    ns_status s = ns_contacts_write_header(out, format, list ? list->count : 0, err);
    if (s == NS_OK)
        s = ns_contacts_write_records(out, list->items, list->count, format, err);
    return s;
}

/* test_io.c - the particle-file reader and parser, the contact writers and
 * the float formatter, through the public API.
 *
 * usage: test_io CASE      (no argument: list the cases; --ctest: the ctests) */
#include "testlib.h"

#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* ns_format_float against printf("%.9g"), one value. */
static void check_format(float v)
{
    char want[64], got[64];
    snprintf(want, sizeof want, "%.9g", (double)v);
    size_t len = ns_format_float(got, v);
    got[len] = '\0';
    CHECK_MSG(strcmp(want, got) == 0, "ns_format_float(0x%08x) = \"%s\", printf gives \"%s\"",
              (unsigned)tl_bits(v), got, want);
}

static void t_format_float(void)
{
    /* the edges of the fast path and of rounding */
    static const float edges[] = {0.0f,
                                  -0.0f,
                                  1.0f,
                                  -1.0f,
                                  0.5f,
                                  1e-4f,
                                  1e-5f,
                                  9.9999997e-5f,
                                  1e9f,
                                  999999936.0f,
                                  1e8f,
                                  123456789.0f,
                                  0.1f,
                                  0.3f,
                                  2.5f,
                                  16777216.0f,
                                  16777215.0f,
                                  3.4028235e38f,
                                  1.17549435e-38f,
                                  1.4e-45f,
                                  0.99999994f,
                                  9.99999944e-1f,
                                  999999.9375f};
    for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++) {
        check_format(edges[k]);
        check_format(-edges[k]);
        check_format(nextafterf(edges[k], INFINITY));
        check_format(nextafterf(edges[k], -INFINITY));
    }
    check_format(INFINITY);
    check_format(-INFINITY);
    check_format(NAN);
    /* around every power of ten a float can hold */
    for (int e = -45; e <= 38; e++) {
        float p = (float)pow(10.0, e);
        float lo = p, hi = p;
        for (int k = 0; k < 64; k++) {
            check_format(lo);
            check_format(hi);
            lo = nextafterf(lo, 0.0f);
            hi = nextafterf(hi, INFINITY);
        }
    }
    /* every float in [1, 2) and [0.001, 0.002), then random bit patterns */
    for (uint32_t b = 0x3f800000u; b < 0x40000000u; b += 7) {
        float v;
        memcpy(&v, &b, sizeof v);
        check_format(v);
    }
    for (float v = 0.001f; v < 0.002f; v = nextafterf(v, 1.0f))
        check_format(v);
    uint64_t state = 12345;
    for (int k = 0; k < 2000000; k++) {
        uint32_t b = (uint32_t)tl_rng(&state);
        float v;
        memcpy(&v, &b, sizeof v);
        check_format(v);
    }
}

static ns_status parse(const char *text, ns_particle_file *f, ns_error *err)
{
    return ns_particle_file_parse(text, strlen(text), f, err);
}

/* text[0..len) as a temporary file, at its start. */
static FILE *file_of(const char *text, size_t len)
{
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    REQUIRE(fwrite(text, 1, len, f) == len);
    rewind(f);
    return f;
}

static ns_status read_text(const char *text, size_t len, ns_particle_file *out, ns_error *err)
{
    FILE *in = file_of(text, len);
    ns_status s = ns_particle_file_read(in, out, err);
    fclose(in);
    return s;
}

/* Whether two results are the same, field by field (messages included). */
static void check_same_result(ns_status sa, const ns_particle_file *a, const ns_error *ea,
                              ns_status sb, const ns_particle_file *b, const ns_error *eb)
{
    CHECK_EQ_I(sa, sb);
    CHECK_EQ_I(ea->status, eb->status);
    CHECK_EQ_U(ea->line, eb->line);
    CHECK_EQ_U(ea->particle, eb->particle);
    CHECK_MSG(strcmp(ea->message, eb->message) == 0, "messages \"%s\" and \"%s\"", ea->message,
              eb->message);
    CHECK_EQ_U(a->n, b->n);
    CHECK_EQ_I(a->columns, b->columns);
    CHECK(a->header == b->header);
    CHECK_EQ_U(a->lines, b->lines);
    CHECK_EQ_U(a->skip_count, b->skip_count);
    CHECK((a->radius == NULL) == (b->radius == NULL));
    if (a->n != b->n || a->n == 0)
        return;
    CHECK(memcmp(a->pos, b->pos, 3 * a->n * sizeof(float)) == 0);
    if (a->radius && b->radius)
        CHECK(memcmp(a->radius, b->radius, a->n * sizeof(float)) == 0);
    for (size_t k = 0; k <= a->n; k++)
        CHECK_EQ_U(ns_particle_file_line_of(a, k), ns_particle_file_line_of(b, k));
}

/* Parses text[0..len) from memory and reads it from a file: the same result
 * (compared in full). Returns the status; *err and *out are parse's (the
 * caller frees *out). */
static ns_status parse_and_read(const char *text, size_t len, ns_particle_file *out, ns_error *err)
{
    ns_particle_file b;
    ns_error eb;
    ns_status sa = ns_particle_file_parse(text, len, out, err);
    ns_status sb = read_text(text, len, &b, &eb);
    check_same_result(sa, out, err, sb, &b, &eb);
    ns_particle_file_free(&b);
    return sa;
}

/* An empty result, as every failure leaves. */
static bool is_empty(const ns_particle_file *f)
{
    return f->n == 0 && f->pos == NULL && f->radius == NULL && f->columns == 0 && !f->header &&
           f->lines == 0 && f->skips == NULL && f->skip_count == 0;
}

/* Text of length len that must fail (read and parsed alike) at `line` with a
 * message containing `needle`. */
static void check_rejected_len(const char *text, size_t len, size_t line, const char *needle)
{
    ns_particle_file f;
    ns_error err;
    CHECK_STATUS(parse_and_read(text, len, &f, &err), NS_ERR_INVALID_INPUT, &err);
    CHECK_EQ_U(err.line, line);
    CHECK_STR_CONTAINS(err.message, needle);
    CHECK(is_empty(&f));
}

static void check_rejected(const char *text, size_t line, const char *needle)
{
    check_set_context("parsing \"%s\"", text);
    check_rejected_len(text, strlen(text), line, needle);
}

static void t_parse_accepts(void)
{
    ns_particle_file f;
    ns_error err;
    /* header, comments, blank lines, CRLF, spaces, hex and exponents */
    const char *text = "# a dump\r\n\r\nx , y,z ,r\r\n1,2,3,0.5\r\n  # skipped\n\n"
                       "-1.5e2 ,\t0x1p-2, 4 , 0\n7,8,9,1e-3";
    CHECK_STATUS(parse(text, &f, &err), NS_OK, &err);
    CHECK_EQ_U(f.n, 3);
    CHECK_EQ_I(f.columns, 4);
    CHECK(f.header);
    CHECK(f.pos[0] == 1.0f && f.pos[1] == 2.0f && f.pos[2] == 3.0f && f.radius[0] == 0.5f);
    CHECK(f.pos[3] == -150.0f && f.pos[4] == 0.25f && f.pos[5] == 4.0f && f.radius[1] == 0.0f);
    CHECK(f.pos[6] == 7.0f && f.radius[2] == 1e-3f);
    CHECK_EQ_U(f.lines, 8);
    CHECK_EQ_U(ns_particle_file_line_of(&f, 0), 4);
    CHECK_EQ_U(ns_particle_file_line_of(&f, 1), 7);
    CHECK_EQ_U(ns_particle_file_line_of(&f, 2), 8);
    CHECK_EQ_U(ns_particle_file_line_of(&f, 3), 0);
    CHECK_EQ_U(ns_particle_file_line(text, strlen(text), 0), 4);
    CHECK_EQ_U(ns_particle_file_line(text, strlen(text), 1), 7);
    CHECK_EQ_U(ns_particle_file_line(text, strlen(text), 2), 8);
    CHECK_EQ_U(ns_particle_file_line(text, strlen(text), 3), 0);
    ns_particle_file_free(&f);
    CHECK_STATUS(parse_and_read(text, strlen(text), &f, &err), NS_OK, &err);
    ns_particle_file_free(&f);

    /* three columns, no header */
    CHECK_STATUS(parse("0,0,0\n1,1,1\n", &f, &err), NS_OK, &err);
    CHECK(f.n == 2 && f.columns == 3 && !f.header && f.radius == NULL);
    ns_particle_file_free(&f);

    /* a header and no data; an empty file */
    CHECK_STATUS(parse("x,y,z\n", &f, &err), NS_OK, &err);
    CHECK(f.n == 0 && f.columns == 3 && f.header);
    ns_particle_file_free(&f);
    CHECK_STATUS(parse("", &f, &err), NS_OK, &err);
    CHECK(f.n == 0 && f.columns == 0);
    ns_particle_file_free(&f);

    /* tiny values round to zero or subnormals: in range */
    CHECK_STATUS(parse("1e-50,1e-40,-0,0\n", &f, &err), NS_OK, &err);
    CHECK(f.pos[0] == 0.0f && f.pos[1] > 0.0f);
    ns_particle_file_free(&f);

    /* many particles: growth */
    size_t n = 5000;
    char *big = malloc(n * 16 + 1), *c = big;
    for (size_t i = 0; i < n; i++)
        c += sprintf(c, "%zu,0,0,1\n", i);
    CHECK_STATUS(parse(big, &f, &err), NS_OK, &err);
    CHECK_EQ_U(f.n, n);
    CHECK(f.pos[3 * (n - 1)] == (float)(n - 1));
    ns_particle_file_free(&f);
    free(big);
}

static void t_parse_rejects(void)
{
    check_rejected("0,0,0,1\n1,2,abc,1\n", 2, "'abc' is not a number");
    check_rejected("x,y,z,r\n0,0,0,1\n# c\n\n1,2,3,-1\n", 5, "radius -1 is negative");
    check_rejected("0,0,0,1\n1,2,3\n", 2, "3 fields");
    check_rejected("0,0,0,1,5\n", 1, "5 fields");
    check_rejected("0,0\n", 1, "2 fields");
    check_rejected("0,0,nan,1\n", 1, "nan");
    check_rejected("0,0,0,1\n\n-inf,0,0,1\n", 3, "infinite");
    check_rejected("0,0,0,inf\n", 1, "infinite");
    check_rejected("1e39,0,0,1\n", 1, "outside the range of a float");
    check_rejected("1e400,0,0,1\n", 1, "outside the range of a float");
    check_rejected("0,,0,1\n", 1, "empty");
    check_rejected("0,0,0,1 2\n", 1, "not a number");
    check_rejected("0,0,0,1x\n", 1, "not a number");
    check_rejected("x,y,z,r\nx,y,z,r\n", 2, "not a number"); /* a header only first */
    check_rejected("0,0,0\n0,0,0,1\n", 2, "4 fields");
}

static void t_write_bin(void)
{
    ns_contact_list l;
    ns_contact_list_init(&l);
    REQUIRE(ns_contact_list_reserve(&l, 2, NULL) == NS_OK);
    l.items[0] = (ns_contact){1, 2, 0.25f, 1.0f, 0.0f, 0.0f};
    l.items[1] = (ns_contact){3, 70000, 0.5f, 0.0f, -0.6f, 0.8f};
    l.count = 2;
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    ns_error err;
    CHECK_STATUS(ns_contacts_write(f, &l, NS_FORMAT_BIN, &err), NS_OK, &err);
    unsigned char buf[128];
    rewind(f);
    size_t len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    CHECK_EQ_U(len, 24 + 2 * 24);
    CHECK(memcmp(buf, "NSCONTAC", 8) == 0);
    uint32_t u[4];
    for (int k = 0; k < 4; k++)
        u[k] = (uint32_t)buf[8 + 4 * k] | (uint32_t)buf[9 + 4 * k] << 8 |
               (uint32_t)buf[10 + 4 * k] << 16 | (uint32_t)buf[11 + 4 * k] << 24;
    CHECK_EQ_U(u[0], 1);  /* version */
    CHECK_EQ_U(u[1], 24); /* record size */
    CHECK_EQ_U(u[2], 2);  /* count, low word */
    CHECK_EQ_U(u[3], 0);
    const unsigned char *rec = buf + 24 + 24; /* the second record */
    uint32_t j =
        (uint32_t)rec[4] | (uint32_t)rec[5] << 8 | (uint32_t)rec[6] << 16 | (uint32_t)rec[7] << 24;
    uint32_t nz = (uint32_t)rec[20] | (uint32_t)rec[21] << 8 | (uint32_t)rec[22] << 16 |
                  (uint32_t)rec[23] << 24;
    CHECK_EQ_U(j, 70000);
    CHECK_EQ_U(nz, tl_bits(0.8f));
    ns_contact_list_free(&l);
}

/* The CSV writer (parallel blocks) against a plain printf of every line. */
static void t_write_csv(void)
{
    size_t n = 40000; /* several formatting blocks */
    ns_contact_list l;
    ns_contact_list_init(&l);
    REQUIRE(ns_contact_list_reserve(&l, n, NULL) == NS_OK);
    uint64_t state = 7;
    for (size_t k = 0; k < n; k++) {
        uint32_t b[4];
        for (int f = 0; f < 4; f++)
            b[f] = (uint32_t)tl_rng(&state) & 0xbfffffffu; /* finite */
        ns_contact c = {(uint32_t)k, (uint32_t)(k + 1 + k % 7), 0, 0, 0, 0};
        memcpy(&c.overlap, b, sizeof b);
        l.items[k] = c;
    }
    l.count = n;
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    ns_error err;
    CHECK_STATUS(ns_contacts_write(f, &l, NS_FORMAT_CSV, &err), NS_OK, &err);
    rewind(f);
    char line[256], want[256];
    REQUIRE(fgets(line, sizeof line, f) != NULL);
    CHECK(strcmp(line, "i,j,overlap,nx,ny,nz\n") == 0);
    size_t k = 0;
    while (fgets(line, sizeof line, f)) {
        REQUIRE(k < n);
        const ns_contact *c = &l.items[k++];
        snprintf(want, sizeof want, "%u,%u,%.9g,%.9g,%.9g,%.9g\n", (unsigned)c->i, (unsigned)c->j,
                 (double)c->overlap, (double)c->nx, (double)c->ny, (double)c->nz);
        if (strcmp(line, want) != 0) {
            CHECK_MSG(0, "line %zu: \"%s\", want \"%s\"", k + 1, line, want);
            break;
        }
    }
    CHECK_EQ_U(k, n);
    fclose(f);
    ns_contact_list_free(&l);
}

static void t_write_particles(void)
{
    const float pos[] = {0.1f, -2.0f, 3e-5f, 1e10f, 0.0f, 5.0f};
    const float rad[] = {0.5f, 0.25f};
    ns_particles p = {2, pos, rad, 0.0f};
    FILE *f = tmpfile();
    REQUIRE(f != NULL);
    ns_error err;
    CHECK_STATUS(ns_particles_write(f, &p, &err), NS_OK, &err);
    rewind(f);
    char text[256];
    size_t len = fread(text, 1, sizeof text - 1, f);
    text[len] = '\0';
    fclose(f);
    CHECK(strcmp(text, "x,y,z,r\n0.100000001,-2,2.99999992e-05,0.5\n1e+10,0,5,0.25\n") == 0);
    /* and back: the same floats */
    ns_particle_file back;
    CHECK_STATUS(ns_particle_file_parse(text, len, &back, &err), NS_OK, &err);
    CHECK(back.n == 2 && memcmp(back.pos, pos, sizeof pos) == 0 &&
          memcmp(back.radius, rad, sizeof rad) == 0);
    ns_particle_file_free(&back);
}

/* A growable text for building files. */
typedef struct text {
    char *s;
    size_t len, cap;
} text;

static void put(text *t, const char *s, size_t len)
{
    if (t->len + len + 1 > t->cap) {
        t->cap = 2 * (t->len + len + 1);
        t->s = realloc(t->s, t->cap);
        REQUIRE(t->s != NULL);
    }
    memcpy(t->s + t->len, s, len);
    t->len += len;
    t->s[t->len] = '\0';
}

static void puts_(text *t, const char *s)
{
    put(t, s, strlen(s));
}

static void put_repeat(text *t, char c, size_t count)
{
    for (size_t k = 0; k < count; k++)
        put(t, &c, 1);
}

/* Reading from a FILE and parsing from memory agree on every input: those
 * of the accept and reject cases, and random mixes of their lines. */
static void t_read_equals_parse(void)
{
    static const char *const samples[] = {
        "",
        "\n",
        "\r\n",
        "x,y,z\n",
        "x,y,z,r",
        "1,2,3",
        "1,2,3\r",
        "1,2,3\r\n4,5,6\n",
        "# a\n\n x , y , z \n1,2,3\n#\n\n",
        "0,0,0,1\n1,2,abc,1\n",
        "x,y,z,r\n0,0,0,1\n# c\n\n1,2,3,-1\n",
        "0,0,0,1\n1,2,3\n",
        "0,0,0,1,5\n",
        "0,0\n",
        "0,0,nan,1\n",
        "1e39,0,0,1\n",
        "0,,0,1\n",
        "0x1p-3,0x1.8p1,-0x1p+2\n1e-45,1.17549435e-38,3.40282347e38\n",
        "\xEF\xBB\xBFx,y,z\n1,2,3\n",
        "\xEF\xBB\xBF",
        "\xEF\xBB",
        "1,2,3\n\xEF\xBB\xBF\n",
        "1,2,\x01\n",
        "\r\r\n1,2,3\r\r\n",
        ",,,\n",
    };
    ns_particle_file f;
    ns_error err;
    for (size_t k = 0; k < sizeof samples / sizeof samples[0]; k++) {
        check_set_context("sample %zu: \"%s\"", k, samples[k]);
        parse_and_read(samples[k], strlen(samples[k]), &f, &err);
        ns_particle_file_free(&f);
    }
    static const char *const lines[] = {
        "1,2,3",      "1,2,3,4",
        "x,y,z",      "x,y,z,r",
        "",           "  ",
        "# c",        "1e39,0,0",
        "0,0,0,-1",   "\r",
        "1,2",        "a,b,c",
        " 5 , 6, 7 ", "\xEF\xBB\xBF\x31,2,3", /* a byte-order mark, then 1,2,3 */
        "0x1p3,0,0",  "\t#",
    };
    size_t nlines = sizeof lines / sizeof lines[0];
    uint64_t state = 2024;
    for (int round = 0; round < 3000; round++) {
        text t = {0};
        int count = (int)(tl_rng(&state) % 12);
        /* mostly one kind of data line, so that some files parse */
        size_t data = tl_rng(&state) % 2;
        for (int l = 0; l < count; l++) {
            uint64_t r = tl_rng(&state) % 10;
            puts_(&t, r < 6 ? lines[data] : lines[tl_rng(&state) % nlines]);
            if (l + 1 < count || tl_rng(&state) % 2)
                puts_(&t, tl_rng(&state) % 3 ? "\n" : "\r\n");
        }
        if (!t.s)
            puts_(&t, "");
        check_set_context("random file %d: \"%s\"", round, t.s);
        parse_and_read(t.s, t.len, &f, &err);
        ns_particle_file_free(&f);
        free(t.s);
    }
}

/* A byte-order mark is skipped at the very start of a file, nowhere else. */
static void t_bom(void)
{
    ns_particle_file f;
    ns_error err;
    check_set_context("a BOM before the header");
    const char *a = "\xEF\xBB\xBFx,y,z,r\r\n1,2,3,4\r\n";
    CHECK_STATUS(parse_and_read(a, strlen(a), &f, &err), NS_OK, &err);
    CHECK(f.header && f.n == 1 && f.columns == 4 && f.radius[0] == 4.0f);
    CHECK_EQ_U(ns_particle_file_line_of(&f, 0), 2);
    ns_particle_file_free(&f);
    check_set_context("a BOM before data");
    const char *b = "\xEF\xBB\xBF-1,2,3\n";
    CHECK_STATUS(parse_and_read(b, strlen(b), &f, &err), NS_OK, &err);
    CHECK(!f.header && f.n == 1 && f.pos[0] == -1.0f);
    ns_particle_file_free(&f);
    check_set_context("a BOM before a comment");
    const char *c = "\xEF\xBB\xBF# made by a spreadsheet\n1,2,3\n";
    CHECK_STATUS(parse_and_read(c, strlen(c), &f, &err), NS_OK, &err);
    CHECK(f.n == 1 && ns_particle_file_line_of(&f, 0) == 2);
    ns_particle_file_free(&f);
    check_set_context("a BOM alone");
    CHECK_STATUS(parse_and_read("\xEF\xBB\xBF", 3, &f, &err), NS_OK, &err);
    CHECK(f.n == 0 && f.columns == 0 && f.lines == 1);
    ns_particle_file_free(&f);

    /* anywhere else it is part of a field: refused, shown escaped */
    check_rejected("1,2,3\n\xEF\xBB\xBF"
                   "4,5,6\n",
                   2, "x '\\xef\\xbb\\xbf4' is not a number");
    check_rejected("\xEF\xBB\xBF\xEF\xBB\xBF"
                   "1,2,3\n",
                   1, "is not a number");
    check_rejected("1,\xEF\xBB\xBF"
                   "2,3\n",
                   1, "y '\\xef\\xbb\\xbf2' is not a number");
    check_rejected("\n\xEF\xBB\xBF"
                   "1,2,3\n",
                   2, "is not a number");
    check_rejected(" \xEF\xBB\xBF"
                   "1,2,3\n",
                   1, "is not a number");
    check_rejected("\xEF\xBB"
                   "1,2,3\n",
                   1, "x '\\xef\\xbb1' is not a number");
}

/* A NUL byte anywhere is refused on its line. */
static void t_nul(void)
{
    static const struct {
        const char *text;
        size_t len, line;
    } cases[] = {
        {"\0", 1, 1},
        {"1,2,3\n4,5\0,6\n", 13, 2},
        {"1,2,3\n4,5,6\0", 12, 2},
        {"# c\0mment\n1,2,3\n", 16, 1},
        {"1,2,3\n\n\0\n", 9, 3},
        {"x,y,z\n1,2,3\n\r\0", 14, 3},
        {"1,2,3\n\0\n4,5,6,7\n", 16, 2}, /* before the line's own error */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        check_set_context("NUL case %zu", k);
        check_rejected_len(cases[k].text, cases[k].len, cases[k].line,
                           "a NUL byte (this is not a text file)");
    }
    /* after many lines, blocks and a long line: the right line */
    text t = {0};
    for (int i = 0; i < 20000; i++)
        puts_(&t, "1.5,2.5,3.5\n");
    put_repeat(&t, ' ', 50000);
    puts_(&t, "1,2,3\n7,8,");
    put(&t, "\0", 1);
    puts_(&t, "9\n");
    check_set_context("a NUL on line 20002");
    check_rejected_len(t.s, t.len, 20002, "NUL");
    free(t.s);

    /* a file of NUL bytes is refused on line 1 without reading it all */
    check_set_context("4 MiB of NUL bytes");
    size_t big = (size_t)4 << 20;
    char *zeros = calloc(big, 1);
    REQUIRE(zeros != NULL);
    FILE *in = file_of(zeros, big);
    free(zeros);
    ns_particle_file f;
    ns_error err;
    CHECK_STATUS(ns_particle_file_read(in, &f, &err), NS_ERR_INVALID_INPUT, &err);
    CHECK_EQ_U(err.line, 1);
    CHECK_STR_CONTAINS(err.message, "NUL");
    CHECK(is_empty(&f));
    long at = ftell(in);
    CHECK_MSG(at >= 0 && at <= 256 * 1024, "read %ld bytes of NULs before refusing them", at);
    fclose(in);
    in = fopen("/dev/zero", "rb");
    if (in) {
        check_set_context("/dev/zero");
        CHECK_STATUS(ns_particle_file_read(in, &f, &err), NS_ERR_INVALID_INPUT, &err);
        CHECK_EQ_U(err.line, 1);
        CHECK_STR_CONTAINS(err.message, "a NUL byte");
        fclose(in);
    }
}

/* Long fields are numbers like any other, parsed by strtof where they stand. */
static void t_long_fields(void)
{
    static const char *const heads[] = {"1.", "0.", "-3.", "+0.314159265358979323846264338327950"};
    static const char *const tails[] = {"", "1", "1e300", "7e-20", "5", "49999999e-10"};
    ns_particle_file f;
    ns_error err;
    for (size_t h = 0; h < sizeof heads / sizeof heads[0]; h++)
        for (size_t k = 0; k < sizeof tails / sizeof tails[0]; k++)
            for (size_t zeros = 250; zeros <= 60000; zeros = zeros < 400 ? zeros + 50 : zeros * 4) {
                text num = {0}, t = {0};
                puts_(&num, heads[h]);
                put_repeat(&num, '0', zeros);
                puts_(&num, tails[k]);
                if (strchr(heads[h], '.') == NULL && strcmp(tails[k], "1") == 0)
                    puts_(&num, ".25"); /* digits, then a fraction */
                float want = strtof(num.s, NULL);
                if (!isfinite(want)) {
                    free(num.s);
                    continue;
                }
                puts_(&t, "x,y,z,r\n0,0,0,0\n1,");
                puts_(&t, num.s);
                puts_(&t, " , 3,");
                puts_(&t, num.s[0] == '-' ? "0" : num.s);
                puts_(&t, "\n");
                check_set_context("a field of %zu characters: %.40s...", num.len, num.s);
                CHECK_STATUS(parse_and_read(t.s, t.len, &f, &err), NS_OK, &err);
                if (f.n == 2) {
                    CHECK_EQ_U(tl_bits(f.pos[4]), tl_bits(want));
                    if (num.s[0] != '-')
                        CHECK_EQ_U(tl_bits(f.radius[1]), tl_bits(want));
                }
                ns_particle_file_free(&f);
                free(num.s);
                free(t.s);
            }
    /* a field as long as a line can be */
    text t = {0};
    puts_(&t, "1.");
    put_repeat(&t, '0', NS_MAX_LINE - 10);
    puts_(&t, "1,2,3\n");
    check_set_context("a field of %d characters", NS_MAX_LINE - 7);
    CHECK_STATUS(parse_and_read(t.s, t.len, &f, &err), NS_OK, &err);
    CHECK(f.n == 1 && f.pos[0] == 1.0f && f.pos[2] == 3.0f);
    ns_particle_file_free(&f);
    free(t.s);
    /* "0.000...0001" with 300 zeros: a tiny number, rounded to zero like 1e-50 */
    t = (text){0};
    puts_(&t, "0.");
    put_repeat(&t, '0', 300);
    puts_(&t, "1,2,3\n");
    check_set_context("0.(300 zeros)1");
    CHECK_STATUS(parse_and_read(t.s, t.len, &f, &err), NS_OK, &err);
    CHECK(f.n == 1 && f.pos[0] == 0.0f && f.pos[1] == 2.0f);
    ns_particle_file_free(&f);
    free(t.s);
    /* long fields that are not numbers are refused and shown cut short */
    t = (text){0};
    puts_(&t, "1,2,");
    put_repeat(&t, '7', 1000);
    puts_(&t, "z\n");
    check_set_context("1000 digits then a letter");
    check_rejected_len(t.s, t.len, 1, "z '77777777");
    parse(t.s, &f, &err);
    CHECK_STR_CONTAINS(err.message, "...' is not a number");
    CHECK_CMP_U(strlen(err.message), <, 120);
    free(t.s);
    /* what stays refused */
    check_rejected("1,2,\v3\n", 1, "not a number");
    check_rejected("1,2,3 4\n", 1, "not a number");
    check_rejected("1,2,0x\n", 1, "not a number");
    check_rejected("1,2,1e\n", 1, "not a number");
}

/* Field text in messages: bytes that are not printable ASCII are written
 * \xNN, so a message never carries control bytes to a terminal. */
static void t_messages_escaped(void)
{
    static const char *const bad[] = {"1,2,\x1b[2J\n", "1,2,3,\x7f\n",       "1,\x80\xff,3\n",
                                      "1,2,\\x41\n",   "\x1b]0;t\x07,2,3\n", "1,2,3,-\x1b[31m1\n"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ns_particle_file f;
        ns_error err;
        check_set_context("escaping case %zu", k);
        CHECK_STATUS(parse_and_read(bad[k], strlen(bad[k]), &f, &err), NS_ERR_INVALID_INPUT, &err);
        for (const char *c = err.message; *c; c++)
            CHECK_MSG(*c >= 0x20 && *c < 0x7f, "byte 0x%02x in the message \"%s\"",
                      (unsigned)(unsigned char)*c, err.message);
    }
    check_rejected("1,2,\x1b[2J\n", 1, "z '\\x1b[2J' is not a number");
    check_rejected("1,\x80\xff,3\n", 1, "y '\\x80\\xff' is not a number");
    check_rejected("1,2,\\x41\n", 1, "z '\\x5cx41' is not a number");
}

/* NS_MAX_LINE bytes are a line; one more is refused, on any line. */
static void t_long_lines(void)
{
    ns_particle_file f;
    ns_error err;
    static const char *const ends[] = {"\n", "\r\n", ""};
    for (int e = 0; e < 3; e++)
        for (int bom = 0; bom < 2; bom++)
            for (size_t extra = 0; extra < 2; extra++) {
                text t = {0};
                if (bom)
                    puts_(&t, "\xEF\xBB\xBF");
                puts_(&t, "1,2,  ");
                put_repeat(&t, ' ', NS_MAX_LINE - 7 + extra);
                puts_(&t, "3");
                puts_(&t, ends[e]);
                check_set_context("a first line of %zu bytes, end %d, BOM %d",
                                  (size_t)NS_MAX_LINE + extra, e, bom);
                if (extra) {
                    check_rejected_len(t.s, t.len, 1, "line is longer than 65536 bytes");
                } else {
                    CHECK_STATUS(parse_and_read(t.s, t.len, &f, &err), NS_OK, &err);
                    CHECK(f.n == 1 && f.pos[2] == 3.0f);
                    ns_particle_file_free(&f);
                }
                /* the same line third, after short ones (no BOM there) */
                text u = {0};
                puts_(&u, "x,y,z\n4,5,6\n1,2,  ");
                put_repeat(&u, ' ', NS_MAX_LINE - 7 + extra);
                puts_(&u, "3");
                puts_(&u, ends[e]);
                check_set_context("a third line of %zu bytes, end %d", (size_t)NS_MAX_LINE + extra,
                                  e);
                if (extra) {
                    check_rejected_len(u.s, u.len, 3, "line is longer than 65536 bytes");
                } else {
                    CHECK_STATUS(parse_and_read(u.s, u.len, &f, &err), NS_OK, &err);
                    CHECK(f.n == 2 && ns_particle_file_line_of(&f, 1) == 3);
                    ns_particle_file_free(&f);
                }
                free(t.s);
                free(u.s);
            }
    /* comments and blank lines too */
    text t = {0};
    puts_(&t, "1,2,3\n#");
    put_repeat(&t, '-', NS_MAX_LINE);
    puts_(&t, "\n");
    check_set_context("a long comment");
    check_rejected_len(t.s, t.len, 2, "longer than");
    free(t.s);

    /* an endless line: refused at the limit, without reading on */
    static const char fill[] = {'1', ' ', ','};
    for (int k = 0; k < 3; k++) {
        check_set_context("8 MiB without a line end, of '%c'", fill[k]);
        size_t big = (size_t)8 << 20;
        char *s = malloc(big);
        REQUIRE(s != NULL);
        memset(s, fill[k], big);
        FILE *in = file_of(s, big);
        CHECK_STATUS(ns_particle_file_read(in, &f, &err), NS_ERR_INVALID_INPUT, &err);
        CHECK_EQ_U(err.line, 1);
        CHECK_STR_CONTAINS(err.message, "line is longer than 65536 bytes");
        long at = ftell(in);
        CHECK_MSG(at >= 0 && at <= 512 * 1024, "read %ld bytes of one line", at);
        fclose(in);
        CHECK_STATUS(ns_particle_file_parse(s, big, &f, &err), NS_ERR_INVALID_INPUT, &err);
        CHECK_EQ_U(err.line, 1);
        free(s);
    }
}

/* Files whose read blocks end inside lines: lines of every length up to the
 * limit, the particles and their lines exactly as written. */
static void t_chunks(void)
{
    text t = {0};
    uint64_t state = 77;
    size_t n = 0, cap = 4096;
    size_t *want_line = malloc(cap * sizeof *want_line);
    float *want = malloc(cap * 4 * sizeof *want);
    REQUIRE(want_line && want);
    size_t line = 0;
    char num[64];
    while (t.len < ((size_t)6 << 20)) {
        uint64_t r = tl_rng(&state) % 100;
        line++;
        if (r < 3) { /* a long comment */
            puts_(&t, "#");
            put_repeat(&t, '#', tl_rng(&state) % NS_MAX_LINE);
        } else if (r < 6) { /* a long blank line */
            put_repeat(&t, r % 2 ? ' ' : '\t', tl_rng(&state) % NS_MAX_LINE);
        } else {
            REQUIRE(n < cap);
            size_t room = r < 20 ? NS_MAX_LINE - 80 : 64;
            for (int k = 0; k < 4; k++) {
                float v = tl_rng_float(&state, -1000.0f, 1000.0f);
                if (k == 3)
                    v = fabsf(v);
                want[4 * n + (size_t)k] = v;
                snprintf(num, sizeof num, "%.9g", (double)v);
                put_repeat(&t, ' ', tl_rng(&state) % (room / 8 + 1));
                puts_(&t, num);
                put_repeat(&t, ' ', tl_rng(&state) % (room / 8 + 1));
                if (k < 3)
                    puts_(&t, ",");
            }
            want_line[n++] = line;
        }
        puts_(&t, tl_rng(&state) % 4 ? "\n" : "\r\n");
    }
    check_set_context("%zu particles in %zu bytes", n, t.len);
    ns_particle_file f;
    ns_error err;
    CHECK_STATUS(parse_and_read(t.s, t.len, &f, &err), NS_OK, &err);
    CHECK_EQ_U(f.n, n);
    CHECK_EQ_U(f.lines, line);
    for (size_t i = 0; i < n && i < f.n; i++) {
        float got[4] = {f.pos[3 * i], f.pos[3 * i + 1], f.pos[3 * i + 2], f.radius[i]};
        if (memcmp(got, want + 4 * i, sizeof got) != 0 ||
            ns_particle_file_line_of(&f, i) != want_line[i]) {
            CHECK_MSG(0, "particle %zu (line %zu) differs", i, want_line[i]);
            break;
        }
    }
    ns_particle_file_free(&f);
    free(t.s);
    free(want_line);
    free(want);
}

/* The line of every particle, with blank and comment lines anywhere: before
 * the header, between particles and at the end. */
static void t_line_map(void)
{
    uint64_t state = 5;
    for (int round = 0; round < 2000; round++) {
        text t = {0};
        size_t want[64], n = 0, line = 0;
        bool first = true;
        int count = (int)(tl_rng(&state) % 40);
        for (int l = 0; l < count; l++) {
            uint64_t r = tl_rng(&state) % 8;
            line++;
            if (r == 0)
                puts_(&t, "");
            else if (r == 1)
                puts_(&t, " \t ");
            else if (r == 2)
                puts_(&t, "# x,y,z,r");
            else if (r == 3)
                puts_(&t, "   #");
            else if (first && r == 4) {
                puts_(&t, "x,y,z,r");
                first = false;
            } else if (n < 64) {
                char s[64];
                snprintf(s, sizeof s, "%zu,%d,0,1", n, l);
                puts_(&t, s);
                want[n++] = line;
                first = false;
            } else {
                puts_(&t, "#");
            }
            if (l + 1 < count || tl_rng(&state) % 2)
                puts_(&t, tl_rng(&state) % 2 ? "\n" : "\r\n");
            else if (r == 0)
                line--; /* nothing after the last line end is no line */
        }
        if (!t.s)
            puts_(&t, "");
        check_set_context("line map %d: \"%s\"", round, t.s);
        ns_particle_file f;
        ns_error err;
        CHECK_STATUS(parse_and_read(t.s, t.len, &f, &err), NS_OK, &err);
        CHECK_EQ_U(f.n, n);
        CHECK_EQ_U(f.lines, line);
        CHECK_CMP_U(f.skip_count, <=, n);
        for (size_t k = 0; k < n && k < f.n; k++) {
            CHECK_EQ_U(ns_particle_file_line_of(&f, k), want[k]);
            CHECK_EQ_U(ns_particle_file_line(t.s, t.len, k), want[k]);
        }
        CHECK_EQ_U(ns_particle_file_line_of(&f, n), 0);
        CHECK_EQ_U(ns_particle_file_line_of(&f, SIZE_MAX), 0);
        CHECK_EQ_U(ns_particle_file_line(t.s, t.len, n), 0);
        ns_particle_file_free(&f);
        free(t.s);
    }
    /* one skip per particle at most: a comment between every two */
    text t = {0};
    puts_(&t, "\n# a\n\nx,y,z\n");
    for (int i = 0; i < 1000; i++)
        puts_(&t, "1,2,3\n#\n");
    check_set_context("comments between all particles");
    ns_particle_file f;
    ns_error err;
    CHECK_STATUS(parse_and_read(t.s, t.len, &f, &err), NS_OK, &err);
    CHECK_EQ_U(f.n, 1000);
    CHECK_EQ_U(f.skip_count, 1000);
    CHECK_EQ_U(ns_particle_file_line_of(&f, 0), 5);
    CHECK_EQ_U(ns_particle_file_line_of(&f, 999), 5 + 2 * 999);
    ns_particle_file_free(&f);
    free(t.s);
}

/* Read errors, NULL arguments, and err cleared by every success. */
static void t_io_arguments(void)
{
    ns_particle_file f;
    ns_error err;
    const ns_error stale = {NS_ERR_IO, 7, 9, "stale"};
    check_set_context("reading a stream opened for writing");
    FILE *w = fopen("/dev/null", "wb");
    if (w) {
        memset(&f, 0x5a, sizeof f);
        CHECK_STATUS(ns_particle_file_read(w, &f, &err), NS_ERR_IO, &err);
        CHECK_STR_CONTAINS(err.message, "read error");
        CHECK(is_empty(&f));
        fclose(w);
    }

    check_set_context("NULL arguments");
    FILE *in = file_of("1,2,3\n", 6);
    memset(&f, 0x5a, sizeof f);
    CHECK_STATUS(ns_particle_file_read(NULL, &f, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK(is_empty(&f));
    CHECK_STATUS(ns_particle_file_read(in, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_particle_file_read(NULL, NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
    memset(&f, 0x5a, sizeof f);
    CHECK_STATUS(ns_particle_file_parse(NULL, 3, &f, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK(is_empty(&f));
    CHECK_STATUS(ns_particle_file_parse("1,2,3", 5, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_particle_file_parse(NULL, 0, NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
    ns_particle_file_free(NULL);
    CHECK_EQ_U(ns_particle_file_line_of(NULL, 0), 0);
    CHECK_EQ_U(ns_particle_file_line(NULL, 5, 0), 0);
    CHECK_EQ_U(ns_particle_file_line(NULL, 0, 0), 0);
    const float pos[3] = {1, 2, 3}, rad[1] = {1};
    ns_particles p = {1, pos, rad, 0.0f};
    FILE *out = tmpfile();
    REQUIRE(out != NULL);
    CHECK_STATUS(ns_particles_write(NULL, &p, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_particles_write(out, NULL, &err), NS_ERR_INVALID_ARGUMENT, &err);
    CHECK_STATUS(ns_particles_write(NULL, NULL, NULL), NS_ERR_INVALID_ARGUMENT, NULL);
    ns_contact_list list;
    ns_contact_list_init(&list);
    CHECK_STATUS(ns_contacts_write(NULL, &list, NS_FORMAT_CSV, &err), NS_ERR_INVALID_ARGUMENT,
                 &err);
    CHECK_STATUS(ns_contacts_write(out, NULL, NS_FORMAT_BIN, &err), NS_ERR_INVALID_ARGUMENT, &err);
    ns_contact_list hollow = {NULL, 3, 0};
    CHECK_STATUS(ns_contacts_write(out, &hollow, NS_FORMAT_BIN, &err), NS_ERR_INVALID_ARGUMENT,
                 &err);
    CHECK_STATUS(ns_contacts_write(out, &list, (ns_format)7, &err), NS_ERR_INVALID_ARGUMENT, &err);

    check_set_context("success clears err");
    err = stale;
    CHECK_STATUS(ns_particle_file_read(in, &f, &err), NS_OK, &err);
    CHECK(err.status == NS_OK && err.line == 0 && err.message[0] == '\0');
    CHECK_EQ_U(f.n, 1);
    ns_particle_file_free(&f);
    err = stale;
    CHECK_STATUS(ns_particle_file_parse(NULL, 0, &f, &err), NS_OK, &err);
    CHECK(err.status == NS_OK && err.line == 0 && err.message[0] == '\0');
    ns_particle_file_free(&f);
    err = stale;
    CHECK_STATUS(ns_particles_write(out, &p, &err), NS_OK, &err);
    CHECK(err.status == NS_OK && err.message[0] == '\0');
    for (int format = 0; format < 2; format++) {
        err = stale;
        CHECK_STATUS(ns_contacts_write(out, &list, (ns_format)format, &err), NS_OK, &err);
        CHECK(err.status == NS_OK && err.message[0] == '\0');
    }
    /* an empty stream and a stream read to its end again: no particles */
    CHECK_STATUS(ns_particle_file_read(in, &f, &err), NS_OK, &err);
    CHECK(f.n == 0 && f.lines == 0);
    ns_particle_file_free(&f);
    fclose(in);
    fclose(out);
}

/* The CSV writer under a huge default team: the same bytes as one thread. */
static void t_write_csv_threads(void)
{
    size_t n = 100000;
    ns_contact_list l;
    ns_contact_list_init(&l);
    REQUIRE(ns_contact_list_reserve(&l, n, NULL) == NS_OK);
    for (size_t k = 0; k < n; k++)
        l.items[k] = (ns_contact){(uint32_t)k, (uint32_t)(2 * k + 1), 0.5f, 0.0f, 0.6f, 0.8f};
    l.count = n;
    char *bytes[2] = {NULL, NULL};
    long len[2] = {0, 0};
    static const int threads[2] = {1, 5000};
    for (int r = 0; r < 2; r++) {
        omp_set_num_threads(threads[r]);
        FILE *f = tmpfile();
        REQUIRE(f != NULL);
        ns_error err;
        check_set_context("OpenMP's default team of %d", threads[r]);
        CHECK_STATUS(ns_contacts_write(f, &l, NS_FORMAT_CSV, &err), NS_OK, &err);
        len[r] = ftell(f);
        REQUIRE(len[r] > 0);
        bytes[r] = malloc((size_t)len[r]);
        REQUIRE(bytes[r] != NULL);
        rewind(f);
        REQUIRE(fread(bytes[r], 1, (size_t)len[r], f) == (size_t)len[r]);
        fclose(f);
    }
    CHECK(len[0] == len[1] && memcmp(bytes[0], bytes[1], (size_t)len[0]) == 0);
    free(bytes[0]);
    free(bytes[1]);
    ns_contact_list_free(&l);
}

static const tl_case cases[] = {
    {"format_float", .run = t_format_float},
    {"parse_accepts", .run = t_parse_accepts},
    {"parse_rejects", .run = t_parse_rejects},
    {"write_bin", .run = t_write_bin},
    {"write_csv", .run = t_write_csv},
    {"write_particles", .run = t_write_particles},
    {"read_equals_parse", .run = t_read_equals_parse},
    {"bom", .run = t_bom},
    {"nul", .run = t_nul},
    {"long_fields", .run = t_long_fields},
    {"messages_escaped", .run = t_messages_escaped},
    {"long_lines", .run = t_long_lines},
    {"chunks", .run = t_chunks},
    {"line_map", .run = t_line_map},
    {"io_arguments", .run = t_io_arguments},
    {"write_csv_threads", .run = t_write_csv_threads},
};

int main(int argc, char **argv)
{
    static const tl_suite suite = {"io", "unit", -1, 0};
    return tl_main(&suite, cases, sizeof cases / sizeof cases[0], argc, argv);
}

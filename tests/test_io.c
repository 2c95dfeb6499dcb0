/* test_io.c - the particle-file parser, the contact writers and the float
 * formatter, through the public API.
 *
 * usage: test_io CASE */
#include "testlib.h"

#include <float.h>
#include <math.h>
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

/* A file that must fail at `line` with a message containing `needle`. */
static void check_rejected(const char *text, size_t line, const char *needle)
{
    ns_particle_file f;
    ns_error err;
    check_set_context("parsing \"%s\"", text);
    CHECK_STATUS(parse(text, &f, &err), NS_ERR_INVALID_INPUT, &err);
    CHECK_EQ_U(err.line, line);
    CHECK_STR_CONTAINS(err.message, needle);
    CHECK(f.n == 0 && f.pos == NULL && f.radius == NULL);
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
    CHECK_EQ_U(ns_particle_file_line(text, strlen(text), 0), 4);
    CHECK_EQ_U(ns_particle_file_line(text, strlen(text), 1), 7);
    CHECK_EQ_U(ns_particle_file_line(text, strlen(text), 2), 8);
    CHECK_EQ_U(ns_particle_file_line(text, strlen(text), 3), 0);
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

static const tl_case cases[] = {
    {"format_float", .run = t_format_float},   {"parse_accepts", .run = t_parse_accepts},
    {"parse_rejects", .run = t_parse_rejects}, {"write_bin", .run = t_write_bin},
    {"write_csv", .run = t_write_csv},         {"write_particles", .run = t_write_particles},
};

int main(int argc, char **argv)
{
    return tl_main("io", cases, sizeof cases / sizeof cases[0], argc, argv);
}

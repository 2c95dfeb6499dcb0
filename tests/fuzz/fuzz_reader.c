/* fuzz_reader - arbitrary bytes into the particle-file parser and reader:
 * they must return a status (and on success a consistent particle set that
 * keeps the file's rules), never read outside the buffer (the input is
 * copied into an allocation of exactly its size, so AddressSanitizer sees
 * any overread), never leak, and agree: reading the bytes from a FILE
 * (fmemopen) gives what parsing them from memory gives, field by field,
 * messages included. Each particle's line is checked against a count of the
 * text's lines made here, and messages must hold printable ASCII only. */
#define _POSIX_C_SOURCE 200809L
#include "nsearch.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok)
{
    if (!ok)
        abort();
}

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

/* [b, e) trimmed of spaces and tabs equals word. */
static int trimmed_is(const char *b, const char *e, const char *word)
{
    while (b < e && blank(*b))
        b++;
    while (e > b && blank(e[-1]))
        e--;
    return (size_t)(e - b) == strlen(word) && memcmp(b, word, (size_t)(e - b)) == 0;
}

/* The header x,y,z or x,y,z,r. */
static int is_header(const char *b, const char *e)
{
    static const char *const names[4] = {"x", "y", "z", "r"};
    int k = 0;
    for (;; k++) {
        const char *comma = memchr(b, ',', (size_t)(e - b));
        const char *stop = comma ? comma : e;
        if (k >= 4 || !trimmed_is(b, stop, names[k]))
            return 0;
        if (!comma)
            return k == 2 || k == 3;
        b = comma + 1;
    }
}

/* For a text that parsed: the line of every data line, in order, and the
 * number of lines; counted here from the format's rules, line by line. */
static void expected_lines(const char *text, size_t size, size_t *lines, size_t n,
                           size_t *line_count)
{
    const char *at = text, *end = text + size;
    size_t line = 0, particle = 0;
    int first = 1;
    while (at < end) {
        const char *nl = memchr(at, '\n', (size_t)(end - at));
        const char *b = at, *e = nl ? nl : end;
        at = nl ? nl + 1 : end;
        line++;
        if (e > b && e[-1] == '\r')
            e--;
        if (line == 1 && e - b >= 3 && memcmp(b, "\xEF\xBB\xBF", 3) == 0)
            b += 3;
        while (b < e && blank(*b))
            b++;
        if (b == e || *b == '#')
            continue;
        if (first) {
            first = 0;
            if (is_header(b, e))
                continue;
        }
        require(particle < n);
        lines[particle++] = line;
    }
    require(particle == n);
    *line_count = line;
}

static void check_message(const ns_error *err)
{
    require(err->message[0] != '\0');
    for (const char *c = err->message; *c; c++)
        require(*c >= 0x20 && *c < 0x7f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);
    require(text != NULL);
    if (size)
        memcpy(text, data, size);
    ns_particle_file file;
    ns_error err;
    ns_status s = ns_particle_file_parse(text, size, &file, &err);
    if (s == NS_OK) {
        require(file.columns == 0 || file.columns == 3 || file.columns == 4);
        require(file.n == 0 || (file.columns == 4) == (file.radius != NULL));
        /* the file's rules: finite coordinates, finite non-negative radii (a
         * search may still refuse radii outside its range) */
        for (size_t k = 0; k < 3 * file.n; k++)
            require(isfinite(file.pos[k]));
        for (size_t k = 0; file.radius && k < file.n; k++)
            require(isfinite(file.radius[k]) && file.radius[k] >= 0.0f);
        require(err.status == NS_OK && err.line == 0 && err.message[0] == '\0');
        require(file.skip_count <= file.n);
        size_t *lines = malloc((file.n ? file.n : 1) * sizeof *lines);
        require(lines != NULL);
        size_t line_count;
        expected_lines(text, size, lines, file.n, &line_count);
        require(file.lines == line_count);
        for (size_t k = 0; k < file.n; k++)
            require(ns_particle_file_line_of(&file, k) == lines[k]);
        require(ns_particle_file_line_of(&file, file.n) == 0);
        if (file.n)
            require(ns_particle_file_line(text, size, file.n - 1) == lines[file.n - 1]);
        require(ns_particle_file_line(text, size, file.n) == 0);
        free(lines);
    } else {
        require(s == NS_ERR_INVALID_INPUT || s == NS_ERR_OUT_OF_MEMORY || s == NS_ERR_TOO_LARGE);
        require(err.status == s);
        check_message(&err);
        require(file.n == 0 && file.pos == NULL && file.radius == NULL && file.skips == NULL);
    }

    /* the same bytes from a FILE */
    FILE *in = fmemopen(text, size, "r");
    if (in) {
        ns_particle_file read;
        ns_error rerr;
        ns_status rs = ns_particle_file_read(in, &read, &rerr);
        fclose(in);
        require(rs == s);
        require(rerr.status == err.status && rerr.line == err.line &&
                rerr.particle == err.particle && strcmp(rerr.message, err.message) == 0);
        require(read.n == file.n && read.columns == file.columns && read.header == file.header &&
                read.lines == file.lines && read.skip_count == file.skip_count);
        require((read.radius == NULL) == (file.radius == NULL));
        if (file.n) {
            require(memcmp(read.pos, file.pos, 3 * file.n * sizeof(float)) == 0);
            require(!file.radius || memcmp(read.radius, file.radius, file.n * sizeof(float)) == 0);
        }
        if (file.skip_count)
            require(memcmp(read.skips, file.skips, file.skip_count * sizeof *file.skips) == 0);
        ns_particle_file_free(&read);
    }
    ns_particle_file_free(&file);
    free(text);
    return 0;
}

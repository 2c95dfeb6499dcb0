/* fuzz_kernels - differential fuzzing of every kernel against naive.
 *
 * The input bytes decode into a particle set of up to 255 particles drawn
 * from the values that break neighbour searches (small values, cell
 * boundaries and their neighbouring floats, exact multiples of the cell,
 * negative zero, huge magnitudes up to 1e30, subnormals, repeated points),
 * radii from 0 to wide spreads, anywhere in the exact range [2^-60, 2^60],
 * at its bounds and outside it (any finite float), a thread count, a hash
 * table size and a contact limit. naive must refuse (NS_ERR_INVALID_INPUT)
 * exactly the sets with a radius outside the range; every kernel must then
 * return exactly naive's sorted contacts, or naive's refusal with the same
 * status and message; grid_dense may also refuse for its own memory cap.
 * Anything else aborts. grid_sorted's ns_index_count must equal the number
 * of contacts, and its streaming query must stream exactly the list its
 * query wrote, in the same order; a second query of the same build by a
 * kernel whose order is stable (grid_sorted's writes what its counting pass
 * recorded) must write the same bytes as its first.
 *
 * Built with libFuzzer (preset fuzz) or, for ctest, with replay.c's main. */
#include "nsearch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    const uint8_t *p;
    size_t left;
} reader;

static uint8_t byte(reader *r)
{
    if (!r->left)
        return 0;
    r->left--;
    return *r->p++;
}

static uint32_t word(reader *r)
{
    uint32_t w = 0;
    for (int k = 0; k < 4; k++)
        w = w << 8 | byte(r);
    return w;
}

static float from_bits(uint32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

/* The next float up (towards +inf) or down, for finite f. */
static float step(float f, int up)
{
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    if (f == 0.0f)
        return up ? from_bits(1) : -from_bits(1);
    bool negative = w >> 31;
    w += (up != negative) ? 1 : -1u;
    return from_bits(w);
}

/* One coordinate. cell is the interaction distance the radii make likely. */
static float coordinate(reader *r, float cell, const float *previous)
{
    uint8_t kind = byte(r);
    int8_t k = (int8_t)byte(r);
    switch (kind % 9) {
    case 0: /* small */ return (float)k * 0.125f;
    case 1: /* an exact multiple of the cell */ return (float)k * cell;
    case 2: /* one float either side of a cell boundary */
        return step((float)k * cell, byte(r) & 1);
    case 3: return -0.0f;
    case 4: { /* huge, up to 1e30 */
        static const float huge[] = {1e6f, 1e9f, 1e12f, 1e15f, 1e18f, 1e21f, 1e25f, 1e30f};
        return (k < 0 ? -1.0f : 1.0f) * huge[(uint8_t)k % 8] * (1.0f + (float)(byte(r) % 16) / 16);
    }
    case 5: /* subnormal */ return (k < 0 ? -1.0f : 1.0f) * from_bits(1u + (word(r) & 0x7fffffu));
    case 6: /* the previous particle's coordinate: duplicates and coincident points */
        return previous ? *previous : 0.0f;
    case 7: /* near a neighbour: the previous coordinate plus a fraction of the cell */
        return (previous ? *previous : 0.0f) + (float)k / 64.0f * cell;
    default: { /* any finite float */
        float f = from_bits(word(r));
        return isfinite(f) ? f : (float)k;
    }
    }
}

/* The radii the contact test is exact for: 0 or [2^-60, 2^60]. */
static bool in_range(float r)
{
    return r == 0.0f || (r >= 0x1p-60f && r <= 0x1p60f);
}

static float radius(reader *r, uint8_t mode)
{
    uint8_t b = byte(r);
    switch (mode % 4) {
    case 0: /* one size */ return 0.5f;
    case 1: /* zero or small */ return b % 4 == 0 ? 0.0f : (float)(b % 16) / 16.0f;
    case 2: /* spread over 1000:1 */ return 0.001f * (float)(1u << (b % 11));
    default: {
        uint32_t w = word(r);
        switch (b % 4) {
        case 0: { /* any finite non-negative float: mostly outside the range */
            float f = from_bits(w & 0x7fffffffu);
            return isfinite(f) ? f : 1.0f;
        }
        case 1: { /* the range's bounds, and the floats either side */
            static const float bounds[] = {
                0.0f,           0x1p-60f,      0x1p60f, 0x1.fffffep-61f, 0x1.000002p-60f,
                0x1.fffffep59f, 0x1.000002p60f};
            return bounds[w % 7];
        }
        default: { /* anywhere in the range: exponent -60 to 59, any mantissa */
            uint32_t exponent = 127 - 60 + (w >> 23) % 120;
            return from_bits(exponent << 23 | (w & 0x7fffffu));
        }
        }
    }
    }
}

static void die(const char *what, const char *kernel, size_t n, const char *detail)
{
    fprintf(stderr, "fuzz_kernels: %s: kernel %s, n = %zu: %s\n", what, kernel, n, detail);
    abort();
}

/* The same contacts in the same order, bit for bit. */
static bool same_contacts(const ns_contact_list *a, const ns_contact_list *b)
{
    return a->count == b->count &&
           (a->count == 0 || memcmp(a->items, b->items, a->count * sizeof(ns_contact)) == 0);
}

/* A streaming query's blocks, appended to the list user. */
static bool append(const ns_contact *c, size_t count, void *user)
{
    ns_contact_list *l = user;
    if (ns_contact_list_reserve(l, l->count + count, NULL) != NS_OK)
        abort();
    memcpy(l->items + l->count, c, count * sizeof *c);
    l->count += count;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = {data, size};
    uint8_t settings = byte(&r), radius_mode = byte(&r), limit = byte(&r);
    size_t n = byte(&r); /* up to 255 particles */
    ns_config cfg = ns_config_default();
    cfg.threads = 1 + settings % 4;
    cfg.exact_threads = true; /* the parallel code, though n is small */
    cfg.table_size = (settings >> 2) % 4 == 0 ? 0 : 1u + byte(&r) % 64;
    cfg.grid_max_bytes = 1u << 20; /* 1 MiB: grid_dense refuses rather than exhaust memory */
    cfg.max_contacts = limit < 32 ? (size_t)limit + 1 : 0;

    float *pos = malloc(3 * (n ? n : 1) * sizeof(float));
    float *rad = malloc((n ? n : 1) * sizeof(float));
    if (!pos || !rad)
        abort();
    bool uniform = radius_mode & 0x80;
    float cell = uniform ? 1.0f : 0.25f;
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++)
            pos[3 * i + k] = coordinate(&r, cell, i ? &pos[3 * (i - 1) + k] : NULL);
        rad[i] = radius(&r, radius_mode);
    }
    ns_particles p = {n, pos, uniform ? NULL : rad, uniform ? radius(&r, radius_mode) : 0.0f};
    bool valid = uniform ? in_range(p.radius_uniform) : true;
    for (size_t i = 0; i < n && !uniform; i++)
        valid &= in_range(rad[i]);

    ns_contact_list ref, got;
    ns_contact_list_init(&ref);
    ns_contact_list_init(&got);
    ns_error ref_err, err;
    /* naive on the most portable code path, the kernels on the process's
     * (NS_ISA): a path is compared with another, not with itself */
    ns_config ref_cfg = cfg;
    const char *paths = ns_isa_paths(), *space = strrchr(paths, ' ');
    ref_cfg.isa = space ? space + 1 : paths;
    ns_status ref_status = ns_find_contacts(ns_kernel_find("naive"), &p, &ref_cfg, &ref, &ref_err);
    if (ref_status == NS_OK)
        ns_contact_list_sort(&ref);
    if (valid && (ref_status == NS_ERR_INVALID_INPUT || ref_status == NS_ERR_INVALID_ARGUMENT))
        die("naive rejected a valid particle set", "naive", n, ref_err.message);
    if (!valid && ref_status != NS_ERR_INVALID_INPUT)
        die("naive accepted a radius outside [2^-60, 2^60]", "naive", n,
            ref_status == NS_OK ? "" : ref_err.message);

    for (size_t k = 0; k < ns_kernel_count(); k++) {
        const ns_kernel *kernel = ns_kernel_at(k);
        ns_index *index = NULL;
        ns_status s = ns_index_create(kernel, &cfg, &index, &err);
        if (s == NS_OK)
            s = ns_index_build(index, &p, &err);
        size_t counted = 0;
        bool counts = s == NS_OK && ns_index_can_count(index);
        ns_status count_status = counts ? ns_index_count(index, &counted, &err) : NS_OK;
        if (s == NS_OK && count_status != NS_OK)
            die("count failed after a build", kernel->name, n, err.message);
        if (s == NS_OK)
            s = ns_index_query(index, &got, &err);
        if (s == NS_OK && ns_index_can_stream(index)) { /* the query's list, streamed */
            ns_contact_list streamed;
            ns_contact_list_init(&streamed);
            ns_error stream_err;
            if (ns_index_query_stream(index, append, &streamed, &stream_err) != NS_OK)
                die("streaming query failed after a query", kernel->name, n, stream_err.message);
            if (!same_contacts(&streamed, &got))
                die("streamed contacts differ from the query's", kernel->name, n, "");
            ns_contact_list_free(&streamed);
        }
        if (s == NS_OK && kernel->stable_order) { /* a query again of the same build
                                                   * (grid_sorted then writes the contacts
                                                   * its counting pass recorded): the same
                                                   * bytes in the same order */
            ns_contact_list again;
            ns_contact_list_init(&again);
            ns_error again_err;
            if (ns_index_query(index, &again, &again_err) != NS_OK)
                die("a query again failed after a query", kernel->name, n, again_err.message);
            if (!same_contacts(&again, &got))
                die("a query again lists other contacts", kernel->name, n, "");
            ns_contact_list_free(&again);
        }
        ns_index_destroy(index);
        bool own_cap = strcmp(kernel->name, "grid_dense") == 0 && s == NS_ERR_TOO_LARGE &&
                       strstr(err.message, "grid_max_bytes");
        if (own_cap)
            continue;
        if (s != ref_status) {
            char detail[700];
            snprintf(detail, sizeof detail, "status %s (%s), naive %s (%s)", ns_status_str(s),
                     err.message, ns_status_str(ref_status), ref_err.message);
            die("status differs from naive's", kernel->name, n, detail);
        }
        if (s != NS_OK) {
            if (strcmp(err.message, ref_err.message) != 0 || err.particle != ref_err.particle)
                die("refusal differs from naive's", kernel->name, n, err.message);
            continue;
        }
        if (counts && counted != got.count)
            die("count differs from the contacts", kernel->name, n, "");
        ns_contact_list_sort(&got);
        if (!same_contacts(&ref, &got))
            die("contacts differ from naive's", kernel->name, n, "");
    }
    ns_contact_list_free(&ref);
    ns_contact_list_free(&got);
    free(pos);
    free(rad);
    return 0;
}

/* grid_sorted/record.h - part of grid_sorted.c: writing the contacts found,
 * and the recorded ones. A search appends each contact it finds to a
 * found buffer (two caller's indices, x_b - x_a and the sum of radii);
 * flush() computes their values in one vectorised loop (fill_found(): the
 * shared predicate's ns__contact_fill, so the values are bit-identical to
 * every other kernel's) and writes them to the caller's list (on x86
 * interleaved and streamed by simd_stream_found()). The counting pass of
 * an index's second query on records the contacts it finds (see recorder
 * in types.h); the writing pass then appends them without testing again
 * (expand_unit()). COMPRESS8 is the AVX2 path's compaction table. */

/* Computes the found contacts, numbered and oriented in the caller's order
 * (i < j, dx = x_j - x_i: negating x_b - x_a is exact): on x86 into fd's
 * arrays in place (the loop has no branch, so the compiler vectorises it
 * with AVX2 as with AVX-512; uniform is a constant in each call), elsewhere
 * into out. */
static inline void fill_found(found *fd, bool uniform, float su, ns_contact *out)
{
    for (uint32_t t = 0, m = fd->count; t < m; t++) {
        uint32_t a = fd->a[t], b = fd->b[t];
        float dx = fd->dx[t], dy = fd->dy[t], dz = fd->dz[t];
        bool swap = a > b;
        ns_contact c;
        ns__contact_fill(swap ? b : a, swap ? a : b, swap ? -dx : dx, swap ? -dy : dy,
                         swap ? -dz : dz, ns__distance2(dx, dy, dz), uniform ? su : fd->s[t], &c);
        simd_keep_filled(fd, t, &c, out); /* on x86 in place, for simd_stream_found() */
    }
}

/* Writes the found contacts from out on. */
static ns_contact *flush(found *fd, const view *v, ns_contact *out)
{
    uint32_t m = fd->count;
    if (v->r)
        fill_found(fd, false, 0.0f, out);
    else
        fill_found(fd, true, v->ru + v->ru, out);
    simd_stream_found(fd, m, out);
    fd->count = 0;
    return out + m;
}

/* AVX2 has no compress: the lanes a mask keeps are moved to the front by a
 * permutation, looked up from the mask (compress_permutation(),
 * simd_avx2.h). COMPRESS8[m] holds, 4 bits per output lane, the input
 * lanes of the set bits of m in order; the table is computed by the
 * compiler: bit i of m goes to the lane numbered by the set bits below it.
 * Plain data, here rather than in simd_avx2.h so that its test
 * (tests/test_grid_sorted_parts.c) can check it on any path; the other
 * paths do not use it, and it takes no space in their code. */
#define NS__BIT(m, i) (((m) >> (i)) & 1u)
#define NS__BELOW(m, i) /* the set bits of m below bit i */                                        \
    (NS__BIT((m) & ((1u << (i)) - 1u), 0) + NS__BIT((m) & ((1u << (i)) - 1u), 1) +                 \
     NS__BIT((m) & ((1u << (i)) - 1u), 2) + NS__BIT((m) & ((1u << (i)) - 1u), 3) +                 \
     NS__BIT((m) & ((1u << (i)) - 1u), 4) + NS__BIT((m) & ((1u << (i)) - 1u), 5) +                 \
     NS__BIT((m) & ((1u << (i)) - 1u), 6))
#define NS__LANE(m, i) (NS__BIT(m, i) * ((uint32_t)(i) << (4 * NS__BELOW(m, i))))
#define NS__ENTRY(m)                                                                               \
    (NS__LANE(m, 0) | NS__LANE(m, 1) | NS__LANE(m, 2) | NS__LANE(m, 3) | NS__LANE(m, 4) |          \
     NS__LANE(m, 5) | NS__LANE(m, 6) | NS__LANE(m, 7))
#define NS__E4(m) NS__ENTRY(m), NS__ENTRY(m + 1), NS__ENTRY(m + 2), NS__ENTRY(m + 3)
#define NS__E16(m) NS__E4(m), NS__E4(m + 4), NS__E4(m + 8), NS__E4(m + 12)
#define NS__E64(m) NS__E16(m), NS__E16(m + 16), NS__E16(m + 32), NS__E16(m + 48)
static const uint32_t COMPRESS8[256] = {NS__E64(0u), NS__E64(64u), NS__E64(128u), NS__E64(192u)};

/* Appends the recorded contacts t0 .. t1 - 1 of the probe, one by one. */
static inline void append_each(found *fd, uint32_t f, const view *v, const probe *pp,
                               const uint32_t *k, uint32_t t0, uint32_t t1)
{
    for (uint32_t t = t0; t < t1; t++) {
        uint32_t q = k[t];
        fd->a[f + t] = pp->id;
        fd->b[f + t] = v->order[q];
        fd->dx[f + t] = v->x[q] - pp->x;
        fd->dy[f + t] = v->y[q] - pp->y;
        fd->dz[f + t] = v->z[q] - pp->z;
        if (v->r)
            fd->s[f + t] = pp->r + v->r[q];
    }
}

/* Appends the h recorded contacts of the probe with the particles k[0 ..
 * h) of v to fd (room for h + 16), computed as simd_write_gathered() and
 * the search across levels do: by the code path's gathers of a vector's
 * width (simd_gather_recorded()), except that fewer than ONE_BY_ONE left
 * are taken one by one (append_each()). A gather costs about as much for
 * one lane as for all, and a particle of powder's second level has about
 * two recorded contacts, which cost less one by one; a much higher
 * threshold would take one by one what a gather serves better
 * (docs/optimisation-log.md, "Mixed radii: levels of cells", "Kept: two
 * costs around the tests"; the threshold: commit 874e161). */
enum { ONE_BY_ONE = 6 };

static inline void append_recorded(found *fd, const view *v, probe pp, const uint32_t *k,
                                   uint32_t h)
{
    uint32_t f = fd->count, t = simd_gather_recorded(fd, f, v, &pp, k, h);
    t = t < h ? t : h; /* past h when the gathers took them all */
    append_each(fd, f, v, &pp, k, t, h);
    fd->count = f + h;
}

/* Appends the h contacts of the probe recorded from *k on, after
 * flushing what is pending when they would not fit. */
static inline ns_contact *append_flushed(found *fd, const view *v, probe pp, const uint32_t **k,
                                         uint32_t h, ns_contact *out)
{
    if (!h)
        return out;
    if (fd->count + h + 16 > PAIRS)
        out = flush(fd, v, out);
    if (h + 16 > PAIRS) { /* more than fd holds: in parts */
        for (uint32_t t = 0; t < h; t += PAIRS / 2) {
            uint32_t part = h - t < PAIRS / 2 ? h - t : PAIRS / 2;
            append_recorded(fd, v, pp, *k + t, part);
            out = flush(fd, v, out);
        }
    } else {
        append_recorded(fd, v, pp, *k, h);
    }
    *k += h;
    return out;
}

/* Writes the recorded contacts of the cells [c0, c1) of level l (views
 * v[l] on) from out on, their records from k on, in the order the first
 * pass found them: each cell's contacts in its level, then those of its
 * particles with every finer level. hits: level l's counts. */
static ns_contact *expand_unit(const view *v, int l, int levels, size_t c0, size_t c1,
                               const uint16_t *hits, const uint32_t *k, found *fd, ns_contact *out)
{
    const view *own = &v[l];
    size_t L = (size_t)levels;
    for (size_t c = c0; c < c1; c++) {
        uint32_t b = own->start[c], e = own->start[c + 1];
        for (uint32_t p = b; p < e; p++)
            out = append_flushed(fd, own, probe_of(own, p), &k, hits[p * L], out);
        for (uint32_t p = b; p < e && levels > l + 1; p++)
            for (int f = l + 1; f < levels; f++)
                out = append_flushed(fd, &v[f], probe_of(own, p), &k, hits[p * L + (size_t)(f - l)],
                                     out);
    }
    return out;
}

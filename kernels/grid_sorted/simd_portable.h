/* grid_sorted/simd_portable.h - part of grid_sorted.c: the operations of
 * simd.h on the portable path (the build's generic code path, every
 * architecture other than x86-64, and -march=native without AVX2), included
 * by grid_sorted.c when neither __AVX512F__ nor __AVX2__ is defined. Plain
 * C: the
 * tests are branch-free loops over whole runs that the compiler vectorises
 * for whatever the target has (test_range(), count_run(), write_run()), the
 * touching candidates compacted without a branch (every candidate written,
 * the count advanced only by those that touch), the contacts computed
 * straight into the caller's list. */

__attribute__((always_inline)) static inline uint64_t
simd_reach_blocks(const cell_reach *re, float x, float y, float z, float lim)
{
    return reach_blocks_portable(re, x, y, z, lim);
}

static inline uint32_t simd_count_gathered(const scratch *sc, const view *v, uint32_t q,
                                           uint64_t blocks)
{
    return count_gathered_portable(sc, v, q, blocks);
}

/* Runs of blocks tested by test_range() into hit[], then the sorted
 * indices compacted without a branch. */
static inline uint32_t simd_record_gathered(scratch *sc, const view *v, uint32_t q, uint64_t blocks,
                                            uint32_t *to)
{
    uint32_t f = 0;
    if (blocks == EVERY_BLOCK)
        blocks = blocks_upto(sc->padded);
    for (uint32_t k0, k1; next_run(&blocks, &k0, &k1);) {
        test_range(sc, v, q, k0, k1, sc->hit);
        for (uint32_t k = k0; k < k1; k++) { /* compaction without branches */
            to[f] = sc->sorted[k];
            f += sc->hit[k];
        }
    }
    return f;
}

/* Every later candidate tested by test_range() into hit[], then those
 * that touch compacted without a branch and their fields appended. */
static inline ns_contact *simd_write_gathered(scratch *sc, found *fd, const view *v, uint32_t q,
                                              ns_contact *out)
{
    float px = sc->x[q], py = sc->y[q], pz = sc->z[q];
    unsigned char *hit = sc->hit; /* may alias sc: keep the bound in a local */
    uint32_t padded = sc->padded;
    test_range(sc, v, q, 0, padded, hit);
    if (fd->count + padded > PAIRS)
        out = flush(fd, v, out);
    /* compaction without branches: every candidate is written, and kept
     * only when it touches */
    uint16_t *at = sc->at;
    uint32_t n = 0;
    for (uint32_t k = 0; k < padded; k++) {
        at[n] = (uint16_t)k;
        n += hit[k];
    }
    uint32_t a = sc->id[q], f = fd->count;
    float pr = v->r ? sc->r[q] : 0.0f;
    for (uint32_t t = 0; t < n; t++, f++) {
        uint32_t k = at[t];
        fd->a[f] = a;
        fd->b[f] = sc->id[k];
        fd->dx[f] = sc->x[k] - px;
        fd->dy[f] = sc->y[k] - py;
        fd->dz[f] = sc->z[k] - pz;
        if (v->r)
            fd->s[f] = pr + sc->r[k];
    }
    fd->count = f;
    return out;
}

/* Straight into the caller's list. */
__attribute__((always_inline)) static inline void
simd_keep_filled(found *fd, uint32_t t, const ns_contact *c, ns_contact *out)
{
    (void)fd;
    out[t] = *c;
}

/* Nothing: simd_keep_filled() wrote the contacts to out. */
__attribute__((always_inline)) static inline void simd_stream_found(const found *fd, uint32_t m,
                                                                    ns_contact *out)
{
    (void)fd, (void)m, (void)out;
}

/* No gathers: append_recorded() takes every recorded contact one by one. */
__attribute__((always_inline)) static inline uint32_t
simd_gather_recorded(found *fd, uint32_t f, const view *v, const probe *pp, const uint32_t *k,
                     uint32_t h)
{
    (void)fd, (void)f, (void)v, (void)pp, (void)k, (void)h;
    return 0;
}

/* Writes the contacts of a probe with the run [b, e) of v straight to out
 * by write_run(), after what is pending in fd. */
static ns_contact *write_probe_run(const view *v, const probe *p, uint32_t b, uint32_t e, found *fd,
                                   ns_contact *out)
{
    if (fd->count + (e - b) > PAIRS)
        out = flush(fd, v, out);
    if (e - b > PAIRS)
        return write_run(v, p, b, e, out);
    out = flush(fd, v, out);
    return write_run(v, p, b, e, out);
}

/* Records the contacts of a probe with the run [b, e) of v into to (room
 * for e - b + LANES): the sorted index of each, compacted without a
 * branch. */
static inline uint32_t record_probe_run(const view *v, const probe *p, uint32_t b, uint32_t e,
                                        uint32_t *to)
{
    uint32_t f = 0;
    for (uint32_t k = b; k < e; k++) {
        to[f] = k;
        f += ns__touching(ns__distance2(v->x[k] - p->x, v->y[k] - p->y, v->z[k] - p->z),
                          p->r + v->r[k]);
    }
    return f;
}

/* Run by run: written, recorded or counted. */
static size_t simd_rows_contacts(const view *v, const probe *p, const uint32_t *b0,
                                 const uint32_t *b1, int rows, found *fd, ns_contact **out,
                                 recorder *rc, size_t *tested)
{
    size_t hits = 0;
    for (int r = 0; r < rows; r++) {
        *tested += b1[r] - b0[r];
        if (*out) {
            *out = write_probe_run(v, p, b0[r], b1[r], fd, *out);
        } else if (rc && rc->on && rc->end - rc->at >= b1[r] - b0[r] + LANES) {
            uint32_t h = record_probe_run(v, p, b0[r], b1[r], rc->k + rc->at);
            rc->at += h;
            hits += h;
        } else {
            if (rc)
                rc->on = false;
            hits += count_run(v, p, b0[r], b1[r]);
        }
    }
    return hits;
}

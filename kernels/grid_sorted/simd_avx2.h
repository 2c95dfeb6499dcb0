/* grid_sorted/simd_avx2.h - part of grid_sorted.c: the operations of simd.h
 * on the AVX2 path (the build's avx2 code path, or -march=native on a CPU
 * with AVX2 and not AVX-512), included by grid_sorted.c when __AVX2__ is
 * defined and __AVX512F__ is not. A vector holds 8 floats; a comparison gives a vector
 * of all-ones or zero lanes, turned into an 8-bit mask by movemask. AVX2
 * has no compress: the touching lanes are moved to the front by the
 * permutation of the mask (compress_permutation(), from record.h's
 * COMPRESS8), and the contacts are written 8 at a time, interleaved and
 * streamed (store8()). Where this path has no loop of its own, the
 * portable ones serve: a crowded cell's reach (reach_blocks_portable()),
 * the counting of runs of blocks (count_gathered_portable()), the rows
 * across levels found one by one (row_run(), in cross_contacts()). */
#include <immintrin.h>

/* The AVX2 twin of own16: the cell's own particle q in every lane of 8. */
typedef struct own8 {
    __m256 x, y, z, r, ru;
    __m256i q;
    bool radii;
} own8;

static inline own8 own8_of(const scratch *sc, const view *v, uint32_t q)
{
    return (own8){_mm256_set1_ps(sc->x[q]),
                  _mm256_set1_ps(sc->y[q]),
                  _mm256_set1_ps(sc->z[q]),
                  _mm256_set1_ps(v->r ? sc->r[q] : v->ru),
                  _mm256_set1_ps(v->ru),
                  _mm256_set1_epi32((int)q),
                  v->r != NULL};
}

/* Which of the 8 candidates from k0 on come after q and touch it (a mask
 * of 8 bits), with x_k - x_q (likewise y, z) and r_q + r_k. */
static inline unsigned own8_test(const own8 *o, const scratch *sc, uint32_t k0, __m256 *DX,
                                 __m256 *DY, __m256 *DZ, __m256 *S)
{
    const __m256i LANE = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    *DX = _mm256_sub_ps(_mm256_loadu_ps(sc->x + k0), o->x);
    *DY = _mm256_sub_ps(_mm256_loadu_ps(sc->y + k0), o->y);
    *DZ = _mm256_sub_ps(_mm256_loadu_ps(sc->z + k0), o->z);
    __m256 D2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(*DX, *DX), _mm256_mul_ps(*DY, *DY)),
                              _mm256_mul_ps(*DZ, *DZ));
    *S = _mm256_add_ps(o->r, o->radii ? _mm256_loadu_ps(sc->r + k0) : o->ru);
    __m256i K = _mm256_add_epi32(LANE, _mm256_set1_epi32((int)k0));
    __m256 T = _mm256_and_ps(_mm256_cmp_ps(D2, _mm256_mul_ps(*S, *S), _CMP_LT_OQ),
                             _mm256_castsi256_ps(_mm256_cmpgt_epi32(K, o->q)));
    return (unsigned)_mm256_movemask_ps(T);
}

/* The permutation that moves the lanes of mask m to the front. */
static inline __m256i compress_permutation(unsigned m)
{
    return _mm256_srlv_epi32(_mm256_set1_epi32((int)COMPRESS8[m]),
                             _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28));
}

/* keep16() for 8 lanes, compacted by the permutation of mask m. */
static inline void keep8(found *fd, uint32_t f, unsigned m, __m256 DX, __m256 DY, __m256 DZ,
                         const __m256 *S, __m256i B, __m256i A)
{
    __m256i P = compress_permutation(m);
    _mm256_storeu_ps(fd->dx + f, _mm256_permutevar8x32_ps(DX, P));
    _mm256_storeu_ps(fd->dy + f, _mm256_permutevar8x32_ps(DY, P));
    _mm256_storeu_ps(fd->dz + f, _mm256_permutevar8x32_ps(DZ, P));
    if (S)
        _mm256_storeu_ps(fd->s + f, _mm256_permutevar8x32_ps(*S, P));
    _mm256_storeu_si256((__m256i *)(void *)(fd->b + f), _mm256_permutevar8x32_epi32(B, P));
    _mm256_storeu_si256((__m256i *)(void *)(fd->a + f), A);
}

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

/* As simd_write_gathered()'s loop (8 candidates at a time, runs of blocks),
 * the sorted indices compacted. */
static inline uint32_t simd_record_gathered(scratch *sc, const view *v, uint32_t q, uint64_t blocks,
                                            uint32_t *to)
{
    uint32_t f = 0;
    own8 o = own8_of(sc, v, q);
    if (blocks == EVERY_BLOCK)
        blocks = blocks_upto(sc->padded);
    for (uint32_t k0, k1; next_run(&blocks, &k0, &k1);)
        for (; k0 < k1; k0 += 8) {
            __m256 DX, DY, DZ, S;
            unsigned m = own8_test(&o, sc, k0, &DX, &DY, &DZ, &S);
            __m256i I = _mm256_loadu_si256((const __m256i *)(const void *)(sc->sorted + k0));
            _mm256_storeu_si256((__m256i *)(void *)(to + f),
                                _mm256_permutevar8x32_epi32(I, compress_permutation(m)));
            f += (uint32_t)__builtin_popcount(m);
        }
    return f;
}

/* One vector of 8 candidates at a time, the touching ones compacted by
 * keep8() (fd->sparse is the AVX-512 path's: not used here). */
static inline ns_contact *simd_write_gathered(scratch *sc, found *fd, const view *v, uint32_t q,
                                              ns_contact *out)
{
    uint32_t padded = sc->padded;
    if (fd->count + padded > PAIRS)
        out = flush(fd, v, out);
    uint32_t f = fd->count;
    own8 o = own8_of(sc, v, q);
    __m256i A = _mm256_set1_epi32((int)sc->id[q]);
    for (uint32_t k0 = 0; k0 < padded; k0 += 8) {
        __m256 DX, DY, DZ, S;
        unsigned m = own8_test(&o, sc, k0, &DX, &DY, &DZ, &S);
        keep8(fd, f, m, DX, DY, DZ, v->r ? &S : NULL,
              _mm256_loadu_si256((const __m256i *)(const void *)(sc->id + k0)), A);
        f += (uint32_t)__builtin_popcount(m);
    }
    fd->count = f;
    return out;
}

/* The AVX2 twin of store16: 8 contacts (3 x 64 bytes, out aligned to 64).
 * The fields paired into 64-bit lanes (i j, overlap nx, ny nz) for contacts
 * 0-3 and 4-7, then each 32-byte store gathered from the three pairs by a
 * permutation of each and two blends. */
static inline void interleave4(ns_contact *out, __m256i ij, __m256i on, __m256i yz)
{
    __m256i *to = (__m256i *)(void *)out;
    _mm256_stream_si256(
        to, _mm256_blend_epi32(_mm256_blend_epi32(_mm256_permute4x64_epi64(ij, 0x40),
                                                  _mm256_permute4x64_epi64(on, 0x00), 0x0c),
                               _mm256_permute4x64_epi64(yz, 0x00), 0x30));
    _mm256_stream_si256(
        to + 1, _mm256_blend_epi32(_mm256_blend_epi32(_mm256_permute4x64_epi64(on, 0x81),
                                                      _mm256_permute4x64_epi64(yz, 0x04), 0x0c),
                                   _mm256_permute4x64_epi64(ij, 0x20), 0x30));
    _mm256_stream_si256(
        to + 2, _mm256_blend_epi32(_mm256_blend_epi32(_mm256_permute4x64_epi64(yz, 0xc2),
                                                      _mm256_permute4x64_epi64(ij, 0x0c), 0x0c),
                                   _mm256_permute4x64_epi64(on, 0x30), 0x30));
}

static inline void store8(ns_contact *out, const found *fd, uint32_t t)
{
    __m256i i = _mm256_loadu_si256((const __m256i *)(const void *)(fd->a + t));
    __m256i j = _mm256_loadu_si256((const __m256i *)(const void *)(fd->b + t));
    __m256i o = _mm256_loadu_si256((const __m256i *)(const void *)(fd->s + t));
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(fd->dx + t));
    __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(fd->dy + t));
    __m256i z = _mm256_loadu_si256((const __m256i *)(const void *)(fd->dz + t));
    /* 64-bit lanes: lo = pairs 0 1 | 4 5, hi = pairs 2 3 | 6 7 */
    __m256i ijl = _mm256_unpacklo_epi32(i, j), ijh = _mm256_unpackhi_epi32(i, j);
    __m256i onl = _mm256_unpacklo_epi32(o, x), onh = _mm256_unpackhi_epi32(o, x);
    __m256i yzl = _mm256_unpacklo_epi32(y, z), yzh = _mm256_unpackhi_epi32(y, z);
    interleave4(out, _mm256_permute2x128_si256(ijl, ijh, 0x20),
                _mm256_permute2x128_si256(onl, onh, 0x20),
                _mm256_permute2x128_si256(yzl, yzh, 0x20));
    interleave4(out + 4, _mm256_permute2x128_si256(ijl, ijh, 0x31),
                _mm256_permute2x128_si256(onl, onh, 0x31),
                _mm256_permute2x128_si256(yzl, yzh, 0x31));
}

/* The fields, in place, for store8(). */
__attribute__((always_inline)) static inline void
simd_keep_filled(found *fd, uint32_t t, const ns_contact *c, ns_contact *out)
{
    fd->a[t] = c->i, fd->b[t] = c->j, fd->s[t] = c->overlap;
    fd->dx[t] = c->nx, fd->dy[t] = c->ny, fd->dz[t] = c->nz;
    (void)out;
}

/* Interleaved and streamed 8 at a time by store8(). */
__attribute__((always_inline)) static inline void simd_stream_found(const found *fd, uint32_t m,
                                                                    ns_contact *out)
{
    uint32_t t = 0; /* one by one up to a 64-byte boundary, then 8 at a time */
    for (; t < m && ((uintptr_t)(out + t) & 63) != 0; t++)
        out[t] = (ns_contact){fd->a[t], fd->b[t], fd->s[t], fd->dx[t], fd->dy[t], fd->dz[t]};
    for (; t + 8 <= m; t += 8)
        store8(out + t, fd, t);
    _mm_sfence(); /* the streamed lines are visible before anything later */
    for (; t < m; t++)
        out[t] = (ns_contact){fd->a[t], fd->b[t], fd->s[t], fd->dx[t], fd->dy[t], fd->dz[t]};
}

/* 8 recorded contacts at a time, the tail's lanes masked, gathered by
 * index with the same operations as the test, so the same values. */
__attribute__((always_inline)) static inline uint32_t
simd_gather_recorded(found *fd, uint32_t f, const view *v, const probe *pp, const uint32_t *k,
                     uint32_t h)
{
    uint32_t t = 0;
    __m256 PX = _mm256_set1_ps(pp->x), PY = _mm256_set1_ps(pp->y), PZ = _mm256_set1_ps(pp->z);
    __m256 PR = _mm256_set1_ps(pp->r), zero = _mm256_setzero_ps();
    __m256i A = _mm256_set1_epi32((int)pp->id);
    const __m256i LANE = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (; t < h && h - t >= ONE_BY_ONE; t += 8) {
        __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(h - t < 8 ? h - t : 8)), LANE);
        __m256 inf = _mm256_castsi256_ps(in);
        __m256i KI = _mm256_maskload_epi32((const int *)(const void *)(k + t), in);
        _mm256_storeu_ps(fd->dx + f + t,
                         _mm256_sub_ps(_mm256_mask_i32gather_ps(zero, v->x, KI, inf, 4), PX));
        _mm256_storeu_ps(fd->dy + f + t,
                         _mm256_sub_ps(_mm256_mask_i32gather_ps(zero, v->y, KI, inf, 4), PY));
        _mm256_storeu_ps(fd->dz + f + t,
                         _mm256_sub_ps(_mm256_mask_i32gather_ps(zero, v->z, KI, inf, 4), PZ));
        if (v->r)
            _mm256_storeu_ps(fd->s + f + t,
                             _mm256_add_ps(PR, _mm256_mask_i32gather_ps(zero, v->r, KI, inf, 4)));
        _mm256_storeu_si256((__m256i *)(void *)(fd->b + f + t),
                            _mm256_mask_i32gather_epi32(_mm256_setzero_si256(),
                                                        (const int *)(const void *)v->order, KI, in,
                                                        4));
        _mm256_storeu_si256((__m256i *)(void *)(fd->a + f + t), A);
    }
    return t;
}

/* A probe's coordinates and radius, each in every lane. */
typedef struct probe8 {
    __m256 x, y, z, r;
} probe8;

static inline probe8 probe8_of(const probe *p)
{
    return (probe8){_mm256_set1_ps(p->x), _mm256_set1_ps(p->y), _mm256_set1_ps(p->z),
                    _mm256_set1_ps(p->r)};
}

/* The AVX2 twin of probe16_test(): which of the candidates k0 .. k0 + 7
 * of v, those before e (in), touch the probe P: a mask, lane by lane, with
 * the differences DX, DY, DZ and the sums of radii S that decided it. */
static inline unsigned probe8_test(const probe8 *P, const view *v, uint32_t k0, uint32_t e,
                                   __m256i *in, __m256 *DX, __m256 *DY, __m256 *DZ, __m256 *S)
{
    const __m256i LANE = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    int left = e - k0 >= 8 ? 8 : (int)(e - k0);
    *in = _mm256_cmpgt_epi32(_mm256_set1_epi32(left), LANE);
    *DX = _mm256_sub_ps(_mm256_maskload_ps(v->x + k0, *in), P->x);
    *DY = _mm256_sub_ps(_mm256_maskload_ps(v->y + k0, *in), P->y);
    *DZ = _mm256_sub_ps(_mm256_maskload_ps(v->z + k0, *in), P->z);
    __m256 D2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(*DX, *DX), _mm256_mul_ps(*DY, *DY)),
                              _mm256_mul_ps(*DZ, *DZ));
    *S = _mm256_add_ps(P->r, _mm256_maskload_ps(v->r + k0, *in));
    __m256 T = _mm256_and_ps(_mm256_cmp_ps(D2, _mm256_mul_ps(*S, *S), _CMP_LT_OQ),
                             _mm256_castsi256_ps(*in));
    return (unsigned)_mm256_movemask_ps(T);
}

/* Writes the contacts of a probe with the run [b, e) of v into fd, tested
 * where the run lies by vectors with the tail masked, compacted as in
 * simd_write_gathered(); a run longer than fd holds straight to out by
 * write_run(), after what is pending. */
static ns_contact *write_probe_run(const view *v, const probe *p, uint32_t b, uint32_t e, found *fd,
                                   ns_contact *out)
{
    if (fd->count + (e - b) > PAIRS)
        out = flush(fd, v, out);
    if (e - b > PAIRS)
        return write_run(v, p, b, e, out);
    uint32_t f = fd->count;
    probe8 P = probe8_of(p);
    __m256i A = _mm256_set1_epi32((int)p->id);
    for (uint32_t k0 = b; k0 < e; k0 += 8) {
        __m256i in;
        __m256 DX, DY, DZ, S;
        unsigned m = probe8_test(&P, v, k0, e, &in, &DX, &DY, &DZ, &S);
        keep8(fd, f, m, DX, DY, DZ, &S,
              _mm256_maskload_epi32((const int *)(const void *)(v->order + k0), in), A);
        f += (uint32_t)__builtin_popcount(m);
    }
    fd->count = f;
    return out;
}

/* Records the contacts of a probe with the run [b, e) of v into to (room
 * for e - b + LANES): the sorted index of each, compacted without a branch
 * by the vectors of write_probe_run(), their lanes moved to the front by the
 * permutation of the mask (rather than one candidate at a time:
 * docs/optimisation-log.md, "Mixed radii: levels of cells", "Kept: two
 * costs around the tests"). */
static inline uint32_t record_probe_run(const view *v, const probe *p, uint32_t b, uint32_t e,
                                        uint32_t *to)
{
    uint32_t f = 0;
    probe8 P = probe8_of(p);
    const __m256i LANE = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (uint32_t k0 = b; k0 < e; k0 += 8) {
        __m256i in;
        __m256 DX, DY, DZ, S;
        unsigned m = probe8_test(&P, v, k0, e, &in, &DX, &DY, &DZ, &S);
        __m256i K = _mm256_add_epi32(LANE, _mm256_set1_epi32((int)k0));
        _mm256_storeu_si256((__m256i *)(void *)(to + f),
                            _mm256_permutevar8x32_epi32(K, compress_permutation(m)));
        f += (uint32_t)__builtin_popcount(m);
    }
    return f;
}

/* Run by run: written into fd, recorded or counted. */
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

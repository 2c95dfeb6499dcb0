/* grid_sorted/simd_avx512.h - part of grid_sorted.c: the operations of
 * simd.h on the AVX-512 path (the build's avx512 code path, or -march=native
 * on a CPU with AVX-512), included by grid_sorted.c when __AVX512F__ is
 * defined. A vector holds 16 floats and a comparison gives a mask: a
 * particle is tested against LANES candidates at a time (own16_test(),
 * probe16_test()), the touching ones compacted by vcompressps (keep16())
 * or, where few touch, only their indices, their fields gathered afterwards
 * (gather16_found()); the contacts are written 16 at a time, interleaved by
 * permutes and stored non-temporally (store16()). Across levels, a probe's
 * rows are listed as vectors of 16 particles tested by one loop
 * (simd_rows_contacts()), and cross_contacts() (cross.h) finds them 8 at a
 * time by rows8(), which needs AVX512DQ (without it, rows8() is left out
 * and cross_contacts() finds them one by one, as on the other paths). */
#include <immintrin.h>

/* The first block of a non-empty mask (the AVX-512 loops test one block
 * at a time). */
static inline uint32_t first_block(uint64_t blocks)
{
    return (uint32_t)__builtin_ctzll(blocks);
}

/* The lanes of the first min(left, 16) elements. */
static inline __mmask16 tail_mask16(uint32_t left)
{
    return left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1u);
}

/* A probe in every lane, and its test against the 16 particles of v from
 * k0 on that the mask in keeps (the others are not loaded): the mask of
 * those that touch, with x_k - x_p (likewise y, z) and r_p + r_k. */
typedef struct probe16 {
    __m512 x, y, z, r;
} probe16;

static inline probe16 probe16_of(const probe *p)
{
    return (probe16){_mm512_set1_ps(p->x), _mm512_set1_ps(p->y), _mm512_set1_ps(p->z),
                     _mm512_set1_ps(p->r)};
}

static inline __mmask16 probe16_test(const probe16 *P, const view *v, uint32_t k0, __mmask16 in,
                                     __m512 *DX, __m512 *DY, __m512 *DZ, __m512 *S)
{
    *DX = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, v->x + k0), P->x);
    *DY = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, v->y + k0), P->y);
    *DZ = _mm512_sub_ps(_mm512_maskz_loadu_ps(in, v->z + k0), P->z);
    __m512 D2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(*DX, *DX), _mm512_mul_ps(*DY, *DY)),
                              _mm512_mul_ps(*DZ, *DZ));
    *S = _mm512_add_ps(P->r, _mm512_maskz_loadu_ps(in, v->r + k0));
    return _mm512_mask_cmp_ps_mask(in, D2, _mm512_mul_ps(*S, *S), _CMP_LT_OQ);
}

/* The same test against the 16 candidates of the scratch from k0 on (ru:
 * every radius, or NULL for the scratch's radii). */
static inline __mmask16 gathered16_test(const probe16 *P, const scratch *sc, const __m512 *ru,
                                        uint32_t k0, __m512 *DX, __m512 *DY, __m512 *DZ, __m512 *S)
{
    *DX = _mm512_sub_ps(_mm512_loadu_ps(sc->x + k0), P->x);
    *DY = _mm512_sub_ps(_mm512_loadu_ps(sc->y + k0), P->y);
    *DZ = _mm512_sub_ps(_mm512_loadu_ps(sc->z + k0), P->z);
    __m512 D2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(*DX, *DX), _mm512_mul_ps(*DY, *DY)),
                              _mm512_mul_ps(*DZ, *DZ));
    *S = _mm512_add_ps(P->r, ru ? *ru : _mm512_loadu_ps(sc->r + k0));
    return _mm512_cmp_ps_mask(D2, _mm512_mul_ps(*S, *S), _CMP_LT_OQ);
}

/* The cell's own particle q in every lane, to test against 16 candidates. */
typedef struct own16 {
    probe16 p;
    __m512 ru; /* every radius, when the scratch has none */
    __m512i q;
    bool radii;
} own16;

static inline own16 own16_of(const scratch *sc, const view *v, uint32_t q)
{
    return (own16){probe16_of(&(probe){sc->x[q], sc->y[q], sc->z[q], v->r ? sc->r[q] : v->ru, 0}),
                   _mm512_set1_ps(v->ru), _mm512_set1_epi32((int)q), v->r != NULL};
}

/* Which of the 16 candidates from k0 on come after q and touch it, with
 * x_k - x_q (likewise y, z) and r_q + r_k. */
static inline __mmask16 own16_test(const own16 *o, const scratch *sc, uint32_t k0, __m512 *DX,
                                   __m512 *DY, __m512 *DZ, __m512 *S)
{
    const __m512i LANE = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    return gathered16_test(&o->p, sc, o->radii ? NULL : &o->ru, k0, DX, DY, DZ, S) &
           _mm512_cmpgt_epu32_mask(_mm512_add_epi32(LANE, _mm512_set1_epi32((int)k0)), o->q);
}

/* The 14 stencil cells' squared distances in the lanes of one vector. */
__attribute__((always_inline)) static inline uint64_t
simd_reach_blocks(const cell_reach *re, float x, float y, float z, float lim)
{
    /* T: lanes 0-2 the gaps to the cells below (x, y, z), squared, 4-6 those
     * above, 3 zero; each stencil cell (a lane) adds one lane per axis */
    const __m512i IX = _mm512_setr_epi32(3, 4, 0, 3, 4, 0, 3, 4, 0, 3, 4, 0, 3, 4, 3, 3);
    const __m512i IY = _mm512_setr_epi32(3, 3, 5, 5, 5, 1, 1, 1, 3, 3, 3, 5, 5, 5, 3, 3);
    const __m512i IZ = _mm512_setr_epi32(3, 3, 3, 3, 3, 6, 6, 6, 6, 6, 6, 6, 6, 6, 3, 3);
    __m128 P = _mm_setr_ps(x, y, z, 0.0f), zero = _mm_setzero_ps();
    __m128 below = _mm_max_ps(_mm_sub_ps(P, _mm_loadu_ps(re->lo)), zero);
    __m128 above = _mm_max_ps(_mm_sub_ps(_mm_loadu_ps(re->hi), P), zero);
    below = _mm_mul_ps(below, below), above = _mm_mul_ps(above, above);
    below = _mm_blend_ps(below, zero, 8), above = _mm_blend_ps(above, zero, 8);
    __m512 T = _mm512_castps256_ps512(_mm256_set_m128(above, below));
    __m512 D2 =
        _mm512_add_ps(_mm512_add_ps(_mm512_permutexvar_ps(IX, T), _mm512_permutexvar_ps(IY, T)),
                      _mm512_permutexvar_ps(IZ, T));
    __mmask16 in = _mm512_cmp_ps_mask(D2, _mm512_set1_ps(lim), _CMP_LE_OQ);
    __m512i B =
        _mm512_or_si512(_mm512_maskz_loadu_epi64((__mmask8)in, re->blocks),
                        _mm512_maskz_loadu_epi64((__mmask8)((in >> 8) & 0x3f), re->blocks + 8));
    return (uint64_t)_mm512_reduce_or_epi64(B);
}

/* One vector per block, the hits counted lane by lane, added up once. */
static inline uint32_t simd_count_gathered(const scratch *sc, const view *v, uint32_t q,
                                           uint64_t blocks)
{
    own16 o = own16_of(sc, v, q);
    __m512i count = _mm512_setzero_si512(), one = _mm512_set1_epi32(1);
    for (; blocks; blocks &= blocks - 1) {
        __m512 DX, DY, DZ, S;
        count = _mm512_mask_add_epi32(
            count, own16_test(&o, sc, first_block(blocks) * LANES, &DX, &DY, &DZ, &S), count, one);
    }
    return (uint32_t)_mm512_reduce_add_epi32(count);
}

/* Appends the sorted indices of the candidates of the 16 from k0 on that
 * the cell's own particle q touches to to + f; returns how many. */
static inline uint32_t record16(const own16 *o, const scratch *sc, uint32_t k0, uint32_t *to)
{
    __m512 DX, DY, DZ, S;
    __mmask16 m = own16_test(o, sc, k0, &DX, &DY, &DZ, &S);
    _mm512_storeu_si512(to, _mm512_maskz_compress_epi32(m, _mm512_loadu_si512(sc->sorted + k0)));
    return (uint32_t)__builtin_popcount(m);
}

/* One vector per block (every block up to padded for EVERY_BLOCK), the
 * sorted indices of the touching candidates compacted. */
static inline uint32_t simd_record_gathered(scratch *sc, const view *v, uint32_t q, uint64_t blocks,
                                            uint32_t *to)
{
    uint32_t f = 0;
    own16 o = own16_of(sc, v, q);
    if (blocks == EVERY_BLOCK)
        for (uint32_t k0 = 0; k0 < sc->padded; k0 += LANES)
            f += record16(&o, sc, k0, to + f);
    else
        for (; blocks; blocks &= blocks - 1)
            f += record16(&o, sc, first_block(blocks) * LANES, to + f);
    return f;
}

/* The candidates of mask m appended to fd at f, compacted: x_k - x_p
 * (likewise y, z), r_p + r_k (S, NULL for one radius for all), the
 * caller's index of each (B) and of the particle tested (A). */
static inline void keep16(found *fd, uint32_t f, __mmask16 m, __m512 DX, __m512 DY, __m512 DZ,
                          const __m512 *S, __m512i B, __m512i A)
{
    _mm512_storeu_ps(fd->dx + f, _mm512_maskz_compress_ps(m, DX));
    _mm512_storeu_ps(fd->dy + f, _mm512_maskz_compress_ps(m, DY));
    _mm512_storeu_ps(fd->dz + f, _mm512_maskz_compress_ps(m, DZ));
    if (S)
        _mm512_storeu_ps(fd->s + f, _mm512_maskz_compress_ps(m, *S));
    _mm512_storeu_si512(fd->b + f, _mm512_maskz_compress_epi32(m, B));
    _mm512_storeu_si512(fd->a + f, A);
}

/* The fields of up to 16 contacts of the probe P (its caller's index in
 * every lane of A) with the particles KI of the arrays x, y, z (r: their
 * radii, NULL for one radius for all; ids: their caller's indices), the
 * lanes of in, stored into fd from t on: gathered by index, the same
 * operations as the test, so the same values. */
static inline void gather16_found(found *fd, uint32_t t, __mmask16 in, __m512i KI, const float *x,
                                  const float *y, const float *z, const float *r,
                                  const uint32_t *ids, const probe16 *P, __m512i A)
{
    __m512 zero = _mm512_setzero_ps();
    _mm512_storeu_ps(fd->dx + t, _mm512_sub_ps(_mm512_mask_i32gather_ps(zero, in, KI, x, 4), P->x));
    _mm512_storeu_ps(fd->dy + t, _mm512_sub_ps(_mm512_mask_i32gather_ps(zero, in, KI, y, 4), P->y));
    _mm512_storeu_ps(fd->dz + t, _mm512_sub_ps(_mm512_mask_i32gather_ps(zero, in, KI, z, 4), P->z));
    if (r)
        _mm512_storeu_ps(fd->s + t,
                         _mm512_add_ps(P->r, _mm512_mask_i32gather_ps(zero, in, KI, r, 4)));
    _mm512_storeu_si512(fd->b + t,
                        _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), in, KI, ids, 4));
    _mm512_storeu_si512(fd->a + t, A);
}

/* One vector of 16 candidates at a time, the touching ones compacted by
 * keep16(); when fd->sparse, only their indices, then their fields
 * gathered from the scratch. */
static inline ns_contact *simd_write_gathered(scratch *sc, found *fd, const view *v, uint32_t q,
                                              ns_contact *out)
{
    uint32_t padded = sc->padded;
    if (fd->count + padded > PAIRS)
        out = flush(fd, v, out);
    uint32_t f = fd->count;
    own16 o = own16_of(sc, v, q);
    __m512i A = _mm512_set1_epi32((int)sc->id[q]);
    const __m512i LANE = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (uint32_t k0 = 0; k0 < padded; k0 += 16) {
        __m512 DX, DY, DZ, S;
        __mmask16 m = own16_test(&o, sc, k0, &DX, &DY, &DZ, &S);
        if (fd->sparse)
            _mm512_storeu_si512(
                fd->b + f,
                _mm512_maskz_compress_epi32(m, _mm512_add_epi32(LANE, _mm512_set1_epi32((int)k0))));
        else
            keep16(fd, f, m, DX, DY, DZ, v->r ? &S : NULL, _mm512_loadu_si512(sc->id + k0), A);
        f += (uint32_t)__builtin_popcount(m);
    }
    /* sparse: only the candidates' indices were stored; the few that
     * touch get their fields gathered from the scratch by them (the
     * same operations, so the same values), 16 at a time */
    for (uint32_t t = fd->count; fd->sparse && t < f; t += 16) {
        __mmask16 in = tail_mask16(f - t);
        gather16_found(fd, t, in, _mm512_maskz_loadu_epi32(in, fd->b + t), sc->x, sc->y, sc->z,
                       v->r ? sc->r : NULL, sc->id, &o.p, A);
    }
    fd->count = f;
    return out;
}

/* Contacts from their fields in separate arrays, 16 at a time (6 x 64
 * bytes, out aligned to 64): the fields paired into 64-bit lanes (i j,
 * overlap nx, ny nz), then three lanes per contact. The compiler would store
 * them one field at a time. The stores are non-temporal: the list (24
 * bytes a contact, far larger than the caches for a large set) goes to
 * memory without first reading each line into the cache, though the caller
 * then reads the contacts from memory (measured: docs/optimisation-log.md,
 * "Sorting and layouts"). */
static inline void interleave8(ns_contact *out, __m512i ij, __m512i on, __m512i yz)
{
    const __m512i a0 = _mm512_setr_epi64(0, 8, 0, 1, 9, 0, 2, 10),
                  b0 = _mm512_setr_epi64(0, 0, 0, 0, 0, 1, 0, 0);
    const __m512i a1 = _mm512_setr_epi64(0, 3, 11, 0, 4, 12, 0, 5),
                  b1 = _mm512_setr_epi64(2, 0, 0, 3, 0, 0, 4, 0);
    const __m512i a2 = _mm512_setr_epi64(13, 0, 6, 14, 0, 7, 15, 0),
                  b2 = _mm512_setr_epi64(0, 5, 0, 0, 6, 0, 0, 7);
    __m512i *to = (__m512i *)(void *)out;
    _mm512_stream_si512(
        to, _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(ij, a0, on), 0x24, b0, yz));
    _mm512_stream_si512(
        to + 1, _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(ij, a1, on), 0x49, b1, yz));
    _mm512_stream_si512(
        to + 2, _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(ij, a2, on), 0x92, b2, yz));
}

static inline void store16(ns_contact *out, const found *fd, uint32_t t)
{
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    __m512i i = _mm512_loadu_si512(fd->a + t), j = _mm512_loadu_si512(fd->b + t);
    __m512i o = _mm512_loadu_si512(fd->s + t), x = _mm512_loadu_si512(fd->dx + t);
    __m512i y = _mm512_loadu_si512(fd->dy + t), z = _mm512_loadu_si512(fd->dz + t);
    interleave8(out, _mm512_permutex2var_epi32(i, lo, j), _mm512_permutex2var_epi32(o, lo, x),
                _mm512_permutex2var_epi32(y, lo, z));
    interleave8(out + 8, _mm512_permutex2var_epi32(i, hi, j), _mm512_permutex2var_epi32(o, hi, x),
                _mm512_permutex2var_epi32(y, hi, z));
}

/* The fields, in place, for store16(). */
__attribute__((always_inline)) static inline void
simd_keep_filled(found *fd, uint32_t t, const ns_contact *c, ns_contact *out)
{
    fd->a[t] = c->i, fd->b[t] = c->j, fd->s[t] = c->overlap;
    fd->dx[t] = c->nx, fd->dy[t] = c->ny, fd->dz[t] = c->nz;
    (void)out;
}

/* Interleaved and streamed 16 at a time by store16(). */
__attribute__((always_inline)) static inline void simd_stream_found(const found *fd, uint32_t m,
                                                                    ns_contact *out)
{
    uint32_t t = 0; /* one by one up to a 64-byte boundary, then 16 at a time */
    for (; t < m && ((uintptr_t)(out + t) & 63) != 0; t++)
        out[t] = (ns_contact){fd->a[t], fd->b[t], fd->s[t], fd->dx[t], fd->dy[t], fd->dz[t]};
    for (; t + 16 <= m; t += 16)
        store16(out + t, fd, t);
    _mm_sfence(); /* the streamed lines are visible before anything later */
    for (; t < m; t++)
        out[t] = (ns_contact){fd->a[t], fd->b[t], fd->s[t], fd->dx[t], fd->dy[t], fd->dz[t]};
}

/* 16 recorded contacts at a time gathered by gather16_found(), the same
 * operations as the test, so the same values. */
__attribute__((always_inline)) static inline uint32_t
simd_gather_recorded(found *fd, uint32_t f, const view *v, const probe *pp, const uint32_t *k,
                     uint32_t h)
{
    uint32_t t = 0;
    probe16 P = probe16_of(pp);
    __m512i A = _mm512_set1_epi32((int)pp->id);
    for (; t < h && h - t >= ONE_BY_ONE; t += 16) {
        __mmask16 in = tail_mask16(h - t);
        gather16_found(fd, f + t, in, _mm512_maskz_loadu_epi32(in, k + t), v->x, v->y, v->z, v->r,
                       v->order, &P, A);
    }
    return t;
}

/* The runs cut into vectors of 16 particles and listed (the first sorted
 * index of each, and how many of its lanes hold particles), 8 vectors of a
 * run at a time without a branch, then tested by one loop over the list. A
 * run holds a few vectors, and a loop of its own for each ended in a branch
 * that mispredicts; in one list, the tests of several runs overlap
 * (docs/optimisation-log.md, "Mixed radii: levels of cells", "Kept: two
 * costs around the tests"). At most PAIRS particles are listed at a time,
 * so that what they find fits fd. */
enum { RUN_VECTORS = 8, LISTED = PAIRS / 16 };
typedef struct vectors {
    uint32_t first[LISTED], lanes[LISTED];
    uint32_t count, particles;
} vectors;

/* Lists the vectors of the runs from run *r on (its particles from *at on)
 * while they fit; *r and *at are left at the first particle not listed. */
static inline void list_vectors(const uint32_t *b0, const uint32_t *b1, int rows, int *r,
                                uint32_t *at, vectors *vs)
{
    const __m256i STEP = _mm256_setr_epi32(0, 16, 32, 48, 64, 80, 96, 112);
    const __m256i ZERO = _mm256_setzero_si256(), FULL = _mm256_set1_epi32(16);
    vs->count = vs->particles = 0;
    while (*r < rows && vs->count + RUN_VECTORS <= LISTED) {
        uint32_t b = b0[*r] + *at, left = b1[*r] - b;
        uint32_t part = left < RUN_VECTORS * 16 ? left : RUN_VECTORS * 16;
        __m256i K = _mm256_add_epi32(_mm256_set1_epi32((int)b), STEP);
        __m256i L = _mm256_min_epi32(
            _mm256_max_epi32(_mm256_sub_epi32(_mm256_set1_epi32((int)part), STEP), ZERO), FULL);
        _mm256_storeu_si256((__m256i *)(void *)(vs->first + vs->count), K);
        _mm256_storeu_si256((__m256i *)(void *)(vs->lanes + vs->count), L);
        vs->count += (part + 15) / 16;
        vs->particles += part;
        if (left > part) {
            *at += part;
        } else {
            *at = 0;
            (*r)++;
        }
    }
}

static inline __mmask16 lanes_mask(uint32_t lanes)
{
    return (__mmask16)((1u << lanes) - 1u);
}

/* Writes the contacts of the probe with the listed particles into fd
 * (room for vs->particles + 16), compacted as in simd_write_gathered(). */
static inline void write_vectors(const view *v, const probe *p, const vectors *vs, found *fd)
{
    uint32_t f = fd->count;
    probe16 P = probe16_of(p);
    __m512i A = _mm512_set1_epi32((int)p->id);
    for (uint32_t j = 0; j < vs->count; j++) {
        uint32_t k0 = vs->first[j];
        __mmask16 in = lanes_mask(vs->lanes[j]);
        __m512 DX, DY, DZ, S;
        __mmask16 m = probe16_test(&P, v, k0, in, &DX, &DY, &DZ, &S);
        keep16(fd, f, m, DX, DY, DZ, &S, _mm512_maskz_loadu_epi32(in, v->order + k0), A);
        f += (uint32_t)__builtin_popcount(m);
    }
    fd->count = f;
}

/* Records the sorted index of each listed particle the probe touches into
 * to (room for vs->particles + LANES); returns how many. */
static inline uint32_t record_vectors(const view *v, const probe *p, const vectors *vs,
                                      uint32_t *to)
{
    uint32_t f = 0;
    probe16 P = probe16_of(p);
    const __m512i LANE = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const view w = *v; /* a copy the stores below cannot alias: else its arrays are reloaded */
    for (uint32_t j = 0; j < vs->count; j++) {
        uint32_t k0 = vs->first[j];
        __m512 DX, DY, DZ, S;
        __mmask16 m = probe16_test(&P, &w, k0, lanes_mask(vs->lanes[j]), &DX, &DY, &DZ, &S);
        _mm512_storeu_si512(to + f, _mm512_maskz_compress_epi32(
                                        m, _mm512_add_epi32(LANE, _mm512_set1_epi32((int)k0))));
        f += (uint32_t)__builtin_popcount(m);
    }
    return f;
}

static inline uint32_t count_vectors(const view *v, const probe *p, const vectors *vs)
{
    uint32_t hits = 0;
    probe16 P = probe16_of(p);
    for (uint32_t j = 0; j < vs->count; j++) {
        __m512 DX, DY, DZ, S;
        hits += (uint32_t)__builtin_popcount(
            probe16_test(&P, v, vs->first[j], lanes_mask(vs->lanes[j]), &DX, &DY, &DZ, &S));
    }
    return hits;
}

/* The runs listed, at most LISTED vectors at a time, then written into fd,
 * recorded or counted. */
static size_t simd_rows_contacts(const view *v, const probe *p, const uint32_t *b0,
                                 const uint32_t *b1, int rows, found *fd, ns_contact **out,
                                 recorder *rc, size_t *tested)
{
    size_t hits = 0;
    vectors vs;
    int r = 0;
    uint32_t at = 0;
    while (r < rows) {
        list_vectors(b0, b1, rows, &r, &at, &vs);
        *tested += vs.particles;
        if (*out) {
            if (fd->count + vs.particles > PAIRS)
                *out = flush(fd, v, *out);
            write_vectors(v, p, &vs, fd);
        } else if (rc && rc->on && rc->end - rc->at >= vs.particles + LANES) {
            uint32_t h = record_vectors(v, p, &vs, rc->k + rc->at);
            rc->at += h;
            hits += h;
        } else {
            if (rc)
                rc->on = false;
            hits += count_vectors(v, p, &vs);
        }
    }
    return hits;
}

#if defined(__AVX512DQ__)
/* The distances from p to the cells c of a level's grid along one axis,
 * less slack, at least 0, lane by lane (as gap(), cross.h, does for one). */
static inline __m512d gaps8(__m512d C, double cell, double p, double slack)
{
    const __m512d ZERO = _mm512_setzero_pd();
    __m512d CELL = _mm512_set1_pd(cell), P = _mm512_set1_pd(p);
    __m512d A = _mm512_mul_pd(C, CELL),
            B = _mm512_mul_pd(_mm512_add_pd(C, _mm512_set1_pd(1.0)), CELL);
    __m512d D = _mm512_max_pd(_mm512_max_pd(_mm512_sub_pd(A, P), _mm512_sub_pd(P, B)), ZERO);
    return _mm512_max_pd(_mm512_sub_pd(D, _mm512_set1_pd(slack)), ZERO);
}

/* The runs of the rows i0 .. i0 + 7 (those below all) of the reach box,
 * its rows numbered y fastest (ny of them per layer z), in the operations
 * row_run() (cross.h) makes for one row, lane by lane: appends those that
 * hold particles to b and e (room for 8), in order; returns how many. One
 * row at a time, this arithmetic and its two loads were the largest part of
 * powder's search across levels; a layer at a time, half the lanes were past
 * the box's 3 or 4 rows (docs/optimisation-log.md, "Mixed radii: levels of
 * cells", "Kept: two costs around the tests"). */
static inline int rows8(const level *f, const view *vf, const reach_rows *rr, int64_t i0,
                        int64_t ny, int64_t all, uint32_t *b, uint32_t *e)
{
    const ns__grid *g = &f->grid;
    const __m512d ZERO = _mm512_setzero_pd(), ONE = _mm512_set1_pd(1.0);
    __m512d I = _mm512_add_pd(_mm512_set1_pd((double)i0),
                              _mm512_setr_pd(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0));
    __mmask8 in = _mm512_cmp_pd_mask(I, _mm512_set1_pd((double)all), _CMP_LT_OQ);
    /* the layer, floor((i + 1/2) / ny): (i + 1/2) / ny is at least
     * 1 / (2 ny) from a whole number, and the reciprocal's rounding moves
     * it by about (i / ny) 2^-52, far less while ny nz < 2^32 (the box
     * lies in the level's grid) */
    __m512d NY = _mm512_set1_pd((double)ny);
    __m512d ZO = _mm512_roundscale_pd(
        _mm512_mul_pd(_mm512_add_pd(I, _mm512_set1_pd(0.5)), _mm512_set1_pd(1.0 / (double)ny)),
        _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512d Y =
        _mm512_add_pd(_mm512_set1_pd((double)rr->lo[1]), _mm512_sub_pd(I, _mm512_mul_pd(ZO, NY)));
    __m512d Z = _mm512_add_pd(_mm512_set1_pd((double)rr->lo[2]), ZO);
    __m512d DY = gaps8(Y, g->cell, rr->py, rr->slack_y),
            DZ = gaps8(Z, g->cell, rr->pz, rr->slack_z);
    __m512d left = _mm512_sub_pd(_mm512_sub_pd(_mm512_set1_pd(rr->reach2), _mm512_mul_pd(DY, DY)),
                                 _mm512_mul_pd(DZ, DZ));
    in &= _mm512_cmp_pd_mask(left, ZERO, _CMP_GE_OQ);
    __m512d W =
        _mm512_add_pd(_mm512_sqrt_pd(_mm512_max_pd(left, ZERO)), _mm512_set1_pd(rr->slack_x));
    __m512d PX = _mm512_set1_pd(rr->px), INV = _mm512_set1_pd(g->inv_cell);
    __m512d X0 = _mm512_max_pd(_mm512_roundscale_pd(_mm512_mul_pd(_mm512_sub_pd(PX, W), INV),
                                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC),
                               _mm512_set1_pd((double)rr->lo[0]));
    __m512d X1 = _mm512_min_pd(_mm512_roundscale_pd(_mm512_mul_pd(_mm512_add_pd(PX, W), INV),
                                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC),
                               _mm512_set1_pd((double)rr->hi[0]));
    in &= _mm512_cmp_pd_mask(X0, X1, _CMP_LE_OQ);
    /* dense_cell() of (x0, y, z), exact in double (fewer than 2^32 cells) */
    const int64_t *lo = g->cell_lo;
    __m512d row = _mm512_add_pd(
        _mm512_mul_pd(_mm512_add_pd(_mm512_sub_pd(Z, _mm512_set1_pd((double)lo[2])), ONE),
                      _mm512_set1_pd((double)f->dim[1])),
        _mm512_add_pd(_mm512_sub_pd(Y, _mm512_set1_pd((double)lo[1])), ONE));
    __m512d first = _mm512_add_pd(_mm512_mul_pd(row, _mm512_set1_pd((double)f->dim[0])),
                                  _mm512_sub_pd(X0, _mm512_set1_pd((double)lo[0] - 1.0)));
    __m512d last = _mm512_add_pd(_mm512_add_pd(first, _mm512_sub_pd(X1, X0)), ONE);
    const __m256i NONE = _mm256_setzero_si256();
    __m256i S = _mm512_mask_i64gather_epi32(NONE, in, _mm512_cvttpd_epi64(first), vf->start, 4);
    __m256i E = _mm512_mask_i64gather_epi32(NONE, in, _mm512_cvttpd_epi64(last), vf->start, 4);
    __mmask8 full = in & _mm256_cmpneq_epi32_mask(S, E);
    _mm256_storeu_si256((__m256i *)(void *)b, _mm256_maskz_compress_epi32(full, S));
    _mm256_storeu_si256((__m256i *)(void *)e, _mm256_maskz_compress_epi32(full, E));
    return __builtin_popcount(full);
}

#endif

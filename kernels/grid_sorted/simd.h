/* grid_sorted/simd.h - part of grid_sorted.c: the operations each code path
 * does its own way, declared. grid_sorted.c is compiled once per code path
 * (kernel.h) and includes, after the parts whose functions they call,
 * exactly one file that defines them: simd_avx512.h (AVX-512: 16 lanes,
 * masks, compress, gathers), simd_avx2.h (AVX2: 8 lanes, compaction by a
 * permutation looked up from the comparison mask) or simd_portable.h (plain
 * loops the compiler vectorises as it can). Every path computes each value
 * with the same operations in the same order, so they all find the same
 * contacts, bit for bit (the isa tests check it).
 *
 * What they do, stage by stage of the search:
 *  - a crowded dense cell's reach: simd_reach_blocks();
 *  - a particle against the candidates gathered in the scratch:
 *    simd_count_gathered(), simd_record_gathered(), simd_write_gathered();
 *  - the found contacts' values computed and written: simd_keep_filled(),
 *    simd_stream_found() (in flush());
 *  - recorded contacts written again: simd_gather_recorded();
 *  - across levels: simd_rows_contacts() tests a probe's rows. Finding
 *    those rows is the one choice of code path left outside these files,
 *    in cross_contacts() (cross.h), which calls the AVX-512 path's rows8().
 *
 * They are static, in the one translation unit, so no function pointer and
 * no test of the path stand between the generic code and them. Those that
 * were whole functions before keep their inline keyword (simd_rows_contacts()
 * none). Those that hold code once written in place inside a generic
 * function (simd_reach_blocks(), simd_keep_filled(), simd_stream_found(),
 * simd_gather_recorded()) are always_inline: GCC then optimises them inside
 * their caller, where a plain inline function too large to be inlined
 * early is optimised on its own first and its caller gets other registers
 * and spills. So each path's object code is what the code written in one
 * function gives, instruction for instruction. */

/* The blocks of the scratch holding the candidates of the stencil cells
 * within reach of a particle at (x, y, z) (see reach_of_cell()), lim the
 * square of its reach, widened (reach_blocks()). */
__attribute__((always_inline)) static inline uint64_t
simd_reach_blocks(const cell_reach *re, float x, float y, float z, float lim);

/* The contacts of the cell's own particle q with the later candidates of
 * the scratch in the blocks of the mask (not EVERY_BLOCK), counted. */
static inline uint32_t simd_count_gathered(const scratch *sc, const view *v, uint32_t q,
                                           uint64_t blocks);

/* The same contacts (blocks may be EVERY_BLOCK) recorded: the sorted index
 * of each candidate that touches q, in order, into to (room for
 * sc->padded + LANES); returns how many. */
static inline uint32_t simd_record_gathered(scratch *sc, const view *v, uint32_t q, uint64_t blocks,
                                            uint32_t *to);

/* The contacts of the cell's own particle q with every later candidate of
 * the scratch appended to fd (x_k - x_q, likewise y, z, and per-particle
 * r_q + r_k, with both caller's indices), after flushing fd to out when
 * they might not fit; returns out past what was flushed. On the AVX-512
 * path, when fd->sparse, only the indices of those that touch are
 * compacted and their fields gathered afterwards. */
static inline ns_contact *simd_write_gathered(scratch *sc, found *fd, const view *v, uint32_t q,
                                              ns_contact *out);

/* Where fill_found() puts found contact t once computed (c): back into fd's
 * arrays on the x86 paths, for simd_stream_found(); out[t] elsewhere. */
__attribute__((always_inline)) static inline void
simd_keep_filled(found *fd, uint32_t t, const ns_contact *c, ns_contact *out);

/* Writes fd's m contacts filled in place to out (x86: one by one up to a
 * 64-byte boundary, then interleaved by permutes and stored non-temporally,
 * 16 or 8 at a time, then the rest one by one); nothing where
 * simd_keep_filled() wrote them to out already. */
__attribute__((always_inline)) static inline void simd_stream_found(const found *fd, uint32_t m,
                                                                    ns_contact *out);

/* The recorded contacts k[0 .. h) of probe pp with the particles of v
 * appended to fd from f on by gathers of a vector's width, while at least
 * ONE_BY_ONE are left; returns how many it took (past h when its last
 * gather took the rest; 0 where there are no gathers): append_recorded()
 * takes those left one by one. */
__attribute__((always_inline)) static inline uint32_t
simd_gather_recorded(found *fd, uint32_t f, const view *v, const probe *pp, const uint32_t *k,
                     uint32_t h);

/* The contacts of a probe with the runs [b0[r], b1[r]) of v (a finer level,
 * with radii), r < rows (the rows of its reach box: cross_contacts()):
 * counted (*out NULL), recorded when rc is on and has room (else rc turned
 * off and counted), or written into fd (flushed to *out as it fills);
 * *tested += the pairs tested. The AVX-512 path lists the runs as vectors
 * of 16 particles and tests them by one loop; the others test run by run. */
static size_t simd_rows_contacts(const view *v, const probe *p, const uint32_t *b0,
                                 const uint32_t *b1, int rows, found *fd, ns_contact **out,
                                 recorder *rc, size_t *tested);

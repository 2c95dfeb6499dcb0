/* grid_sorted - particles reordered into cell order, half stencil, vectorised test.
 *
 * The kernel to link into a simulation. The build is a parallel counting sort
 * (stable: one table of counts per thread, without atomics, where those
 * tables fit in the space the positions will take)
 * that copies positions (and radii) into cell order as separate float arrays,
 * so each cell's particles are contiguous and the distance test streams
 * through memory. Three ways to number the cells, chosen per build:
 *  - dense: a grid over the bounding box with one empty layer of cells around
 *    it, when it has at most 2 cells per particle. Cells are numbered x
 *    fastest, so the three cells x-1, x, x+1 of a row are one contiguous run
 *    of particles;
 *  - blocked (dambreak's empty air, clusters, a sheet): only the blocks of
 *    4 x 4 x 4 cells that hold particles, each laid out like a small dense
 *    grid (x fastest), numbered in the order of a coarse grid of blocks over
 *    the bounding box (one number per block, at most 1.5 blocks per
 *    particle), so neighbouring blocks lie near each other in memory; when
 *    the non-empty blocks have at most 2 cells per particle;
 *  - hashed (particles far apart): the same blocks, or blocks of 2 x 2 x 2
 *    or single cells when bigger ones would break the 2 cells per particle,
 *    found through a hash table of the blocks.
 *    In both, a cell's neighbours are mostly in its own block, a row of them
 *    in one block is one run, and the blocks around are looked up once per
 *    block, not once per cell. Memory stays proportional to n.
 * Every pair is tested once: a particle against the later particles of its
 * own cell and the particles of 13 of the 26 neighbour cells (the half
 * stencil: +x; the row y+1; the nine cells of z+1). A cell's candidates are
 * gathered side by side into a scratch padded with NaN, and each of its
 * particles is tested against all of them by one plain loop that the
 * compiler vectorises; the contacts found are compacted (AVX-512 compress,
 * on the AVX2 path a permutation looked up from the mask, a branch-free
 * loop elsewhere; every vector of candidates is stored whether or not it
 * holds a contact, which is faster than a branch that mispredicts; where
 * the count found few contacts per candidate, only the indices of those
 * that touch, their fields gathered afterwards) and
 * their values computed by a second vectorised loop, then streamed to the
 * list (a crowded neighbourhood that does not fit the scratch is tested run
 * by run; a few sparse cells of a row are gathered and tested as one, see
 * span_of()).
 * The query runs twice over units of cells in parallel (runs of cells that
 * hold at least UNIT_PARTICLES particles, see plan_units()): first counting
 * the contacts of each unit, then writing each unit's contacts at its offset
 * in the caller's list, so no per-thread buffer is merged and the order of the
 * contacts does not depend on the thread count. Inside a cell the particles
 * keep the caller's order, so the whole result is deterministic. From the
 * second query of an index on, the first pass also records the contacts it
 * finds (the other particle of each, 4 bytes, see recorder), in room for as
 * many as the last query had, and the second pass writes them without
 * testing again, which matters where most candidates do not touch
 * (polydisperse: docs/optimisation-log.md, "Recording the counting pass").
 * Mixed radii are split into levels of cells by radius class, each such a
 * grid (see levels.h).
 * O(n / T) time, at most 40 bytes per particle with one level, 4 more
 * with several (each particle's index, level by level), and for the
 * records 4.5 bytes per contact of the last query and 2 per particle and
 * level (see info()).
 *
 * The parts, in the order they build on one another: each a header of
 * grid_sorted/, included once, below, into this one translation unit, so
 * that every function stays static and the hot loops inline as they would
 * in one file.
 *   types.h       the constants and the data: a level, the index's state,
 *                 and what a search works with
 *   simd.h        the operations each code path does its own way, declared
 *   geometry.h    how cells and blocks are numbered: the key of the sort
 *   sort.h        the counting sorts into cell order
 *   layout.h      one level's build: dense, blocked or hashed; its units
 *   levels.h      radius classes and levels of cells; build()
 *   stencil.h     the runs of a cell's half stencil; spans of sparse cells
 *   candidates.h  a probe against a run; a cell's candidates gathered and
 *                 tested by the portable loop; a crowded cell's reach
 *   record.h      found contacts computed and written; recorded ones
 *                 written again; the AVX2 path's compaction table
 *   simd_avx512.h, simd_avx2.h or simd_portable.h
 *                 simd.h's operations for the code path this file is
 *                 compiled for, the one chosen below (they call the parts
 *                 above: flush(), the portable loops)
 *   cross.h       the search across levels: a probe's reach box and rows
 *   query.h       a cell's contacts, the passes over units: query(),
 *                 count(), stream()
 *   info.h        destroy() and info() */
#include "kernel.h"

#include <omp.h>
#include <string.h>

#include "grid_sorted/types.h"
#include "grid_sorted/simd.h"
#include "grid_sorted/geometry.h"
#include "grid_sorted/sort.h"
#include "grid_sorted/layout.h"
#include "grid_sorted/levels.h"
#include "grid_sorted/stencil.h"
#include "grid_sorted/candidates.h"
#include "grid_sorted/record.h"
/* The one place where the code path is chosen: the same conditions as the
 * compiler's own (CMakeLists.txt gives each path its -m options). */
#if defined(__AVX512F__)
#include "grid_sorted/simd_avx512.h"
#elif defined(__AVX2__)
#include "grid_sorted/simd_avx2.h"
#else
#include "grid_sorted/simd_portable.h"
#endif
#include "grid_sorted/cross.h"
#include "grid_sorted/query.h"
#include "grid_sorted/info.h"

const ns_kernel_ops NS__OPS(grid_sorted) = {.build = build,
                                            .query = query,
                                            .info = info,
                                            .destroy = destroy,
                                            .count = count,
                                            .stream = stream};

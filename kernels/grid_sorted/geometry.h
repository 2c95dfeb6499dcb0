/* grid_sorted/geometry.h - part of grid_sorted.c: how cells and blocks are
 * numbered. A particle's cell is floor(x / cell) along each axis (the grid
 * of core.h). A dense level numbers its cells x fastest over the bounding
 * box with an empty layer of cells around it (dense_cell()). The blocked
 * and hashed layouts cut space into blocks of 2^shift cells along each axis
 * and number a cell by its block (its place in the grid of blocks, or its
 * hash group) then by its local cell inside the block, x fastest.
 * particle_key() is that number for a particle: the key the counting sorts
 * (sort.h) order the particles by. */

static inline void cell_of(const ns__grid *g, float x, float y, float z, int64_t c[3])
{
    c[0] = ns__cell_coord(g, x);
    c[1] = ns__cell_coord(g, y);
    c[2] = ns__cell_coord(g, z);
}

/* The block of a cell coordinate: floor(c / 2^shift), written so that it
 * does not rely on how >> treats a negative number. */
static inline int64_t block_coord(int64_t c, int shift)
{
    return c >= 0 ? c >> shift : ~(~c >> shift);
}

/* Blocked and hashed: a block is 2^shift cells along each axis, numbered x fastest
 * inside it (its local cell); blocks are hashed into groups. */
static inline size_t block_cells(const level *s)
{
    return (size_t)1 << (3 * s->shift);
}

static inline uint32_t local_cell(const int64_t c[3], int shift)
{
    uint32_t mask = (1u << shift) - 1u;
    return ((uint32_t)c[0] & mask) | ((uint32_t)c[1] & mask) << shift |
           ((uint32_t)c[2] & mask) << (2 * shift);
}

static inline uint32_t block_group(const int64_t b[3], size_t groups)
{
    return ns__hash_cell(b[0], b[1], b[2], groups);
}

static inline void block_of_cell(const int64_t c[3], int shift, int64_t b[3])
{
    for (int k = 0; k < 3; k++)
        b[k] = block_coord(c[k], shift);
}

/* Blocked: the place of block b in the grid of blocks. */
static inline size_t coarse_index(const level *s, const int64_t b[3])
{
    return (size_t)(((b[2] - s->first[2]) * s->dim[1] + (b[1] - s->first[1])) * s->dim[0] +
                    (b[0] - s->first[0]));
}

/* Dense: the number of cell c (x fastest, shifted by the empty layer). */
static inline size_t dense_cell(const level *s, const int64_t c[3])
{
    const int64_t *lo = s->grid.cell_lo;
    uint64_t x = (uint64_t)(c[0] - lo[0] + 1), y = (uint64_t)(c[1] - lo[1] + 1),
             z = (uint64_t)(c[2] - lo[2] + 1);
    return (size_t)((z * (uint64_t)s->dim[1] + y) * (uint64_t)s->dim[0] + x);
}

/* The key of each particle: its dense cell (x fastest, shifted by the empty
 * layer), or its block's number (blocked) or hash group (hashed), then its
 * local cell. */
static inline uint32_t particle_key(const level *s, const ns__input *in, size_t i)
{
    const float *p = in->pos + 3 * caller_index(s, i);
    int64_t c[3];
    cell_of(&in->grid, p[0], p[1], p[2], c);
    if (s->layout != DENSE) {
        int64_t b[3];
        block_of_cell(c, s->shift, b);
        uint32_t block =
            s->layout == BLOCKED ? s->coarse.a[coarse_index(s, b)] : block_group(b, s->groups);
        return block << (3 * s->shift) | local_cell(c, s->shift);
    }
    return (uint32_t)dense_cell(s, c);
}

/* The cell and block of the caller's particle i. */
static inline void particle_block(const ns__input *in, int shift, uint32_t i, int64_t c[3],
                                  int64_t b[3])
{
    const float *p = in->pos + 3 * (size_t)i;
    cell_of(&in->grid, p[0], p[1], p[2], c);
    block_of_cell(c, shift, b);
}

static inline bool same_block(const int64_t a[3], const int64_t b[3])
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

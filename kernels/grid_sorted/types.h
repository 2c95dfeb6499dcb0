/* grid_sorted/types.h - part of grid_sorted.c, included first: the kernel's
 * constants and its data. A level is one grid of particles sorted into cell
 * order: the layout of its cells, its sorted arrays (view: as the loops read
 * them) and its units of parallel work. The state is the index: up to
 * LEVELS levels and what a query keeps from one call to the next. The rest
 * is what a search works with: the runs of a cell's half stencil, the
 * blocks around a cell, a probe (one particle tested against runs), the
 * scratch a cell's candidates are gathered into, the reach of a crowded
 * cell's particles, the contacts found but not yet written, the recorder
 * of the counting pass and the reach box of a search across levels. The
 * functions that use them are in the parts that follow. */

enum {
    UNIT = 64,        /* cells per step of a unit of parallel work (see plan_units()) */
    BLOCK_SHIFT = 2,  /* a block of the blocked and hashed layouts: 2^2 = 4 cells per axis */
    CHUNK = 32,       /* candidates tested together before their contacts are written */
    SMALL = 24,       /* groups up to this size are sorted by insertion (by block) */
    SMALL_INDEX = 64, /* likewise by index alone: the atomic scatter leaves each cell a
                       * merge of the threads' ascending runs, nearly sorted */
    COPY = 16,        /* elements per move when gathering candidates (see copy_floats) */
    SLACK = COPY,
    SHARES = 256, /* at most this many shares of the particles in a stable sort */
};

/* At most this many levels of cells (see levels.h). */
enum { LEVELS = 6 };

/* How a level's cells are numbered (see the top of grid_sorted.c, and
 * layout.h). */
typedef enum layout { DENSE, BLOCKED, HASHED } layout;

/* One grid of particles sorted into cell order (built by build_level(),
 * layout.h). */
typedef struct level {
    layout layout;
    int shift;            /* blocked, hashed: a block is 2^shift cells along each axis */
    int64_t dim[3];       /* dense: cells per axis; blocked: blocks per axis (each with
                           * its empty layer) */
    int64_t first[3];     /* blocked: the block coordinate of the first layer */
    size_t cells;         /* dense: all grid cells; else blocks x cells per block */
    size_t groups;        /* hashed: hash groups of blocks */
    ns__u32s coarse;      /* blocked: the grid of blocks + 1: the number of each
                           * non-empty one */
    ns__u32s start;       /* cells + 1: the first sorted particle of each cell */
    ns__u32s order;       /* n: the caller's index of each sorted particle */
    ns__u32s key;         /* n: the key of each particle in the counting sort (then spare) */
    ns__u32s bucket;      /* hashed: groups x cells per block + 1: the counting sort's */
    ns__u32s group_first; /* hashed: groups + 1: the first block of each group */
    ns__u32s unit_cell;   /* units + 1: the first cell of each unit (see plan_units()) */
    ns__buf soa;          /* floats: x[n], y[n], z[n], then r[n] for per-particle radii */
    ns__grid grid;        /* the cells this level is binned in */
    bool radii;           /* r[] in soa; else every radius is ru */
    float ru;
    size_t units; /* runs of cells: the parallel work */
    size_t n;
    const uint32_t *ids; /* while a level of several is sorted: the caller's index of its
                          * particle i (see caller_index()); NULL: the caller's particle i */
} level;

/* The caller's index of a level's particle i. The counting sort numbers a
 * level's particles 0 .. n - 1 (key[], its shares); from its scatter on,
 * order[] holds the caller's indices, so that every later step reads the
 * caller's positions and radii as a single level does. A level of several
 * reads them through its ids rather than a copy of its particles, which
 * another thread would have written (see list_levels()). */
static inline size_t caller_index(const level *s, size_t i)
{
    return s->ids ? s->ids[i] : i;
}

/* The sorted arrays, as the loops read them. */
typedef struct view {
    const float *x, *y, *z, *r; /* r NULL: every radius is ru */
    float ru;
    const uint32_t *order, *start;
} view;

/* The index: its levels (each with its particles' range in ids' order and
 * its units' range in the units of all levels), and what a query keeps for
 * the next (the units' counts, a streaming batch, the records). */
typedef struct state {
    level level[LEVELS];
    int levels;
    size_t particle_first[LEVELS + 1]; /* of each level, in ids' order */
    size_t unit_first[LEVELS + 1];     /* of each level, counted over all levels */
    ns__u32s ids;       /* more than one level: n, the caller's index of each particle,
                         * level by level (each in the caller's order) */
    ns__buf threads;    /* more than one level: size_t, particles per share and class, then
                         * each share's first place in each level (list_levels()) */
    ns__buf unit_total; /* size_t: units + 1 contact counts, then offsets */
    ns__buf batch;      /* ns_contact: one batch of a streaming query */
    /* a query's recorded contacts (see recorder) */
    ns__u32s records;    /* the other particle of each */
    ns__buf record_hits; /* uint16_t: levels per particle, level by level */
    ns__buf unit_record; /* size_t: per unit, its first record, or UNRECORDED */
    size_t records_last; /* for the next query: the last one's contacts */
    size_t n;
} state;

#define UNRECORDED SIZE_MAX

/* The runs of particles a cell is tested against, besides its own later
 * particles (up to own_end): the half stencil. */
typedef struct runs {
    uint32_t own_end;
    int count;
    uint32_t begin[13], end[13];
} runs;

/* Blocked and hashed: the 27 blocks around the current one (by offset, 13 is itself),
 * each looked up when a cell first needs it. */
#define BLOCK_UNKNOWN (UINT32_MAX - 1)
#define BLOCK_ABSENT UINT32_MAX
typedef struct around {
    size_t block; /* SIZE_MAX: none yet */
    int64_t at[3];
    uint32_t id[27];
} around;

/* A particle tested against runs of a level: its position, radius and the
 * caller's index. Inside a level it is one of its own sorted particles;
 * across levels, a particle of a coarser level tested against a finer
 * one's runs. */
typedef struct probe {
    float x, y, z, r;
    uint32_t id;
} probe;

/* A cell's candidates side by side: its own particles first, then the runs
 * of the half stencil, padded with NaN (which touches nothing) to whole
 * vectors, so one fixed-width loop tests a particle against all of them.
 * A cell whose candidates do not fit is tested run by run instead. */
enum { SCRATCH = 1024, LANES = 16 };
typedef struct scratch {
    float x[SCRATCH], y[SCRATCH], z[SCRATCH], r[SCRATCH];
    uint32_t id[SCRATCH];     /* the caller's index */
    uint32_t sorted[SCRATCH]; /* the sorted index, when recording (see recorder) */
    unsigned char hit[SCRATCH];
    uint16_t at[SCRATCH];     /* the candidates that touch, compacted */
    uint64_t blocks[SCRATCH]; /* per own particle, its blocks within reach (reach_contacts()) */
    uint32_t own, padded;
    bool record; /* fill sorted[] */
} scratch;

/* The cells of a dense level's half stencil, the own cell first (see
 * STENCIL_AT in candidates.h). */
enum { STENCIL = 14 };

/* What a crowded cell's particles need to find the cells of its stencil
 * within their reach (reach_of_cell(), reach_blocks()). */
typedef struct cell_reach {
    uint64_t blocks[STENCIL]; /* the blocks of each stencil cell's candidates */
    float lo[4], hi[4];       /* the own cell's box, shrunk by the margin (and a 0) */
    float max_radius;
} cell_reach;

/* Contacts found but not yet written: for each, the caller's indices a, b
 * of the two particles, x_b - x_a (likewise y, z) and, for per-particle
 * radii, the sum of radii; then their values, computed in one vectorised
 * loop. */
enum { PAIRS = 2048 };
typedef struct found {
    uint32_t a[PAIRS + 16], b[PAIRS + 16];
    float dx[PAIRS + 16], dy[PAIRS + 16], dz[PAIRS + 16], s[PAIRS + 16];
    uint32_t count;
    bool sparse; /* few contacts per candidate: see sparse(), simd_write_gathered() */
} found;

/* Recording: the first pass of a query keeps, besides each unit's count,
 * the contacts it found: for each sorted particle the number of its
 * contacts with the later candidates of its level and with each finer
 * level (hits, one count per level from its own on), and for each contact
 * the sorted index of the other particle in its level, in the order they
 * were found. The second pass then writes them without testing again
 * (expand_unit()), in the same order, with the same values. Each thread
 * records into its own slice of the records; a unit that does not fit in
 * what is left of it, that holds a crowded cell, or a particle with more
 * than 65,535 contacts with a finer level, is not recorded and is tested
 * again. */
typedef struct recorder {
    uint32_t *k;    /* the records: the other particle of each contact */
    uint16_t *hits; /* the current level's counts: levels per sorted particle */
    int levels;     /* of the index: counts per particle */
    size_t at, end; /* this thread's free records */
    bool on;        /* the current unit is recorded so far */
} recorder;

/* What cross_contacts() needs to find the rows of a probe's reach box in
 * finer level f: the probe, its reach, and the margins for rounding. */
typedef struct reach_rows {
    double px, py, pz, reach2, slack_x, slack_y, slack_z;
    int64_t lo[3], hi[3];
} reach_rows;

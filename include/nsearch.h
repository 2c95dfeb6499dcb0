/* nsearch.h - neighbourhood (contact) search for particle simulations.
 *
 * Given n particles with centres p_i and radii r_i, find every contact: each
 * unordered pair {i, j} with |p_j - p_i| < r_i + r_j, reported once as i < j
 * with its overlap and unit normal. Several kernels (all pairs, dense grid,
 * spatial hashes, and grid_sorted: a grid in cell order, the fastest, the
 * one to use) compute bit-identical results through one API.
 *
 * Numbers: the test is the float comparison d2 < (r_i + r_j)^2 with
 * d2 = dx*dx + dy*dy + dz*dz. It is exact (no overflow or underflow can
 * change its answer) for every radius that is 0 or within [2^-60, 2^60]
 * (about 8.67e-19 to 1.15e18): r_i + r_j <= 2^61, so its square is finite,
 * and at least 2^-120, a normal float. Other radii are refused
 * (NS_ERR_INVALID_INPUT): change the length unit. A distance that overflows
 * to infinity is correctly no contact. The centres count as coincident, with
 * the normal (0, 0, 0), when d2 is below FLT_MIN (2^-126: centres closer
 * than about 1.1e-19), where d2 has lost precision; the overlap is always
 * (r_i + r_j) - sqrt(d2).
 *
 * Quick start (one call):
 *
 *     ns_particles p = {.n = n, .pos = xyz, .radius = NULL, .radius_uniform = h / 2};
 *     ns_contact_list contacts;
 *     ns_contact_list_init(&contacts);
 *     ns_error err;
 *     if (ns_find_contacts(ns_kernel_find("grid_sorted"), &p, NULL, &contacts, &err) != NS_OK)
 *         fprintf(stderr, "%s\n", err.message);
 *     ... contacts.items[0 .. contacts.count) ...
 *     ns_contact_list_free(&contacts);
 *
 * For repeated searches (one per simulation frame) create an index once, then
 * build and query it every frame; its memory and the contact list's memory
 * are reused and grow only when needed.
 *
 * Errors: every fallible call returns an ns_status and, when given a non-NULL
 * ns_error, fills it with the status, the first offending particle (if any)
 * and a one-line message; on success it clears it (NS_OK, no particle, an
 * empty message). The library never prints, exits or aborts (but see
 * ns_max_threads() for what OpenMP itself may do).
 *
 * NULL arguments never crash. The ns_error may always be NULL; a NULL config
 * or ns_sim_frame means the defaults / not written. Any other NULL pointer
 * makes a fallible call return NS_ERR_INVALID_ARGUMENT (arrays of n items may
 * be NULL when n is 0), makes a call without a status do nothing (init,
 * free, sort, destroy, get_info, ns_sim_spawn, ns_sim_box_around), and makes
 * a lookup or accessor return NULL, 0 or false (the exceptions are noted at
 * the declarations).
 *
 * Thread safety: the kernel and workload tables are immutable. Different
 * indexes and contact lists may be used concurrently from different threads;
 * one index or one contact list must not be used by two threads at once.
 * Particle arrays are only read and may be shared. ns_set_allocator() must be
 * called before any other call and never concurrently with one. Parallel
 * kernels start OpenMP parallel regions; called from inside an active
 * parallel region they follow OpenMP's nesting rules (by default, one thread).
 */
#ifndef NSEARCH_H
#define NSEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NS_VERSION_MAJOR 0
#define NS_VERSION_MINOR 2
#define NS_VERSION_PATCH 0
#define NS_VERSION_STRING "0.2.0"

/* Particle indices are uint32_t: at most NS_MAX_PARTICLES particles. */
#define NS_MAX_PARTICLES ((size_t)UINT32_MAX)

/* Cell coordinates floor(x / cell) beyond +-2^62 are refused (NS_ERR_TOO_LARGE). */
#define NS_MAX_CELL_COORD 4611686018427387904.0 /* 2^62 */

/* Default cap on grid_dense's cell storage. */
#define NS_DEFAULT_GRID_MAX_BYTES ((size_t)1 << 30)

typedef enum ns_status {
    NS_OK = 0,
    NS_ERR_INVALID_ARGUMENT,  /* a NULL pointer, unknown name, bad setting */
    NS_ERR_INVALID_INPUT,     /* non-finite coordinate, radius not 0 or in [2^-60, 2^60] */
    NS_ERR_OUT_OF_MEMORY,     /* an allocation failed; nothing leaked */
    NS_ERR_TOO_LARGE,         /* too many particles, cell coordinates beyond 2^62,
                                 or a dense grid over its memory cap */
    NS_ERR_TOO_MANY_CONTACTS, /* more contacts than config.max_contacts */
    NS_ERR_IO                 /* writing a file failed */
} ns_status;

/* A short stable name for a status, e.g. "too large". Never NULL. */
const char *ns_status_str(ns_status status);

/* Filled by fallible calls when non-NULL. */
typedef struct ns_error {
    ns_status status;
    size_t particle; /* first offending particle, or NS_NO_PARTICLE (also for a bad
                        radius_uniform, which is no one particle's) */
    size_t line;     /* 1-based line of a particle file (parser), or 0 */
    char message[256];
} ns_error;
#define NS_NO_PARTICLE SIZE_MAX

/* Input: n particles, positions interleaved (pos[3*i+0..2] = x, y, z of
 * particle i), radii per particle or one radius for all (radius == NULL). */
typedef struct ns_particles {
    size_t n;
    const float *pos;
    const float *radius;
    float radius_uniform;
} ns_particles;

/* Checks n <= NS_MAX_PARTICLES, finite coordinates, and radii (or
 * radius_uniform) that are 0 or within [2^-60, 2^60], the range where
 * contacts are computed exactly (see the top of this file). Names the first
 * bad particle in err. Every build validates too, so calling this is only
 * needed to check input once, untimed, or early. */
ns_status ns_particles_validate(const ns_particles *particles, ns_error *err);

/* One contact, i < j: overlap = (r_i + r_j) - |p_j - p_i| and the unit normal
 * (p_j - p_i) / |p_j - p_i|, or (0, 0, 0) when the centres coincide: when
 * the float d2 = |p_j - p_i|^2 is below FLT_MIN (2^-126), i.e. the centres
 * are closer than about 1.1e-19. */
typedef struct ns_contact {
    uint32_t i, j;
    float overlap;
    float nx, ny, nz;
} ns_contact;

/* A growable contact list the caller owns and reuses across searches. After
 * a failed search count is 0; the memory is kept. A search that needs more
 * room than it has grows it with room to spare (an eighth more than its
 * contacts, or doubling as it fills), within max_contacts, so that a list
 * reused while the count creeps up (a simulation's) is seldom reallocated. */
typedef struct ns_contact_list {
    ns_contact *items;
    size_t count;
    size_t capacity;
} ns_contact_list;

void ns_contact_list_init(ns_contact_list *list); /* NULL: nothing */
void ns_contact_list_free(ns_contact_list *list); /* NULL: nothing */
/* Ensures capacity >= capacity_wanted (list NULL: NS_ERR_INVALID_ARGUMENT). */
ns_status ns_contact_list_reserve(ns_contact_list *list, size_t capacity_wanted, ns_error *err);
/* Sorts into (i, j) order; the kernels return contacts in any order. NULL:
 * nothing. */
void ns_contact_list_sort(ns_contact_list *list);

/* The predicate every kernel decides with, for one pair of particles of p
 * (i != j, both below p->n; the arguments are not checked): true, with *out
 * the contact (min(i,j), max(i,j), overlap, normal), when they touch. Code
 * that finds candidate pairs some other way (another library's tree, say)
 * turns them into contacts with it, bit-identical to the kernels'. */
bool ns_contact_between(const ns_particles *p, uint32_t i, uint32_t j, ns_contact *out);

/* Settings. Zero-initialise, or start from ns_config_default().
 *
 * threads: for parallel kernels, ns_skin and ns_sim; 0 = OpenMP's default
 * (omp_get_max_threads(), set by OMP_NUM_THREADS). A count above
 * ns_max_threads(), or a default above it when threads is 0, is refused with
 * NS_ERR_INVALID_ARGUMENT before any thread starts (at create, and again at
 * build for the default, which may have changed). Negative is refused too.
 *
 * table_size: buckets of the hash kernels; 0 = 2n. Larger than
 * NS_TABLE_SIZE_PER_PARTICLE x n (or NS_TABLE_SIZE_FLOOR for small n) is
 * clamped to that, since more buckets are almost all empty and only cost
 * memory; ns_index_info.table_size reports the size used. Above UINT32_MAX
 * is refused (NS_ERR_INVALID_ARGUMENT).
 *
 * max_contacts: more contacts is NS_ERR_TOO_MANY_CONTACTS, with the same
 * message from every kernel at every thread count, and exactly when the
 * contacts are more than the limit. What a search holds for contacts stays
 * within a small multiple of max_contacts x 24 bytes whatever the thread
 * count, and so does what a refusal costs:
 *   naive, grid_dense, hash_serial  the caller's list, grown by doubling to
 *       at most max_contacts (1.5x during a copy); time until the limit is
 *       passed (naive: that much of its O(n^2) pairs).
 *   naive_omp, hash_parallel  per-thread buffers with one shared count: at
 *       most 2 x max_contacts in all plus 1024 contacts per thread (3x during
 *       copies); the threads stop soon after the limit is passed.
 *   grid_sorted  counts first: a refusal holds no contacts at all and costs
 *       its counting pass until the count passes the limit (at most about
 *       half of a search). From an index's second query on, that pass also
 *       records the contacts it finds, 4 bytes each, in room for the last
 *       query's count and an eighth (part of ns_index_info.bytes).
 *   ns_skin  besides, candidates up to 2 x max_contacts (then a direct search),
 *       kept between searches; a refusal costs the candidate search too.
 * On success the list holds at most max_contacts (and the per-thread buffers
 * their copy). */
typedef struct ns_config {
    int threads;           /* see above: 0 = OpenMP's default, at most ns_max_threads() */
    size_t table_size;     /* hash kernels: buckets, 0 = 2n; clamped to 8n (at least 1024) */
    size_t grid_max_bytes; /* grid_dense cell storage cap, 0 = NS_DEFAULT_GRID_MAX_BYTES */
    size_t max_contacts;   /* more is NS_ERR_TOO_MANY_CONTACTS; 0 = ns_default_max_contacts(),
                              above NS_MAX_CONTACTS = NS_MAX_CONTACTS */
    const char *isa;       /* the kernels' code path (see ns_isa): NULL = the process's
                              (NS_ISA, else the best this CPU runs); a path's name to
                              choose it, refused when the build or the CPU lacks it */
    bool exact_threads;    /* false: a parallel kernel uses fewer threads than asked for
                              when it has too few particles for them (the kernel's
                              min_per_thread); true: exactly the threads asked for
                              (tests of the parallel code at small n) */
} ns_config;

/* The most threads any call starts: NS_THREADS_PER_CORE x the processors
 * OpenMP reports (omp_get_num_procs()). More would not run any faster, and
 * OpenMP ends the process when it cannot create or allocate for the threads
 * it is asked for, so a larger config.threads or OMP_NUM_THREADS is refused
 * (NS_ERR_INVALID_ARGUMENT) rather than passed on. libgomp still calls its
 * fatal exit (printing "libgomp: Thread creation failed" or "Out of memory
 * allocating ...") when the system refuses a thread or memory even within
 * the cap: no library can catch that. */
#define NS_THREADS_PER_CORE 8
int ns_max_threads(void);

/* table_size is clamped to max(NS_TABLE_SIZE_PER_PARTICLE x n,
 * NS_TABLE_SIZE_FLOOR): at most 8 buckets per particle keeps collisions
 * negligible (the default is 2), and the floor leaves small sets free to use
 * any small table. */
#define NS_TABLE_SIZE_PER_PARTICLE 8
#define NS_TABLE_SIZE_FLOOR 1024

/* The largest contact count any search returns (about 48 GiB of contacts). */
#define NS_MAX_CONTACTS ((size_t)1 << 31)

/* The limit when config.max_contacts is 0: the contacts of 24 bytes that fit
 * in a quarter of the machine's physical memory, at most NS_MAX_CONTACTS (and
 * NS_MAX_CONTACTS where the memory size is unknown). So n coincident
 * particles fail with NS_ERR_TOO_MANY_CONTACTS rather than exhaust memory. */
size_t ns_default_max_contacts(void);

ns_config ns_config_default(void);

/* The kernel table. */
typedef struct ns_kernel_ops ns_kernel_ops; /* private */
typedef struct ns_kernel {
    const char *name;        /* also the file kernels/<name>.c and the benchmark name */
    const char *description; /* one line */
    bool parallel;           /* uses config.threads */
    bool uses_table_size;    /* reads config.table_size */
    bool quadratic;          /* tests every pair: O(n^2) time whatever the layout */
    bool domain_memory;      /* memory grows with the domain's volume (capped by
                                config.grid_max_bytes: NS_ERR_TOO_LARGE beyond) */
    bool stable_order;       /* its raw (unsorted) contact order is the same at every
                                thread count */
    int reference;           /* its part in validating the others (nsearch-bench): 1 the
                                reference every kernel is compared with exactly; 2, 3, ...
                                where that one is too slow: the reference is the one
                                marked 2, checked against the first of 3, 4, ... that
                                succeeds; 0 none */
    bool bound;              /* its build and count time nsearch-bench's `bound` floor
                                (it has a count function; one kernel at most) */
    size_t min_per_thread;   /* a parallel kernel runs on at most n / min_per_thread
                                threads (at least 1, at most config.threads): below that
                                many particles per thread, starting and synchronising
                                one more thread costs more than it saves (measured per
                                kernel); config.exact_threads overrides it; 0: no limit */
    bool radius_levels;      /* bins particles in levels of cells by radius class, so
                                its work per contact hardly grows with the spread of
                                the radii; else the largest radius sets every cell,
                                and a small particle among large ones tests hundreds
                                of candidates (nsearch-bench stops such kernels at
                                100,000 particles on a wide_radii workload) */
    const ns_kernel_ops *ops;
} ns_kernel;

size_t ns_kernel_count(void);
const ns_kernel *ns_kernel_at(size_t k);           /* NULL when k >= count */
const ns_kernel *ns_kernel_find(const char *name); /* NULL when unknown or name is NULL */
/* The kernel whose reference field is rank (1: the reference, naive); NULL
 * when none is, or rank is 0. */
const ns_kernel *ns_kernel_with_reference(int rank);
/* The threads kernel runs a search of n particles on when asked for
 * `threads` (at least 1) without config.exact_threads: 1 for a serial
 * kernel (or kernel NULL), else threads capped at n / min_per_thread, at
 * least 1. */
int ns_kernel_threads(const ns_kernel *kernel, size_t n, int threads);

/* The code path the kernels run in this process. On x86-64 the library is
 * built (unless with NS_NATIVE=ON) with every kernel compiled for three
 * paths, "avx512", "avx2" and "generic", and runs the best one the CPU
 * supports, or the one the environment variable NS_ISA names (an index's
 * config.isa names one for that index alone); the contacts are
 * bit-identical on every path. An NS_NATIVE=ON build has the one path
 * "native" (compiled for the build machine's CPU); other architectures
 * "generic". Returns NULL with err filled when NS_ISA names a path this
 * build lacks or this CPU cannot run: every ns_index_create then fails with
 * the same error. */
const char *ns_isa(ns_error *err);
/* The paths this build has, best first, separated by spaces. */
const char *ns_isa_paths(void);

/* An index: a kernel's search structure, rebuilt for every particle set. */
typedef struct ns_index ns_index;

/* Creates an empty index for a kernel; config NULL = defaults (copied).
 * Refuses a bad config (threads, table_size) and an NS_ISA this build or
 * CPU cannot run (see ns_isa) here, before any build. */
ns_status ns_index_create(const ns_kernel *kernel, const ns_config *config, ns_index **out,
                          ns_error *err);
void ns_index_destroy(ns_index *index);
/* Builds the index over particles (validating them). The particle arrays are
 * borrowed: they must stay unchanged until the last query of this build. */
ns_status ns_index_build(ns_index *index, const ns_particles *particles, ns_error *err);
/* Replaces contacts' content with every contact of the last build. */
ns_status ns_index_query(ns_index *index, ns_contact_list *contacts, ns_error *err);

/* The number of contacts of the last build, without writing them: the
 * cheapest question a search can answer, for sizing a contact list or as the
 * floor of what a search costs. Only kernels with a counting pass have it
 * (grid_sorted); others return NS_ERR_INVALID_ARGUMENT. */
bool ns_index_can_count(const ns_index *index);
ns_status ns_index_count(ns_index *index, size_t *count, ns_error *err);

/* A streaming query: the contacts of the last build handed to sink in
 * blocks, without the whole list in memory. Concatenated, the blocks are
 * exactly what ns_index_query lists, in its order, bit for bit. The index
 * holds one batch at a time (the contacts among the cells of about 65,536
 * particles: on a bulk workload some 350 bytes per particle of the batch,
 * about 23 MB), reused by the next stream; a batch of more than
 * config.max_contacts contacts is NS_ERR_TOO_MANY_CONTACTS. sink is called
 * on the calling thread, never inside a parallel region, with count >= 1;
 * the block is valid only during the call. It returns true to go on, false
 * to end the query there (which then returns NS_OK). Only kernels with a
 * streaming pass have it (grid_sorted); others return
 * NS_ERR_INVALID_ARGUMENT. */
typedef bool (*ns_contact_sink)(const ns_contact *contacts, size_t count, void *user);
bool ns_index_can_stream(const ns_index *index);
ns_status ns_index_query_stream(ns_index *index, ns_contact_sink sink, void *user, ns_error *err);

/* What the last build made. */
typedef struct ns_index_info {
    size_t bytes;            /* memory of the index's own structures (not the contacts) */
    size_t table_size;       /* buckets used (config.table_size clamped), for hash kernels */
    size_t nonempty_buckets; /* buckets (or grid cells) holding particles */
    size_t cells;            /* grid cells, for grid kernels; else 0 */
    double cell_size;   /* the cell edge: 2 * largest radius, widened by 2^-20; 0 when no cells */
    size_t candidates;  /* pairs the last query tested by distance (its work) */
    int threads;        /* the threads the last build and query ran on (0 before a build) */
    const char *layout; /* how the last build numbered its cells, for a kernel that chooses
                           per build (grid_sorted: "dense", "blocked" or "hashed"); else
                           NULL */
    int levels;         /* grids of cells by radius class, for a kernel that splits mixed radii
                           (grid_sorted: 1, more when radii span several halvings and the
                           smaller ones are numerous enough to crowd the larger ones'
                           cells); else 0 */
} ns_index_info;
/* index NULL: info zeroed; info NULL: nothing. */
void ns_index_get_info(const ns_index *index, ns_index_info *info);

/* Validate, build, query, destroy: the whole search in one call. */
ns_status ns_find_contacts(const ns_kernel *kernel, const ns_particles *particles,
                           const ns_config *config, ns_contact_list *contacts, ns_error *err);

/* Reuse across frames: a search with a skin (a Verlet list). Particles move
 * little between frames, so one search with every radius widened by skin/2
 * finds every pair that can touch until some particle has moved skin/2 from
 * where it was; until then each search only re-tests those candidate pairs
 * with the shared predicate (the same contacts, bit for bit, as a fresh
 * search of any kernel; the order is the candidates' order). A search
 * rebuilds the candidates with the kernel when a particle has moved more than
 * 0.45 * skin (0.05 * skin is left for rounding), when n or any radius
 * changed, or always when skin is too small for float precision at the
 * particles' coordinates (below 2^-13 of their magnitude).
 * ns_skin_create takes any finite skin >= 0 (a negative, NaN or infinite
 * one is NS_ERR_INVALID_ARGUMENT). It may be at most the particles' largest
 * diameter (2 x the largest radius): a search with a larger one is refused
 * (NS_ERR_INVALID_ARGUMENT), since every pair within it would be a candidate
 * (unless every radius is 0: no contact is possible, each search is direct).
 * The candidates are limited to 2 x config.max_contacts; a rebuild that finds
 * more searches the particles directly instead (no reuse until the next
 * rebuild). */
typedef struct ns_skin ns_skin;
ns_status ns_skin_create(const ns_kernel *kernel, const ns_config *config, float skin,
                         ns_skin **out, ns_error *err);
void ns_skin_destroy(ns_skin *skin);
/* Every contact of particles, like ns_index_build + ns_index_query. */
ns_status ns_skin_search(ns_skin *skin, const ns_particles *particles, ns_contact_list *contacts,
                         ns_error *err);
typedef struct ns_skin_info {
    size_t searches;   /* calls that succeeded */
    size_t rebuilds;   /* of them, the ones that ran the kernel */
    size_t candidates; /* candidate pairs of the last rebuild */
    bool rebuilt;      /* the last search ran the kernel */
    size_t bytes;      /* the skin's own memory, the kernel's index included */
} ns_skin_info;
/* skin NULL: info zeroed; info NULL: nothing. A search that fails leaves
 * every field but bytes as it was. */
void ns_skin_get_info(const ns_skin *skin, ns_skin_info *info);

/* The workloads: particle sets for tests and benchmarks, deterministic from
 * (n, seed) at any thread count, in a table the tools list and sweep.
 * generate fills pos (3n floats) and radius (n floats); n = 0 needs no
 * arrays, a NULL one with n > 0 is NS_ERR_INVALID_ARGUMENT. The generated
 * workloads use only an integer RNG and IEEE basic operations, so they are
 * bit-identical on every machine, ignore threads and fail only on NULL
 * arrays; a simulated one (settled: ns_sim_settled) takes threads as
 * config.threads and can fail like a simulation. */
typedef struct ns_workload {
    const char *name;
    const char *description;
    ns_status (*generate)(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                          ns_error *err);
    int cache_version; /* 0: generated in moments, never cached; > 0: costly (it runs a
                          simulation), so the tools keep its particles in a cache keyed
                          by the name, this version, n and seed; the version changes
                          whenever the particles do */
    bool at_rest;      /* a pile at rest: ns_sim_spawn keeps it as it is */
    bool headline;     /* the benchmark's main workload (uniform): nsearch-bench sweeps
                          it at more sizes and the quadratic kernels to 100,000, and
                          the figures show the scaling on it; one workload at most */
    bool bulk;         /* particles filling a volume evenly, as most simulations' do
                          (uniform, polydisperse, powder, settled): nsearch-bench
                          measures the other libraries on it at every n, on the
                          others to 100,000 */
    bool wide_radii;   /* radii over two decades or more (powder): nsearch-bench measures
                          the kernels without radius_levels, and the other libraries,
                          on it to 100,000 only (one search of a million takes them
                          seconds to a minute) */
} ns_workload;

size_t ns_workload_count(void);
const ns_workload *ns_workload_at(size_t k);           /* NULL when k >= count */
const ns_workload *ns_workload_find(const char *name); /* NULL when unknown or name is NULL */
/* The generate of the workload called name (NS_ERR_INVALID_ARGUMENT when
 * there is none). */
ns_status ns_workload_generate(const char *name, size_t n, uint64_t seed, int threads, float *pos,
                               float *radius, ns_error *err);

/* A particle simulation on top of the search: spheres under gravity (along
 * -z) in a closed axis-aligned box. Each frame: predict positions from the
 * velocities (integrate), find the contacts at the predicted positions
 * (search, any kernel, or ns_skin), push overlapping pairs apart along their
 * normals and clamp centres to the box, in Jacobi passes over a per-particle
 * neighbour list sorted by index (resolve), then take the velocities from the
 * displacement (position-based dynamics). Masses are r^3. The result does
 * not depend on the kernel, the contact order or the thread count: the same
 * input gives bit-identical frames. */
typedef struct ns_sim_params {
    float dt;         /* seconds per frame (default 0.01) */
    float gravity;    /* length units per s^2, along -z (default 9.81) */
    int iterations;   /* projection passes per frame (default 10) */
    float relaxation; /* a particle moves relaxation / (its pushes) of their sum (1.5) */
    float damping;    /* fraction of the velocity removed per frame (default 0.002) */
    float shock;      /* shock propagation: in the passes a particle higher by one largest
                         diameter is 2^shock times lighter (default 1; 0: masses only) */
    float margin;     /* pairs closer than r_i + r_j + margin * (largest radius) are searched
                         for, so a push during the passes cannot move a particle into one
                         it does not know about (default 0.2) */
    float skin;       /* 0: a fresh search every frame; > 0: ns_skin with this skin, at
                         most the largest diameter (2 x the largest radius) */
    float box_lo[3], box_hi[3];
} ns_sim_params;
ns_sim_params ns_sim_params_default(void); /* the box is left empty: set it */

/* Release positions from a layout (a workload): its particles spread out
 * (radii kept), its coordinates times 2 in x and y and times 8 in z, exactly
 * (a column that settles into a pile a few particles deep), in a box around
 * them with room of two largest radii on every side. A layout at rest
 * (settled) is kept as it is, in the box ns_sim_box_around(room 0, headroom
 * 4) gives, as for a particle file. Fails as the layout's generate does, and
 * with NS_ERR_INVALID_ARGUMENT when layout or a box is NULL, or pos or
 * radius is NULL with n > 0. */
ns_status ns_sim_spawn(const ns_workload *layout, size_t n, uint64_t seed, int threads, float *pos,
                       float *radius, float box_lo[3], float box_hi[3], ns_error *err);
/* The second half of ns_sim_spawn, for particles the layout generated
 * earlier (kept in a file, say): spreads them out, or keeps them as they are
 * when the layout is at rest, and sets the box. Writes nothing when layout
 * or a box is NULL, or pos or radius is NULL with n > 0. */
void ns_sim_place(const ns_workload *layout, size_t n, float *pos, const float *radius,
                  float box_lo[3], float box_hi[3]);

/* The box around n spheres: their bounding box widened by room largest radii
 * on every side and by headroom more on top (+z); [0, 1]^3 for n = 0.
 * Writes nothing when a box is NULL, or pos or radius is NULL with n > 0. */
void ns_sim_box_around(size_t n, const float *pos, const float *radius, float room, float headroom,
                       float box_lo[3], float box_hi[3]);

typedef struct ns_sim ns_sim;
/* The search the simulation uses unless told otherwise: the one the settled
 * piles are made with and 'nsearch sim' runs by default (grid_sorted). */
const ns_kernel *ns_sim_default_kernel(void);
/* Copies pos (3n floats) and radius (n floats). Centres are clamped into the
 * box (a box narrower than a particle is NS_ERR_INVALID_ARGUMENT), then
 * overlaps present at the start are relaxed (positions only, velocities 0).
 * Refuses a skin above the largest diameter (NS_ERR_INVALID_ARGUMENT) and a
 * search radius r + margin x (largest radius) / 2 outside the exact range
 * (NS_ERR_INVALID_INPUT), besides the particles' own validation. */
ns_status ns_sim_create(const ns_kernel *kernel, const ns_config *config,
                        const ns_sim_params *params, size_t n, const float *pos,
                        const float *radius, ns_sim **out, ns_error *err);
void ns_sim_destroy(ns_sim *sim);

typedef struct ns_sim_frame {
    size_t frame;       /* frames done, this one included */
    size_t contacts;    /* found by this frame's search */
    double integrate_s; /* seconds in prediction and velocity update */
    double search_s;    /* seconds in the search */
    double resolve_s;   /* seconds in the neighbour lists and projection passes */
    bool rebuilt;       /* the search ran the kernel (always, without a skin) */
} ns_sim_frame;
/* One frame; frame may be NULL. */
ns_status ns_sim_step(ns_sim *sim, ns_sim_frame *frame, ns_error *err);

/* The accessors return 0, NULL or 0.0 for a NULL sim. */
size_t ns_sim_count(const ns_sim *sim);
/* The last frame's search: the pairs closer than r_i + r_j + margin * (largest
 * radius) at the predicted positions, in the kernel's order. */
const ns_contact_list *ns_sim_contacts(const ns_sim *sim);
const float *ns_sim_positions(const ns_sim *sim);  /* 3n */
const float *ns_sim_velocities(const ns_sim *sim); /* 3n */
const float *ns_sim_radii(const ns_sim *sim);      /* n */
/* Energies with mass r^3: 0.5 m v^2, and m g (z - box_lo[2]). */
double ns_sim_kinetic_energy(const ns_sim *sim);
double ns_sim_potential_energy(const ns_sim *sim);

/* The generator of the `settled` workload: uniform spheres (the release
 * positions of ns_sim_spawn's "uniform") dropped into their box and
 * simulated with grid_sorted until at rest (the kinetic energy below 1e-3 of
 * the potential energy released, at most NS_SETTLE_MAX_FRAMES frames). Up to NS_SETTLED_BLOCK
 * particles one pile; beyond, piles of n/k and n/k + 1 particles (k the fewest that fit) side by
 * side in x and y. Deterministic from (n, seed) at any thread count;
 * threads as config.threads (0: OpenMP's default; above ns_max_threads()
 * refused before any pile is made). */
#define NS_SETTLED_BLOCK 20000
/* Changes whenever the settled piles change: its cache_version. */
#define NS_SETTLED_VERSION 3
#define NS_SETTLE_MAX_FRAMES 4000
ns_status ns_sim_settled(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                         ns_error *err);

/* Particle files: text, one particle per line, `x,y,z` or `x,y,z,r` (spaces
 * and tabs around fields allowed, CRLF accepted, a UTF-8 byte-order mark
 * (EF BB BF) at the very start of the file ignored). Blank lines and lines
 * starting with `#` are skipped anywhere; the first other line may be the
 * header `x,y,z` or `x,y,z,r`. Every data line has the same number of
 * fields; each is a C floating-point literal (strtof, the whole field, hex
 * floats included, no whitespace inside), finite and within a float's range;
 * radii are non-negative. A line is at most NS_MAX_LINE bytes, not counting
 * its end (LF or CRLF), and a field may be as long as its line. A NUL byte
 * anywhere is refused (the input is not text). Particles are numbered 0, 1,
 * ... in file order, counting data lines only. */
#define NS_MAX_LINE 65536

/* Where the particles are in their file, compactly: particle `particle` is
 * preceded by `lines` lines in all that are not particles (header, blank,
 * comment); one entry per particle where that count grows. */
typedef struct ns_particle_file_skip {
    size_t particle;
    size_t lines;
} ns_particle_file_skip;

typedef struct ns_particle_file {
    size_t n;
    float *pos;    /* 3n floats */
    float *radius; /* n floats, or NULL when the file has three columns */
    int columns;   /* 3 or 4; 0 when the file has neither header nor data */
    bool header;   /* the file has a header line */
    size_t lines;  /* the file's lines (a last line without LF included) */
    /* the particles' lines, read by ns_particle_file_line_of() */
    ns_particle_file_skip *skips;
    size_t skip_count;
} ns_particle_file;

/* Reads a particle file from in to its end, parsing as it reads: besides the
 * particles it holds at most one line and one block of text (under 96 KiB),
 * so any input, endless or binary, fails or ends in bounded memory. in is
 * not closed. On error *out is left empty (all zero) and err says why:
 *   NS_ERR_INVALID_INPUT     a line breaks the rules above: err->line is its
 *                            1-based number and the message names the bad
 *                            value ("radius -1 is negative", "x 'abc' is not
 *                            a number"; bytes that are not printable ASCII
 *                            shown as \xNN, at most 64 characters), or says
 *                            "line is longer than 65536 bytes" or "a NUL byte
 *                            (this is not a text file)"
 *   NS_ERR_TOO_LARGE         more than NS_MAX_PARTICLES particles
 *   NS_ERR_IO                reading failed (the C library's reason)
 *   NS_ERR_OUT_OF_MEMORY     nothing is leaked
 *   NS_ERR_INVALID_ARGUMENT  in or out is NULL
 * On success err (when non-NULL) is cleared: NS_OK, an empty message. */
ns_status ns_particle_file_read(FILE *in, ns_particle_file *out, ns_error *err);
/* The same parser over text[0..len) in memory (text may be NULL when len is
 * 0; text NULL with len > 0 is NS_ERR_INVALID_ARGUMENT). */
ns_status ns_particle_file_parse(const char *text, size_t len, ns_particle_file *out,
                                 ns_error *err);
/* Frees a file's arrays and zeroes it; NULL is a no-op. */
void ns_particle_file_free(ns_particle_file *file);
/* The 1-based line of particle k of a file read or parsed (0 when k >= n or
 * file is NULL): for naming the line of a particle a search refuses. */
size_t ns_particle_file_line_of(const ns_particle_file *file, size_t k);
/* The same for text in memory: parses it, so 0 also when it does not parse.
 * Kept for compatibility; ns_particle_file_line_of needs no text. */
size_t ns_particle_file_line(const char *text, size_t len, size_t k);
/* Writes the particle-file form (header x,y,z,r, numbers as %.9g). out NULL
 * or particles NULL is NS_ERR_INVALID_ARGUMENT; particles are validated
 * first (ns_particles_validate). */
ns_status ns_particles_write(FILE *out, const ns_particles *particles, ns_error *err);

/* Contact files, in the list's order (sort it first).
 * NS_FORMAT_CSV: the line `i,j,overlap,nx,ny,nz`, then one line per contact,
 * numbers as printf's %.9g (a float round-trips).
 * NS_FORMAT_BIN: little-endian; a 24-byte header: the 8 bytes "NSCONTAC",
 * uint32 version (1), uint32 record size (24), uint64 record count; then per
 * contact uint32 i, uint32 j, float overlap, float nx, ny, nz.
 * out NULL, contacts NULL, items NULL with count > 0 or another format is
 * NS_ERR_INVALID_ARGUMENT; a failed write is NS_ERR_IO. On success err (when
 * non-NULL) is cleared. */
typedef enum ns_format { NS_FORMAT_CSV, NS_FORMAT_BIN } ns_format;
#define NS_BIN_MAGIC "NSCONTAC"
#define NS_BIN_VERSION 1
ns_status ns_contacts_write(FILE *out, const ns_contact_list *contacts, ns_format format,
                            ns_error *err);
/* The same file in pieces, for contacts that come in blocks (a streaming
 * query): the header, for count contacts in all (the binary header holds
 * it: ns_index_count gives it first), then the records of each block in
 * turn. Errors as ns_contacts_write's (contacts NULL with count > 0 is
 * NS_ERR_INVALID_ARGUMENT). */
ns_status ns_contacts_write_header(FILE *out, ns_format format, size_t count, ns_error *err);
ns_status ns_contacts_write_records(FILE *out, const ns_contact *contacts, size_t count,
                                    ns_format format, ns_error *err);
/* Formats a float exactly as printf("%.9g") does, faster; returns the length
 * written to buf (at least 16 bytes; no terminating NUL); 0 when buf is NULL. */
size_t ns_format_float(char *buf, float value);

/* Allocation hooks, for embedding and for tests. NULL (or a hook with a NULL
 * function) restores the C library. Must be called before any other call and
 * never concurrently with one. */
typedef struct ns_allocator {
    void *(*malloc_fn)(size_t size, void *ctx);
    void *(*realloc_fn)(void *ptr, size_t size, void *ctx);
    void (*free_fn)(void *ptr, void *ctx);
    void *ctx;
} ns_allocator;
void ns_set_allocator(const ns_allocator *allocator);

#ifdef __cplusplus
}
#endif

#endif /* NSEARCH_H */

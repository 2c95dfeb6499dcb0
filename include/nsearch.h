/* nsearch.h - neighbourhood (contact) search for particle simulations.
 *
 * Given n particles with centres p_i and radii r_i, find every contact: each
 * unordered pair {i, j} with |p_j - p_i| < r_i + r_j, reported once as i < j
 * with its overlap and unit normal. Several kernels (all pairs, dense grid,
 * spatial hashes) compute bit-identical results through one API.
 *
 * Quick start (one call):
 *
 *     ns_particles p = {.n = n, .pos = xyz, .radius = NULL, .radius_uniform = h / 2};
 *     ns_contact_list contacts;
 *     ns_contact_list_init(&contacts);
 *     ns_error err;
 *     if (ns_find_contacts(ns_kernel_find("hash_parallel"), &p, NULL, &contacts, &err) != NS_OK)
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
 * and a one-line message. The library never prints, exits or aborts.
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
#define NS_VERSION_MINOR 1
#define NS_VERSION_PATCH 0
#define NS_VERSION_STRING "0.1.0"

/* Particle indices are uint32_t: at most NS_MAX_PARTICLES particles. */
#define NS_MAX_PARTICLES ((size_t)UINT32_MAX)

/* Cell coordinates floor(x / cell) beyond +-2^62 are refused (NS_ERR_TOO_LARGE). */
#define NS_MAX_CELL_COORD 4611686018427387904.0 /* 2^62 */

/* Default cap on grid_dense's cell storage. */
#define NS_DEFAULT_GRID_MAX_BYTES ((size_t)1 << 30)

typedef enum ns_status {
    NS_OK = 0,
    NS_ERR_INVALID_ARGUMENT,  /* a NULL pointer, unknown name, bad setting */
    NS_ERR_INVALID_INPUT,     /* non-finite coordinate or radius, negative radius */
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
    size_t particle; /* first offending particle, or NS_NO_PARTICLE */
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

/* Checks n <= NS_MAX_PARTICLES, finite coordinates, finite non-negative
 * radii. Names the first bad particle in err. Every build validates too, so
 * calling this is only needed to check input once, untimed, or early. */
ns_status ns_particles_validate(const ns_particles *particles, ns_error *err);

/* One contact, i < j: overlap = (r_i + r_j) - |p_j - p_i| and the unit normal
 * (p_j - p_i) / |p_j - p_i|, or (0, 0, 0) when the centres coincide. */
typedef struct ns_contact {
    uint32_t i, j;
    float overlap;
    float nx, ny, nz;
} ns_contact;

/* A growable contact list the caller owns and reuses across searches. After
 * a failed search count is 0; the memory is kept. */
typedef struct ns_contact_list {
    ns_contact *items;
    size_t count;
    size_t capacity;
} ns_contact_list;

void ns_contact_list_init(ns_contact_list *list);
void ns_contact_list_free(ns_contact_list *list);
/* Ensures capacity >= capacity_wanted. */
ns_status ns_contact_list_reserve(ns_contact_list *list, size_t capacity_wanted, ns_error *err);
/* Sorts into (i, j) order; the kernels return contacts in any order. */
void ns_contact_list_sort(ns_contact_list *list);

/* Settings. Zero-initialise, or start from ns_config_default(). */
typedef struct ns_config {
    int threads;           /* parallel kernels: 0 = OpenMP's default */
    size_t table_size;     /* hash kernels: buckets, 0 = a default from n (2n) */
    size_t grid_max_bytes; /* grid_dense cell storage cap, 0 = NS_DEFAULT_GRID_MAX_BYTES */
    size_t max_contacts;   /* more is NS_ERR_TOO_MANY_CONTACTS; 0 = ns_default_max_contacts() */
} ns_config;

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
    const ns_kernel_ops *ops;
} ns_kernel;

size_t ns_kernel_count(void);
const ns_kernel *ns_kernel_at(size_t k);           /* NULL when k >= count */
const ns_kernel *ns_kernel_find(const char *name); /* NULL when unknown */

/* An index: a kernel's search structure, rebuilt for every particle set. */
typedef struct ns_index ns_index;

/* Creates an empty index for a kernel; config NULL = defaults (copied). */
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

/* What the last build made. */
typedef struct ns_index_info {
    size_t bytes;            /* memory of the index's own structures (not the contacts) */
    size_t table_size;       /* buckets, for hash kernels; else 0 */
    size_t nonempty_buckets; /* buckets (or grid cells) holding particles */
    size_t cells;            /* grid cells, for grid kernels; else 0 */
    double cell_size;  /* the cell edge: 2 * largest radius, widened by 2^-20; 0 when no cells */
    size_t candidates; /* pairs the last query tested by distance (its work) */
} ns_index_info;
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
 * particles' coordinates (below 2^-13 of their magnitude). */
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
void ns_skin_get_info(const ns_skin *skin, ns_skin_info *info);

/* Workload generators, deterministic from (n, seed). The caller provides
 * pos (3n floats) and radius (n floats). */
typedef struct ns_workload {
    const char *name;
    const char *description;
    void (*generate)(size_t n, uint64_t seed, float *pos, float *radius);
} ns_workload;

size_t ns_workload_count(void);
const ns_workload *ns_workload_at(size_t k);
const ns_workload *ns_workload_find(const char *name);
/* Any workload by name: those of the table, and "settled" (ns_sim_settled,
 * which runs a simulation and so can fail, and takes a thread count). */
#define NS_SETTLED_NAME "settled"
#define NS_SETTLED_DESCRIPTION                                                                     \
    "uniform spheres dropped into a box and simulated until at rest: a dense pile"
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
    float skin;       /* 0: a fresh search every frame; > 0: ns_skin with this skin */
    float box_lo[3], box_hi[3];
} ns_sim_params;
ns_sim_params ns_sim_params_default(void); /* the box is left empty: set it */

/* Release positions: the layout's particles spread out (radii kept), its
 * coordinates times 2 in x and y and times 8 in z, exactly (a column that
 * settles into a pile a few particles deep), and a box around them with room
 * of two largest radii on every side. */
void ns_sim_spawn(const ns_workload *layout, size_t n, uint64_t seed, float *pos, float *radius,
                  float box_lo[3], float box_hi[3]);

/* The box around n spheres: their bounding box widened by room largest radii
 * on every side and by headroom more on top (+z); [0, 1]^3 for n = 0. */
void ns_sim_box_around(size_t n, const float *pos, const float *radius, float room, float headroom,
                       float box_lo[3], float box_hi[3]);

typedef struct ns_sim ns_sim;
/* Copies pos (3n floats) and radius (n floats). Centres are clamped into the
 * box (a box narrower than a particle is NS_ERR_INVALID_ARGUMENT), then
 * overlaps present at the start are relaxed (positions only, velocities 0). */
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

/* The `settled` workload: uniform spheres (ns_sim_spawn of "uniform")
 * dropped into their box and simulated with grid_sorted until at rest (the
 * kinetic energy below 1e-3 of the potential energy released, at most
 * NS_SETTLE_MAX_FRAMES frames). Up to NS_SETTLED_BLOCK particles one pile;
 * beyond, piles of n/k and n/k + 1 particles (k the fewest that fit) side by
 * side in x and y. Deterministic from (n, seed) at any thread count. */
#define NS_SETTLED_BLOCK 20000
/* Changes whenever the settled piles change (caches are keyed by it). */
#define NS_SETTLED_VERSION 3
#define NS_SETTLE_MAX_FRAMES 4000
ns_status ns_sim_settled(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                         ns_error *err);

/* Particle files: text, one particle per line, `x,y,z` or `x,y,z,r` (spaces
 * around fields allowed, CRLF accepted). Blank lines and lines starting with
 * `#` are skipped anywhere; the first other line may be the header `x,y,z`
 * or `x,y,z,r`. Every data line has the same number of fields; each is a C
 * floating-point literal (strtod, the whole field), finite and within a
 * float's range; radii are non-negative. Particles are numbered 0, 1, ... in
 * file order, counting data lines only. */
typedef struct ns_particle_file {
    size_t n;
    float *pos;    /* 3n floats */
    float *radius; /* n floats, or NULL when the file has three columns */
    int columns;   /* 3 or 4; 0 when the file has neither header nor data */
    bool header;   /* the file has a header line */
} ns_particle_file;

/* Parses text[0..len). On error fills err with NS_ERR_INVALID_INPUT, the
 * 1-based line and a message naming the bad value ("radius -1 is
 * negative"), and leaves *out empty. */
ns_status ns_particle_file_parse(const char *text, size_t len, ns_particle_file *out,
                                 ns_error *err);
void ns_particle_file_free(ns_particle_file *file);
/* The 1-based line of particle k in text (0 when there is no such particle). */
size_t ns_particle_file_line(const char *text, size_t len, size_t k);
/* Writes the particle-file form (header x,y,z,r, numbers as %.9g). */
ns_status ns_particles_write(FILE *out, const ns_particles *particles, ns_error *err);

/* Contact files, in the list's order (sort it first).
 * NS_FORMAT_CSV: the line `i,j,overlap,nx,ny,nz`, then one line per contact,
 * numbers as printf's %.9g (a float round-trips).
 * NS_FORMAT_BIN: little-endian; a 24-byte header: the 8 bytes "NSCONTAC",
 * uint32 version (1), uint32 record size (24), uint64 record count; then per
 * contact uint32 i, uint32 j, float overlap, float nx, ny, nz. */
typedef enum ns_format { NS_FORMAT_CSV, NS_FORMAT_BIN } ns_format;
#define NS_BIN_MAGIC "NSCONTAC"
#define NS_BIN_VERSION 1
ns_status ns_contacts_write(FILE *out, const ns_contact_list *contacts, ns_format format,
                            ns_error *err);
/* Formats a float exactly as printf("%.9g") does, faster; returns the length
 * written to buf (at least 16 bytes; no terminating NUL). */
size_t ns_format_float(char *buf, float value);

/* Allocation hooks, for embedding and for tests. NULL restores the C library.
 * Must be called before any other call and never concurrently with one. */
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

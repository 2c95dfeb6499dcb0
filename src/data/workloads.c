/* workloads.c - the generated particle sets for tests and benchmarks,
 * deterministic from (n, seed). Only the integer RNG and IEEE basic
 * operations (+ - * / sqrt) are used, so each is bit-identical on every
 * machine and compiler. */
#include "data.h"

/* Contacts per particle the generators aim for (pairs within 2r). */
#define TARGET_CONTACTS 30.0
/* Every workload but polydisperse uses r = 0.5: interaction distance 1. */
#define RADIUS 0.5f
/* Volume of the sphere of radius 1 (the interaction distance). */
#define SPHERE_VOLUME 4.18879020478639098

/* splitmix64: a tiny, well-mixed 64-bit generator. */
typedef struct rng {
    uint64_t state;
} rng;

static uint64_t next_u64(rng *g)
{
    uint64_t z = (g->state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Uniform in [0, 1) with 53 random bits. */
static double next_unit(rng *g)
{
    return (double)(next_u64(g) >> 11) * 0x1p-53;
}

static rng seeded(uint64_t seed, const char *name)
{
    /* the workload's name is mixed in so two workloads never share a stream */
    rng g = {seed};
    for (const char *c = name; *c; c++)
        g.state = g.state * 31 + (unsigned char)*c;
    next_u64(&g);
    return g;
}

/* Cube root by Newton's method from a power-of-two start: IEEE operations
 * only, so the same on every machine (libm's cbrt is not). */
static double cube_root(double v)
{
    if (v <= 0.0)
        return 0.0;
    double x = 1.0;
    while (x * x * x < v)
        x *= 2.0;
    while (x * x * x > 8.0 * v)
        x *= 0.5;
    for (int k = 0; k < 100; k++) {
        double next = x - (x * x * x - v) / (3.0 * x * x);
        if (next == x)
            break;
        x = next;
    }
    return x;
}

static void set_particle(float *pos, float *radius, size_t i, double x, double y, double z, float r)
{
    pos[3 * i + 0] = (float)x;
    pos[3 * i + 1] = (float)y;
    pos[3 * i + 2] = (float)z;
    radius[i] = r;
}

/* Side of a cube holding n particles at the density that gives each about
 * `contacts` contacts at interaction distance 1. */
static double cube_side(size_t n, double contacts)
{
    return cube_root((double)n * SPHERE_VOLUME / contacts);
}

static void uniform(size_t n, uint64_t seed, float *pos, float *radius)
{
    rng g = seeded(seed, "uniform");
    double side = cube_side(n, TARGET_CONTACTS);
    for (size_t i = 0; i < n; i++) {
        double x = side * next_unit(&g), y = side * next_unit(&g), z = side * next_unit(&g);
        set_particle(pos, radius, i, x, y, z, RADIUS);
    }
}

/* A block of fluid on a lattice of spacing r (the particle radius) in one
 * corner of a domain 8 times its side, and 1% spray anywhere in the domain. */
static void dambreak(size_t n, uint64_t seed, float *pos, float *radius)
{
    rng g = seeded(seed, "dambreak");
    size_t spray = n / 100, block = n - spray, m = 1;
    while (m * m * m < block)
        m++;
    const double spacing = RADIUS, jitter = 0.1 * spacing, domain = 8.0 * (double)m * spacing;
    for (size_t k = 0; k < block; k++) {
        double ix = (double)(k % m), iy = (double)(k / m % m), iz = (double)(k / (m * m));
        double x = (ix + 0.5) * spacing + jitter * (2.0 * next_unit(&g) - 1.0);
        double y = (iy + 0.5) * spacing + jitter * (2.0 * next_unit(&g) - 1.0);
        double z = (iz + 0.5) * spacing + jitter * (2.0 * next_unit(&g) - 1.0);
        set_particle(pos, radius, k, x, y, z, RADIUS);
    }
    for (size_t i = block; i < n; i++) {
        double x = domain * next_unit(&g), y = domain * next_unit(&g), z = domain * next_unit(&g);
        set_particle(pos, radius, i, x, y, z, RADIUS);
    }
}

/* Approximately normal (Irwin-Hall: the sum of 12 uniforms, less 6), with
 * IEEE operations only. */
static double next_normal(rng *g)
{
    double s = -6.0;
    for (int k = 0; k < 12; k++)
        s += next_unit(g);
    return s;
}

/* Gaussian blobs whose populations differ 16:1 and whose central densities
 * differ 16:1 (from a quarter to four times the target contact count). */
static void clusters(size_t n, uint64_t seed, float *pos, float *radius)
{
    enum { MAX_BLOBS = 8 };
    rng g = seeded(seed, "clusters");
    size_t blobs = n < MAX_BLOBS ? (n ? n : 1) : MAX_BLOBS;
    double weight[MAX_BLOBS], sigma[MAX_BLOBS], centre[MAX_BLOBS][3], total = 0.0, widest = 0.0;
    size_t count[MAX_BLOBS];
    for (size_t b = 0; b < blobs; b++) {
        weight[b] = (double)(1u << (next_u64(&g) % 5));
        total += weight[b];
    }
    size_t placed = 0;
    for (size_t b = 0; b < blobs; b++) {
        count[b] = b + 1 < blobs ? (size_t)((double)n * weight[b] / total) : n - placed;
        placed += count[b];
        /* central density of a normal blob: count / ((2 pi)^1.5 sigma^3) */
        double density_factor = (double)(1u << (next_u64(&g) % 5)) / 4.0;
        double central = TARGET_CONTACTS * density_factor / SPHERE_VOLUME;
        sigma[b] = cube_root((double)(count[b] ? count[b] : 1) / (15.7496099457224197 * central));
        widest = sigma[b] > widest ? sigma[b] : widest;
    }
    double side = 4.0 * widest * cube_root((double)blobs);
    for (size_t b = 0; b < blobs; b++)
        for (int k = 0; k < 3; k++)
            centre[b][k] = side * next_unit(&g);
    size_t i = 0;
    for (size_t b = 0; b < blobs; b++)
        for (size_t k = 0; k < count[b]; k++, i++) {
            double x = centre[b][0] + sigma[b] * next_normal(&g);
            double y = centre[b][1] + sigma[b] * next_normal(&g);
            double z = centre[b][2] + sigma[b] * next_normal(&g);
            set_particle(pos, radius, i, x, y, z, RADIUS);
        }
}

/* Radii uniform in [0.05, 0.5]: the cell size is set by the largest. The
 * density gives about 30 contacts per particle: E[(r_i + r_j)^3] = 0.222. */
static void polydisperse(size_t n, uint64_t seed, float *pos, float *radius)
{
    rng g = seeded(seed, "polydisperse");
    double side = cube_side(n, TARGET_CONTACTS / 0.2220625);
    for (size_t i = 0; i < n; i++) {
        double x = side * next_unit(&g), y = side * next_unit(&g), z = side * next_unit(&g);
        float r = (float)(0.05 + 0.45 * next_unit(&g));
        set_particle(pos, radius, i, x, y, z, r);
    }
}

/* Radii over two decades (0.0039 to 0.5), as in a powder: seven classes
 * halving from 0.5, each as likely, each spread over its factor of 2
 * (r = 0.5 / 2^k * (1 - u / 2)): the smallest class as numerous as the
 * largest, in a 2^18th of its volume. The cell is set by the largest radius,
 * 128 times the smallest. The density gives about 30 contacts per particle:
 * E[(r_i + r_j)^3] = 8655177 / 234881024 = 0.0368492. */
static void powder(size_t n, uint64_t seed, float *pos, float *radius)
{
    rng g = seeded(seed, "powder");
    double side = cube_side(n, TARGET_CONTACTS / 0.0368492);
    for (size_t i = 0; i < n; i++) {
        double x = side * next_unit(&g), y = side * next_unit(&g), z = side * next_unit(&g);
        double r = 0.5 / (double)(1u << (next_u64(&g) % 7)) * (1.0 - 0.5 * next_unit(&g));
        set_particle(pos, radius, i, x, y, z, (float)r);
    }
}

/* A thin sheet (thickness 0.1) on a plane tilted 36.87 degrees about the
 * y axis (cos = 0.8, sin = 0.6 exactly): its bounding box is mostly empty
 * along z. */
static void sheet(size_t n, uint64_t seed, float *pos, float *radius)
{
    rng g = seeded(seed, "sheet");
    /* areal density for about 30 contacts: contacts = density * pi * 1^2 */
    double side = sqrt((double)n * 3.14159265358979324 / TARGET_CONTACTS);
    for (size_t i = 0; i < n; i++) {
        double u = side * next_unit(&g), v = side * next_unit(&g), w = 0.1 * next_unit(&g);
        set_particle(pos, radius, i, 0.8 * u - 0.6 * w, v, 0.6 * u + 0.8 * w, RADIUS);
    }
}

/* A generator's entry point: the arrays checked, then filled. */
static ns_status fill(void (*make)(size_t, uint64_t, float *, float *), size_t n, uint64_t seed,
                      float *pos, float *radius, ns_error *err)
{
    if (n && (!pos || !radius))
        return ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                        "NULL positions or radii for %zu particles", n);
    make(n, seed, pos, radius);
    ns__ok(err);
    return NS_OK;
}

ns_status ns__workload_uniform(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                               ns_error *err)
{
    (void)threads;
    return fill(uniform, n, seed, pos, radius, err);
}

ns_status ns__workload_dambreak(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                                ns_error *err)
{
    (void)threads;
    return fill(dambreak, n, seed, pos, radius, err);
}

ns_status ns__workload_clusters(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                                ns_error *err)
{
    (void)threads;
    return fill(clusters, n, seed, pos, radius, err);
}

ns_status ns__workload_polydisperse(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                                    ns_error *err)
{
    (void)threads;
    return fill(polydisperse, n, seed, pos, radius, err);
}

ns_status ns__workload_powder(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                              ns_error *err)
{
    (void)threads;
    return fill(powder, n, seed, pos, radius, err);
}

ns_status ns__workload_sheet(size_t n, uint64_t seed, int threads, float *pos, float *radius,
                             ns_error *err)
{
    (void)threads;
    return fill(sheet, n, seed, pos, radius, err);
}

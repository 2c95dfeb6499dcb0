/* grid_sorted/levels.h - part of grid_sorted.c: mixed radii in levels of
 * cells, and the kernel's build(). plan_levels() classes each radius
 * (radius_class(): the halvings from the largest radius to it) and decides
 * which classes start a level; list_levels() lists each level's particles
 * (their caller's indices, level by level); build_levels() builds each
 * level's grid over its own bounding box (layout.h). build() plans the
 * levels and builds them, or builds a single level of all the particles. */

/* Mixed radii: levels of cells by radius class. A particle's class is
 * the number of halvings from the largest radius to its own (r in
 * (r_max / 2^(k+1), r_max / 2^k]), the smallest radii all in the last
 * class. Level 0 starts at class 0; each later class starts a new level
 * when the particles from it on, spread over the bounding box, would hold
 * at least LEVEL_FILL per cell of their own (twice their largest radius)
 * and at least LEVEL_CROWD per cell of the level they would otherwise join;
 * else they join it. A pair across levels costs a row of cells visited per
 * few candidates, so a level of sparse cells costs more than the candidates
 * it saves, until the coarser cells it spares would be crowded: so
 * polydisperse (radii 0.05 to 0.5) stays in one level, and powder (seven
 * halvings) takes two, its classes from the third on joining the second
 * level's cells (the measurements behind LEVEL_FILL and LEVEL_CROWD:
 * docs/optimisation-log.md, "Mixed radii: levels of cells"). Each level is
 * a grid of its own, with cells of twice its largest radius, searched by
 * the half stencil for its own pairs; a pair across levels is tested once,
 * from the coarser particle, against the finer level's cells within reach
 * of it (its radius plus the finer level's largest: see cross_contacts()),
 * so a small particle never sits in a cell sized for the largest one. A
 * finer level is always dense (see build_levels()). Levels need
 * per-particle radii: with one radius for all there is one level, a grid
 * of layout.h. */
enum { CLASSES = 16, LEVEL_FILL = 2, LEVEL_CROWD = 32, PLAN_WAYS = 4 };

/* How radii are classed: the limits r_max / 2^(k+1), k < CLASSES - 1, and
 * whether they are all normal floats (r_max at least 2^-100), each r_max
 * with its exponent lowered by k + 1. */
typedef struct classes {
    float limit[CLASSES - 1];
    uint32_t top; /* the bits of r_max */
    bool by_bits;
} classes;

typedef struct plan {
    int levels;
    int level_of_class[CLASSES];
    size_t count[LEVELS];
    float max_radius[LEVELS];
    classes classes; /* with per-particle radii: how they were classed */
} plan;

static void classes_of(float max_radius, classes *c)
{
    for (int k = 0; k < CLASSES - 1; k++)
        c->limit[k] = ldexpf(max_radius, -(k + 1));
    memcpy(&c->top, &max_radius, sizeof c->top);
    c->by_bits = max_radius >= 0x1p-100f;
}

/* The class of radius r (validated: finite, not negative, at most r_max):
 * how many limits it does not exceed (they fall, so the first k).
 * Non-negative floats order as their bits do, and a limit's bits are
 * r_max's less (k + 1) << 23, so r <= limit[k] exactly when k + 1 <=
 * (bits of r_max - bits of r) >> 23: a subtraction and a shift instead of
 * comparing the limits in turn, which the loop below does only when the
 * limits are not all normal floats (docs/optimisation-log.md, "Mixed radii:
 * levels of cells", "The build of the levels"). */
static inline int radius_class(const classes *c, float r)
{
    if (c->by_bits) {
        uint32_t b;
        memcpy(&b, &r, sizeof b);
        b &= 0x7fffffffu; /* -0 as 0 */
        uint32_t k = c->top >= b ? (c->top - b) >> 23 : 0;
        return k < CLASSES - 1 ? (int)k : CLASSES - 1;
    }
    int k = 0;
    for (int j = 0; j < CLASSES - 1; j++)
        k += !(r > c->limit[j]);
    return k;
}

/* Radius r counted in a table of counts and largest radii by class. */
static inline void count_class(const classes *c, float r, size_t *count, float *top)
{
    int k = radius_class(c, r);
    count[k]++;
    top[k] = r > top[k] ? r : top[k];
}

/* The particles per cell that count particles would make, spread over the
 * bounding box of g in cells of twice max_radius. */
static double fill(const ns__grid *g, size_t count, float max_radius)
{
    double cell = 2.0 * (double)max_radius, volume = 1.0;
    for (int a = 0; a < 3; a++) {
        double extent = (double)g->hi[a] - (double)g->lo[a];
        volume *= extent > cell ? extent : cell;
    }
    return (double)count * cell * cell * cell / volume;
}

/* The first particle of share t of n particles cut into shares. */
static inline size_t share_first(size_t n, long long t, long long shares)
{
    return n * (size_t)t / (size_t)shares;
}

/* The levels of in's particles (one when every radius is the same class,
 * or no later class is dense enough), and, with per-particle radii, in
 * share_count (in->threads x CLASSES) the particles of each class in each
 * share of them, for list_levels(). */
static void plan_levels(const ns__input *in, size_t *share_count, plan *pl)
{
    memset(pl, 0, sizeof *pl);
    pl->levels = 1;
    pl->count[0] = in->n;
    pl->max_radius[0] = in->grid.max_radius;
    if (!in->radius || in->grid.max_radius == 0.0f)
        return;
    classes_of(in->grid.max_radius, &pl->classes);
    const classes cl = pl->classes;
    float maxr[CLASSES] = {0};
    const float *rad = in->radius;
    long long shares = in->threads;
    /* clang-format off */
#pragma omp parallel for num_threads(in->threads) schedule(static, 1) reduction(max : maxr[:CLASSES])
    /* clang-format on */
    for (long long t = 0; t < shares; t++) {
        /* PLAN_WAYS tables of counts and largest radii, the share's i-th
         * particle in table i % PLAN_WAYS, so that an update does not wait
         * on the one before (the same class, on most inputs) */
        size_t mine[PLAN_WAYS][CLASSES] = {{0}};
        float top[PLAN_WAYS][CLASSES] = {{0}};
        size_t i = share_first(in->n, t, shares), end = share_first(in->n, t + 1, shares);
        for (; i + PLAN_WAYS <= end; i += PLAN_WAYS)
            for (int w = 0; w < PLAN_WAYS; w++)
                count_class(&cl, rad[i + (size_t)w], mine[w], top[w]);
        for (int w = 0; i < end; i++, w++)
            count_class(&cl, rad[i], mine[w], top[w]);
        size_t *counts = share_count + (size_t)t * CLASSES;
        for (int k = 0; k < CLASSES; k++) {
            counts[k] = 0;
            for (int w = 0; w < PLAN_WAYS; w++) {
                counts[k] += mine[w][k];
                maxr[k] = top[w][k] > maxr[k] ? top[w][k] : maxr[k];
            }
        }
    }
    size_t count[CLASSES] = {0};
    for (long long t = 0; t < shares; t++)
        for (int k = 0; k < CLASSES; k++)
            count[k] += share_count[(size_t)t * CLASSES + (size_t)k];
    size_t rest = in->n;
    for (int k = 0; k < CLASSES; k++) {
        float top = 0.0f; /* the largest radius from class k on */
        for (int j = k; j < CLASSES; j++)
            top = maxr[j] > top ? maxr[j] : top;
        bool starts = k > 0 && count[k] > 0 && pl->levels < LEVELS && top > 0.0f &&
                      fill(&in->grid, rest, top) >= LEVEL_FILL &&
                      fill(&in->grid, rest, pl->max_radius[pl->levels - 1]) >= LEVEL_CROWD;
        if (starts) {
            pl->levels++;
            pl->max_radius[pl->levels - 1] = top;
        }
        pl->level_of_class[k] = pl->levels - 1;
        rest -= count[k];
    }
    if (pl->levels == 1)
        return;
    memset(pl->count, 0, sizeof pl->count);
    for (int k = 0; k < CLASSES; k++)
        pl->count[pl->level_of_class[k]] += count[k];
}

/* The caller's index of each particle, level by level into S->ids, each
 * level in the caller's order (the particles are cut into one share per
 * thread, and a share's particles of a level go after the shares before
 * it), from the counts plan_levels() left in S->threads. Only the indices:
 * the levels' builds read the caller's positions and radii through them.
 * A copy of those (16 bytes a particle), written here by one thread and
 * read by another in the sort and the gather, would move cache lines
 * between the cores, which costs more than the copy saves
 * (docs/optimisation-log.md, "Mixed radii: levels of cells", "Indices
 * instead of copies"). */
static void list_levels(state *S, const ns__input *in, const plan *pl)
{
    int L = pl->levels;
    long long shares = in->threads;
    size_t n = in->n, *count = S->threads.a, *place = count + (size_t)shares * CLASSES;
    size_t at = 0; /* each share's first place in each level: shares x L */
    for (int l = 0; l < L; l++)
        for (long long t = 0; t < shares; t++) {
            place[(size_t)t * (size_t)L + (size_t)l] = at;
            for (int k = 0; k < CLASSES; k++)
                at += pl->level_of_class[k] == l ? count[(size_t)t * CLASSES + (size_t)k] : 0;
        }
    const classes cl = pl->classes; /* as plan_levels() classed them; a copy the stores
                                     * below cannot alias */
    const float *rad = in->radius;
    uint32_t *ids = S->ids.a;
#pragma omp parallel for num_threads(in->threads) schedule(static, 1)
    for (long long t = 0; t < shares; t++) {
        /* the share's places, kept here while the loop runs: in S->threads,
         * next to the other shares', each thread's writes would take the
         * cache line from the others */
        size_t mine[LEVELS];
        memcpy(mine, place + (size_t)t * (size_t)L, (size_t)L * sizeof *mine);
        size_t end = share_first(n, t + 1, shares);
        for (size_t i = share_first(n, t, shares); i < end; i++) {
            ids[mine[pl->level_of_class[radius_class(&cl, rad[i])]]++] = (uint32_t)i;
        }
    }
}

/* The bounding box of the caller's particles ids[0 .. m) (m > 0), over
 * threads. Its own loop, apart from list_levels(), whose loop would
 * otherwise carry each level's box from one particle to the next through
 * memory (docs/optimisation-log.md, "Mixed radii: levels of cells", "The
 * build of the levels"); here the box stays in registers. A level's ids
 * rise, so pos is read forwards. */
static void bounds(const float *pos, const uint32_t *ids, size_t m, int threads, float lo[3],
                   float hi[3])
{
    float l0 = INFINITY, l1 = INFINITY, l2 = INFINITY, h0 = -INFINITY, h1 = -INFINITY,
          h2 = -INFINITY;
    long long count = (long long)m;
    /* clang-format off */
#pragma omp parallel for num_threads(threads) schedule(static) \
    reduction(min : l0, l1, l2) reduction(max : h0, h1, h2)
    /* clang-format on */
    for (long long k = 0; k < count; k++) {
        const float *x = pos + 3 * (size_t)ids[k];
        l0 = x[0] < l0 ? x[0] : l0, h0 = x[0] > h0 ? x[0] : h0;
        l1 = x[1] < l1 ? x[1] : l1, h1 = x[1] > h1 ? x[1] : h1;
        l2 = x[2] < l2 ? x[2] : l2, h2 = x[2] > h2 ? x[2] : h2;
    }
    lo[0] = l0, lo[1] = l1, lo[2] = l2, hi[0] = h0, hi[1] = h1, hi[2] = h2;
}

/* Level l's grid: cells of twice its largest radius, as the index's
 * grid, over its own bounding box. False when its cell coordinates would
 * leave the range the index checks. */
static bool level_grid(const ns__input *in, float max_radius, const float lo[3], const float hi[3],
                       ns__grid *g)
{
    *g = in->grid;
    g->max_radius = max_radius;
    memcpy(g->lo, lo, sizeof g->lo);
    memcpy(g->hi, hi, sizeof g->hi);
    return ns__grid_set_cells(g) < 0;
}

/* More than one level: each level's particles listed (their caller's
 * indices, S->ids), its grid built over its own bounding box. *one: a level's
 * grid is out of range, or a finer level's would not be dense (the cross
 * search reads rows of a dense grid; the fill that starts a level makes
 * that rare), so build a single level instead. */
static ns_status build_levels(state *S, const ns__input *in, const plan *pl, bool *one,
                              ns_error *err)
{
    size_t n = in->n;
    if (!ns__u32s_reserve(&S->ids, n))
        return ns__fail_oom(err, "grid_sorted's levels");
    list_levels(S, in, pl);
    ns__grid grid[LEVELS];
    for (int l = 0; l < pl->levels; l++) {
        ns__input sub = *in;
        sub.n = pl->count[l];
        level dense = {.layout = DENSE};
        float lo[3], hi[3];
        bounds(in->pos, S->ids.a + S->particle_first[l], pl->count[l], in->threads, lo, hi);
        if (!level_grid(in, pl->max_radius[l], lo, hi, &sub.grid) ||
            (l > 0 && !choose_dense(&dense, &sub))) {
            *one = true;
            return NS_OK;
        }
        grid[l] = sub.grid;
    }
    for (int l = 0; l < pl->levels; l++) {
        ns__input sub = *in; /* the caller's arrays, read through the level's ids */
        sub.n = pl->count[l];
        sub.grid = grid[l];
        level *s = &S->level[l];
        ns_status st = build_level(s, &sub, S->ids.a + S->particle_first[l], err);
        s->ids = NULL; /* order[] holds the caller's indices (or the build failed) */
        if (st != NS_OK)
            return st;
    }
    return NS_OK;
}

static ns_status build(void **p, const ns__input *in, ns_error *err)
{
    state *S = ns__kernel_state(p, sizeof *S);
    if (!S)
        return ns__fail_oom(err, "grid_sorted state");
    S->n = in->n;
    plan pl;
    if (in->radius && /* room for plan_levels()'s counts, and list_levels()'s places */
        !ns__buf_reserve(&S->threads, (size_t)in->threads * (CLASSES + LEVELS), sizeof(size_t)))
        return ns__fail_oom(err, "grid_sorted's levels");
    plan_levels(in, S->threads.a, &pl);
    bool one = pl.levels == 1;
    S->levels = pl.levels;
    S->particle_first[0] = 0;
    for (int l = 0; l < pl.levels; l++)
        S->particle_first[l + 1] = S->particle_first[l] + pl.count[l];
    ns_status st = one ? NS_OK : build_levels(S, in, &pl, &one, err);
    if (st == NS_OK && one) {
        S->levels = 1;
        S->particle_first[1] = in->n;
        st = build_level(&S->level[0], in, NULL, err);
    }
    if (st != NS_OK)
        return st;
    /* nothing kept that this build does not use (a previous one may have
     * had more levels): info() reports what the index holds. The class
     * counts (S->threads, a few hundred bytes per thread) every build with
     * per-particle radii uses are kept, so that a simulation's builds,
     * frame after frame, allocate nothing. */
    for (int l = S->levels; l < LEVELS; l++)
        level_free(&S->level[l]);
    if (S->levels == 1) {
        ns__u32s_free(&S->ids);
    }
    S->unit_first[0] = 0;
    for (int l = 0; l < S->levels; l++)
        S->unit_first[l + 1] = S->unit_first[l] + S->level[l].units;
    if (!ns__buf_reserve(&S->unit_total, S->unit_first[S->levels] + 1, sizeof(size_t)))
        return ns__fail_oom(err, "grid_sorted's units");
    return NS_OK;
}

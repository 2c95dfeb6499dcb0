/* sim.c - `nsearch sim`: spheres falling into a box, frame times and
 * frame files, with any kernel. */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX */

#include "cli.h"
#include "output.h"
#include "workload_cache.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char sim_help[] =
    "Usage: nsearch sim (--n N [--layout NAME] [--seed S] [--cache-dir DIR] | --input FILE)\n"
    "                   [--kernel NAME] [--frames F]\n"
    "                   [--dt DT] [--iterations K] [--skin D] [--threads T]\n"
    "                   [--output-dir DIR] [--every K] [--stats] [--stats-json]\n"
    "Simulates N spheres under gravity (9.81 along -z) in a closed box: each frame\n"
    "predicts positions (integrate), finds the contacts with a kernel (search), pushes\n"
    "overlapping pairs apart and clamps centres to the box (resolve; position-based\n"
    "dynamics). The same input gives bit-identical frames with any kernel and any\n"
    "thread count.\n"
    "\n"
    "  --n N            particles (1 to 100000000)\n"
    "  --layout NAME    where they start: a workload (see 'nsearch workloads') at twice its\n"
    "                   spacing in x and y and 8 times in z, in a box with room of two radii\n"
    "                   around it (default uniform); 'settled' starts from a resting pile\n"
    "  --seed S         the layout's seed (default 1)\n"
    "  --cache-dir DIR  keep a costly layout's particles (settled) in DIR, as\n"
    "                   <name>-v<version>-n<N>-seed<S>.csv, and start from them next time\n"
    "                   (nsearch-bench --cache-dir shares the files)\n"
    "  --input FILE     start from a particle file with radii (x,y,z,r), e.g. a frame or\n"
    "                   'nsearch gen --workload settled', in a box around the spheres with\n"
    "                   room of four radii above them\n"
    "  --kernel NAME    the search (default grid_sorted; see 'nsearch kernels')\n"
    "  --frames F       frames to run (default 100)\n"
    "  --dt DT          seconds per frame (default 0.01)\n"
    "  --iterations K   projection passes per frame (default 10)\n"
    "  --skin D         reuse each search across frames with a skin of D length units,\n"
    "                   rebuilt when a particle has moved 0.45 D (default 0: search every\n"
    "                   frame)\n"
    "  --threads T      threads for the parallel kernels and the simulation (T >= 1;\n"
    "                   default OpenMP's)\n"
    "  --output-dir DIR write frames 0, K, 2K, ... and the last as DIR/frame-NNNNNN.csv\n"
    "                   (particle files x,y,z,r; 'nsearch pairs' reads them) and the box as\n"
    "                   DIR/box.csv (lo_x,lo_y,lo_z,hi_x,hi_y,hi_z); DIR must exist; all are\n"
    "                   moved into DIR together when the last is written, so a failed or\n"
    "                   stopped run leaves DIR as it was\n"
    "  --every K        with --output-dir: every K-th frame (default 1)\n"
    "  --stats          print per-frame times (ms, means over the frames), fps and the state\n"
    "                   at the end on standard error\n"
    "  --stats-json     print the same as one JSON object on standard output (keys:\n"
    "                   particles, kernel, threads, frames, contacts_per_frame, search_ms,\n"
    "                   resolve_ms, integrate_ms, frame_ms, fps, search_share,\n"
    "                   searches_rebuilt, kinetic_over_released, max_overlap_over_r)\n";

/* What the options ask for. */
typedef struct sim_setup {
    const char *input, *dir, *cache_dir;
    const ns_workload *layout; /* NULL with --input */
    const ns_kernel *kernel;
    uint64_t seed;
    size_t n, frames, every;
    ns_sim_params prm;
    ns_config cfg;
    bool stats, stats_json;
} sim_setup;

/* The frame files of a run, as one set of outputs (see output.h): the
 * box, then frames 0, every, 2 every, ... and the last. */
static size_t frame_files(size_t frames, size_t every)
{
    return 2 + frames / every + (frames % every != 0);
}

/* The frame number of frame file j (the box not counted). */
static size_t frame_number(size_t frames, size_t every, size_t j)
{
    return j <= frames / every ? j * every : frames;
}

/* The name of file k of the set: "box.csv", then "frame-NNNNNN.csv" (at
 * least six digits). Called from a signal handler too: arithmetic only. */
static void frame_file_name(size_t k, const void *ctx, char name[OUTPUT_NAME_MAX])
{
    const sim_setup *su = ctx;
    if (k == 0) {
        memcpy(name, "box.csv", sizeof "box.csv");
        return;
    }
    size_t f = frame_number(su->frames, su->every, k - 1);
    char digits[24];
    int d = 0;
    do {
        digits[d++] = (char)('0' + f % 10);
        f /= 10;
    } while (f);
    while (d < 6)
        digits[d++] = '0';
    memcpy(name, "frame-", 6);
    int at = 6;
    while (d)
        name[at++] = digits[--d];
    memcpy(name + at, ".csv", sizeof ".csv");
}

/* Writes file k of the set: a particle file; false on failure (printed). */
static bool write_frame(size_t k, const ns_particles *p)
{
    output out;
    if (output_set_file(k, &out) != 0)
        return false;
    ns_error err;
    if (ns_particles_write(out.f, p, &err) != NS_OK) {
        cli_say("%s: %s", output_name(&out), err.message);
        output_discard(&out); /* closes it; output_set_discard() removes it */
        return false;
    }
    return output_set_close(&out);
}

static bool write_box(const ns_sim_params *prm)
{
    output out;
    if (output_set_file(0, &out) != 0)
        return false;
    fprintf(out.f, "lo_x,lo_y,lo_z,hi_x,hi_y,hi_z\n%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n",
            (double)prm->box_lo[0], (double)prm->box_lo[1], (double)prm->box_lo[2],
            (double)prm->box_hi[0], (double)prm->box_hi[1], (double)prm->box_hi[2]);
    return output_set_close(&out);
}

/* The largest overlap of any pair as a share of its smaller radius, into
 * *worst; false when the search failed (printed). */
static bool worst_overlap(size_t n, const float *pos, const float *radius, double *out)
{
    ns_particles p = {.n = n, .pos = pos, .radius = radius};
    ns_contact_list c;
    ns_contact_list_init(&c);
    double worst = 0.0;
    ns_error err;
    if (ns_find_contacts(ns_sim_default_kernel(), &p, NULL, &c, &err) != NS_OK) {
        cli_say("the overlaps at the end: %s: %s (%s)", ns_sim_default_kernel()->name,
                err.message, ns_status_str(err.status));
        return false;
    }
    for (size_t k = 0; k < c.count; k++) {
        float a = radius[c.items[k].i], b = radius[c.items[k].j], smaller = a < b ? a : b;
        double share = smaller > 0.0f ? (double)c.items[k].overlap / smaller : 0.0;
        worst = share > worst ? share : worst;
    }
    ns_contact_list_free(&c);
    *out = worst;
    return true;
}

static void parse_sim(int argc, char **argv, sim_setup *su)
{
    enum {
        N,
        INPUT,
        LAYOUT,
        SEED,
        CACHE,
        KERNEL,
        FRAMES,
        DT,
        ITERATIONS,
        SKIN,
        THREADS,
        DIR,
        EVERY,
        STATS,
        STATS_JSON,
        NOPTS
    };
    opt opts[NOPTS] = {OPT_COUNT_ENTRY("--n", 1, 100000000),
                       OPT_TEXT_ENTRY("--input"),
                       OPT_TEXT_ENTRY("--layout"),
                       OPT_COUNT_ENTRY("--seed", 0, ULLONG_MAX),
                       OPT_TEXT_ENTRY("--cache-dir"),
                       OPT_TEXT_ENTRY("--kernel"),
                       OPT_COUNT_ENTRY("--frames", 0, 100000000),
                       OPT_FLOAT_ENTRY("--dt", 1e-6f, 1.0f),
                       OPT_COUNT_ENTRY("--iterations", 1, 10000),
                       OPT_FLOAT_ENTRY("--skin", 0.0f, FLT_MAX),
                       cli_threads_option(),
                       OPT_TEXT_ENTRY("--output-dir"),
                       OPT_COUNT_ENTRY("--every", 1, 100000000),
                       OPT_FLAG_ENTRY("--stats"),
                       OPT_FLAG_ENTRY("--stats-json")};
    cli_parse(argc, argv, opts, NOPTS, sim_help);
    su->input = opts[INPUT].text;
    if (opts[N].given == opts[INPUT].given)
        cli_usage_error(su->input ? "--n and --input exclude each other"
                                  : "--n or --input is required");
    if (su->input && (opts[LAYOUT].given || opts[CACHE].given))
        cli_usage_error("--%s and --input exclude each other",
                        opts[LAYOUT].given ? "layout" : "cache-dir");
    const char *layout = opts[LAYOUT].given ? opts[LAYOUT].text : "uniform";
    su->layout = su->input ? NULL : ns_workload_find(layout);
    if (!su->input && !su->layout) {
        char shown[96];
        opt_quote(shown, sizeof shown, layout, 40);
        cli_usage_error("unknown layout '%s' (see 'nsearch workloads')", shown);
    }
    su->cache_dir = opts[CACHE].text;
    su->kernel = opts[KERNEL].given ? cli_kernel(opts[KERNEL].text) : ns_sim_default_kernel();
    su->seed = opts[SEED].given ? opts[SEED].count : 1;
    su->n = (size_t)opts[N].count;
    su->frames = opts[FRAMES].given ? (size_t)opts[FRAMES].count : 100;
    su->prm = ns_sim_params_default();
    if (opts[DT].given)
        su->prm.dt = opts[DT].number;
    if (opts[ITERATIONS].given)
        su->prm.iterations = (int)opts[ITERATIONS].count;
    su->prm.skin = opts[SKIN].number;
    su->cfg = ns_config_default();
    if (opts[THREADS].given) {
        su->cfg.threads = (int)opts[THREADS].count;
        omp_set_num_threads(su->cfg.threads);
    }
    su->dir = opts[DIR].text;
    su->every = opts[EVERY].given ? (size_t)opts[EVERY].count : 1;
    if (opts[EVERY].given && !su->dir)
        cli_usage_error("--every needs --output-dir");
    struct stat st;
    if (su->dir && (stat(su->dir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        char shown[96];
        opt_quote(shown, sizeof shown, su->dir, 60);
        cli_usage_error("--output-dir '%s' is not a folder", shown);
    }
    su->stats = opts[STATS].given;
    su->stats_json = opts[STATS_JSON].given;
}

/* The starting particles and the box: the layout's (through the cache for a
 * costly one), or the file's copied from file. Returns 0 or the exit status
 * (the message printed). */
static int starting_particles(sim_setup *su, const ns_particle_file *file, float *pos,
                              float *radius)
{
    if (!su->layout) {
        memcpy(pos, file->pos, 3 * su->n * sizeof(float));
        memcpy(radius, file->radius, su->n * sizeof(float));
        ns_sim_box_around(su->n, pos, radius, 0.0f, 4.0f, su->prm.box_lo, su->prm.box_hi);
        return 0;
    }
    ns_error err;
    workload_cache_result cache;
    if (workload_cache_generate(su->layout, su->n, su->seed, su->cfg.threads, su->cache_dir, pos,
                                radius, &cache, &err) != NS_OK) {
        cli_say("layout %s: %s", su->layout->name, err.message);
        return cli_exit_status(err.status);
    }
    if (cache.reason[0])
        cli_say("warning: %s failed its check (%s): made again", cache.path, cache.reason);
    if (cache.outcome == CACHE_NOT_KEPT)
        cli_say("cannot keep the %s particles in %s (continuing)", su->layout->name, su->cache_dir);
    ns_sim_place(su->layout, su->n, pos, radius, su->prm.box_lo, su->prm.box_hi);
    return 0;
}

/* The sums over the frames --stats reports. */
typedef struct sim_totals {
    double search_s, resolve_s, integrate_s;
    size_t contacts, rebuilds;
} sim_totals;

/* Runs the frames, writing the frame files asked for. Returns 0 or the exit
 * status (the message printed). */
static int run_frames(ns_sim *sim, const sim_setup *su, const ns_particles *state, sim_totals *t)
{
    memset(t, 0, sizeof *t);
    if (su->dir && (!write_box(&su->prm) || !write_frame(1, state)))
        return EXIT_FAIL;
    size_t file = 2; /* the next frame file: frame_number() says which frame it holds */
    for (size_t f = 1; f <= su->frames; f++) {
        ns_sim_frame fr;
        ns_error err;
        if (ns_sim_step(sim, &fr, &err) != NS_OK) {
            cli_say("frame %zu: %s: %s (%s)", f, su->kernel->name, err.message,
                    ns_status_str(err.status));
            return EXIT_FAIL;
        }
        t->search_s += fr.search_s, t->resolve_s += fr.resolve_s;
        t->integrate_s += fr.integrate_s;
        t->contacts += fr.contacts;
        t->rebuilds += fr.rebuilt;
        if (su->dir && frame_number(su->frames, su->every, file - 1) == f &&
            !write_frame(file++, state))
            return EXIT_FAIL;
    }
    return 0;
}

/* --stats and --stats-json: the same figures as text on standard error and
 * as one JSON object on standard output. Returns 0, or EXIT_FAIL when
 * standard output cannot be written. */
static int print_stats(ns_sim *sim, const sim_setup *su, const sim_totals *t, double released0)
{
    /* a figure with nothing to measure (per frame of no frames, a share of
     * no energy released) is NAN: "n/a", and null in the JSON */
    double per = su->frames ? 1e3 / (double)su->frames : NAN;
    double total = t->search_s + t->resolve_s + t->integrate_s;
    double released = released0 - ns_sim_potential_energy(sim);
    int threads = su->cfg.threads ? su->cfg.threads : omp_get_max_threads();
    double worst;
    if (!worst_overlap(su->n, ns_sim_positions(sim), ns_sim_radii(sim), &worst))
        return EXIT_FAIL;
    double v[10] = {(double)t->contacts * per / 1e3,
                    t->search_s * per,
                    t->resolve_s * per,
                    t->integrate_s * per,
                    total * per,
                    total > 0.0 ? (double)su->frames / total : NAN,
                    total > 0.0 ? t->search_s / total : NAN,
                    (double)t->rebuilds,
                    released > 0.0 ? ns_sim_kinetic_energy(sim) / released : NAN,
                    worst};
    if (su->stats) {
        static const char *const labels[10] = {
            "contacts/frame", "search ms", "resolve ms", "integrate ms", "frame ms",
            "fps", "search share", "searches rebuilt", "kinetic/released", "max overlap/r"};
        static const char *const formats[10] = {"%.1f", "%.4f", "%.4f", "%.4f", "%.4f",
                                                "%.2f", "%.3f", "%.0f", "%.3g", "%.4f"};
        fprintf(stderr, "particles          %zu\nkernel             %s (%d threads)\n"
                        "frames             %zu\n",
                su->n, su->kernel->name, threads, su->frames);
        for (int k = 0; k < 10; k++) {
            fprintf(stderr, "%-19s", labels[k]);
            if (isfinite(v[k]))
                fprintf(stderr, formats[k], v[k]);
            else
                fputs("n/a", stderr);
            fputc('\n', stderr);
        }
    }
    if (!su->stats_json)
        return 0;
    static const char *const keys[10] = {
        "contacts_per_frame", "search_ms",        "resolve_ms",
        "integrate_ms",       "frame_ms",         "fps",
        "search_share",       "searches_rebuilt", "kinetic_over_released",
        "max_overlap_over_r"};
    printf("{\"particles\": %zu, \"kernel\": \"%s\", \"threads\": %d, \"frames\": %zu", su->n,
           su->kernel->name, threads, su->frames);
    for (int k = 0; k < 10; k++)
        printf(isfinite(v[k]) ? ", \"%s\": %.17g" : ", \"%s\": null", keys[k], v[k]);
    printf("}\n");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        cli_say("standard output: cannot write the statistics");
        return EXIT_FAIL;
    }
    return 0;
}

int cli_sim(int argc, char **argv)
{
    sim_setup su;
    parse_sim(argc, argv, &su);
    /* every frame file checked before the input is read */
    if (su.dir) {
        int rc = output_set_open(su.dir, frame_files(su.frames, su.every), frame_file_name, &su);
        if (rc)
            return rc;
    }
    ns_particle_file file = {0};
    if (su.input) {
        int rc = cli_read_particles(su.input, &file);
        if (rc == 0 && (file.columns != 4 || file.n == 0)) {
            cli_say(file.columns != 4 ? "%s: the simulation needs particles with radii (x,y,z,r)"
                                      : "%s: no particles (the simulation needs at least one)",
                    su.input);
            rc = EXIT_USAGE;
        }
        if (rc) {
            ns_particle_file_free(&file);
            output_set_discard();
            return rc;
        }
        su.n = file.n;
    }
    float *pos = malloc(3 * su.n * sizeof(float)), *radius = malloc(su.n * sizeof(float));
    ns_sim *sim = NULL;
    ns_error err;
    int rc = 0;
    if (!pos || !radius) {
        cli_say("out of memory for %zu particles", su.n);
        rc = EXIT_FAIL;
    } else {
        rc = starting_particles(&su, &file, pos, radius);
    }
    if (rc == 0 &&
        ns_sim_create(su.kernel, &su.cfg, &su.prm, su.n, pos, radius, &sim, &err) != NS_OK) {
        if (su.input)
            cli_say_particle_error(su.input, &file, su.kernel->name, &err);
        else
            cli_say("%s: %s (%s)", su.kernel->name, err.message, ns_status_str(err.status));
        rc = cli_exit_status(err.status);
    }
    if (rc == 0) {
        ns_particles state = {.n = su.n, .pos = ns_sim_positions(sim), .radius = ns_sim_radii(sim)};
        double released0 = ns_sim_potential_energy(sim);
        sim_totals totals;
        rc = run_frames(sim, &su, &state, &totals);
        if (rc == 0 && (su.stats || su.stats_json))
            rc = print_stats(sim, &su, &totals, released0);
    }
    if (su.dir && (rc != 0 || !output_set_commit())) {
        output_set_discard();
        rc = rc ? rc : EXIT_FAIL;
    }
    ns_sim_destroy(sim);
    ns_particle_file_free(&file);
    free(pos);
    free(radius);
    return rc;
}

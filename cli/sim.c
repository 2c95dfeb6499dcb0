/* sim.c - `nsearch sim`: spheres falling into a box, frame times and
 * frame files, with any kernel. */
#define _POSIX_C_SOURCE 200809L /* PATH_MAX */

#include "cli.h"
#include "output.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char sim_help[] =
    "Usage: nsearch sim (--n N [--layout NAME] [--seed S] | --input FILE) [--kernel NAME]\n"
    "                   [--frames F]\n"
    "                   [--dt DT] [--iterations K] [--skin D] [--threads T]\n"
    "                   [--output-dir DIR] [--every K] [--stats]\n"
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
    "                   DIR/box.csv (lo_x,lo_y,lo_z,hi_x,hi_y,hi_z); DIR must exist\n"
    "  --every K        with --output-dir: every K-th frame (default 1)\n"
    "  --stats          print per-frame times (ms, means over the frames), fps and the state\n"
    "                   at the end on standard error\n";

/* Writes one particle file (or the box) through a temporary; false on failure. */
static bool write_frame(const char *dir, size_t frame, const ns_particles *p)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/frame-%06zu.csv", dir, frame) >= (int)sizeof path) {
        cli_say("%s: the path is too long", dir);
        return false;
    }
    output out;
    if (output_open(&out, path) != 0)
        return false;
    ns_error err;
    if (ns_particles_write(out.f, p, &err) != NS_OK) {
        cli_say("%s: %s", path, err.message);
        output_discard(&out);
        return false;
    }
    return output_commit(&out, false);
}

static bool write_box(const char *dir, const ns_sim_params *prm)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/box.csv", dir) >= (int)sizeof path) {
        cli_say("%s: the path is too long", dir);
        return false;
    }
    output out;
    if (output_open(&out, path) != 0)
        return false;
    fprintf(out.f, "lo_x,lo_y,lo_z,hi_x,hi_y,hi_z\n%.9g,%.9g,%.9g,%.9g,%.9g,%.9g\n",
            (double)prm->box_lo[0], (double)prm->box_lo[1], (double)prm->box_lo[2],
            (double)prm->box_hi[0], (double)prm->box_hi[1], (double)prm->box_hi[2]);
    return output_commit(&out, false);
}

/* The largest overlap of any pair as a share of its smaller radius. */
static double worst_overlap(size_t n, const float *pos, const float *radius)
{
    ns_particles p = {.n = n, .pos = pos, .radius = radius};
    ns_contact_list c;
    ns_contact_list_init(&c);
    double worst = 0.0;
    if (ns_find_contacts(ns_kernel_find("grid_sorted"), &p, NULL, &c, NULL) != NS_OK)
        worst = NAN;
    for (size_t k = 0; k < c.count; k++) {
        float a = radius[c.items[k].i], b = radius[c.items[k].j], smaller = a < b ? a : b;
        double share = smaller > 0.0f ? (double)c.items[k].overlap / smaller : 0.0;
        worst = share > worst ? share : worst;
    }
    ns_contact_list_free(&c);
    return worst;
}

int cli_sim(int argc, char **argv)
{
    enum {
        N,
        INPUT,
        LAYOUT,
        SEED,
        KERNEL,
        FRAMES,
        DT,
        ITERATIONS,
        SKIN,
        THREADS,
        DIR,
        EVERY,
        STATS,
        NOPTS
    };
    opt opts[NOPTS] = {OPT_COUNT_ENTRY("--n", 1, 100000000),
                       OPT_TEXT_ENTRY("--input"),
                       OPT_TEXT_ENTRY("--layout"),
                       OPT_COUNT_ENTRY("--seed", 0, ULLONG_MAX),
                       OPT_TEXT_ENTRY("--kernel"),
                       OPT_COUNT_ENTRY("--frames", 0, 100000000),
                       OPT_FLOAT_ENTRY("--dt", 1e-6f, 1.0f),
                       OPT_COUNT_ENTRY("--iterations", 1, 10000),
                       OPT_FLOAT_ENTRY("--skin", 0.0f, FLT_MAX),
                       cli_threads_option(),
                       OPT_TEXT_ENTRY("--output-dir"),
                       OPT_COUNT_ENTRY("--every", 1, 100000000),
                       OPT_FLAG_ENTRY("--stats")};
    cli_parse(argc, argv, opts, NOPTS, sim_help);
    const char *input = opts[INPUT].text;
    if (opts[N].given == opts[INPUT].given)
        cli_usage_error(input ? "--n and --input exclude each other"
                              : "--n or --input is required");
    if (input && opts[LAYOUT].given)
        cli_usage_error("--layout and --input exclude each other");
    const char *layout = opts[LAYOUT].given ? opts[LAYOUT].text : "uniform";
    const ns_workload *w = input ? NULL : ns_workload_find(layout);
    if (!input && !w) {
        char shown[96];
        opt_quote(shown, sizeof shown, layout, 40);
        cli_usage_error("unknown layout '%s' (see 'nsearch workloads')", shown);
    }
    const ns_kernel *kernel = cli_kernel(opts[KERNEL].given ? opts[KERNEL].text : "grid_sorted");
    uint64_t seed = opts[SEED].given ? opts[SEED].count : 1;
    size_t frames = opts[FRAMES].given ? (size_t)opts[FRAMES].count : 100;
    ns_sim_params prm = ns_sim_params_default();
    if (opts[DT].given)
        prm.dt = opts[DT].number;
    if (opts[ITERATIONS].given)
        prm.iterations = (int)opts[ITERATIONS].count;
    prm.skin = opts[SKIN].number;
    ns_config cfg = ns_config_default();
    if (opts[THREADS].given) {
        cfg.threads = (int)opts[THREADS].count;
        omp_set_num_threads(cfg.threads);
    }
    const char *dir = opts[DIR].text;
    size_t every = opts[EVERY].given ? (size_t)opts[EVERY].count : 1;
    if (opts[EVERY].given && !dir)
        cli_usage_error("--every needs --output-dir");
    if (dir) {
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            char shown[96];
            opt_quote(shown, sizeof shown, dir, 60);
            cli_usage_error("--output-dir '%s' is not a folder", shown);
        }
    }
    ns_particle_file file = {0};
    size_t n = (size_t)opts[N].count;
    if (input) {
        int rc = cli_read_particles(input, &file);
        if (rc)
            return rc;
        if (file.columns != 4 || file.n == 0) {
            cli_say("%s: the simulation needs particles with radii (x,y,z,r)", input);
            ns_particle_file_free(&file);
            return EXIT_USAGE;
        }
        n = file.n;
    }

    float *pos = malloc(3 * n * sizeof(float)), *radius = malloc(n * sizeof(float));
    ns_sim *sim = NULL;
    ns_error err;
    int rc = 0;
    if (!pos || !radius) {
        cli_say("out of memory for %zu particles", n);
        rc = EXIT_FAIL;
        goto done;
    }
    if (w) {
        if (ns_sim_spawn(w, n, seed, cfg.threads, pos, radius, prm.box_lo, prm.box_hi, &err) !=
            NS_OK) {
            cli_say("layout %s: %s", w->name, err.message);
            rc = cli_exit_status(err.status);
            goto done;
        }
    } else {
        memcpy(pos, file.pos, 3 * n * sizeof(float));
        memcpy(radius, file.radius, n * sizeof(float));
        ns_sim_box_around(n, pos, radius, 0.0f, 4.0f, prm.box_lo, prm.box_hi);
    }
    if (ns_sim_create(kernel, &cfg, &prm, n, pos, radius, &sim, &err) != NS_OK) {
        if (input)
            cli_say_particle_error(input, &file, kernel->name, &err);
        else
            cli_say("%s: %s (%s)", kernel->name, err.message, ns_status_str(err.status));
        rc = cli_exit_status(err.status);
        goto done;
    }
    ns_particles state = {.n = n, .pos = ns_sim_positions(sim), .radius = ns_sim_radii(sim)};
    if (dir && (!write_box(dir, &prm) || !write_frame(dir, 0, &state))) {
        rc = EXIT_FAIL;
        goto done;
    }
    double released0 = ns_sim_potential_energy(sim);
    double search_s = 0.0, resolve_s = 0.0, integrate_s = 0.0;
    size_t contacts = 0, rebuilds = 0;
    for (size_t f = 1; f <= frames; f++) {
        ns_sim_frame fr;
        if (ns_sim_step(sim, &fr, &err) != NS_OK) {
            cli_say("frame %zu: %s: %s (%s)", f, kernel->name, err.message,
                    ns_status_str(err.status));
            rc = EXIT_FAIL;
            goto done;
        }
        search_s += fr.search_s, resolve_s += fr.resolve_s, integrate_s += fr.integrate_s;
        contacts += fr.contacts;
        rebuilds += fr.rebuilt;
        if (dir && (f % every == 0 || f == frames) && !write_frame(dir, f, &state)) {
            rc = EXIT_FAIL;
            goto done;
        }
    }
    if (opts[STATS].given) {
        double per = frames ? 1e3 / (double)frames : 0.0,
               total = search_s + resolve_s + integrate_s;
        double released = released0 - ns_sim_potential_energy(sim);
        fprintf(stderr,
                "particles          %zu\n"
                "kernel             %s (%d threads)\n"
                "frames             %zu\n"
                "contacts/frame     %.1f\n"
                "search ms          %.4f\n"
                "resolve ms         %.4f\n"
                "integrate ms       %.4f\n"
                "frame ms           %.4f\n"
                "fps                %.2f\n"
                "search share       %.3f\n"
                "searches rebuilt   %zu\n"
                "kinetic/released   %.3g\n"
                "max overlap/r      %.4f\n",
                n, kernel->name, cfg.threads ? cfg.threads : omp_get_max_threads(), frames,
                frames ? (double)contacts / (double)frames : 0.0, search_s * per, resolve_s * per,
                integrate_s * per, total * per, total > 0.0 ? (double)frames / total : 0.0,
                total > 0.0 ? search_s / total : 0.0, rebuilds,
                released > 0.0 ? ns_sim_kinetic_energy(sim) / released : 0.0,
                worst_overlap(n, state.pos, state.radius));
    }
done:
    ns_sim_destroy(sim);
    ns_particle_file_free(&file);
    free(pos);
    free(radius);
    return rc;
}

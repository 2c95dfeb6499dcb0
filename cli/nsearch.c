/* nsearch - the command-line tool: contacts of a user's own particles with
 * any kernel, particle files from the workload generators, the particle
 * simulation. This file: main, the lists and `gen`; pairs.c and sim.c hold
 * the other commands, options.c the option parser, output.c the output
 * files. Exit statuses: cli.h (and docs/cli.md). */
#include "cli.h"
#include "output.h"
#include "table_json.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char main_help[] =
    "Usage: nsearch COMMAND [OPTIONS]\n"
    "Contacts of particles (|p_j - p_i| < r_i + r_j) with any of nsearch's kernels.\n"
    "\n"
    "Commands:\n"
    "  kernels     list the kernels: name, then a one-line description\n"
    "  workloads   list the workload generators\n"
    "  gen         write a particle file from a workload generator\n"
    "  pairs       read a particle file, write its contacts\n"
    "  sim         simulate spheres falling into a box; frame times, frame files\n"
    "\n"
    "  nsearch COMMAND --help   the options of a command\n"
    "  nsearch --version        the version\n"
    "\n"
    "Exit status: 0 success; 1 a failure that is not the input's fault (out of memory,\n"
    "a kernel's refusal, a write error, an output path that cannot be written safely);\n"
    "2 a usage error or invalid input; 3 --check found a difference.\n";

static const char gen_help[] =
    "Usage: nsearch gen --workload NAME --n N [--seed S] [--output FILE]\n"
    "Writes N particles of a workload (see 'nsearch workloads') as a particle file:\n"
    "the header x,y,z,r, then one particle per line, numbers as %.9g.\n"
    "\n"
    "  --workload NAME  the generator\n"
    "  --n N            the number of particles (0 to 4294967295)\n"
    "  --seed S         the generator's seed (default 1); the same (N, S) gives the same file\n"
    "  --output FILE    write to FILE instead of standard output ('-': standard output); a\n"
    "                   regular file is replaced only when complete, keeping its mode and\n"
    "                   owner; a device or FIFO is written directly (docs/cli.md, 'Output files')\n";

/* The kernel table: name and description, or with --json every field. */
static void list_kernels(bool json)
{
    if (json)
        table_json_kernels(stdout);
    else
        for (size_t k = 0; k < ns_kernel_count(); k++)
            printf("%-15s %s\n", ns_kernel_at(k)->name, ns_kernel_at(k)->description);
}

/* The workload table: name and description, or with --json every field. */
static void list_workloads(bool json)
{
    if (json)
        table_json_workloads(stdout);
    else
        for (size_t k = 0; k < ns_workload_count(); k++)
            printf("%-15s %s\n", ns_workload_at(k)->name, ns_workload_at(k)->description);
}

int cli_gen(int argc, char **argv)
{
    enum { WORKLOAD, N, SEED, OUTPUT, NOPTS };
    opt opts[NOPTS] = {OPT_TEXT_ENTRY("--workload"), OPT_COUNT_ENTRY("--n", 0, NS_MAX_PARTICLES),
                       OPT_COUNT_ENTRY("--seed", 0, ULLONG_MAX), OPT_TEXT_ENTRY("--output")};
    cli_parse(argc, argv, opts, NOPTS, gen_help);
    if (!opts[WORKLOAD].given || !opts[N].given)
        cli_usage_error("%s is required", opts[WORKLOAD].given ? "--n" : "--workload");
    const char *workload = opts[WORKLOAD].text;
    const ns_workload *w = ns_workload_find(workload);
    if (!w) {
        char shown[96];
        opt_quote(shown, sizeof shown, workload, 40);
        cli_usage_error("unknown workload '%s' (see 'nsearch workloads')", shown);
    }
    size_t n = (size_t)opts[N].count;
    uint64_t seed = opts[SEED].given ? opts[SEED].count : 1;

    output out;
    int rc = output_open(&out, opts[OUTPUT].text);
    if (rc)
        return rc;
    float *pos = malloc(n ? 3 * n * sizeof(float) : 1), *radius = malloc(n ? n * sizeof(float) : 1);
    ns_error err;
    if (!pos || !radius) {
        cli_say("gen: out of memory for %zu particles", n);
        rc = EXIT_FAIL;
    } else if (w->generate(n, seed, 0, pos, radius, &err) != NS_OK) {
        cli_say("%s: %s", workload, err.message);
        rc = cli_exit_status(err.status);
    } else {
        ns_particles p = {n, pos, radius, 0.0f};
        if (ns_particles_write(out.f, &p, &err) != NS_OK) {
            cli_say("%s: %s", output_name(&out), err.message);
            rc = EXIT_FAIL;
        } else if (!output_commit(&out, true)) {
            rc = EXIT_FAIL;
        }
    }
    if (rc)
        output_discard(&out);
    free(pos);
    free(radius);
    return rc;
}

/* Fault injection for the tests (tests/cli): NSEARCH_FAIL_ALLOC=K makes the
 * library's K-th allocation and every later one fail, as on a machine out
 * of memory; the tool must then exit 1 with a message and leave no file. */
static atomic_long alloc_calls;
static long alloc_fail_at;

static bool alloc_fails(void)
{
    return alloc_fail_at > 0 && atomic_fetch_add(&alloc_calls, 1) + 1 >= alloc_fail_at;
}

static void *failing_malloc(size_t size, void *ctx)
{
    (void)ctx;
    return alloc_fails() ? NULL : malloc(size);
}

static void *failing_realloc(void *ptr, size_t size, void *ctx)
{
    (void)ctx;
    return alloc_fails() ? NULL : realloc(ptr, size);
}

static void plain_free(void *ptr, void *ctx)
{
    (void)ctx;
    free(ptr);
}

static void install_fault_injection(void)
{
    const char *k = getenv("NSEARCH_FAIL_ALLOC");
    if (!k || !*k)
        return;
    alloc_fail_at = strtol(k, NULL, 10);
    static const ns_allocator hooks = {failing_malloc, failing_realloc, plain_free, NULL};
    ns_set_allocator(&hooks);
}

int main(int argc, char **argv)
{
    install_fault_injection(); /* before any other library call */
    output_init();
    if (argc < 2)
        cli_usage_error("no command");
    const char *cmd = argv[1];
    bool help = strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0;
    if ((help || strcmp(cmd, "--version") == 0) && argc > 2) {
        char shown[96];
        opt_quote(shown, sizeof shown, argv[2], 40);
        cli_usage_error("%s takes no argument ('%s')", cmd, shown);
    }
    if (help)
        cli_print_and_exit(main_help);
    if (strcmp(cmd, "--version") == 0) {
        ns_error err;
        const char *path = ns_isa(&err);
        char text[400];
        snprintf(text, sizeof text, "nsearch " NS_VERSION_STRING " (code path %s; paths: %s)\n",
                 path ? path : err.message, ns_isa_paths());
        cli_print_and_exit(text);
    }
    static const struct {
        const char *name;
        int (*run)(int argc, char **argv);
    } commands[] = {{"gen", cli_gen}, {"pairs", cli_pairs}, {"sim", cli_sim}};
    for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
        if (strcmp(cmd, commands[k].name) == 0) {
            cli_command = commands[k].name;
            return commands[k].run(argc - 2, argv + 2);
        }
    if (strcmp(cmd, "kernels") == 0 || strcmp(cmd, "workloads") == 0) {
        bool kernels = cmd[0] == 'k';
        cli_command = kernels ? "kernels" : "workloads";
        opt json = OPT_FLAG_ENTRY("--json");
        cli_parse(argc - 2, argv + 2, &json, 1,
                  kernels
                      ? "Usage: nsearch kernels [--json]\nLists the kernels: name, then a "
                        "one-line description; with --json\nevery field of the kernel table "
                        "(docs/testing.md, \"Adding a kernel\").\n"
                      : "Usage: nsearch workloads [--json]\nLists the workload generators: "
                        "name, then a one-line description;\nwith --json every field of the "
                        "workload table (cache_version, at_rest, headline, bulk,\nwide_radii).\n");
        kernels ? list_kernels(json.given) : list_workloads(json.given);
        cli_print_and_exit("");
    }
    char shown[96];
    opt_quote(shown, sizeof shown, cmd, 40);
    cli_usage_error("unknown command '%s'", shown);
}

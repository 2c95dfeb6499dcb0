/* isa.c - the code paths: which ones this build compiled the kernels for,
 * which one this process runs.
 *
 * On x86-64 without NS_NATIVE every kernel is compiled once per path of
 * isa_paths.h (the one list; CMakeLists.txt reads it): avx512 (AVX-512
 * F/VL/BW/DQ with AVX2, FMA, BMI1/2), avx2 (AVX2, FMA, BMI1/2) and generic
 * (the baseline x86-64 a distribution builds for). The best path the CPU can run is chosen when an index is
 * made, unless its config (ns_config.isa) or the environment variable
 * NS_ISA names one. FMA instructions
 * are allowed but never contracted into the arithmetic (-ffp-contract=off),
 * so every path computes the same IEEE operations: the contacts are
 * bit-identical on all of them (the diff and pitfall tests run each).
 * An NS_NATIVE=ON build has one path, "native" (-march=native); another
 * architecture one, "generic". */
#include "kernel.h"

#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

#ifdef NS_ISA_DISPATCH
#include "isa_paths.h"
#define NAME(path, arg, options, needs, runs) #path,
#define LISTED(path, arg, options, needs, runs) " " #path
#define NEEDS(path, arg, options, needs, runs) needs,
static const char *const paths[] = {NS_ISA_DISPATCH_PATHS(NAME, )};
static const char *const all_paths = &NS_ISA_DISPATCH_PATHS(LISTED, )[1]; /* not the first space */
static const char *const needs[] = {NS_ISA_DISPATCH_PATHS(NEEDS, )};

/* Can this CPU (and its operating system, which must save the wider
 * registers: the builtins check that too) run path k? */
static bool cpu_runs(size_t k)
{
    __builtin_cpu_init();
#define CPU(feature) __builtin_cpu_supports(#feature)
#define RUNS(path, arg, options, needs, runs) (runs),
    const bool runs[] = {NS_ISA_DISPATCH_PATHS(RUNS, )};
#undef RUNS
#undef CPU
    return runs[k];
}
#else
static const char *const paths[] = {STR(NS_ISA_PATH)};
static const char *const needs[] = {""};
static const char *const all_paths = STR(NS_ISA_PATH);

static bool cpu_runs(size_t k)
{
    (void)k; /* native: the build machine's CPU, taken as this one */
    return true;
}
#endif

enum { PATH_COUNT = sizeof paths / sizeof paths[0] };

int ns__isa_path(const char *wanted, ns_error *err)
{
    const char *forced = wanted ? wanted : getenv("NS_ISA");
    /* an empty NS_ISA counts as unset; isa = "" names no path: refused below */
    if (!forced || (!wanted && !*forced)) {
        for (size_t k = 0; k < PATH_COUNT; k++)
            if (cpu_runs(k))
                return (int)k;
        return PATH_COUNT - 1;
    }
    for (size_t k = 0; k < PATH_COUNT; k++)
        if (strcmp(forced, paths[k]) == 0) {
            if (cpu_runs(k))
                return (int)k;
            ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
                     "%s%s: this CPU cannot run the %s path (it needs %s)",
                     wanted ? "isa = " : "NS_ISA=", paths[k], paths[k], needs[k]);
            return -1;
        }
    ns__fail(err, NS_ERR_INVALID_ARGUMENT, NS_NO_PARTICLE,
             "%s%.40s is not a code path of this build (it has: %s)",
             wanted ? "isa = " : "NS_ISA=", *forced ? forced : "\"\"", all_paths);
    return -1;
}

const char *ns_isa(ns_error *err)
{
    int k = ns__isa_path(NULL, err);
    if (k < 0)
        return NULL;
    ns__ok(err);
    return paths[k];
}

const char *ns_isa_paths(void)
{
    return all_paths;
}

/* workload_cache.c - the costly workloads' particles kept between runs
 * (workload_cache.h). */
#define _POSIX_C_SOURCE 200809L /* lstat, PATH_MAX */
#include "workload_cache.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reads path when it is a particle file of exactly n particles with radii. */
static bool read_cached(const char *path, size_t n, float *pos, float *radius)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    ns_particle_file file = {0};
    ns_error err;
    bool ok = ns_particle_file_read(f, &file, &err) == NS_OK && file.n == n && file.columns == 4;
    fclose(f);
    if (ok && n) {
        memcpy(pos, file.pos, 3 * n * sizeof(float));
        memcpy(radius, file.radius, n * sizeof(float));
    }
    ns_particle_file_free(&file);
    return ok;
}

/* Writes path through a temporary beside it, so a reader never sees half a
 * file; only where path is nothing yet or a regular file. */
static bool write_cached(const char *path, size_t n, const float *pos, const float *radius)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return false;
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = fopen(tmp, "wx");
    if (!f)
        return false;
    ns_particles p = {n, pos, radius, 0.0f};
    ns_error err;
    bool ok = ns_particles_write(f, &p, &err) == NS_OK;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        return true;
    remove(tmp);
    return false;
}

ns_status workload_cache_generate(const ns_workload *w, size_t n, uint64_t seed, int threads,
                                  const char *dir, float *pos, float *radius,
                                  workload_cache_outcome *outcome, ns_error *err)
{
    char path[PATH_MAX] = "";
    bool use_cache = dir && w->cache_version > 0;
    *outcome = CACHE_UNUSED;
    if (use_cache) {
        int len = snprintf(path, sizeof path, "%s/%s-v%d-n%zu-seed%llu.csv", dir, w->name,
                           w->cache_version, n, (unsigned long long)seed);
        if (len < 0 || (size_t)len >= sizeof path)
            path[0] = '\0';
        else if (read_cached(path, n, pos, radius)) {
            *outcome = CACHE_READ;
            return NS_OK;
        }
    }
    ns_status st = w->generate(n, seed, threads, pos, radius, err);
    if (st == NS_OK && use_cache) {
        bool stored = path[0] && (mkdir(dir, 0777) == 0 || errno == EEXIST) &&
                      write_cached(path, n, pos, radius);
        *outcome = stored ? CACHE_STORED : CACHE_NOT_KEPT;
    }
    return st;
}

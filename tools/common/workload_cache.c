/* workload_cache.c - the costly workloads' particles kept between runs
 * (workload_cache.h). */
#define _POSIX_C_SOURCE 200809L /* lstat, PATH_MAX */
#include "workload_cache.h"

#include "atomic_file.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The checksum line's first word, and its length in all: the words of a
 * cache's identity and the hash make it far shorter than this. */
#define CHECK_PREFIX "# nsearch-cache "
enum { CHECK_LINE_MAX = 512 };

/* FNV-1a (64 bits) over count floats' bits, each float's 4 bytes least
 * significant first, so the hash is the same on every machine. */
static uint64_t fnv1a_floats(uint64_t h, const float *v, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &v[i], sizeof bits);
        for (int k = 0; k < 4; k++) {
            h ^= (bits >> (8 * k)) & 0xffu;
            h *= UINT64_C(0x100000001b3);
        }
    }
    return h;
}

/* The hash of a pile: the 3n coordinates, then the n radii. */
static uint64_t pile_checksum(size_t n, const float *pos, const float *radius)
{
    uint64_t h = fnv1a_floats(UINT64_C(0xcbf29ce484222325), pos, 3 * n);
    return fnv1a_floats(h, radius, n);
}

/* The words of the identity of w's pile of n with seed, as the checksum line
 * has them: "workload=NAME version=V n=N seed=S". */
static void identity_words(char *buf, size_t size, const ns_workload *w, size_t n, uint64_t seed)
{
    snprintf(buf, size, "workload=%s version=%d n=%zu seed=%llu", w->name, w->cache_version, n,
             (unsigned long long)seed);
}

/* Checks line (the file's first, its end removed) against the identity
 * words want; on success *sum is the recorded hash. Otherwise writes why to
 * reason. */
static bool check_line(const char *line, const char *want, uint64_t *sum, char *reason,
                       size_t reason_size)
{
    size_t plen = strlen(CHECK_PREFIX);
    if (strncmp(line, CHECK_PREFIX, plen) != 0) {
        snprintf(reason, reason_size, "it has no checksum line");
        return false;
    }
    const char *got = line + plen;
    /* the identity, word by word: a word that names another pile is named */
    while (*want) {
        size_t wlen = strcspn(want, " "), glen = strcspn(got, " ");
        size_t key = strcspn(want, "=") + 1; /* "n=": the key and its '=' */
        if (glen < key || strncmp(got, want, key) != 0) {
            snprintf(reason, reason_size, "its checksum line is damaged");
            return false;
        }
        if (glen != wlen || strncmp(got, want, wlen) != 0) {
            snprintf(reason, reason_size, "its checksum line says %.*s, not %.*s",
                     glen > 64 ? 64 : (int)glen, got, (int)wlen, want);
            return false;
        }
        want += wlen + (want[wlen] == ' ');
        got += glen;
        if (*got != ' ') {
            snprintf(reason, reason_size, "its checksum line is damaged");
            return false;
        }
        got++;
    }
    /* then the hash: exactly 16 lower-case hex digits, and the line ends */
    const char *hex = "fnv1a64=";
    if (strncmp(got, hex, strlen(hex)) != 0) {
        snprintf(reason, reason_size, "its checksum line is damaged");
        return false;
    }
    got += strlen(hex);
    uint64_t h = 0;
    int digits = 0;
    for (; digits < 16; digits++) {
        char c = got[digits];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            break;
        h = h << 4 | (uint64_t)d;
    }
    if (digits != 16 || got[16] != '\0') {
        snprintf(reason, reason_size, "its checksum line is damaged");
        return false;
    }
    *sum = h;
    return true;
}

typedef enum read_status { READ_OK, READ_MISSING, READ_FAILED } read_status;

/* Reads path when it passes its check (workload_cache.h): READ_OK with pos
 * and radius filled; READ_MISSING when there is no file; READ_FAILED with
 * reason otherwise (pos and radius untouched). */
static read_status read_cached(const char *path, const char *identity, size_t n, float *pos,
                               float *radius, char *reason, size_t reason_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT || errno == ENOTDIR)
            return READ_MISSING;
        snprintf(reason, reason_size, "it cannot be opened: %s", strerror(errno));
        return READ_FAILED;
    }
    char line[CHECK_LINE_MAX];
    uint64_t recorded = 0;
    bool ok = false;
    if (!fgets(line, sizeof line, f)) {
        if (ferror(f))
            snprintf(reason, reason_size, "it cannot be read: %s", strerror(errno));
        else
            snprintf(reason, reason_size, "it is empty");
    } else {
        size_t len = strlen(line);
        bool whole = len > 0 && line[len - 1] == '\n';
        if (whole)
            line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (!whole && !feof(f))
            snprintf(reason, reason_size, "%s",
                     strncmp(line, CHECK_PREFIX, strlen(CHECK_PREFIX)) == 0
                         ? "its checksum line is damaged"
                         : "it has no checksum line");
        else
            ok = check_line(line, identity, &recorded, reason, reason_size);
    }
    ns_particle_file file = {0};
    if (ok) {
        ok = false;
        ns_error err;
        rewind(f);
        if (ns_particle_file_read(f, &file, &err) != NS_OK) {
            if (err.line)
                snprintf(reason, reason_size, "line %zu: %s", err.line, err.message);
            else
                snprintf(reason, reason_size, "%s", err.message);
        } else if (file.n != n)
            snprintf(reason, reason_size, "it holds %zu particle%s, not %zu", file.n,
                     file.n == 1 ? "" : "s", n);
        else if (file.columns != 4 || (n && !file.radius))
            snprintf(reason, reason_size, "it has no radii");
        else if (pile_checksum(n, file.pos, file.radius) != recorded)
            snprintf(reason, reason_size, "its checksum differs");
        else
            ok = true;
    }
    fclose(f);
    if (ok && n) {
        memcpy(pos, file.pos, 3 * n * sizeof(float));
        memcpy(radius, file.radius, n * sizeof(float));
    }
    ns_particle_file_free(&file);
    return ok ? READ_OK : READ_FAILED;
}

/* Writes path through a temporary beside it, so a reader never sees half a
 * file; only where path is nothing yet or a regular file. The checksum line
 * first (identity and the hash of the arrays), then the particle file. */
static bool write_cached(const char *path, const char *identity, size_t n, const float *pos,
                         const float *radius)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return false;
    atomic_file a;
    FILE *f = atomic_file_open(&a, path);
    if (!f)
        return false;
    ns_particles p = {n, pos, radius, 0.0f};
    ns_error err;
    if (fprintf(f, "%s%s fnv1a64=%016llx\n", CHECK_PREFIX, identity,
                (unsigned long long)pile_checksum(n, pos, radius)) > 0 &&
        ns_particles_write(f, &p, &err) == NS_OK)
        return atomic_file_commit(&a);
    atomic_file_discard(&a);
    return false;
}

ns_status workload_cache_generate(const ns_workload *w, size_t n, uint64_t seed, int threads,
                                  const char *dir, float *pos, float *radius,
                                  workload_cache_result *result, ns_error *err)
{
    char *path = result->path;
    char identity[CHECK_LINE_MAX / 2];
    bool use_cache = dir && w->cache_version > 0;
    bool failed = false;
    result->outcome = CACHE_UNUSED;
    result->path[0] = '\0';
    result->reason[0] = '\0';
    if (use_cache) {
        identity_words(identity, sizeof identity, w, n, seed);
        int len = snprintf(path, sizeof result->path, "%s/%s-v%d-n%zu-seed%llu.csv", dir, w->name,
                           w->cache_version, n, (unsigned long long)seed);
        if (len < 0 || (size_t)len >= sizeof result->path || (size_t)len >= PATH_MAX)
            path[0] = '\0';
        else {
            read_status rs = read_cached(path, identity, n, pos, radius, result->reason,
                                         sizeof result->reason);
            if (rs == READ_OK) {
                result->outcome = CACHE_READ;
                return NS_OK;
            }
            failed = rs == READ_FAILED;
        }
    }
    ns_status st = w->generate(n, seed, threads, pos, radius, err);
    if (st == NS_OK && use_cache) {
        bool stored = path[0] && (mkdir(dir, 0777) == 0 || errno == EEXIST) &&
                      write_cached(path, identity, n, pos, radius);
        result->outcome = !stored ? CACHE_NOT_KEPT : failed ? CACHE_REMADE : CACHE_STORED;
    }
    return st;
}

/* results.c - the results file (docs/harness.md, "The results file"):
 * written by Google Benchmark into an atomic_file's temporary (its
 * --benchmark_out, given here), renamed over bench.json when complete
 * (results_finish, from main's end), or to a name that says "partial" when
 * interrupted (the signal handler). main calls results_to unless the run
 * lists, writes no results or the user named a --benchmark_out. */
#define _GNU_SOURCE /* gethostname */

#include "bench.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The one file-level variable of the harness: a signal handler is given
 * nothing but the signal, so the results file it renames is here (set by
 * results_to before the handler is installed; the file is main's). */
static const results_file *interrupted_results;

static void on_interrupt(int sig)
{
    const results_file *r = interrupted_results;
    if (r->file.temp[0])
        rename(r->file.temp, r->partial);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void make_dirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            mkdir(buf, 0777);
            *p = '/';
        }
    if (mkdir(buf, 0777) != 0 && errno != EEXIST)
        die("cannot create %s: %s", path, strerror(errno));
}

/* The results file: written as DIR/.bench.json.tmp.XXXXXX and renamed to
 * DIR/bench.json when complete (DIR/bench.partial.json when interrupted);
 * DIR is out_dir, or results/<host>/<UTC timestamp>. */
void results_to(results_file *r, char *program, const char *out_dir)
{
    char dir[700], host[256] = "unknown", stamp[32];
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    time_t t = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&t));
    if (out_dir)
        snprintf(dir, sizeof dir, "%s", out_dir);
    else
        snprintf(dir, sizeof dir, "results/%s/%s", host, stamp);
    make_dirs(dir);
    char final[1024];
    snprintf(final, sizeof final, "%s/bench.json", dir);
    snprintf(r->partial, sizeof r->partial, "%s/bench.partial.json", dir);
    if (!atomic_file_open(&r->file, final))
        die("cannot create a file in %s: %s", dir, strerror(errno));
    fclose(r->file.f); /* Google Benchmark writes it, by name */
    r->file.f = NULL;
    snprintf(r->out_flag, sizeof r->out_flag, "--benchmark_out=%s", r->file.temp);
    char *extra[] = {program, r->out_flag, (char *)"--benchmark_out_format=json", NULL};
    int extra_argc = 3;
    nsb_initialize(&extra_argc, extra);
    interrupted_results = r;
    signal(SIGINT, on_interrupt);
    signal(SIGTERM, on_interrupt);
}

void results_finish(const results_file *r)
{
    if (r->file.temp[0]) { /* renamed here, not by atomic_file_commit: a failure keeps it */
        if (rename(r->file.temp, r->file.target) != 0)
            die("cannot rename %s: %s", r->file.temp, strerror(errno));
        fprintf(stderr, "nsearch-bench: results in %s\n", r->file.target);
    }
}

/* output.c - where the tool writes (see output.h). */
#define _DEFAULT_SOURCE /* realpath, fchown, getxattr */

#include "output.h"

#include "atomic_file.h"
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

/* The one temporary file a run may have, for the signal handler. */
static char temp_path[PATH_MAX + 16];
static char target_path[PATH_MAX + 1];
/* The temporary's state, shared with the signal handler, which may run on any
 * thread (blocking signals in the main thread does not block them in the
 * OpenMP workers): the handler and the final rename each claim it by one
 * compare-and-swap, so a signal either removes the temporary and ends the
 * process before the rename, or arrives after the rename began and is
 * absorbed (the run then ends with its own status and the new file). */
enum { TEMP_NONE, TEMP_ACTIVE, TEMP_COMMITTING, TEMP_DYING };
static atomic_int temp_state = TEMP_NONE;
static sigset_t exit_signals;

/* The set of files (see output.h), claimed as the temporary is: its
 * folder, the private folder inside it, the names, and how many of its
 * files may exist (counted before each is created). */
static struct {
    char dir[PATH_MAX + 1];
    char staging[PATH_MAX + 32];
    char current[PATH_MAX + OUTPUT_NAME_MAX + 1]; /* the file being written, for messages */
    int dir_fd, staging_fd;
    atomic_size_t created;
    output_name_fn name;
    const void *ctx;
} set;
static atomic_int set_state = TEMP_NONE;

/* Removes the set's files from first on from its private folder, then the
 * folder; safe in a signal handler. */
static void remove_staged(size_t first)
{
    size_t made = atomic_load(&set.created);
    char name[OUTPUT_NAME_MAX];
    for (size_t k = first; k < made; k++) {
        set.name(k, set.ctx, name);
        unlinkat(set.staging_fd, name, 0);
    }
    rmdir(set.staging);
}

/* The signals whose default action ends the process and that a program may
 * catch. Faults of the program itself (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGTRAP, SIGSYS) are left to their default: a crash leaves its temporary
 * behind but never touches the target. */
static const int ending_signals[] = {
    SIGHUP,  SIGINT,    SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2,
    SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGABRT,
#ifdef SIGPOLL
    SIGPOLL,
#endif
#ifdef SIGPWR
    SIGPWR,
#endif
};

static void on_signal(int sig)
{
    int state = TEMP_ACTIVE;
    bool committing = false;
    if (atomic_compare_exchange_strong(&temp_state, &state, TEMP_DYING))
        unlink(temp_path);
    else
        committing = state == TEMP_COMMITTING;
    state = TEMP_ACTIVE;
    if (atomic_compare_exchange_strong(&set_state, &state, TEMP_DYING))
        remove_staged(0);
    else
        committing = committing || state == TEMP_COMMITTING;
    if (committing)
        return; /* the rename has begun: the run finishes with the new files */
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns: the process ends by sig */
}

/* exit() from anywhere (the OpenMP runtime's fatal errors call it). */
static void on_exit_remove(void)
{
    int state = TEMP_ACTIVE;
    if (atomic_compare_exchange_strong(&temp_state, &state, TEMP_NONE))
        unlink(temp_path);
    state = TEMP_ACTIVE;
    if (atomic_compare_exchange_strong(&set_state, &state, TEMP_NONE))
        remove_staged(0);
}

static void catch_signal(int sig)
{
    struct sigaction old;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN)
        return; /* ignored by whoever started us (nohup): stays ignored */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_mask = exit_signals;
    sigaction(sig, &sa, NULL);
}

void output_init(void)
{
    sigemptyset(&exit_signals);
    size_t count = sizeof ending_signals / sizeof ending_signals[0];
    for (size_t k = 0; k < count; k++)
        sigaddset(&exit_signals, ending_signals[k]);
#if defined(SIGRTMIN) && defined(SIGRTMAX)
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        sigaddset(&exit_signals, sig);
#endif
    for (size_t k = 0; k < count; k++)
        catch_signal(ending_signals[k]);
#if defined(SIGRTMIN) && defined(SIGRTMAX)
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        catch_signal(sig);
#endif
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    atexit(on_exit_remove);
}

const char *output_name(const output *o)
{
    return o->path ? o->path : "standard output";
}

static bool is_stdout_file(const struct stat *st)
{
    struct stat out;
    return fstat(STDOUT_FILENO, &out) == 0 && out.st_dev == st->st_dev && out.st_ino == st->st_ino;
}

/* The temporary: atomic_file.h's name beside the target. */
static bool temp_name(const char *target)
{
    return atomic_temp_name(target, temp_path, sizeof temp_path);
}

static int refuse(const char *path, const char *fmt, const char *detail)
{
    char what[256];
    snprintf(what, sizeof what, fmt, detail);
    cli_say("%s: %s", path, what);
    return 1;
}

/* An existing regular file that a new file may replace, keeping its mode,
 * owner and group; else the refusal's exit status. */
static int check_replaceable(const char *path, const char *target, const struct stat *st)
{
    if (st->st_nlink > 1) {
        char links[32];
        snprintf(links, sizeof links, "%ju", (uintmax_t)st->st_nlink);
        return refuse(path,
                      "the file has %s hard links: a new file would break them and writing in "
                      "place could leave it half-written; write elsewhere",
                      links);
    }
    if (access(target, W_OK) != 0)
        return refuse(path, "cannot replace it: %s", strerror(errno));
    if (getxattr(target, "system.posix_acl_access", NULL, 0) >= 0)
        return refuse(path, "%s",
                      "the file has an access control list, which a new file would not keep; "
                      "write elsewhere");
    return 0;
}

/* A character device or a FIFO (which waits for its reader): written
 * directly. */
static int open_directly(output *o, const char *path, const char *target)
{
    int fd = open(target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return refuse(path, "cannot open it for writing: %s", strerror(errno));
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        close(fd);
        return refuse(path, "%s", strerror(errno));
    }
    o->own_file = true;
    return 0;
}

/* A new file fd (made 0600 and ours) given the owner, group and mode of
 * the file it will replace (st), chown first since it clears the set-id
 * bits, or (st NULL) what a new file gets. 0, or the refusal's status. */
static int take_owner_and_mode(const char *path, int fd, const struct stat *st)
{
    if (st && (st->st_uid != geteuid() || st->st_gid != getegid()) &&
        fchown(fd, st->st_uid, st->st_gid) != 0)
        return refuse(path,
                      "cannot give a new file the owner and group of this one (%s); refusing to "
                      "change who can read it: write elsewhere",
                      strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, st ? st->st_mode & 07777 : 0666 & ~mask) != 0)
        return refuse(path, "cannot set the mode of the new file: %s", strerror(errno));
    return 0;
}

/* The temporary beside the target (temp_path), with the target's owner,
 * group and mode when it exists (st), else a new file's. */
static int open_temporary(output *o, const char *path, const struct stat *st)
{
    bool exists = st != NULL;
    /* A signal between mkstemp and TEMP_ACTIVE would leave the file
     * behind: it waits until both are done. */
    sigset_t previous;
    sigprocmask(SIG_BLOCK, &exit_signals, &previous);
    int fd = mkstemp(temp_path);
    int saved = errno;
    atomic_store(&temp_state, fd >= 0 ? TEMP_ACTIVE : TEMP_NONE);
    sigprocmask(SIG_SETMASK, &previous, NULL);
    if (fd < 0)
        return refuse(path, "cannot create a file in its folder: %s", strerror(saved));
    o->replace = true;
    o->own_file = true;
    int rc = take_owner_and_mode(path, fd, exists ? st : NULL);
    if (rc) {
        close(fd);
        output_discard(o);
        return rc;
    }
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        saved = errno;
        close(fd);
        output_discard(o);
        return refuse(path, "%s", strerror(saved));
    }
    return 0;
}

int output_open(output *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return 0;
    }
    o->path = path;
    struct stat lst, st;
    bool exists = lstat(path, &lst) == 0;
    if (!exists && errno != ENOENT)
        return refuse(path, "%s", strerror(errno));
    const char *target = path;
    if (exists && S_ISLNK(lst.st_mode)) {
        if (stat(path, &st) != 0)
            return refuse(path, "a symbolic link to nothing that can be written (%s)",
                          strerror(errno));
        if (!realpath(path, target_path))
            return refuse(path, "cannot follow the symbolic link: %s", strerror(errno));
        target = target_path;
    } else {
        st = lst;
    }
    if (exists && is_stdout_file(&st)) {
        o->f = stdout; /* /dev/stdout, or another name of what standard output is */
        return 0;
    }
    bool replace = !exists || S_ISREG(st.st_mode);
    if (exists && S_ISDIR(st.st_mode))
        return refuse(path, "%s", "is a folder");
    if (exists && S_ISBLK(st.st_mode))
        return refuse(path, "%s", "is a block device (a disk): nsearch does not write to disks");
    if (!replace && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
        return refuse(path, "%s", "is neither a regular file, a character device nor a FIFO");

    if (!replace)
        return open_directly(o, path, target);
    if (exists) {
        int rc = check_replaceable(path, target, &st);
        if (rc)
            return rc;
    }
    if (!temp_name(target))
        return refuse(path, "%s", "the path is too long");
    if (target != target_path)
        snprintf(target_path, sizeof target_path, "%s", target);
    return open_temporary(o, path, exists ? &st : NULL);
}

void output_discard(output *o)
{
    if (o->f && o->own_file)
        fclose(o->f);
    o->f = NULL;
    int state = TEMP_ACTIVE;
    if (o->replace && atomic_compare_exchange_strong(&temp_state, &state, TEMP_NONE))
        unlink(temp_path);
    o->replace = false;
}

/* From here on the signals that would end the process are blocked (the
 * previous mask into *previous) and *state is TEMP_COMMITTING; when a signal
 * handler on another thread got there first, this thread waits for the
 * process to end. */
static void begin_commit(atomic_int *state, sigset_t *previous)
{
    sigprocmask(SIG_BLOCK, &exit_signals, previous);
    int active = TEMP_ACTIVE;
    if (!atomic_compare_exchange_strong(state, &active, TEMP_COMMITTING))
        for (;;)
            pause();
}

/* Flushes o->f, then syncs it (sync) and closes it when it is the tool's
 * own (o->own_file); false, with one line printed, when any of it fails. */
static bool finish_writing(output *o, bool sync)
{
    FILE *f = o->f;
    o->f = NULL;
    int failed = fflush(f) != 0 || ferror(f);
    int saved = errno;
    if (!failed && sync && fsync(fileno(f)) != 0)
        failed = 1, saved = errno;
    if (o->own_file && fclose(f) != 0 && !failed)
        failed = 1, saved = errno;
    o->own_file = false;
    if (failed)
        cli_say("%s: cannot write: %s", output_name(o), strerror(saved));
    return !failed;
}

bool output_commit(output *o, bool last)
{
    if (!finish_writing(o, o->replace)) {
        output_discard(o);
        return false;
    }
    if (!o->replace)
        return true;
    sigset_t previous;
    begin_commit(&temp_state, &previous);
    if (rename(temp_path, target_path) != 0) {
        int saved = errno;
        unlink(temp_path);
        atomic_store(&temp_state, TEMP_NONE);
        sigprocmask(SIG_SETMASK, &previous, NULL);
        cli_say("%s: cannot replace it: %s", output_name(o), strerror(saved));
        return false;
    }
    o->replace = false;
    if (!last) { /* more to do: signals end the run again, with nothing to remove */
        atomic_store(&temp_state, TEMP_NONE);
        sigprocmask(SIG_SETMASK, &previous, NULL);
    }
    return true;
}

/* set.current = the set's folder / name k; false when too long. */
static bool member_path(size_t k, char name[OUTPUT_NAME_MAX])
{
    set.name(k, set.ctx, name);
    return snprintf(set.current, sizeof set.current, "%s/%s", set.dir, name) <
           (int)sizeof set.current;
}

/* What is at name in the set's folder: nothing (*st_out NULL) or a regular
 * file the set may replace (*st_out = st); else the refusal's status. */
static int check_member(const char *name, struct stat *st, const struct stat **st_out)
{
    *st_out = NULL;
    if (fstatat(set.dir_fd, name, st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : refuse(set.current, "%s", strerror(errno));
    if (S_ISLNK(st->st_mode))
        return refuse(set.current, "%s",
                      "is a symbolic link: the files of a folder are written as plain files; "
                      "remove it or write elsewhere");
    if (S_ISDIR(st->st_mode))
        return refuse(set.current, "%s", "is a folder");
    if (!S_ISREG(st->st_mode))
        return refuse(set.current, "%s", "is not a regular file");
    int rc = check_replaceable(set.current, set.current, st);
    if (rc == 0)
        *st_out = st;
    return rc;
}

int output_set_open(const char *dir, size_t count, output_name_fn name, const void *ctx)
{
    if (snprintf(set.dir, sizeof set.dir, "%s", dir) >= (int)sizeof set.dir ||
        snprintf(set.staging, sizeof set.staging, "%s/.nsearch.XXXXXX", dir) >=
            (int)sizeof set.staging)
        return refuse(dir, "%s", "the path is too long");
    set.dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (set.dir_fd < 0)
        return refuse(dir, "cannot open the folder: %s", strerror(errno));
    set.name = name, set.ctx = ctx;
    atomic_store(&set.created, 0);
    char member[OUTPUT_NAME_MAX];
    for (size_t k = 0; k < count; k++) {
        struct stat st;
        const struct stat *there;
        int rc = member_path(k, member) ? check_member(member, &st, &there)
                                        : refuse(dir, "%s", "the path is too long");
        if (rc) {
            close(set.dir_fd);
            return rc;
        }
    }
    /* A signal between mkdtemp and SET_ACTIVE would leave the folder
     * behind: it waits until both are done. */
    sigset_t previous;
    sigprocmask(SIG_BLOCK, &exit_signals, &previous);
    int saved = 0;
    if (!mkdtemp(set.staging)) {
        saved = errno;
    } else if ((set.staging_fd = open(set.staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        saved = errno;
        rmdir(set.staging);
    } else {
        atomic_store(&set_state, TEMP_ACTIVE);
    }
    sigprocmask(SIG_SETMASK, &previous, NULL);
    if (saved) {
        close(set.dir_fd);
        return refuse(dir, "cannot create a folder in it: %s", strerror(saved));
    }
    return 0;
}

int output_set_file(size_t k, output *o)
{
    memset(o, 0, sizeof *o);
    char name[OUTPUT_NAME_MAX];
    if (!member_path(k, name))
        return refuse(set.dir, "%s", "the path is too long");
    o->path = set.current;
    struct stat st;
    const struct stat *there;
    int rc = check_member(name, &st, &there); /* again: the folder may have changed */
    if (rc)
        return rc;
    if (atomic_load(&set.created) < k + 1)
        atomic_store(&set.created, k + 1); /* counted before it exists: see remove_staged() */
    int fd = openat(set.staging_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return refuse(set.current, "cannot create it: %s", strerror(errno));
    rc = take_owner_and_mode(set.current, fd, there);
    if (rc == 0 && !(o->f = fdopen(fd, "wb")))
        rc = refuse(set.current, "%s", strerror(errno));
    if (rc) {
        close(fd);
        return rc;
    }
    o->own_file = true;
    return 0;
}

bool output_set_close(output *o)
{
    return finish_writing(o, true);
}

void output_set_discard(void)
{
    int state = TEMP_ACTIVE;
    if (!atomic_compare_exchange_strong(&set_state, &state, TEMP_NONE))
        return;
    remove_staged(0);
    close(set.staging_fd);
    close(set.dir_fd);
}

bool output_set_commit(void)
{
    sigset_t previous;
    begin_commit(&set_state, &previous);
    char name[OUTPUT_NAME_MAX];
    size_t made = atomic_load(&set.created), moved = 0;
    for (; moved < made; moved++) {
        set.name(moved, set.ctx, name);
        if (renameat(set.staging_fd, name, set.dir_fd, name) != 0)
            break;
    }
    if (moved < made) {
        int saved = errno;
        member_path(moved, name);
        cli_say("%s: cannot replace it: %s (the %zu files before it were replaced)", set.current,
                strerror(saved), moved);
    }
    remove_staged(moved);
    close(set.staging_fd);
    close(set.dir_fd);
    atomic_store(&set_state, TEMP_NONE);
    if (moved < made) /* the run fails: signals end it again */
        sigprocmask(SIG_SETMASK, &previous, NULL);
    return moved == made;
}

/* lammps_neighbor.cpp - LAMMPS's binned half neighbour list, the search of
 * the molecular dynamics code most simulation developers know, through its
 * C library interface.
 *
 * LAMMPS runs in a process of its own, nsb-lammps (lammps_server.c): it
 * ends its process on its own errors, and that must not end nsearch-bench.
 * One such process serves every search of this process, and a new one
 * starts after LAMMPS ended the last. A search LAMMPS refuses - too many
 * bins for clusters far apart, a neighbour list overflowing, memory (its
 * error line says which, or the process was killed) - is a refusal, like
 * grid_dense's on a domain too large for it; any other LAMMPS error is
 * reported as an error, with LAMMPS's line.
 *
 * Prepare (untimed, once per particle set): the particles become LAMMPS
 * atoms in a box around them. Build: one neighbour build, LAMMPS's
 * "run 0 post no" (setup: atoms to bins, the half list
 * with cutoff 2 r_max, skin 0). Query: the list's pairs read back through
 * a shared memory file (indices mapped back by atom ID) and each decided
 * by the predicate. LAMMPS's list has one cutoff for all pairs, so its
 * reach is twice the largest radius. Debian's LAMMPS has no OPENMP
 * package: serial. Two orders: lammps_neighbor keeps the caller's order
 * (atom sorting off), lammps_neighbor_sorted lets LAMMPS sort the atoms
 * spatially once when they are loaded (its default practice; the sort is
 * not timed, the search in that order is). */
#include "contacts.hpp"
#include "lammps_protocol.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

extern char **environ;

namespace
{

const char *const who = "lammps_neighbor";

/* The nsb-lammps process and the files it shares with this one. */
class server
{
  public:
    ~server()
    {
        stop();
    }

    uint64_t loads = 0; /* particle sets loaded, over all processes */

    /* One request, and extra bytes after it; *value from the reply. */
    ns_status ask(const nsb_lammps_request &rq, const void *extra, size_t extra_size,
                  uint64_t *value, ns_error *err)
    {
        ns_status s = start(err);
        if (s != NS_OK)
            return s;
        nsb_lammps_reply rp;
        if (!send_all(&rq, sizeof rq) || (extra_size && !send_all(extra, extra_size)) ||
            !receive(&rp, sizeof rp))
            return ended(err);
        if (rp.status != 0) /* only PAIRS and CLEAR report one: the pairs file */
            return nsb::fail(
                err, rq.op == NSB_LAMMPS_PAIRS ? NS_ERR_OUT_OF_MEMORY : NS_ERR_INVALID_ARGUMENT,
                "lammps_neighbor: nsb-lammps could not size the pairs file "
                "(or found no pair list)");
        if (value)
            *value = rp.value;
        return NS_OK;
    }

    /* This process's mapping of the pairs file released (after CLEAR). */
    void unmap_pairs()
    {
        if (map)
            munmap(map, mapped);
        map = nullptr, mapped = 0;
    }

    /* The pairs file, mapped for `count` pairs (NULL when it cannot be). */
    const uint32_t *pairs(uint64_t count)
    {
        struct stat st;
        if (fstat(pairs_fd, &st) != 0 || (uint64_t)st.st_size < 2 * count * sizeof(uint32_t))
            return nullptr;
        if ((size_t)st.st_size != mapped) {
            unmap_pairs();
            if (st.st_size == 0)
                return nullptr;
            void *m = mmap(nullptr, (size_t)st.st_size, PROT_READ, MAP_SHARED, pairs_fd, 0);
            if (m == MAP_FAILED)
                return nullptr;
            map = m, mapped = (size_t)st.st_size;
        }
        return static_cast<const uint32_t *>(map);
    }

  private:
    pid_t pid = -1;
    int sock = -1, screen = -1, pairs_fd = -1;
    void *map = nullptr;
    size_t mapped = 0;

    ns_status start(ns_error *err)
    {
        if (pid > 0)
            return NS_OK;
        int ends[2] = {-1, -1};
        screen = above(memfd_create("nsb-lammps-screen", MFD_CLOEXEC));
        pairs_fd = above(memfd_create("nsb-lammps-pairs", MFD_CLOEXEC));
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) == 0)
            sock = above(ends[0]), ends[1] = above(ends[1]);
        if (screen < 0 || pairs_fd < 0 || sock < 0 || ends[1] < 0) {
            if (ends[1] >= 0)
                close(ends[1]);
            stop();
            return nsb::fail(err, NS_ERR_OUT_OF_MEMORY, "lammps_neighbor: no files for nsb-lammps");
        }
        posix_spawn_file_actions_t files;
        posix_spawn_file_actions_init(&files);
        posix_spawn_file_actions_adddup2(&files, ends[1], 3);
        posix_spawn_file_actions_adddup2(&files, screen, 4);
        posix_spawn_file_actions_adddup2(&files, pairs_fd, 5);
        char name[] = "nsb-lammps";
        char *argv[] = {name, nullptr};
        int failed = posix_spawn(&pid, NSB_LAMMPS_SERVER, &files, nullptr, argv, environ);
        posix_spawn_file_actions_destroy(&files);
        close(ends[1]);
        if (failed) {
            pid = -1;
            stop();
            char what[300];
            std::snprintf(what, sizeof what, "lammps_neighbor: cannot start %s: %s",
                          NSB_LAMMPS_SERVER, std::strerror(failed));
            return nsb::fail(err, NS_ERR_INVALID_ARGUMENT, what);
        }
        loads++; /* a new process has no particles */
        nsb_lammps_reply hello;
        if (!receive(&hello, sizeof hello))
            return ended(err);
        return NS_OK;
    }

    /* The process ended (LAMMPS's error, or killed): its status and error
     * line into err, the files closed. */
    ns_status ended(ns_error *err)
    {
        int status = reap();
        loads++; /* whatever it had loaded is gone */
        std::string tail = screen_tail(), line;
        size_t at = tail.rfind("ERROR");
        if (at != std::string::npos)
            line = tail.substr(at, tail.find('\n', at) - at);
        close_files();
        ns_status s = NS_ERR_INVALID_ARGUMENT;
        if ((line.find("Too many") != std::string::npos &&
             line.find("bins") != std::string::npos) ||
            line.find("Domain too large") != std::string::npos) /* bins over a vast box */
            s = NS_ERR_TOO_LARGE;
        else if (line.find("Neighbor list overflow") != std::string::npos)
            s = NS_ERR_TOO_MANY_CONTACTS;
        else if (line.find("Failed to allocate") != std::string::npos ||
                 line.find("out of memory") != std::string::npos ||
                 (line.empty() && WIFSIGNALED(status))) /* e.g. the OOM killer's */
            s = NS_ERR_OUT_OF_MEMORY;
        char what[400];
        if (line.empty())
            std::snprintf(what, sizeof what, "lammps_neighbor: nsb-lammps ended (%s %d)",
                          WIFSIGNALED(status) ? "signal" : "exit status",
                          WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        else
            std::snprintf(what, sizeof what, "lammps_neighbor: LAMMPS ended its process: %s",
                          line.c_str());
        return nsb::fail(err, s, what);
    }

    /* The socket closed (nsb-lammps ends when it closes) and the process
     * waited for: its wait status (0 when there was none). */
    int reap()
    {
        int status = 0;
        if (sock >= 0)
            close(sock);
        while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        sock = -1, pid = -1;
        return status;
    }

    void close_files()
    {
        unmap_pairs();
        if (screen >= 0)
            close(screen);
        if (pairs_fd >= 0)
            close(pairs_fd);
        screen = pairs_fd = -1;
    }

    void stop()
    {
        reap();
        close_files();
    }

    /* fd moved to a number above the child's 3, 4 and 5 (so that dup2-ing
     * one into place cannot overwrite another), close-on-exec. */
    static int above(int fd)
    {
        if (fd < 0 || fd > 5)
            return fd;
        int moved = fcntl(fd, F_DUPFD_CLOEXEC, 6);
        close(fd);
        return moved;
    }

    std::string screen_tail() const
    {
        struct stat st;
        if (screen < 0 || fstat(screen, &st) != 0)
            return "";
        off_t from = st.st_size > 8192 ? st.st_size - 8192 : 0;
        std::string text((size_t)(st.st_size - from), '\0');
        ssize_t got = pread(screen, &text[0], text.size(), from);
        text.resize(got > 0 ? (size_t)got : 0);
        for (char &c : text) /* the hole before LAMMPS's offset reads as zeros */
            if (c == '\0')
                c = ' ';
        return text;
    }

    bool send_all(const void *buf, size_t size)
    {
        const char *at = static_cast<const char *>(buf);
        while (size > 0) {
            ssize_t put = send(sock, at, size, MSG_NOSIGNAL);
            if (put < 0 && errno == EINTR)
                continue;
            if (put <= 0)
                return false;
            at += put, size -= (size_t)put;
        }
        return true;
    }

    bool receive(void *buf, size_t size)
    {
        char *at = static_cast<char *>(buf);
        while (size > 0) {
            ssize_t got = recv(sock, at, size, 0);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                return false;
            at += got, size -= (size_t)got;
        }
        return true;
    }
};

server lammps;

struct state {
    bool sorted = false;
    uint64_t loaded = UINT64_MAX; /* lammps.loads when its particles were loaded */
    const ns_particles *p = nullptr;
    size_t n = 0;
    nsb::parts out;
};

/* The particles as atoms in a new LAMMPS box around them. */
ns_status load(state *s, const ns_particles *p, ns_error *err)
{
    nsb_lammps_request rq{};
    rq.op = NSB_LAMMPS_LOAD;
    rq.sorted = s->sorted;
    rq.n = p->n;
    std::vector<double> x(3 * p->n);
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (size_t k = 0; k < 3 * p->n; k++) {
        x[k] = p->pos[k];
        lo[k % 3] = k < 3 ? x[k] : std::fmin(lo[k % 3], x[k]);
        hi[k % 3] = k < 3 ? x[k] : std::fmax(hi[k % 3], x[k]);
    }
    double extent = std::fmax(hi[0] - lo[0], std::fmax(hi[1] - lo[1], hi[2] - lo[2]));
    rq.cutoff = 2.0 * (double)nsb::largest_radius(p) * nsb::inflate;
    if (rq.cutoff == 0.0) /* every radius zero: LAMMPS needs a positive cutoff */
        rq.cutoff = extent > 0.0 ? extent / 16.0 : 1.0;
    for (int d = 0; d < 3; d++) /* room around the atoms: none may fall outside */
        rq.lo[d] = lo[d] - rq.cutoff - 1e-6 * (std::fabs(lo[d]) + 1.0),
        rq.hi[d] = hi[d] + rq.cutoff + 1e-6 * (std::fabs(hi[d]) + 1.0);
    ns_status st = lammps.ask(rq, x.data(), x.size() * sizeof(double), nullptr, err);
    if (st != NS_OK)
        return st;
    s->loaded = lammps.loads, s->p = p, s->n = p->n;
    return NS_OK;
}

/* The particles as atoms (untimed: they are the input, not the search). */
ns_status prepare(void *s_, const ns_particles *p, ns_error *err)
{
    state *s = static_cast<state *>(s_);
    return nsb::guarded(who, err, [&] {
        lammps.loads++; /* the particles loaded before are replaced */
        return load(s, p, err);
    });
}

ns_status build(void *s_, const ns_particles *p, int threads, ns_error *err)
{
    (void)threads;
    state *s = static_cast<state *>(s_);
    return nsb::guarded(who, err, [&] {
        if (s->loaded != lammps.loads || s->p != p || s->n != p->n) {
            ns_status st = prepare(s_, p, err); /* a caller that did not prepare */
            if (st != NS_OK)
                return st;
        }
        nsb_lammps_request rq{};
        rq.op = NSB_LAMMPS_BUILD;
        return lammps.ask(rq, nullptr, 0, nullptr, err);
    });
}

ns_status query(void *s_, const ns_particles *p, int threads, ns_contact_list *out,
                size_t *candidates, ns_error *err)
{
    (void)threads;
    state *s = static_cast<state *>(s_);
    return nsb::guarded(who, err, [&] {
        if (s->loaded != lammps.loads)
            return nsb::fail(err, NS_ERR_INVALID_ARGUMENT, "lammps_neighbor: query before a build");
        nsb_lammps_request rq{};
        rq.op = NSB_LAMMPS_PAIRS;
        uint64_t count = 0;
        ns_status st = lammps.ask(rq, nullptr, 0, &count, err);
        if (st != NS_OK)
            return st;
        const uint32_t *pair = count ? lammps.pairs(count) : nullptr;
        if (count && !pair)
            return nsb::fail(err, NS_ERR_OUT_OF_MEMORY, "lammps_neighbor: cannot map the pairs");
        s->out.start(1);
        std::vector<ns_contact> &mine = s->out.of_thread[0];
        size_t tested = 0;
        for (uint64_t k = 0; k < count; k++) {
            uint32_t i = pair[2 * k], j = pair[2 * k + 1];
            s->out.test(p, mine, tested, i < j ? i : j, i < j ? j : i);
        }
        *candidates = tested;
        return s->out.gather(out, err);
    });
}

/* LAMMPS's own estimate of its memory (atoms, bins, the list), the sum its
 * run setup prints as "Per MPI rank memory allocation". */
double bytes(const void *s_)
{
    const state *s = static_cast<const state *>(s_);
    nsb_lammps_request rq{};
    rq.op = NSB_LAMMPS_MEMORY;
    uint64_t value = 0;
    ns_error err;
    ns_status st = nsb::guarded(who, &err, [&] {
        return s->loaded == lammps.loads ? lammps.ask(rq, nullptr, 0, &value, &err)
                                         : NS_ERR_INVALID_ARGUMENT;
    });
    return st == NS_OK ? (double)value : -1.0;
}

/* The state, and LAMMPS's atoms and lists when they are still this state's. */
void destroy(void *s_)
{
    state *s = static_cast<state *>(s_);
    if (s && s->loaded == lammps.loads) {
        nsb_lammps_request rq{};
        rq.op = NSB_LAMMPS_CLEAR;
        ns_error err;
        nsb::guarded(who, &err, [&] {
            ns_status st = lammps.ask(rq, nullptr, 0, nullptr, &err);
            lammps.loads++; /* nothing loaded now */
            lammps.unmap_pairs();
            return st;
        });
    }
    delete s;
}

template <bool Sorted> void *create()
{
    state *s = new (std::nothrow) state;
    if (s)
        s->sorted = Sorted;
    return s;
}

} // namespace

#define NSB_LAMMPS_TUNING                                                                          \
    "serial (Debian's LAMMPS has no OPENMP package); bins of LAMMPS's default size (half the "     \
    "cutoff), skin 0, neigh_modify one " NSB_STR(NSB_LAMMPS_ONE)

extern "C" const nsb_peer nsb_peer_lammps_neighbor = {
    "lammps_neighbor",
    "LAMMPS's binned half neighbour list (cutoff 2 r_max, skin 0), one build per search, atoms "
    "in the caller's order; serial",
    "LAMMPS " NSB_LAMMPS_VERSION,
    NSB_LAMMPS_TUNING "; atom sorting off",
    false,
    true,
    create<false>,
    prepare,
    build,
    query,
    bytes,
    destroy,
};

extern "C" const nsb_peer nsb_peer_lammps_neighbor_sorted = {
    "lammps_neighbor_sorted",
    "LAMMPS's binned half neighbour list (cutoff 2 r_max, skin 0), one build per search, atoms "
    "in LAMMPS's spatial sort order (sorted once, untimed); serial",
    "LAMMPS " NSB_LAMMPS_VERSION,
    NSB_LAMMPS_TUNING "; atoms sorted once by LAMMPS's atom_modify sort (bins of half the cutoff)",
    false,
    true,
    create<true>,
    prepare,
    build,
    query,
    bytes,
    destroy,
};

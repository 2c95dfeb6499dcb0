"""How the harness's scripts run as programs (standard library only).

    import program
    if __name__ == "__main__":
        sys.exit(program.run("results.py", main, sys.argv))

program.run() gives every script the same behaviour at its edges:

  * An error reaches the user as one line, never as a Python traceback: an
    OSError names its file and the system's reason, and when the disk is full
    the free space there and, where the writer knew it, the space needed; an
    error nobody foresaw is one line naming its place in the code
    (NS_DEBUG=1 prints the traceback as well).
  * SIGINT, SIGTERM and SIGHUP stop the script through the Stopped exception
    (raised where the script is, so `finally` blocks and the handlers of its
    children run); it exits 128 + the signal's number, after one line saying
    it stopped (unless NS_STOP_QUIET was set: run_all.sh, its parent, says
    it; the variable is not passed on to the script's own children). A script that can say more (what is kept, how to continue) catches
    Stopped itself.
  * It ends with its parent: on Linux the kernel sends it SIGTERM when the
    process that started it dies, even by SIGKILL, and the children it starts
    through child_setup() end with it the same way. So killing run_all.sh
    alone leaves no sweep measuring beside the next one.

write_all() is how the harness writes a set of files: all or nothing.
"""
import os
import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _exit_quietly(signum, _frame):
    """Before run(): nothing is under way yet (the modules are loading), so a
    stop signal ends the process at once, with no traceback."""
    os._exit(128 + signum)


# first of all, as a script imports this module first: the stop signals this
# process was not told to ignore (nohup ignores SIGHUP) end it quietly
_HANDLED = [s for s in STOP_SIGNALS if signal.getsignal(s) is not signal.SIG_IGN]
for _s in _HANDLED:
    signal.signal(_s, _exit_quietly)
# run_all.sh says itself that this script stopped: for this process only, not
# for the processes it starts
STOP_QUIET = bool(os.environ.pop("NS_STOP_QUIET", ""))

import ctypes  # noqa: E402
import errno  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import traceback  # noqa: E402

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


class Stopped(BaseException):
    """A stop signal arrived (a BaseException, like KeyboardInterrupt, so that
    `except Exception` does not swallow it)."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name
        self.status = 128 + signum


class DiskFull(OSError):
    """A write failed for want of space: its message says where, how much is
    free there and, when known, how much was needed."""


def _raise_stopped(signum, _frame):
    raise Stopped(signum)




def _end_with_parent(signum):
    """Asks the kernel for signum when this process's parent dies; False where
    it cannot (not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


class signals_held:
    """with signals_held(): ... runs its block with the stop signals held back,
    delivered (as Stopped) when it ends: around the start of a child process,
    so a stop never falls between the fork and the moment the caller knows the
    child, whom it must then end."""

    def __enter__(self):
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)

    def __exit__(self, *exc):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def child_setup(parent=None):
    """preexec_fn of a child process: the stop signals as they were before
    signals_held(), and SIGTERM when this process dies (checked once after
    asking, for a parent that died in between)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    parent = os.getppid() if parent is None else parent
    if _end_with_parent(signal.SIGTERM) and os.getppid() != parent:
        os._exit(128 + signal.SIGTERM)


def size_text(n):
    """Bytes for a person: '812 B', '4.1 KB', '12.3 MB', '1.5 GB'."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def free_bytes(path):
    """Free bytes on the file system holding path (or its nearest existing
    folder); None when it cannot be told."""
    path = os.path.abspath(path)
    while path and not os.path.exists(path):
        path = os.path.dirname(path)
    try:
        return shutil.disk_usage(path or "/").free
    except OSError:
        return None


def disk_full(path, needed=None, then=""):
    """The DiskFull error of a write of path that found no space."""
    free = free_bytes(os.path.dirname(os.path.abspath(path)))
    have = f"{size_text(free)} free there" if free is not None else "the free space unknown"
    need = f", about {size_text(needed)} needed" if needed else ""
    return DiskFull(errno.ENOSPC, f"cannot write {path}: the disk is full ({have}{need})"
                    f"{'; ' + then if then else ''}")


def is_disk_full(e):
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT)


def write_all(files, then=""):
    """Writes {path: text} all or nothing: each text to PATH.tmp beside its path
    first, and only when every one is written are they moved over their paths
    (os.replace, in the order given), so a failure or an interrupt while writing
    leaves the previous files as they were. OSError on failure (DiskFull, with
    the space the texts need, when the disk is full; then: what to do next), the
    .tmp files it made removed."""
    made = []
    try:
        for path, text in files.items():
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
            made.append(path + ".tmp")  # before it exists: a stop in between leaves none
            with open(path + ".tmp", "w") as f:
                f.write(text)
        for path in files:
            os.replace(path + ".tmp", path)
    except OSError as e:
        if is_disk_full(e):
            needed = sum(len(t.encode()) for t in files.values())
            raise disk_full(e.filename or next(iter(files)), needed, then) from None
        raise
    finally:
        for tmp in made:
            try:
                os.remove(tmp)
            except OSError:  # moved already; else the first error is the one told
                pass


def os_error_line(e):
    """One line for an OSError: its file and the system's reason."""
    if isinstance(e, DiskFull):
        return e.strerror
    if is_disk_full(e) and e.filename:
        return disk_full(e.filename).strerror
    where = f"{e.filename}: " if e.filename else ""
    return f"{where}{e.strerror or e}"


def run(prog, main, *args):
    """Runs main(*args) as the program prog (see the module's docstring);
    returns its exit status."""
    for s in _HANDLED:
        signal.signal(s, _raise_stopped)
    parent = os.getppid()
    if _end_with_parent(signal.SIGTERM) and os.getppid() != parent:
        return 128 + signal.SIGTERM  # the parent is gone already
    try:
        return main(*args)
    except (Stopped, KeyboardInterrupt) as e:  # KeyboardInterrupt: raised by hand
        stop = e if isinstance(e, Stopped) else Stopped(signal.SIGINT)
        if not STOP_QUIET:  # run_all.sh says it itself
            print(f"{prog}: stopped by {stop.name}", file=sys.stderr)
        return stop.status
    except BrokenPipeError:  # the reader of our output went away (| head): nothing to tell
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush at exit
        return 1
    except OSError as e:
        print(f"{prog}: {os_error_line(e)}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:  # a tool it runs failed: that tool's word
        said = (e.stderr or "").strip().splitlines() if isinstance(e.stderr, str) else []
        print(f"{prog}: {os.path.basename(str(e.cmd[0]))} failed ({e.returncode})"
              f"{': ' + said[-1] if said else ''}", file=sys.stderr)
        return 1
    except Exception as e:  # a defect: one line saying where, the traceback on request
        if os.environ.get("NS_DEBUG"):
            traceback.print_exc()
        tb = traceback.extract_tb(e.__traceback__)[-1]
        what = " ".join(str(e).split())
        print(f"{prog}: internal error: {type(e).__name__}: {what} (at "
              f"{os.path.basename(tb.filename)}:{tb.lineno}; NS_DEBUG=1 shows the traceback)",
              file=sys.stderr)
        return 1

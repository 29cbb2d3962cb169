"""The supervisor between rmax and a launched job: nothing rmax launched outlives it.

rmax starts `python -I -S supervisor.py LIFELINE OUT ERR GRACE ARGV...` (stdlib
only, so it starts in milliseconds). The supervisor spawns ARGV as its child
and becomes a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER), so every
process of the job stays its descendant even after a parent in between dies:
Open MPI puts each rank in a process group of its own and MPICH's proxy starts
a new session, so a process-group kill misses them; a walk of the descendants
does not.

LIFELINE is the read end of a pipe whose only write end rmax holds: when rmax
dies, even by SIGKILL, the kernel closes that end and the supervisor reads EOF.
OUT and ERR are copies of the read ends of the job's stdout and stderr, left
alone while rmax reads them. On EOF, or on SIGTERM/SIGINT/SIGHUP, the
supervisor sends SIGTERM to the job (a launcher then stops its ranks and
removes its session files), drains OUT and ERR so no write of the job fails
with SIGPIPE meanwhile, sends SIGKILL after GRACE seconds to every descendant
left, and exits. When the job ends by itself, stragglers are ended the same
way. The exit status is the job's, a death by signal included."""

import ctypes
import os
import select
import signal
import sys
import time

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def descendants(root: int) -> list[int]:
    """Every live descendant of root, parents before children (from /proc/PID/stat's ppid field)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended while we looked
        if fields[0] != b"Z":
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def send(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


class Supervisor:
    def __init__(self, argv: list[str], output: list[int], grace: float):
        self.output, self.grace = output, grace
        self.status = None   # the job's wait status once reaped
        resets = (*STOP_SIGNALS, signal.SIGCHLD, signal.SIGPIPE, signal.SIGXFSZ)
        self.job = os.posix_spawnp(argv[0], argv, os.environ, setsigdef=resets, setsigmask=())

    def reap(self) -> None:
        """Collect every ended child, orphans handed to us included."""
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.job:
                self.status = st

    def drain(self, seconds: float) -> None:
        """Read and drop the job's output for up to seconds (rmax no longer reads it)."""
        ready, _, _ = select.select(self.output, [], [], seconds)
        for fd in ready:
            if not os.read(fd, 65536):
                self.output.remove(fd)

    def end_all(self, draining: bool) -> None:
        """SIGTERM to the job, or once it is gone to what it left; SIGKILL to every descendant
        still there after the grace period."""
        left = descendants(os.getpid())
        if not left:
            return
        send([self.job] if self.status is None else left, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            self.reap()
            if not descendants(os.getpid()):
                return
            if draining and self.output:
                self.drain(0.05)
            else:
                time.sleep(0.05)
        while left := descendants(os.getpid()):
            send(left, signal.SIGKILL)
            self.reap()
            time.sleep(0.01)
        self.reap()

    def run(self, lifeline: int, woken: int) -> int:
        """Wait for the job, rmax's end, or a stop signal; returns the job's wait status."""
        while self.status is None:
            ready, _, _ = select.select([lifeline, woken], [], [])
            if lifeline in ready and not os.read(lifeline, 1):
                self.end_all(draining=True)   # rmax is gone
                break
            if woken in ready:
                signals = os.read(woken, 64)
                self.reap()
                if any(sig in signals for sig in STOP_SIGNALS):
                    self.end_all(draining=False)
        self.end_all(draining=False)   # stragglers of a job that ended by itself
        return self.status if self.status is not None else signal.SIGKILL  # as if killed, if never reaped


def exit_like(status: int) -> None:
    """Exit the way the job did, so rmax sees its exit code or the signal that ended it."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


def main() -> None:
    lifeline, out, err = (int(a) for a in sys.argv[1:4])
    grace, argv = float(sys.argv[4]), sys.argv[5:]
    for fd in (lifeline, out, err):
        os.set_inheritable(fd, False)   # the job gets none of them
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    woken_r, woken_w = os.pipe()
    os.set_blocking(woken_w, False)
    signal.set_wakeup_fd(woken_w)
    for sig in (*STOP_SIGNALS, signal.SIGCHLD):
        signal.signal(sig, lambda *_: None)  # handled through the wakeup fd
    try:
        supervisor = Supervisor(argv, [out, err], grace)
    except OSError as e:
        print(f"rmax: error: cannot run {argv[0]}: {e.strerror}", file=sys.stderr)
        os._exit(127)
    exit_like(supervisor.run(lifeline, woken_r))


if __name__ == "__main__":
    main()

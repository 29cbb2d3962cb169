"""The process a survey's fan-out (fanout.py) starts on every node at once, one per node:
`python -I -S .../rmax/survey/node_worker.py --plan PLAN` runs the steps of its plan one after the other
(each a program: a kernel, with its own environment and time; or the inventory, read in this
process), ends a program after its time, and sends each step's stdout, exit status and last error
line back on its stderr as soon as the step ends, in frames (frames.py) that name this rank, host
and step. A step that fails or hangs is reported so, and the next one runs. It always exits 0
once it has reported, since a launcher ends the whole job when one rank fails, and the other
nodes' results would be lost.

PLAN is a JSON list, zlib-compressed and base64-encoded (plan_arg) so that no launcher's remote
shell reads it: [{"step": NAME, "timeout": S, "argv": [...], "env": {...}, "spread": BOOL} (with
"turn": {"folder": F, "key": K, "run": S, "of": N}, the nodes of one machine take turns: turns.py) or
{"step": "inventory", "timeout": S, "inventory": {...}} (the keywords of inventory.shared.collect_node)
or, last, {"step": "next", "timeout": S, "next": PATH}]: the steps that follow come later, as a
plan in the file PATH, when this node sees PATH's folder (the surveying machine's: nodes on it, a
virtual cluster's, need no second launch, whose daemons and workers take its shared cores); the
step's result says whether it waits ("waiting"), and PATH holding [] ends the wait.

The programs' stderr passes through line by line, so the watchdog still hears every node's step
markers, as this worker's rank (each program is rank 0 of its own); the worker sends the heartbeat
itself (heartbeat(), the kernels' own are dropped), from a thread of its own, every step of its
plan, so a node whose link or power goes falls silent in whatever step it is, and the watchdog names
it lost (fanout.py) while the other nodes go on. Only the standard library is imported at start-up, and without site
(python -I -S: no .pth files or import hooks to run; about 57 against 63 ms of CPU a start on this
project's guest): this starts on hundreds of nodes, once per survey step group, and its start-up
is paid on every one of them."""

from __future__ import annotations

import base64
import json
import os
import re
import stat
import subprocess
import sys
import threading
import time
import zlib

if __package__ in (None, ""):   # run by its path under -I -S (fanout.py): its package root on the path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from rmax.survey.frames import encode, stream  # noqa: E402

RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
GRACE = 2.0     # seconds between SIGTERM and SIGKILL for a program past its time
POLL_S = 0.05   # how often a waiting node looks for the steps that follow
STEP = "rmax-step: "
MARKERS = (STEP, "rmax-alive: ", "rmax-exit: ")
_OUT = threading.Lock()   # one writer at a time on stderr: frames, passed-through lines, heartbeats


def emit(data: bytes) -> None:
    """One write(2) of data to stderr, never interleaved with this process's other writers."""
    with _OUT:
        os.write(2, data)


def heartbeat_period() -> float:
    """As the kernels' (rmx_lifeline.c): one a second up to 100 ranks, then slower, so the
    watchdog reads about 100 lines a second whatever the node count."""
    for name in SIZE_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 0:
            return max(1.0, int(value) / 100.0)
    return 1.0


def heartbeat(me: int, host: str) -> None:
    """Send this rank's heartbeat from a daemon thread for as long as the worker lives."""
    period = heartbeat_period()
    line = f"rmax-alive: rank {me} on {host} every {period:.2f} s\n".encode()

    def beat():
        while True:
            emit(line)
            time.sleep(period)

    threading.Thread(target=beat, daemon=True, name="rmax-heartbeat").start()


def as_rank(raw: bytes, me: int) -> bytes | None:
    """A program's stderr line as this worker passes it on: its step markers as this rank's (the
    program is rank 0 of a job of its own), its heartbeat and exit markers dropped (the worker's
    are the node's), every other line as it is."""
    if raw.startswith(b"rmax-alive: ") or raw.startswith(b"rmax-exit: "):
        return None
    if raw.startswith(STEP.encode()):
        return re.sub(rb" \(rank \d+ on ", f" (rank {me} on ".encode(), raw, count=1)
    return raw


def plan_arg(plan: list[dict]) -> str:
    """The plan as the worker's --plan argument."""
    return base64.urlsafe_b64encode(zlib.compress(json.dumps(plan).encode())).decode()


def read_plan(arg: str) -> list[dict]:
    return checked(json.loads(zlib.decompress(base64.urlsafe_b64decode(arg.encode()))))


def checked(plan) -> list[dict]:
    if not isinstance(plan, list) or not all(isinstance(s, dict) and float(s.get("timeout", 0)) > 0
                                             and ("argv" in s or "inventory" in s or "next" in s) for s in plan):
        raise ValueError("not a list of steps, each with a positive timeout and argv, inventory or next")
    return plan


def wait_for_plan(path: str, timeout: float) -> list[dict]:
    """The steps in the file `path` once it is there (written whole: write_atomic), [] at the
    timeout. Only a file of this user's, not through a link, is read."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            time.sleep(POLL_S)
            continue
        with os.fdopen(fd, "rb") as f:
            if os.fstat(f.fileno()).st_uid != os.getuid():
                return []
            return checked(json.loads(f.read()))
    return []


def sees(path: str) -> bool:
    """Whether the folder of `path` is the surveying process's: this user's, not a link, and holding
    its marker (PATH's name with .wait), made before the launch."""
    folder = os.path.dirname(path)
    try:
        st = os.lstat(folder)
        return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and os.path.isfile(path + ".wait")
    except OSError:
        return False


def rank() -> int:
    """This process's rank in the launched job (0 when launched alone)."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def run(argv: list[str], timeout: float, env: dict | None = None, me: int = 0) -> dict:
    """Run argv (with env over this process's) for at most `timeout` s:
    {rc, stdout, error, timed_out, last_step, seconds}; its markers pass on as rank `me`'s."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env={**os.environ, **env} if env else None)
    except OSError as e:
        return {"rc": None, "stdout": "", "error": f"cannot run {argv[0]}: {e.strerror}", "timed_out": False,
                "last_step": None, "seconds": 0.0}
    out: list[bytes] = []
    tail: list[str] = []
    step: list[str] = []

    def drain_stderr():
        for raw in proc.stderr:
            passed = as_rank(raw, me)
            if passed:
                emit(passed)   # one write per line: the markers stay whole for the watchdog
            line = raw.decode(errors="replace").rstrip("\n")
            if line.startswith(STEP):
                step[:] = [line[len(STEP):]]
            elif line.strip() and not line.startswith(MARKERS):
                tail[:] = [line]

    readers = [threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),
               threading.Thread(target=drain_stderr, daemon=True)]
    for r in readers:
        r.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.terminate()
        try:
            proc.wait(GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for r in readers:
        r.join(GRACE)
    error = (f"timed out after {timeout:g} s" + (f" in step {step[0]}" if step else "")) if timed_out else \
        (tail[0] if tail and proc.returncode else None)
    if proc.returncode and not timed_out and not error:
        error = f"{os.path.basename(argv[0])} exited with status {proc.returncode}"
    return {"rc": proc.returncode, "stdout": b"".join(out).decode(errors="replace"), "error": error,
            "timed_out": timed_out, "last_step": step[0] if step else None, "seconds": time.monotonic() - start}


def inventory(options: dict, timeout: float) -> dict:
    """This node's inventory (rmax.inventory) read in this process, as a program's result whose
    stdout is its JSON: no second interpreter, no command line to load, on every node."""
    start = time.monotonic()
    got: dict = {}

    def read():
        try:
            from rmax.inventory.shared import collect_node

            got["stdout"] = json.dumps(collect_node(**options))
        except Exception as e:   # reported as this node's failure, never a traceback
            got["error"] = f"inventory: {type(e).__name__}: {e}"

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    timed_out = reader.is_alive()
    error = f"timed out after {timeout:g} s in step inventory" if timed_out else got.get("error")
    return {"rc": 1 if error else 0, "stdout": got.get("stdout", ""), "error": error, "timed_out": timed_out,
            "last_step": None, "seconds": time.monotonic() - start}


def in_turn(item: dict, i: int, me: int, timeout: float) -> dict:
    """Step i's program in this node's turn among the nodes of its machine (turns.py): it waits
    in line for at most `timeout` less its run, then runs for at most item["turn"]["run"] s alone
    on the machine (its threads from the first CPU). Without a private folder there, it runs now."""
    from rmax.survey import turns

    start = time.monotonic()
    t = item["turn"]
    run_s = min(float(t["run"]), timeout)
    argv = [str(a) for a in item["argv"]]
    folder = turns.ours(str(t["folder"]))
    if folder is None:
        return run(argv, timeout, item.get("env"), me)
    try:
        turns.sweep(folder)
        turn = turns.Turn(folder, str(t["key"]), i, me)
        if not turn.take(until=start + timeout - run_s):
            return {"rc": None, "stdout": "", "timed_out": True, "last_step": None,
                    "error": f"had no turn within {time.monotonic() - start:.0f} s: the {t.get('of', 'other')} nodes "
                             "of its machine take turns at each step, and those before it took the step's time",
                    "seconds": 0.0}
        waited = time.monotonic() - start
        with turn:
            result = run(argv, run_s, item.get("env"), me)
        return {**result, "waited": round(waited, 3)}
    finally:
        os.close(folder)


def boot_id() -> str | None:
    """The kernel's boot id: nodes that report the same one share one machine (a virtual cluster's)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def main(args: list[str]) -> int:
    if len(args) != 2 or args[0] != "--plan":
        print("usage: python -I -S node_worker.py --plan PLAN", file=sys.stderr)
        return 2
    try:
        plan = read_plan(args[1])
    except (ValueError, TypeError, zlib.error):
        print("node_worker: --plan is not a plan of steps (node_worker.plan_arg writes one)", file=sys.stderr)
        return 2
    me, host, boot = rank(), os.uname().nodename, boot_id()
    heartbeat(me, host)
    stuck = False
    i = 0
    while i < len(plan):
        item = plan[i]
        timeout = float(item["timeout"])
        # "spread": the nodes share a machine; each starts its threads from its own CPU (rmx_threads.c)
        env = {**item.get("env", {}), "RMAX_CPU_OFFSET": str(me)} if item.get("spread") else item.get("env")
        waits = "next" in item and not stuck and sees(str(item["next"]))
        if "next" in item:
            result = {"rc": 0, "stdout": "waiting" if waits else "", "error": None, "timed_out": False,
                      "last_step": None, "seconds": 0.0}
        elif "inventory" in item:
            result = inventory(item["inventory"], timeout)
        elif "turn" in item:
            result = in_turn(item, i, me, timeout)
        else:
            result = run([str(a) for a in item["argv"]], timeout, env, me)
        stuck = stuck or (result["timed_out"] and "inventory" in item)
        for frame in stream(encode(me, host, {**result, "boot_id": boot}, step=i)):
            emit(frame)   # stderr (frames.py says why); one write each: never split by this process
        if waits:
            try:
                plan = plan[:i + 1] + wait_for_plan(str(item["next"]), timeout)
            except (ValueError, TypeError, OSError):
                break    # a plan that is no plan: the surveying process times these steps out
        i += 1
    emit(f"rmax-exit: rank {me} on {host}\n".encode())   # a node done before the others is not a silent one
    if stuck:   # an inventory thread still hangs in a probe: nothing may wait for it
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""`rmax agent run`: the loop. Wait for the next probe set, wait for the node to be idle, run the
set one probe at a time while a watcher keeps checking that it still is, publish the view.

Work that arrives during a probe stops it at once: the watcher thread signals the main thread
(SIGUSR1), whose handler raises Backoff, a KeyboardInterrupt, so the runner kills the kernel's
process group and the stored run ends `interrupted`, as for Ctrl-C. SIGTERM and SIGINT stop the
agent the same way; it then marks any run of its own still `running` as interrupted, so none is
left `running`."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from typing import Callable

from rmax.agent.config import AgentConfig
from rmax.agent.idle import IdleMonitor, SlurmCheck
from rmax.agent.metrics import AgentState, serve
from rmax.agent.probes import steps
from rmax.agent.promfile import PromFile
from rmax.agent.view import node_view
from rmax.errors import RmaxError, RunFailed
from rmax.store import open_store
from rmax.store.runs import interrupt_own


class Backoff(KeyboardInterrupt):
    """Work arrived while a probe ran."""


def check_peers(cfg: AgentConfig) -> None:
    """Peers must resolve and the launcher must exist before the agent starts, not at the first set."""
    if not cfg.peers:
        return
    from rmax.launch import Host, check_resolvable, get_launcher

    get_launcher(cfg.launcher).path()
    check_resolvable([Host(p, 1) for p in cfg.peers])


def url(address: tuple) -> str:
    host, port = address[0], address[1]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def run_agent(cfg: AgentConfig, echo: Callable[[str], None]) -> None:
    check_peers(cfg)
    host = socket.gethostname()
    textfile = PromFile(cfg.textfile, echo) if cfg.textfile else None
    store = open_store()
    state = AgentState(host, cfg, textfile.write if textfile else None)
    state.update(view=node_view(store, cfg, host))
    server = serve(cfg.address, state)
    monitor = IdleMonitor(cfg.max_load, cfg.window, SlurmCheck(cfg.slurm))
    armed = threading.Event()          # set only while a probe runs: the only time a back-off may interrupt
    busy: list[str] = []               # why the watcher last found the node busy

    def on_busy(reading) -> None:
        busy[:] = [reading.busy_reason]
        os.kill(os.getpid(), signal.SIGUSR1)

    def on_usr1(signum, frame) -> None:
        if armed.is_set():
            raise Backoff(f"work arrived: {busy[-1] if busy else 'busy'}")

    previous = signal.signal(signal.SIGUSR1, on_usr1)
    echo(f"rmax agent on {host}: metrics at {url(server.server_address)}/metrics, store {store.path}")
    try:
        next_start, was_busy = time.monotonic(), False
        while cfg.sets == 0 or state.sets < cfg.sets:
            time.sleep(max(0.0, next_start - time.monotonic()))
            reading = monitor.measure()
            state.look(reading)
            if not reading.idle:
                if not was_busy:    # said once per busy spell, not at every look
                    echo(f"busy ({reading.busy_reason}); looking again every {cfg.retry:g} s")
                was_busy = True
                next_start = time.monotonic() + cfg.retry
                continue
            was_busy = False
            started = time.monotonic()
            if run_set(cfg, store, state, monitor, armed, on_busy, echo):
                state.update(sets=state.sets + 1)
                next_start = started + cfg.interval
            else:
                next_start = time.monotonic() + cfg.retry
    except KeyboardInterrupt:
        echo("rmax agent: stopping on a signal")
    finally:
        armed.clear()
        signal.signal(signal.SIGUSR1, previous)
        server.shutdown()
        server.server_close()
        interrupt_own(store, "the agent stopped during this probe")
        store.close()


def run_set(cfg, store, state: AgentState, monitor: IdleMonitor, armed: threading.Event, on_busy,
            echo) -> bool:
    """One probe set; False when work arrived and the set stopped."""
    for probe, peer in steps(cfg):
        name = probe.name + (f" to {peer}" if peer else "")
        state.update(probing=name)
        t0 = time.monotonic()
        try:
            with monitor.watch(on_busy):
                armed.set()
                try:
                    rec = probe.run(cfg, store, peer)
                finally:
                    armed.clear()
            status, note = rec.status, f"run {rec.id[:8]}"
        except Backoff as e:
            state.count(probe.name, "interrupted")
            state.look(monitor.last, due=False)
            echo(f"probe {name}: interrupted after {time.monotonic() - t0:.1f} s ({e}); backing off")
            return False
        except RunFailed as e:
            status, note = "failed", e.message
        except RmaxError as e:      # refused before a run was stored (e.g. no memory free now)
            status, note = "refused", e.message
        finally:
            state.update(probing=None)
        state.count(probe.name, status)
        echo(f"probe {name}: {status} in {time.monotonic() - t0:.1f} s ({note})")
        state.update(view=node_view(store, cfg, state.host))
    return True

"""Slurm on a virtual cluster: munge, one slurmctld, one slurmd per node, and accounting
(slurmdbd over a MariaDB of its own) so that `sacct` lists the cluster's jobs.

Everything lives in the cluster's state folder (slurm.conf, the munge key and
socket, state, spool, logs) and every daemon runs inside the namespaces of a
node: munged and slurmctld on the first node (a head node that also computes,
as on small clusters), one slurmd on each node. So the daemons listen only on
the cluster's private network, and Slurm's default ports are free there
because the namespaces are new. Slurm's client commands reach the controller
through wrappers that enter the first node's network namespace, so the host
itself needs no address on the cluster network.

The configuration follows the slurm.conf manual (Slurm 22.05): no cgroups
here, so ProctrackType=proctrack/linuxproc and TaskPlugin=task/none;
SlurmdParameters=config_overrides lets a node declare as many CPUs as it has
slots although all nodes share this machine's cores; TmpFS with %n gives each
node its own temporary folder, which the PMIx plugin needs (nodes that share
one /tmp collide on its per-step folders). MpiDefault stays none, Slurm's
default, so srun only works with MPI when the plugin is asked for (the srun
launcher does).

Accounting: Slurm 22.05's sacct reads only slurmdbd (accounting_storage/slurmdbd; the
jobcomp/filetxt log serves `sacct --completion` only), and slurmdbd stores only in MySQL or
MariaDB. So the head node also runs a MariaDB server whose data folder is the cluster's, on
127.0.0.1 inside the head node's network namespace (its loopback is the cluster's alone), with
a user and password made for this cluster, and slurmdbd on the head node's address."""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import subprocess
import time
from pathlib import Path

from rmax.errors import RmaxError
from rmax.textfile import write_atomic
from rmax.vcluster import daemons

# Slurm's client commands given wrappers; those not installed are skipped.
CLIENTS = ("sbatch", "srun", "salloc", "sinfo", "squeue", "scontrol", "scancel", "sacct", "sstat", "sattach",
           "sbcast")
PACKAGES = {"munged": "munge", "slurmctld": "slurmctld", "slurmd": "slurmd", "sinfo": "slurm-client",
            "slurmdbd": "slurmdbd", "mariadbd": "mariadb-server-core", "mariadb-install-db": "mariadb-server-core",
            "my_print_defaults": "mariadb-client-core"}
CTLD_PORT, SLURMD_PORT = 6817, 6818   # Slurm's defaults, free inside the cluster's own namespaces
DBD_PORT, DB_PORT = 6819, 3306        # slurmdbd's and MariaDB's defaults, likewise
DB_NAME, DB_USER = "slurm_acct_db", "slurm"
# A small database: InnoDB's defaults (a 96 MiB redo log, a 128 MiB buffer pool) would put 114 MiB
# in the state folder, which is in /run, memory.
DB_OPTIONS = ("--no-defaults", "--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M",
              "--innodb-lock-wait-timeout=900", "--skip-name-resolve")    # slurmdbd asks for that timeout
READY_TIMEOUT = 45.0


def folder(state) -> Path:
    return state.directory / "slurm"


def conf_path(state) -> Path:
    return folder(state) / "slurm.conf"


def bin_dir(state) -> Path:
    return folder(state) / "bin"


def db_dir(state) -> Path:
    return folder(state) / "db"


def dbd_conf_path(state) -> Path:
    return folder(state) / "slurmdbd.conf"


def munge_dir(state) -> Path:
    return state.directory / "munge"


def munge_socket(state) -> Path:
    return munge_dir(state) / "munge.socket"


def enabled(state) -> bool:
    return bool(state.plan and state.plan.extra.get("slurm"))


def head(state) -> str:
    return state.plan.nodes[0].name


def require_tools() -> None:
    for tool, package in PACKAGES.items():
        if not shutil.which(tool):
            raise RmaxError(f"'{tool}' not found: --slurm needs it", hint=f"apt-get install {package} "
                            "(scripts/install-system.sh installs them)")


def render_conf(state) -> str:
    plan, d = state.plan, folder(state)
    first = plan.nodes[0]
    lines = [
        f"# Slurm of rmax virtual cluster {plan.name} (written by `rmax vcluster up --slurm`)",
        f"ClusterName={plan.name}",
        f"SlurmctldHost={first.name}({first.address})",
        f"SlurmctldPort={CTLD_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={munge_socket(state)}",
        f"StateSaveLocation={d / 'ctld'}",
        f"SlurmdSpoolDir={d / 'spool' / '%n'}",
        f"TmpFS={d / 'tmp' / '%n'}",
        f"SlurmctldPidFile={d / 'slurmctld.pid'}",
        f"SlurmdPidFile={d / 'slurmd-%n.pid'}",
        f"SlurmctldLogFile={d / 'slurmctld.log'}",
        f"SlurmdLogFile={d / 'slurmd-%n.log'}",
        f"PlugStackConfig={d / 'plugstack.conf'}",   # not the host's /etc/slurm/plugstack.conf
        f"TaskProlog={d / 'task-prolog'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_CPU",
        "SchedulerType=sched/backfill",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/slurmdbd",
        f"AccountingStorageHost={first.address}",
        f"AccountingStoragePort={DBD_PORT}",
        f"AccountingStoragePass={munge_socket(state)}",   # for slurmdbd: the munge socket, not a password
        "JobCompType=jobcomp/none",
        "ReturnToService=2",
        "SlurmdParameters=config_overrides",
        "SlurmdTimeout=60",
        "InactiveLimit=0",
        "KillWait=5",
    ]
    lines += [f"NodeName={n.name} NodeAddr={n.address} CPUs={plan.slots} State=UNKNOWN" for n in plan.nodes]
    lines.append(f"PartitionName={plan.name} Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def render_dbd_conf(state, password: str) -> str:
    """slurmdbd.conf (slurmdbd reads it from SLURM_CONF's folder; it must be private to SlurmUser)."""
    d, first = folder(state), state.plan.nodes[0]
    return "\n".join([
        f"# slurmdbd of rmax virtual cluster {state.plan.name} (written by `rmax vcluster up --slurm`)",
        "AuthType=auth/munge",
        f"AuthInfo=socket={munge_socket(state)}",
        f"DbdHost={first.name}",
        f"DbdAddr={first.address}",
        f"DbdPort={DBD_PORT}",
        "SlurmUser=root",
        f"PidFile={d / 'slurmdbd.pid'}",
        f"LogFile={d / 'slurmdbd.log'}",
        "StorageType=accounting_storage/mysql",
        "StorageHost=127.0.0.1",
        f"StoragePort={DB_PORT}",
        f"StorageUser={DB_USER}",
        f"StoragePass={password}",
        f"StorageLoc={DB_NAME}",
    ]) + "\n"


def _db_init_sql(password: str) -> str:
    """Run by MariaDB at each start (--init-file): slurmdbd's database and user, over TCP from loopback."""
    return (f"CREATE DATABASE IF NOT EXISTS {DB_NAME};\n"
            f"CREATE USER IF NOT EXISTS '{DB_USER}'@'127.0.0.1' IDENTIFIED BY '{password}';\n"
            f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'127.0.0.1';\n")


def _wrapper(state, command: str, real: str) -> str:
    """A client command that runs inside the head node's network namespace, unless it already runs
    in one of the cluster's nodes (a job step's srun stays where it is)."""
    prefix = f"{state.plan.name}-n"
    return f"""#!/bin/sh
# {command} for rmax virtual cluster {state.plan.name} (written by `rmax vcluster up --slurm`):
# Slurm's own client, run where the cluster's network is.
export SLURM_CONF={shlex.quote(str(conf_path(state)))}
case "$(ip netns identify $$ 2>/dev/null)" in
  {shlex.quote(prefix)}*) exec {shlex.quote(real)} "$@" ;;
esac
exec nsenter --net=/run/netns/{shlex.quote(head(state))} -- {shlex.quote(real)} "$@"
"""


def write_files(state) -> None:
    """Folders, the munge key, slurm.conf and the client wrappers."""
    d = folder(state)
    for sub in ("ctld", "bin", *(f"{kind}/{n.name}" for kind in ("spool", "tmp") for n in state.plan.nodes)):
        (d / sub).mkdir(parents=True, exist_ok=True)
    # munged insists: the socket's folder searchable by all, the key readable by its owner only.
    m = munge_dir(state)
    m.mkdir(mode=0o755, exist_ok=True)
    m.chmod(0o755)
    key = m / "munge.key"
    if not key.exists():
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(1024))
    write_atomic(conf_path(state), render_conf(state), "slurm.conf")
    if not dbd_conf_path(state).exists():
        password = secrets.token_hex(16)    # hex: nothing to quote in SQL or slurmdbd.conf
        write_atomic(dbd_conf_path(state), render_dbd_conf(state, password), "slurmdbd.conf", mode=0o600)
        write_atomic(folder(state) / "db-init.sql", _db_init_sql(password), "the database's set-up", mode=0o600)
    write_atomic(d / "plugstack.conf", "", "plugstack.conf")
    prolog = d / "task-prolog"
    # Slurm adds the "export NAME=VALUE" lines a TaskProlog prints to each task's environment
    # (slurm.conf manual, TaskProlog). The nodes share this machine's cores, and Open MPI ranks that
    # busy-poll starve each other: the same setting as the vcluster launcher's, unless the job sets it.
    write_atomic(prolog, "#!/bin/sh\n"
                 '[ -n "$OMPI_MCA_mpi_yield_when_idle" ] || echo "export OMPI_MCA_mpi_yield_when_idle=1"\n',
                 "the task prolog", mode=0o755)
    for command in CLIENTS:
        real = shutil.which(command)
        if real:
            w = bin_dir(state) / command
            write_atomic(w, _wrapper(state, command, real), f"the {command} wrapper", mode=0o755)


def start(state, record) -> None:
    """munged and slurmctld on the head node, slurmd on every node; returns when every node is idle."""
    d, m, first = folder(state), munge_dir(state), head(state)
    conf = str(conf_path(state))
    started = {}   # name -> (Popen, its logs)

    def spawn(name, node, argv, stem, where):
        started[name] = (daemons.spawn(state, record, name, node, argv, where / f"{stem}.err"),
                         [where / f"{stem}.err", where / f"{stem}.log"])

    spawn("munged", first, ["munged", "--foreground", f"--socket={munge_socket(state)}",
                            f"--key-file={m / 'munge.key'}", f"--pid-file={m / 'munged.pid'}",
                            f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"], "munged", m)
    _wait(lambda: munge_socket(state).exists(), "munged", started, 10.0)
    db = db_dir(state)
    if not db.exists():
        _install_db(db)
    spawn("mariadbd", first, ["mariadbd", *DB_OPTIONS, f"--datadir={db}", "--user=root", "--bind-address=127.0.0.1",
                              f"--port={DB_PORT}", f"--socket={d / 'mariadb.sock'}", f"--pid-file={d / 'mariadb.pid'}",
                              f"--log-error={d / 'mariadb.log'}", f"--init-file={d / 'db-init.sql'}"], "mariadb", d)
    _wait(lambda: "ready for connections" in _text(d / "mariadb.log"), "mariadbd", started, 30.0)
    # slurmdbd has no option for its configuration: it reads slurmdbd.conf beside SLURM_CONF
    started["slurmdbd"] = (daemons.spawn(state, record, "slurmdbd", first, ["slurmdbd", "-D"], d / "slurmdbd.err",
                                         env={**os.environ, "SLURM_CONF": conf}),
                           [d / "slurmdbd.err", d / "slurmdbd.log"])
    _wait(lambda: " started" in _text(d / "slurmdbd.log"), "slurmdbd", started, 30.0)
    spawn("slurmctld", first, ["slurmctld", "-D", "-f", conf], "slurmctld", d)
    for n in state.plan.nodes:
        spawn(f"slurmd {n.name}", n.name, ["slurmd", "-D", "-N", n.name, "-f", conf], f"slurmd-{n.name}", d)
    deadline = time.monotonic() + READY_TIMEOUT
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        _check_alive(started)
        states = node_states(state)
        if states and all(s == "idle" for s in states.values()):
            return
        time.sleep(0.25)
    waiting = ", ".join(f"{n} {states.get(n, 'unknown')}" for n in (x.name for x in state.plan.nodes)
                        if states.get(n) != "idle")
    raise RmaxError(f"Slurm did not come up within {READY_TIMEOUT:.0f} s: {waiting}",
                    hint=f"logs in {d}")


def _install_db(db: Path) -> None:
    """MariaDB's system tables in a new data folder (no server, no network: --bootstrap)."""
    try:
        p = subprocess.run(["mariadb-install-db", *DB_OPTIONS, f"--datadir={db}", "--user=root",
                            "--auth-root-authentication-method=socket", "--skip-test-db"],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise RmaxError("mariadb-install-db did not finish within 120 s") from None
    if p.returncode != 0:
        said = next((l for l in reversed((p.stderr + p.stdout).splitlines()) if l.strip()), "no message")
        raise RmaxError(f"mariadb-install-db failed: {said}", hint=f"data folder {db}")


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _check_alive(started: dict) -> None:
    """Each daemon started so far still runs (its Popen: a PID's command line is not read while it execs)."""
    for name, (proc, logs) in started.items():
        if proc.poll() is not None:
            said = next((line for line in map(_last_line, logs) if line), "no message")
            raise RmaxError(f"{name} exited while starting: {said}", hint=f"log: {logs[-1]}")


def _wait(ready, name: str, started: dict, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        _check_alive(started)
        if time.monotonic() > deadline:
            log = started[name][1][-1]
            raise RmaxError(f"{name} did not start within {timeout:.0f} s: {_last_line(log) or 'no message'}",
                            hint=f"log: {log}")
        time.sleep(0.05)


def _last_line(path: Path) -> str:
    try:
        lines = [l for l in path.read_text(errors="replace").splitlines() if l.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def client(state, argv: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess:
    """A Slurm client command (argv without its path) run through the cluster's wrapper."""
    return subprocess.run([str(bin_dir(state) / argv[0]), *argv[1:]], capture_output=True, text=True,
                          timeout=timeout)


def node_states(state) -> dict[str, str]:
    """Each node's state as Slurm's controller sees it (idle, allocated, down, ...); {} when unreachable."""
    try:
        out = client(state, ["sinfo", "--noheader", "--Node", "--format=%N %T"], timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if out.returncode != 0:
        return {}
    states = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


def env_lines(state) -> list[str]:
    """The shell lines that make plain sbatch, srun, sinfo and squeue reach this cluster."""
    return [f"export SLURM_CONF={shlex.quote(str(conf_path(state)))}",
            f'export PATH={shlex.quote(str(bin_dir(state)))}:"$PATH"']


def daemon_status(state) -> list[dict]:
    marker = str(state.directory)
    return [{"name": o["name"], "node": o.get("node"), "pid": o.get("pid"),
             "running": daemons.alive(o.get("pid"), marker)} for o in state.objects if o["kind"] == "daemon"]

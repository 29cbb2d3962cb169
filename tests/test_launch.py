import os
import shutil
import time

import pytest

from rmax.errors import RmaxError, RunFailed
from rmax.launch import LaunchSpec, get_launcher, local_slots, parse_hosts, prepare, read_hostfile, run_job
from rmax.launch.hosts import Host


def test_parse_hosts_and_merge():
    assert parse_hosts("a:2,b:4,a:1") == [Host("a", 3), Host("b", 4)]
    assert parse_hosts("localhost") == [Host("localhost", local_slots())]


@pytest.mark.parametrize("text, words", [("a:0", "at least one slot"), ("a:x", "not a whole number"),
                                         ("a,,b", "empty host"), ("bad host", "not a valid host name"),
                                         ("localhost:", "no slot count")])
def test_parse_hosts_errors(text, words):
    with pytest.raises(RmaxError, match=words):
        parse_hosts(text)


def test_hostfile_formats(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# cluster\nn1 slots=4\nn2:2   # mpich style\nn3\n\n")
    assert read_hostfile(f) == [Host("n1", 4), Host("n2", 2), Host("n3", 1)]
    f.write_text("n1 cores=4\n")
    with pytest.raises(RmaxError, match="unknown hostfile field"):
        read_hostfile(f)
    with pytest.raises(RmaxError, match="cannot read hostfile"):
        read_hostfile(tmp_path / "missing")


def test_mpirun_argv_sets_threads_binding_and_hosts():
    # 192.0.2.1 is TEST-NET-1: it resolves and routes, and is never a real host
    spec = LaunchSpec(program=["/bin/prog", "--x"], np=4, hosts=[Host("localhost", 2), Host("192.0.2.1", 2)],
                      blas_threads=1)
    argv = get_launcher("mpirun").argv(spec)
    assert argv[0] == "env" and any(a.endswith("mpirun") for a in argv) and argv[-2:] == ["/bin/prog", "--x"]
    assert argv[argv.index("-np") + 1] == "4"
    assert argv[argv.index("--host") + 1] == "localhost:2,192.0.2.1:2"
    assert "OPENBLAS_NUM_THREADS=1" in argv and "OMP_NUM_THREADS=1" in argv
    assert argv[argv.index("--bind-to") + 1] == "core"
    assert ("--allow-run-as-root" in argv) == (os.geteuid() == 0)
    two = get_launcher("mpirun").argv(LaunchSpec(program=["p"], np=1, blas_threads=2))
    assert two[two.index("--map-by") + 1] == "slot:PE=2"


def test_mpiexec_and_srun_argv(monkeypatch):
    spec = LaunchSpec(program=["p"], np=2, hosts=[Host("localhost", 2), Host("192.0.2.1", 2)], blas_threads=2,
                      ranks_per_node=1)
    m = get_launcher("mpiexec").argv(spec)
    assert m[m.index("-hosts") + 1] == "localhost:2,192.0.2.1:2" and m[m.index("-ppn") + 1] == "1"
    assert ["-genv", "OPENBLAS_NUM_THREADS", "2"] == m[m.index("-genv"):m.index("-genv") + 3]
    with pytest.raises(RmaxError, match="inside a Slurm allocation"):
        get_launcher("srun").argv(spec)
    if shutil.which("srun") is None:
        pytest.skip("srun is not installed here")
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    s = get_launcher("srun").argv(spec)
    assert "--ntasks" in s and "--cpus-per-task=2" in s and "--nodelist" in s
    # the ranks' listeners confined as under mpirun (networks space-separated: --export splits on commas)
    routed = LaunchSpec(program=["p"], np=2, hosts=[Host("localhost", 1), Host("192.0.2.1", 1)], net_if="lo")
    export = next(a for a in get_launcher("srun").argv(routed) if a.startswith("--export=ALL,"))
    assert "librmax-bindaddr.so" in export and "RMAX_BIND_NET=127.0.0.0/8 192.0.2.1/32" in export
    # exactly the nodes and ranks asked for: --nodelist alone lets srun add nodes and spread the ranks
    one = get_launcher("srun").argv(LaunchSpec(program=["p"], np=2, hosts=[Host("localhost", 2), Host("192.0.2.1", 2)]))
    assert one[one.index("--nodes") + 1] == "1" and one[one.index("--nodelist") + 1] == "localhost"
    assert one[one.index("--ntasks-per-node") + 1] == "2"
    with pytest.raises(RmaxError, match="same number of ranks on every node it uses, not localhost:1, 192.0.2.1:3"):
        get_launcher("srun").argv(LaunchSpec(program=["p"], np=4, hosts=[Host("localhost", 1), Host("192.0.2.1", 3)]))


def test_default_launcher_follows_slurm(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    assert get_launcher().name == "mpirun"
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    assert get_launcher().name == "srun"
    with pytest.raises(RmaxError, match="unknown launcher"):
        get_launcher("pbs")


def test_threads_bound_beyond_the_slots_are_refused_before_launch():
    """Each rank bound to as many cores as its BLAS threads: more than the slots is refused in one
    line (mpirun would fail on its mapping after the run was stored)."""
    spec = LaunchSpec(program=["p"], np=2, hosts=[Host("localhost", 1), Host("192.0.2.1", 1)], blas_threads=2)
    with pytest.raises(RmaxError, match="2 ranks x 2 BLAS threads need 4 cores bound, but only 2 slots"):
        get_launcher("mpirun").argv(spec)
    for ok in (dict(bind="none"), dict(oversubscribe=True)):
        get_launcher("mpirun").argv(LaunchSpec(program=["p"], np=2, hosts=[Host("localhost", 1), Host("192.0.2.1", 1)],
                                               blas_threads=2, **ok))


def test_a_program_of_another_mpi_is_refused_by_the_launcher(tmp_path):
    from rmax.native import executable

    # a copy of rmax's Open MPI rmax-ranks elsewhere is someone else's program: refused, not swapped
    foreign = tmp_path / "rmax-ranks"
    shutil.copy(executable("rmax-ranks"), foreign)
    with pytest.raises(RmaxError, match="is built with Open MPI, but the mpiexec launcher starts MPICH jobs"):
        get_launcher("mpiexec").argv(LaunchSpec(program=[str(foreign)], np=1))
    get_launcher("mpirun").argv(LaunchSpec(program=[str(foreign)], np=1))
    get_launcher("mpiexec").argv(LaunchSpec(program=["sh", "-c", "true"], np=1))   # no MPI: nothing to check


def test_more_ranks_than_slots_is_refused_before_launch():
    with pytest.raises(RmaxError, match="only 2 slots"):
        prepare(LaunchSpec(program=["p"], np=3, hosts=[Host("localhost", 2)]), "mpirun")
    prepare(LaunchSpec(program=["p"], np=3, hosts=[Host("localhost", 2)], oversubscribe=True), "mpirun")


def test_unknown_host_is_named():
    with pytest.raises(RmaxError, match="unknown host 'no-such-node.invalid'"):
        prepare(LaunchSpec(program=["p"], np=1, hosts=[Host("no-such-node.invalid", 1)]), "mpirun")


def test_missing_launcher_names_the_package(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RmaxError) as e:
        prepare(LaunchSpec(program=["p"], np=1), "mpirun")
    assert "apt-get install openmpi-bin" in e.value.hint


def test_watchdog_kills_the_group_and_names_the_step(tmp_path):
    marker = tmp_path / "child.pid"
    script = f"echo 'rmax-step: setup' >&2; echo 'rmax-step: exchange' >&2; sleep 60 & echo $! > {marker}; wait"
    t0 = time.monotonic()
    result = run_job(["sh", "-c", script], timeout=1.0)
    assert time.monotonic() - t0 < 10
    assert result.timed_out and result.last_step == "exchange" and result.steps == ["setup", "exchange"]
    child = int(marker.read_text())
    time.sleep(0.2)
    assert not os.path.exists(f"/proc/{child}") or "Z" in open(f"/proc/{child}/stat").read().split()[2]
    err = result.failure("demo")
    assert isinstance(err, RunFailed) and "in step 'exchange'" in str(err)


def test_failed_job_reports_known_causes():
    result = run_job(["sh", "-c", "echo 'x: error while loading shared libraries: libblas.so.3: cannot open shared object file' >&2; exit 127"], timeout=10)
    assert not result.ok and "BLAS" in str(result.failure("demo"))
    with pytest.raises(RmaxError, match="not found"):
        run_job(["/nonexistent/prog"], timeout=5)


def test_mpirun_really_runs_two_ranks():
    argv = prepare(LaunchSpec(program=["sh", "-c", "echo rank $OMPI_COMM_WORLD_RANK threads $OPENBLAS_NUM_THREADS"], np=2), "mpirun")
    result = run_job(argv, timeout=60)
    assert result.ok, result.stderr_tail
    assert sorted(result.stdout.split("\n")[:2]) == ["rank 0 threads 1", "rank 1 threads 1"]


def test_mpich_mpiexec_really_runs_two_ranks():
    if shutil.which("mpiexec.mpich") is None:
        pytest.skip("MPICH is not installed")
    argv = prepare(LaunchSpec(program=["sh", "-c", "echo rank $PMI_RANK threads $OPENBLAS_NUM_THREADS"], np=2), "mpiexec")
    result = run_job(argv, timeout=60)
    assert result.ok, result.stderr_tail
    assert sorted(result.stdout.strip().split("\n")) == ["rank 0 threads 1", "rank 1 threads 1"]


def test_repeated_mca_settings_are_given_once():
    # Open MPI refuses a parameter listed twice: the launcher's own setting is kept.
    spec = LaunchSpec(program=["p"], np=1, extra_args=["--mca", "btl", "tcp,self", "--mca", "mpi_yield_when_idle", "1",
                                                       "--mca", "btl", "self"])
    argv = get_launcher("mpirun").argv(spec)
    assert argv.count("btl") == 1 and argv[argv.index("btl") + 1] == "tcp,self"
    assert argv.count("mpi_yield_when_idle") == 1 and argv[-1] == "p"


def test_one_reading_of_a_commands_host_options(tmp_path, monkeypatch):
    from rmax.launch.request import resolve_hosts

    for name in ("SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    launcher, hosts, hostfile = resolve_hosts("a:2,b", None)
    assert launcher is None and [(h.name, h.slots) for h in hosts] == [("a", 2), ("b", 1)] and hostfile is None
    f = tmp_path / "nodes"
    f.write_text("c slots=3\nd slots=1\n")
    launcher, hosts, hostfile = resolve_hosts(None, str(f), "mpirun")
    assert launcher == "mpirun" and [(h.name, h.slots) for h in hosts] == [("c", 3), ("d", 1)] and hostfile == str(f)
    assert resolve_hosts(None, None) == (None, None, None)   # this node only
    with pytest.raises(RmaxError, match="give --hosts or --hostfile, not both"):
        resolve_hosts("a", str(f))
    monkeypatch.setenv("RMAX_VCLUSTER_DIR", str(tmp_path / "none"))
    with pytest.raises(RmaxError, match="no virtual cluster"):
        resolve_hosts(None, None, "vcluster")

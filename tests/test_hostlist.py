"""Host lists in Slurm's syntax wherever hosts are given, slot counts of this host against its
CPUs, and what --vcluster NAME selects (a cluster's state written by hand: no namespaces)."""

from __future__ import annotations

import pytest

from cliutil import assert_one_line_error, run_cli
from rmax.errors import RmaxError
from rmax.launch import LaunchSpec, get_launcher, local_slots, parse_hosts, read_hostfile
from rmax.launch.allocation import allocation_hosts
from rmax.launch.base import OVERSUBSCRIBED
from rmax.hostlist import MAX_HOSTS, expand
from rmax.launch.hosts import Host, fill, hostfile_hosts
from rmax.launch.request import spec_from_options


def test_slurm_hostlists_expand_as_slurm_does():
    assert expand("node[01-04]", "x") == ["node01", "node02", "node03", "node04"]
    assert expand("n[8-10],n[098-100]", "x") == ["n8", "n9", "n10", "n098", "n099", "n100"]   # padding as written
    assert expand("gpu[1,3-4,07]", "x") == ["gpu1", "gpu3", "gpu4", "gpu07"]
    assert expand("r[1-2]-n[1-2].ib", "x") == ["r1-n1.ib", "r1-n2.ib", "r2-n1.ib", "r2-n2.ib"]
    assert expand("a,b,a", "x") == ["a", "b", "a"]          # repeats are the caller's (slots add up)
    assert len(expand("r[1-2]-n[1-5]", "x", most=10)) == 10   # the bound is inclusive
    with pytest.raises(RmaxError, match="names 10 hosts: too many"):
        expand("r[1-2]-n[1-5]", "x", most=9)


@pytest.mark.parametrize("text, words", [
    ("node[4-1]", "runs backwards"), ("node[01-04", "'[' without ']'"), ("node01-04]", "']' without '['"),
    ("n[[1-2]]", "brackets nest"), ("n[]", "empty range"), ("n[a-b]", "not a number or a range"),
    ("n[1-2-3]", "not a number or a range"), ("n[0-99999999]", "names 100000000 hosts: too many"),
    (f"a[1-{MAX_HOSTS}],b", "too many"), ("n[1-2],,m", "empty host name"), ("-n[1-2]", "not a valid host name"),
    ("n[1]x;rm", "not a valid host name")])
def test_bad_hostlists_are_refused(text, words):
    with pytest.raises(RmaxError, match=words.replace("[", r"\[")):
        expand(text, "--hosts")


def test_slots_apply_to_every_host_of_a_range():
    assert parse_hosts("node[01-02]:2,node01") == [Host("node01", 3), Host("node02", 2)]
    assert parse_hosts("localhost,n[1-2]") == [Host("localhost", local_slots()), Host("n1", 1), Host("n2", 1)]
    with pytest.raises(RmaxError, match="not a whole number"):
        parse_hosts("n[1-2]:x")


def test_hostfile_lines_in_hostlist_syntax(tmp_path):
    f = tmp_path / "hosts"
    f.write_text("# racks\nnode[01-04] slots=2\ngpu[1-2]:4  # mpich style\nnode01\n")
    hosts, plain = hostfile_hosts(f)
    assert hosts == [Host("node01", 3), Host("node02", 2), Host("node03", 2), Host("node04", 2),
                     Host("gpu1", 4), Host("gpu2", 4)]
    assert not plain
    spec = spec_from_options(["p"], np=None, hosts=None, hostfile=str(f), bind="none", blas_threads=1,
                             oversubscribe=False, net_if="lo")   # lo: the names need not resolve
    assert spec.hosts == hosts and spec.np == 17 and spec.hostfile_as_is() is None
    argv = get_launcher("mpirun").prefix(spec)    # Open MPI gets the hosts rmax read, not a file it cannot read
    assert "--hostfile" not in argv and argv[argv.index("--host") + 1].startswith("node01:3,node02:2,")
    f.write_text("n1 slots=2\nn2\n")
    assert hostfile_hosts(f)[1] and LaunchSpec(["p"], hostfile=str(f)).hostfile_as_is() == str(f)
    for text in ("n1 slots=2\nn1 slots=2\n", "n1,n2 slots=2\n"):   # Open MPI refuses a host's slots given twice
        assert not hostfile_hosts(f.write_text(text) and f)[1]
    f.write_text("n[3-1] slots=2\n")
    with pytest.raises(RmaxError, match="hosts:1: range 3-1"):
        read_hostfile(f)


def test_allocation_nodes_expand_without_scontrol(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    env = {"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "c[01-02],d5", "SLURM_JOB_CPUS_PER_NODE": "4(x2),2"}
    assert allocation_hosts(env) == [Host("c01", 4), Host("c02", 4), Host("d5", 2)]


def test_ranks_fill_slots_then_go_round():
    hosts = [Host("a", 2), Host("b", 1), Host("c", 3)]
    assert fill(hosts, 4) == [2, 1, 1] and fill(hosts, 6) == [2, 1, 3] and fill(hosts, 8) == [3, 2, 3]


def test_ranks_on_this_host_are_checked_against_its_cpus():
    cpus = local_slots()
    over = LaunchSpec(program=["p"], np=cpus + 1, hosts=[Host("localhost", cpus + 1)], bind="none")
    with pytest.raises(RmaxError, match=f"{cpus + 1} ranks on this host .* but it has {cpus} CPUs"):
        over.validate()
    over.oversubscribe = True
    over.validate()
    absurd = LaunchSpec(program=["p"], np=70000, hosts=[Host("localhost", 65536)], oversubscribe=True, bind="none")
    with pytest.raises(RmaxError, match="even with --oversubscribe"):
        absurd.validate()
    # other hosts' slots are theirs to know; only the ranks that land here count
    LaunchSpec(program=["p"], np=cpus + 64, hosts=[Host("localhost", cpus), Host("192.0.2.1", 64)],
               bind="none").validate()
    LaunchSpec(program=["p"], np=OVERSUBSCRIBED * cpus, oversubscribe=True, bind="none").validate()


def test_cli_refuses_bad_ranges_and_crowded_hostfiles(tmp_path, db):
    assert_one_line_error(run_cli("launch", "check", "--hosts", "node[4-1]"), 2, "runs backwards")
    f = tmp_path / "many"
    f.write_text("localhost slots=1\n" * 10_000)
    assert_one_line_error(run_cli("launch", "check", "--hostfile", str(f)), 2,
                          "10000 ranks on this host (localhost with 10000 slots)", f"{local_slots()} CPUs")


def test_agent_peers_take_hostlists():
    from rmax.agent.config import build

    assert build({}, {"peers": "n[1-2,07],m"}).peers == ("n1", "n2", "n07", "m")
    with pytest.raises(RmaxError, match="--peers: range 2-1"):
        build({}, {"peers": "n[2-1]"})


@pytest.fixture
def fake_cluster(tmp_path, monkeypatch):
    """A complete cluster's state and hostfile, as `rmax vcluster up` leaves them (nothing else)."""
    from rmax.vcluster import make_plan
    from rmax.vcluster import state as st

    monkeypatch.setenv("RMAX_VCLUSTER_DIR", str(tmp_path / "vc"))
    monkeypatch.delenv("RMAX_VCLUSTER", raising=False)
    s = st.create("hht")
    s.plan, s.complete = make_plan("hht", 5, 2, "10.250.0.0/24"), True
    s.save()
    s.hostfile.write_text("".join(f"{n.name} slots=1\n" for n in s.plan.nodes))
    return s


def test_a_named_cluster_brings_its_launcher_and_nodes(fake_cluster):
    from rmax.launch.vcluster import on_cluster

    assert on_cluster("hht", None, None, None) == ("vcluster", None, str(fake_cluster.hostfile))
    assert on_cluster("hht", "vcluster", "hht-n[1-4]", None) == ("vcluster", "hht-n[1-4]", None)
    with pytest.raises(RmaxError, match="--launcher mpirun conflicts with --vcluster hht"):
        on_cluster("hht", "mpirun", None, None)
    with pytest.raises(RmaxError, match="hht-n6, localhost: not nodes of virtual cluster hht"):
        on_cluster("hht", None, "hht-n[5-6],localhost", None)
    with pytest.raises(RmaxError, match="no virtual cluster 'hhx'"):
        on_cluster("hhx", None, None, None)


def test_every_launching_command_refuses_a_conflicting_launcher(fake_cluster, db):
    env = {"RMAX_VCLUSTER_DIR": str(fake_cluster.directory.parent)}
    # a command's own function, and a command made whole from a family (cli/family_command.py)
    assert_one_line_error(run_cli("launch", "check", "--vcluster", "hht", "--launcher", "mpirun", env=env), 2,
                          "conflicts with --vcluster hht")
    assert_one_line_error(run_cli("bench", "matrix", "--quick", "--hosts", "n1", "--vcluster", "hht", env=env), 2,
                          "n1: not a node of virtual cluster hht")


@pytest.mark.parametrize("names,text", [
    ([f"s48-n{i}" for i in range(1, 49)], "s48-n[1-48]"),
    (["node01", "node02", "node03", "node07", "login"], "node[01-03,07],login"),
    (["r1-n2", "r1-n1", "r2-n1"], "r1-n[1-2],r2-n1"),
    (["a", "b"], "a,b"),
])
def test_compress_is_the_inverse_of_expand(names, text):
    from rmax.hostlist import compress

    assert compress(names) == text and sorted(expand(text, "x")) == sorted(names)

"""A 4-node, 2-switch cluster with a slow trunk: MPI spans it, the trunk is slower,
the topology is recovered, and placement keeps HPL's process rows in switches."""

from __future__ import annotations

import json
import shutil

import pytest

from cliutil import run_cli
from rmax.topology.placement import parse_rankfile
from vcutil import cluster  # noqa: F401  (the module's 4-node, 2-switch cluster)

pytestmark = pytest.mark.skipif(not shutil.which("mpirun"), reason="Open MPI's mpirun is not installed")


def test_mpi_job_spans_the_namespaces(cluster, db):
    proc = run_cli("launch", "check", "--launcher", "vcluster", "--np", "4", "--json", check=True, timeout=120)
    rec = json.loads(proc.stdout)
    assert rec["summary"]["allreduce_ok"]
    assert rec["summary"]["hosts"] == sorted(n.name for n in cluster.plan.nodes)


def test_trunk_is_slower_and_topology_is_inferred(cluster, db, tmp_path):
    proc = run_cli("vcluster", "probe", "--bytes", "2000000", "--pings", "100", "--json", check=True, timeout=120)
    m = json.loads(proc.stdout)["summary"]
    bw, lat = m["bandwidth_Bps"], m["latency_s"]
    intra = [bw[0][1], bw[2][3]]
    trunk = [bw[0][2], bw[0][3], bw[1][2], bw[1][3]]
    assert min(intra) > 3 * max(trunk), (intra, trunk)      # 1 gbit/s links, 100 Mbit/s trunk
    assert max(trunk) < 13.5e6                              # the trunk's tbf holds: 100 Mbit/s = 12.5 MB/s
    assert all(lat[i][j] > 0 for i in range(4) for j in range(4) if i != j)
    toml = tmp_path / "cluster.toml"
    inf = run_cli("topology", "infer", "--write", str(toml), "--json", check=True)
    groups = json.loads(inf.stdout)["summary"]["groups"]
    assert sorted(map(sorted, groups)) == sorted(map(sorted, cluster.plan.groups()))
    assert "[[switch]]" in toml.read_text()


def test_rankfile_keeps_grid_rows_inside_switches(cluster, db, tmp_path):
    n1, n2, n3, n4 = (n.name for n in cluster.plan.nodes)
    # Interleaved hosts: the natural order would split both rows of a 2 x 2 grid across the trunk.
    hostfile = tmp_path / "hosts"
    hostfile.write_text(f"{n1} slots=1\n{n3} slots=1\n{n2} slots=1\n{n4} slots=1\n")
    rankfile = tmp_path / "ranks"
    out = run_cli("topology", "place", "--grid", "2x2", "--keep", "rows", "--hostfile", str(hostfile),
                  "--topology", str(cluster.cluster_toml), "--rankfile", str(rankfile), "--json", check=True)
    info = json.loads(out.stdout)
    assert info["split_rows"] == 0 and info["natural_split_rows"] == 2
    switch = {n: i for i, g in enumerate(cluster.plan.groups()) for n in g}
    ranks = parse_rankfile(rankfile.read_text())
    for row in ([0, 1], [2, 3]):                                      # row-major: rank = row*Q + col
        assert len({switch[ranks[r].host] for r in row}) == 1
    # and MPI places the ranks as the rankfile says
    from rmax.launch import LaunchSpec, prepare, read_hostfile, run_job
    from rmax.native import executable

    spec = LaunchSpec([executable("rmax-ranks"), "--json", "-"], np=4, hosts=read_hostfile(hostfile),
                      hostfile=str(hostfile), extra_args=["--rankfile", str(rankfile)])
    job = run_job(prepare(spec, "vcluster"), timeout=120)
    assert job.ok, job.stderr_tail
    landed = {r["rank"]: r["host"] for r in map(json.loads, job.stdout.splitlines()) if r.get("rank") is not None}
    assert landed == {r: s.host for r, s in enumerate(ranks)}


def test_net_doctor_flags_a_mismatched_mtu(cluster, db):
    import subprocess

    node = cluster.plan.nodes[2].name
    subprocess.run(["ip", "-n", node, "link", "set", "dev", "eth0", "mtu", "9000"], check=True)
    try:
        proc = run_cli("net", "doctor", "--vcluster", cluster.name, "--json", check=True)
    finally:
        subprocess.run(["ip", "-n", node, "link", "set", "dev", "eth0", "mtu", "1500"], check=True)
    findings = json.loads(proc.stdout)["summary"]["findings"]
    mism = [f for f in findings if f["rule"] == "mtu-mismatch"]
    assert len(mism) == 1 and f"{node}/eth0" in mism[0]["message"] and cluster.plan.subnet == mism[0]["where"]
    assert any("Kronos" in e for e in mism[0]["evidence"])


def test_experiment_mtu_measures_and_restores(cluster, db):
    import subprocess

    proc = run_cli("experiment", "mtu", "1500,9000", "--vcluster", cluster.name, "--hpl-n", "600",
                   "--bytes", "1000000", "--json", check=True, timeout=240)
    res = json.loads(proc.stdout)["results"]
    assert [r["mtu"] for r in res] == [1500, 9000]
    for r in res:
        assert r["latency_us"] > 0 and r["bandwidth_MBps"] > 3 * r["trunk_bandwidth_MBps"]
        assert r["hpl_status"] == "ok" and r["hpl_gflops"] > 0
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    mine = [l for l in links.splitlines() if cluster.name in l]
    assert mine and all("mtu 1500" in l for l in mine)
    inside = subprocess.run(["ip", "-n", cluster.plan.nodes[0].name, "-o", "link", "show", "eth0"],
                            capture_output=True, text=True).stdout
    assert "mtu 1500" in inside


def test_topology_from_the_mpi_matrix_benchmark(cluster, db):
    from rmax.native import executable

    try:
        executable("rmax-net")
    except Exception:
        pytest.skip("rmax-net is not built")
    proc = run_cli("bench", "matrix", "--launcher", "vcluster", "--np", "4", "--quick", "--json", timeout=180)
    if proc.returncode != 0 and "not implemented" in proc.stderr:
        pytest.skip("rmax-net matrix is not implemented in this build")
    assert proc.returncode == 0, proc.stderr
    inf = run_cli("topology", "infer", "--json", check=True)
    summary = json.loads(inf.stdout)["summary"]
    assert sorted(map(sorted, summary["groups"])) == sorted(map(sorted, cluster.plan.groups()))


def test_survey_spans_the_nodes(cluster, db):
    # The survey's multi-node path: inventory and a node benchmark on every node, and their spread.
    two = sorted(n.name for n in cluster.plan.nodes)[:2]
    proc = run_cli("survey", "--quick", "--launcher", "vcluster", "--hosts", ",".join(f"{n}:1" for n in two),
                   "--steps", "inventory,peakflops", "--json", timeout=600)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert {s["step"]: s["status"] for s in rec["summary"]["steps"]} == {"inventory": "ok", "peakflops": "ok"}
    assert sorted(rec["summary"]["nodes"]) == two
    spread = [v for k, v in rec["summary"]["spread"].items() if k.startswith("peakflops:")]
    assert spread and all(sorted(v["nodes"]) == two and v["median"] > 0 for v in spread)

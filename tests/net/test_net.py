"""`rmax bench net`: the point-to-point curves per layer, stored and validated."""

import json
import os
import subprocess
import sys

import pytest
from cliutil import assert_one_line_error, run_cli
from netutil import FAST, mpirun, records

from rmax.families import net
from rmax.families import get
from rmax.bench.netlaunch import check_memory
from rmax.bench.view import resolve
from rmax.errors import RmaxError
from rmax.store import open_store


def netpipe_schedule(lo: int, hi: int) -> list[int]:
    """NetPIPE's rule, written independently of schedule.c: 2^k and 3*2^(k-1), each +-3."""
    pts = {0}
    k = 0
    while 2**k <= hi + 3:
        for p in ([2**k] + ([3 * 2 ** (k - 1)] if k >= 1 else [])):
            pts |= {p, p + 3} | ({p - 3} if p > 3 else set())
        k += 1
    return sorted(s for s in pts if lo <= s <= hi)


NET = get("net")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    db = tmp_path_factory.mktemp("net") / "results.db"
    # no layer time budget: on a loaded machine it would leave sizes out (tests/test_lost_hosts.py checks it)
    proc = run_cli("bench", "net", "--quick", "--max-size", "4K", *FAST, "--layer-budget", "0", "--json",
                   env={"RMAX_DB": str(db)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return db, json.loads(proc.stdout)


def test_net_stores_an_ok_run_with_every_layer(quick_run):
    db, rec = quick_run
    assert rec["kind"] == "net" and rec["status"] == "ok"
    with open_store(db) as store:
        s = NET.load(store.get(rec["id"]))
    printed = NET.Summary.load(rec["summary"])                      # --json prints the stored summary
    assert [(x.name, [p.latency for p in x.points]) for x in s.layers] == \
        [(x.name, [p.latency for p in x.points]) for x in printed.layers]
    assert [x.name for x in s.layers] == list(net.LAYERS)
    for layer in s.layers:
        for p in layer.points:
            assert p.validated and p.latency > 0 and p.n >= 5, (layer.name, p)
            assert p.latency_min <= p.latency
            kept = rec["samples"][f"{layer.name}/{p.size}"]
            assert len(kept["repeats"]) == len(p.repeats) == 3 and sum(map(len, kept["batches"])) == p.n
            assert p.spread >= 0 and p.stable in (True, False)   # three repeats: a spread is known
            assert min(p.repeats) <= p.latency <= max(p.repeats)
        # a socket curve up to 4 KiB can be flat within noise: then the fit says why it has no answer
        assert (layer.fit is None) != (layer.fit_error is None), (layer.name, layer.fit, layer.fit_error)
        assert isinstance(layer.anomalies, list)
    mpi = s.layer("mpi")[1]
    assert mpi.fit.beta > 0
    mpi_sizes = [p.size for p in mpi.points]
    assert mpi_sizes[:6] == [0, 1, 2, 3, 4, 6] and mpi_sizes[-1] == 4096   # quick: no +-3 points
    assert 0 not in [p.size for p in s.layer("tcp")[1].points]             # TCP has no empty message
    assert s.addresses == ["127.0.0.1", "127.0.0.1"]                       # one host: loopback only
    assert s.repeats == 3 and all(layer.dips_tested for layer in s.layers)
    assert rec["params"]["np"] == 2 and rec["params"]["quick"] is True


def test_headline_figures_come_from_the_one_byte_and_one_mebibyte_points(quick_run):
    _, rec = quick_run
    s = NET.Summary.load(rec["summary"])
    lat, *rest = NET.headline(s)
    assert rest == []                                 # --max-size 4K: no 1 MiB point, no bandwidth figure
    i, j, p = s.point("mpi", 1)
    assert lat.role == "mpi_latency" and lat.better == "lower" and lat.unit == "us"
    assert lat.value == p.latency * 1e6 == resolve(rec["summary"], lat.path) * lat.scale
    assert lat.repeats == tuple(v * 1e6 for v in p.repeats) and len(lat.repeats) == 3
    assert "of 3 repeats" in lat.statistic
    keys = [f.key for f in NET.metrics(s)]
    assert "tcp.latency_1B" in keys and len(keys) == len(set(keys))


def test_survey_headline_and_agent_read_the_net_figures(quick_run):
    from rmax.agent.probes import REGISTRY
    from rmax.survey.headline import by_role, headline

    db, rec = quick_run
    with open_store(db) as store:
        run = store.get(rec["id"])
    p = NET.load(run).point("mpi", 1)[2]
    rows = headline([run])
    assert by_role(rows, "mpi_latency")["value"] == p.latency * 1e6
    assert by_role(rows, "mpi_bandwidth") is None                  # --max-size 4K: no 1 MiB point
    (rate,) = REGISTRY["pingpong"].rates(run)
    assert rate.probe == "pingpong_latency" and rate.value == pytest.approx(p.latency, rel=1e-12)


def test_view_has_every_point_and_each_layer_fit(quick_run):
    _, rec = quick_run
    s = NET.Summary.load(rec["summary"])
    v = NET.view(s)
    points, fits = v.tables
    assert len(points.rows) == sum(len(x.points) for x in s.layers)
    assert [r[0] for r in fits.rows] == [x.name for x in s.layers]
    assert len(v.data["p2p"]) == sum(len(x.points) for x in s.layers)
    assert any(n.startswith("MPI latency, 1 B:") for n in v.notes)
    assert [p.title for p in NET.plots([("a", s)])] == ["Latency per layer, " + " <-> ".join(s.hosts),
                                                       "Bandwidth per layer, " + " <-> ".join(s.hosts)]


def test_full_schedule_has_netpipe_perturbations():
    proc = mpirun(2, "p2p", "--json", "-", "--layers", "mpi", "--max-size", "200", "--repeats", "1", *FAST)
    assert proc.returncode == 0, proc.stderr
    pts = [r for r in records(proc) if r["record"] == "point"]
    assert [r["size"] for r in pts] == netpipe_schedule(0, 200)
    assert {61, 64, 67, 93, 96, 99} <= {r["size"] for r in pts}


def test_validate_every_message_passes_on_odd_sizes():
    proc = mpirun(2, "p2p", "--json", "-", "--validate", "--sizes", "0,1,7,4099,70000", "--repeats", "1", *FAST)
    assert proc.returncode == 0, proc.stderr
    parsed = NET.parse(records(proc))
    assert parsed.status == "ok"
    assert all(p.validated for layer in parsed.summary.layers for p in layer.points)
    assert 70000 not in [p.size for p in parsed.summary.layer("udp")[1].points]  # beyond one datagram


@pytest.mark.parametrize("extra", [[], ["--validate"]])
def test_damaged_payload_is_caught(extra):
    proc = mpirun(2, "p2p", "--json", "-", "--self-test-corrupt", "--sizes", "0,1,4099",
                  "--layers", "mpi,mpi-nonblocking,mpi-bidir,tcp,udp", "--repeats", "1", *extra, *FAST)
    assert proc.returncode == 0, proc.stderr
    recs = records(proc)
    pts = [r for r in recs if r["record"] == "point"]
    assert all(r["validated"] == (r["size"] == 0) for r in pts), [(r["layer"], r["size"]) for r in pts]
    parsed = NET.parse(recs)
    assert parsed.status == "invalid" and "validation failed" in parsed.error


def test_one_rank_is_refused_before_launch(db):
    proc = run_cli("bench", "net", "--np", "1")
    assert_one_line_error(proc, 2, "exactly 2 ranks")
    with open_store(db) as store:
        assert store.list() == []


def test_sizes_beyond_memory_are_refused(db):
    assert_one_line_error(run_cli("bench", "net", "--sizes", "8,100G"), 2, "1 GiB")
    assert_one_line_error(run_cli("bench", "net", "--sizes", "8,lots"), 2, "not a size")
    with pytest.raises(RmaxError, match="available"):
        check_memory(1 << 50, 2, "buffers")


def test_unknown_layer_is_refused(db):
    assert_one_line_error(run_cli("bench", "net", "--layers", "mpi,carrier-pigeon"), 2, "carrier-pigeon")


def test_host_that_does_not_answer_is_named(db):
    # 192.0.2.1 is TEST-NET-1: documentation only, never a real host.
    proc = run_cli("bench", "net", "--hosts", "localhost:1,192.0.2.1:1", "--timeout", "10", "--quick",
                   timeout=60)
    assert_one_line_error(proc, 1, "192.0.2.1")


def test_batch_length_is_honoured_and_recorded():
    proc = mpirun(2, "p2p", "--json", "-", "--layers", "mpi", "--sizes", "8", "--batch", "0.004", "--budget", "0.05",
                  "--max-samples", "5", "--repeats", "1")
    assert proc.returncode == 0, proc.stderr
    recs = records(proc)
    assert recs[0]["batch"] == 0.004
    point = next(r for r in recs if r["record"] == "point")
    # a calibrated batch lasts at least the target: iterations x time per round trip (the median:
    # a batch after the machine got faster can be short, and the next ones are made longer)
    assert point["iters"] * 2 * point["summary"]["median"] >= 0.004 * 0.9


def test_one_buffer_echo_validates_and_still_catches_damage():
    args = ["p2p", "--json", "-", "--one-buffer", "--validate", "--sizes", "1,4099", "--repeats", "1", *FAST]
    ok = NET.parse(records(mpirun(2, *args)))
    assert ok.status == "ok"
    bad = NET.parse(records(mpirun(2, *args, "--self-test-corrupt")))
    assert bad.status == "invalid"


def test_buffers_placed_past_a_page_boundary_still_validate():
    # NetPIPE's large buffers lie 16 bytes past a page (malloc's chunk header): --offset places rmax's there
    parsed = NET.parse(records(mpirun(2, "p2p", "--json", "-", "--one-buffer", "--offset", "16", "--validate",
                                      "--sizes", "1,4099", "--repeats", "2", *FAST)))
    assert parsed.status == "ok" and parsed.summary.offset == 16 and parsed.summary.repeats == 2
    proc = mpirun(2, "p2p", "--offset", "4096")
    assert proc.returncode == 2 and "--offset" in proc.stderr


def test_large_messages_keep_at_most_window_bytes_in_flight_and_few_samples_are_kept_few():
    """--window-bytes shortens a large message's window (the time per message stays per message);
    --min-samples 2 stops a point that met no confidence target after 2 samples, not 5. The 32 MiB
    point's one message outlasts the 1 ms budget, so its budget has surely ended after 2 samples
    (a fast machine fits three 1 MiB batches into 1 ms: CI saw 3)."""
    recs = records(mpirun(2, "p2p", "--json", "-", "--layers", "mpi-stream", "--sizes", "8,1M,32M", "--window", "64",
                          "--window-bytes", "4M", "--min-samples", "2", "--max-samples", "5", "--budget", "0.001",
                          "--repeats", "1"))
    small, large, huge = [r for r in recs if r["record"] == "point"]
    assert (small["window"], small["messages_per_op"]) == (64, 64)
    assert (large["window"], large["messages_per_op"]) == (4, 4) and large["validated"]
    assert huge["window"] == 1 and huge["summary"]["n"] == 2 and huge["validated"]
    assert recs[0]["window_bytes"] == 4 << 20 and recs[0]["min_samples"] == 2


def test_listing_net_runs_imports_no_numerics(quick_run):
    """`rmax runs list` shows a net run's headline (its repeats judged for two states) without numpy
    or scipy: every listing would pay their import (0.2-0.9 s) before it printed a line."""
    db, _ = quick_run
    code = ("import sys, runpy; sys.argv = ['rmax', 'runs', 'list']\n"
            "try:\n    runpy.run_module('rmax', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('NUMERICS', sorted(m for m in ('numpy', 'scipy') if m in sys.modules), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "RMAX_DB": str(db)})
    assert "NUMERICS []" in proc.stderr and "net" in proc.stdout, proc.stderr

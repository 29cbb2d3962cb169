"""memlat: the chain is checked, records are complete, plateaus are named, the CLI stores a run."""

import json

from cliutil import assert_one_line_error, run_cli
from node_helpers import check_measurement, node, records

SMALL = ("--pattern", "both", "--min-size", "1K", "--max-size", "64K", "--points-per-octave", "1", "--budget", "2",
         "--sample-time", "0.0005")


def test_records_are_complete_and_validated():
    recs = records("memlat", *SMALL)
    meas = [r for r in recs if r["schema"] == "rmax.memlat/1"]
    assert {(r["pattern"], r["bytes"]) for r in meas} == {
        (p, 1024 * 2**i) for p in ("stride", "random") for i in range(7)}
    for r in meas:
        check_measurement(r, "rmax.memlat/1", "ns")
        assert r["validated"] is True and r["nodes"] == r["bytes"] // r["stride"]
        assert 0.1 < r["summary"]["min"] < 1000  # ns per load: any machine is within this
    assert recs[-1]["schema"] == "rmax.memlat.sweep/1" and recs[-1]["stopped_by"] == "max-size"


def test_strides_shorter_than_a_line_make_longer_chains():
    recs = records("memlat", "--pattern", "stride", "--stride", "8", "--min-size", "1K", "--max-size", "256K",
                   "--points-per-octave", "1", "--budget", "1", "--sample-time", "0.0005")
    meas = [r for r in recs if r["schema"] == "rmax.memlat/1"]
    assert meas[-1]["nodes"] == 256 * 1024 // 8 and all(r["validated"] for r in meas)


def test_a_broken_chain_is_caught():
    recs = records("memlat", "--min-size", "4K", "--max-size", "8K", "--budget", "0.5", "--self-test-corrupt")
    meas = [r for r in recs if r["schema"] == "rmax.memlat/1"]
    assert meas and all(r["validated"] is False for r in meas)


def test_bad_sizes_are_one_line_errors():
    for args, words in ((["--max-size", "0"], "greater than zero"), (["--stride", "12"], "multiple of 8"),
                        (["--max-size", "900G"], "does not fit"), (["--min-size", "64"], "at least two nodes")):
        proc = node("memlat", *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_plateaus_are_named_only_where_a_boundary_lines_up_with_a_cache():
    from rmax.model.cache_boundaries import Boundary, Plateau
    from rmax.families.memlat import name_plateaus

    KiB, MiB = 1024, 2**20
    caches = {"L1d": 48 * KiB, "L2": 2 * MiB, "L3": 32 * MiB}

    def named(spans, steps):
        plateaus = [Plateau(a, b, 1.0, 3) for a, b in spans]
        return [x.name for x in name_plateaus(plateaus, [Boundary(x, 1, 2, 2) for x in steps], caches)]

    spans = [(1 * KiB, 48 * KiB), (64 * KiB, 2 * MiB), (3 * MiB, 32 * MiB), (48 * MiB, 1024 * MiB)]
    assert named(spans, [56 * KiB, 2500 * KiB, 40 * MiB]) == ["L1d", "L2", "L3", "memory"]
    # a boundary far from every reported cache is named by its size, not given a cache's name
    assert named(spans[:2], [56 * KiB]) == ["L1d", "above 56 KiB boundary"]
    far = [(3 * MiB, 8 * MiB), (12 * MiB, 20 * MiB)]
    assert named(far, [10 * MiB]) == ["below 10 MiB boundary", "above 10 MiB boundary"]
    assert named([(1 * KiB, 48 * KiB), (64 * KiB, 8 * MiB), (12 * MiB, 20 * MiB)], [56 * KiB, 10 * MiB]) == [
        "L1d", "between 56 KiB and 10 MiB boundaries", "above 10 MiB boundary"]
    # a sub-step between the L1d and L2 boundaries (TLB reach) is part of L2
    sub = [(1 * KiB, 48 * KiB), (64 * KiB, 400 * KiB), (700 * KiB, 1200 * KiB), (4 * MiB, 7 * MiB)]
    assert named(sub, [50 * KiB, 560 * KiB, 1800 * KiB]) == ["L1d", "L2 (1 of 2)", "L2 (2 of 2)",
                                                              "above 1.76 MiB boundary"]
    # a flat curve (the stride chain under the prefetchers) is one plateau with no name of a cache
    assert named([(256 * KiB, 11 * MiB)], []) == ["no boundary found"]


def test_cli_stores_the_run(db):
    proc = run_cli("bench", "memlat", "--quick", "--pattern", "both", "--max-size", "128K", "--budget", "1", "--json",
                   check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "memlat"
    from rmax.families import get

    s = get("memlat").Summary.load(rec["summary"])
    assert [c.pattern for c in s.curves] == ["stride", "random"]
    assert all(c.points[-1].bytes <= 128 * 1024 and c.points[0].min <= c.points[0].median for c in s.curves)
    assert all(lv.name for c in s.curves for lv in c.plateaus)
    (memory,) = get("memlat").headline(s)
    assert memory.better == "lower" and memory.value == s.curves[1].points[-1].min


def test_cli_bad_input():
    assert_one_line_error(run_cli("bench", "memlat", "--max-size", "0"), 2, "greater than zero")
    assert_one_line_error(run_cli("bench", "memlat", "--max-size", "99999G"), 2, "does not fit")
    assert_one_line_error(run_cli("bench", "memlat", "--min-size", "1M", "--max-size", "4K"), 2, "larger than")

"""rmax survey, rmax report and rmax compare, end to end with the real kernels and headless Chromium."""

import csv
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cliutil import ROOT, assert_one_line_error, run_cli, run_in_process

from rmax.store import open_store

ARTIFACTS = ROOT / "build" / "test-artifacts"
QUICK_STEPS = "inventory,peakflops,cpurate,memlat,stream,dgemm,hpl"


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    """One quick survey shared by the report tests (its own store). A third of --quick's 60 s
    budget: the plan sizes every step to it (HPL's N too), and these tests read which figures the
    survey and its report show and where they come from, not how precise they are."""
    db = tmp_path_factory.mktemp("survey") / "results.db"
    env = {"RMAX_DB": str(db)}
    proc = run_cli("survey", "--busy-ok", "--quick", "--budget", "20", "--steps", QUICK_STEPS,
                   "--label", "<script>alert('x')</script> & co", "--json", env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), env


def chromium(url: str, *extra: str) -> subprocess.CompletedProcess:
    """Headless Chromium with a fresh profile and no background networking."""
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("chromium is not installed (scripts/install-system.sh installs it)")
    profile = Path(subprocess.check_output(["mktemp", "-d"], text=True).strip())
    try:
        return subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                               "--disable-background-networking", "--disable-component-update", "--disable-sync",
                               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, url],
                              capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def test_survey_stores_every_step_under_one_run(survey):
    rec, env = survey
    assert rec["kind"] == "survey" and rec["status"] == "ok"
    steps = {s["step"]: s for s in rec["summary"]["steps"]}
    assert sorted(steps) == sorted(QUICK_STEPS.split(","))  # run in the registry's order
    assert all(s["status"] == "ok" for s in steps.values())
    with open_store(env["RMAX_DB"]) as store:
        kids = store.children(rec["id"])
    assert {k.kind for k in kids} == {"info", "peakflops", "cpurate", "memlat", "stream", "dgemm", "hpl"}
    hpl = next(k for k in kids if k.kind == "hpl")
    assert hpl.summary["passed"] == len(hpl.summary["tests"]) == 1


def test_accept_sets_hpl_against_the_model_that_sized_it(survey):
    """The HPL step keeps the model's prediction for its N and grid (with the slowest and fastest
    node's DGEMM rate as its interval); rmax accept sets the measured GFLOPS against it, one verdict
    for the cluster: undecided from one survey; from two, a model 10x faster than HPL ran fails it
    and one 10x slower passes it."""
    import dataclasses

    from rmax.accept import hpl as accept_hpl
    from rmax.accept.references import Fleet
    from rmax.model.hpl_model import hpl_flops

    rec, env = survey
    model = next(s for s in rec["summary"]["steps"] if s["step"] == "hpl")["model"]
    fast, slow = model["predicted_range_s"]
    assert 0 < fast <= model["predicted_s"] <= slow and model["p"] * model["q"] >= 1, model
    with open_store(env["RMAX_DB"]) as store:
        ran = next(k for k in store.children(rec["id"]) if k.kind == "hpl")
    measured = ran.summary["tests"][0]["gflops"]
    proc = run_cli("accept", "--from", rec["id"][:8], "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    accepted = json.loads(proc.stdout)
    assert "(cluster)" not in accepted["hosts"] and accepted["hosts"]     # the cluster's verdict is no host's
    got = [v for v in accepted["summary"]["verdicts"] if v["node"] == "(cluster)"]
    assert len(got) == 1 and got[0]["state"] == "undecided" and got[0]["against"] == "model", got
    assert got[0]["target"] == pytest.approx(hpl_flops(model["n"]) / 1e9 / model["predicted_s"], rel=1e-9)
    assert got[0]["value"] == pytest.approx(measured, rel=1e-9)

    def judged(factor: float) -> str:
        """The verdict from two surveys alike, their model's times times factor."""
        steps = [dict(s, model={**s["model"], "predicted_s": s["model"]["predicted_s"] * factor,
                                "predicted_range_s": [t * factor for t in s["model"]["predicted_range_s"]]})
                 if s["step"] == "hpl" else s for s in rec["summary"]["steps"]]
        with open_store(env["RMAX_DB"]) as store:
            sv = dataclasses.replace(store.get(rec["id"]), summary={**rec["summary"], "steps": steps})
            (v,) = accept_hpl.verdicts(store, [sv, sv], Fleet())
        return v.state

    assert judged(0.1) == "fail" and judged(10) == "pass"


def test_every_headline_figure_is_the_field_it_comes_from(survey):
    """Each family's headline row of the survey equals the field it names in that run's stored
    summary (value == field x scale), and every family that ran and has a headline is in it."""
    from rmax.families import families
    from rmax.bench.view import resolve
    from rmax.survey.headline import headline

    rec, env = survey
    with open_store(env["RMAX_DB"]) as store:
        kids = store.children(rec["id"])
    rows = [r for r in headline(kids) if r.get("family")]
    by_id = {k.id: k for k in kids}
    for row in rows:
        assert resolve(by_id[row["run"]].summary, row["path"]) * row["scale"] == row["value"], row
    fams = families()
    expected = {k.kind for k in kids if k.kind in fams and fams[k.kind].headline(fams[k.kind].load(k))}
    assert {r["family"] for r in rows} == expected and {"peakflops", "stream", "dgemm", "hpl"} <= expected


def test_the_dgemm_bound_is_the_dgemm_at_hpls_shape_times_the_cores(survey):
    """The survey's dgemm step measured the trailing-update shape of the survey's HPL run; the
    bound is that point's stored field x the cores, and says so. Without the HPL run to take the
    shape from, it falls back to the best size and says it is not at HPL's shape."""
    from rmax.families.dgemm import hpl_update_shape
    from rmax.families import loaded
    from rmax.bench.view import resolve
    from rmax.survey.headline import by_role, headline

    rec, env = survey
    with open_store(env["RMAX_DB"]) as store:
        kids = store.children(rec["id"])
    by_id = {k.id: k for k in kids}
    t = loaded(next(k for k in kids if k.kind == "hpl"))[1].best()
    m, n, k = hpl_update_shape(t.n, t.nb, t.p, t.q)
    cores = next(k for k in kids if k.kind == "info").summary["cpu"]["cores"]
    bound = by_role(headline(kids), "dgemm_bound")
    # HPL's N comes from the model after the DGEMM step measured: that shape, or the nearest of its k, said so
    shown = f"at HPL's shape m={m} n={n} k={k}" if f"at HPL's shape m={m} " in bound["statistic"] else \
        f"the measured shape nearest HPL's m={m} n={n} k={k}"
    assert bound["at_hpl_shape"] and shown in bound["statistic"], bound
    assert bound["path"][0] == "shape" and by_id[bound["run"]].kind == "dgemm"
    assert resolve(by_id[bound["run"]].summary, bound["path"]) * cores == bound["value"] and bound["scale"] == cores
    fallback = by_role(headline([k for k in kids if k.kind != "hpl"]), "dgemm_bound")
    assert not fallback["at_hpl_shape"] and "not at HPL's shape" in fallback["statistic"]
    assert fallback["path"][0] in ("square", "k")
    assert resolve(by_id[fallback["run"]].summary, fallback["path"]) * cores == fallback["value"]


def test_the_peak_is_measured_once_and_both_headline_rows_read_it(survey):
    """The inventory does not measure the FMA peak when the survey runs peakflops: the measured
    peak and the basis of % of peak are figures of the peakflops run, read from its stored summary,
    and the inventory's Rpeak is then derived from that run (before, it kept 2 FMA units assumed
    and a nominal twice the headline's on a CPU with one measured)."""
    from rmax.bench.view import resolve
    from rmax.survey.headline import by_role, headline, percent_of_peak

    rec, env = survey
    with open_store(env["RMAX_DB"]) as store:
        kids = store.children(rec["id"])
    info = next(k for k in kids if k.kind == "info")
    peak_run = next(k for k in kids if k.kind == "peakflops")
    assert info.summary["measured"] is False
    inv, stored = info.summary["rpeak"], peak_run.summary["rpeak"]
    assert inv["measured_in"] == peak_run.id and inv["measured"]["all_cores_gflops"] > 0
    for key in ("nominal_gflops", "fma_units", "fma_units_source", "basis", "formula"):
        assert inv[key] == stored[key], key
    rows = headline(kids)
    peak, basis = by_role(rows, "peak"), by_role(rows, "peak_basis")
    assert [r["role"] for r in rows].count("peak_basis") == 1
    for row in (peak, basis):
        assert row["run"] == peak_run.id
        assert resolve(peak_run.summary, row["path"]) * row["scale"] == row["value"]
    if stored["basis"] == "measured":
        assert basis["path"] == peak["path"] and basis["value"] == peak["value"]
    elif stored["basis"] == "measured per core":     # the all-core row ran apart (a loaded machine)
        assert basis["path"] == ["rpeak", "gflops"] and basis["value"] == stored["gflops"]
    else:
        assert basis["path"] == ["rpeak", "nominal_gflops"] and basis["value"] == stored["nominal_gflops"]
    assert f"{basis['value']:.1f} GFLOPS" in percent_of_peak(rows)["statistic"]


def test_a_survey_without_peakflops_measures_the_peak_in_its_inventory(db):
    rec = json.loads(run_cli("survey", "--busy-ok", "--quick", "--steps", "inventory", "--json", check=True, timeout=300).stdout)
    with open_store(db) as store:
        (info,) = store.children(rec["id"])
    assert info.summary["measured"] is True and info.summary["rpeak"]["measured"]["all_cores_gflops"] > 0


def _copy_with_a_busy_run(db: str, dest: Path, kind: str) -> None:
    """A copy of the store in which the `kind` run's stored load readings say that other processes
    used 3 CPUs on average over its 10 s (load average 12), as on a shared node."""
    import sqlite3

    src, dst = sqlite3.connect(db), sqlite3.connect(dest)
    try:
        src.backup(dst)
        base = {"load1": 12.0, "load5": 12.0, "load15": 12.0, "running": 12, "cpus": 2, "own_s": 0.0}
        load = {"start": {**base, "busy_s": 0.0, "total_s": 0.0}, "end": {**base, "busy_s": 30.0, "total_s": 20.0}}
        assert dst.execute("UPDATE runs SET load = ? WHERE kind = ?", (json.dumps(load), kind)).rowcount == 1
        dst.commit()
    finally:
        src.close()
        dst.close()


@pytest.fixture(scope="module")
def report(survey, tmp_path_factory):
    """The survey's report (one rendering shared by the report tests), from a copy of its store in
    which the HPL run was measured on a busy node; its folder and its page."""
    rec, env = survey
    work = tmp_path_factory.mktemp("report")
    out, busy_db = work / "report", work / "busy.db"
    _copy_with_a_busy_run(env["RMAX_DB"], busy_db, "hpl")
    run_cli("report", rec["id"][:8], "--out", str(out), env={"RMAX_DB": str(busy_db)}, check=True)
    return out, (out / "index.html").read_text()


def test_report_renders_in_chromium_without_errors(report):
    """The page leads with its answers: the summary (with a busy node said at the top), then the
    families' plots, with spread and rate axes from zero; raw tables are folded, each with its CSV."""
    out, html = report
    summary, first_plot = html.index('data-section="summary"'), html.index('<div class="plot"')
    first_family = html.index('data-section="inventory"')
    assert summary < first_plot < html.index("<details")
    # (this machine may be busy too: other runs may be named beside hpl)
    warn = re.search(r'<p class="warn">\d of 7 runs (was|were) measured on a busy node[^<]*hpl \w{8} on \S+ '
                     r'\(other processes used 3\.0 CPUs on average over its 10 s \(load average 12\.0 at its start\)\)',
                     html)
    assert warn and summary < warn.start() < first_family, "the busy run is not said at the top"
    assert re.search(r"<td>HPL % of peak</td>.*?; from a run on a busy node</td>", html, re.S)
    assert html.index("What limits this cluster") < html.index("<th>Metric</th>") < first_family
    headings = re.findall(r"<h2>(.*?)</h2>", html)   # sentence case, as "Cluster summary"
    assert "Measured FMA peak" in headings and all(h[0].isupper() for h in headings), headings
    for sec in ("peakflops", "cpurate", "memlat", "stream", "dgemm"):
        body = html[html.index(f'data-section="{sec}"'):]
        svgs = re.findall(r'<div class="plot"[^>]*>(.*?)</div>', body[:body.index("</section>")], re.S)
        # the stored min-max as a band on a line or an error bar on a bar
        assert re.search(r'<g id="((FillBetween)?PolyCollection|LineCollection)_\d+"', svgs[0]), sec
        if sec != "memlat":   # rates: the axis starts at zero (memlat's is logarithmic)
            assert all(float(re.search(r'<g id="ytick_1">.*?<text[^>]*>([^<]*)</text>', svg, re.S)[1]) == 0
                       for svg in svgs), sec
    # long raw tables folded, each with the CSV of exactly its cells; short ones stay in view
    folded = re.findall(r'<details data-table="([\w-]+)">\s*<summary>[^<]*: (\d+) rows '
                        r'\(<a href="data/\1\.csv">.*?</summary>\s*<table>(.*?)</table>\s*</details>', html, re.S)
    assert {name.split("-")[0] for name, _, _ in folded} >= {"cpurate", "memlat"}, folded
    for name, n, body in folded:
        rows = list(csv.reader((out / "data" / f"{name}.csv").open(newline="")))
        assert len(rows) == int(n) + 1 == body.count("<tr>") > 13 and rows[0][0] == re.search(r"<th>(.*?)</th>", body)[1]
    for table in re.findall(r"<table>.*?</table>", re.sub(r"<details.*?</details>", "", html, flags=re.S), re.S):
        assert table.count("<tr>") <= 13   # the header and at most 12 rows
    # Self-contained: nothing to fetch (SVG namespaces are names, not requests).
    assert not re.search(r'(src|href)="(https?:)?//', html)
    dom = chromium((out / "index.html").as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l]
    assert console == []
    for section in ("summary", "inventory", "peakflops", "cpurate", "memlat", "stream", "dgemm", "hpl", "steps"):
        assert f'data-section="{section}"' in dom.stdout
    plots = re.findall(r'<div class="plot" data-plot="(\w+)">\s*<svg', dom.stdout)
    assert {"peakflops", "cpurate", "memlat", "stream", "dgemm"} <= set(plots)
    assert "DGEMM bound (all cores)" in dom.stdout and "What limits this cluster" in dom.stdout
    # every data file the page links to exists and parses
    for name in re.findall(r'href="data/([\w-]+)\.json"', html):
        assert isinstance(json.loads((out / "data" / f"{name}.json").read_text()), list)
        assert (out / "data" / f"{name}.csv").read_text().count("\n") >= 1
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    chromium((out / "index.html").as_uri(), "--window-size=1200,2000", f"--screenshot={shot}")
    assert shot.stat().st_size > 10_000


def test_user_strings_are_escaped(report):
    html = report[1]   # the survey's label, as stored
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co" in html


def test_interrupted_survey_keeps_its_finished_steps(db, tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "rmax", "survey", "--steps", "inventory,peakflops,hpl"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "src")})
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.3)
        if db.exists():
            with open_store() as s:
                if any(r.kind == "peakflops" and r.status == "running" for r in s.list()):
                    break
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    with open_store() as s:
        (survey,) = s.list(kind="survey")
        kids = {k.kind: k for k in s.children(survey.id)}
    assert survey.status == "interrupted"
    assert kids["info"].status == "ok" and kids["peakflops"].status == "interrupted" and "hpl" not in kids
    out = tmp_path / "report"
    run_cli("report", survey.id, "--out", str(out), check=True)
    html = (out / "index.html").read_text()
    assert "This survey was interrupted" in html and 'data-section="inventory"' in html
    # the interrupted step is said to be so, not blamed on another rmax version; no "None ranks"
    assert "stored by another rmax version" not in html and "None ranks" not in html


def test_compare_decides_on_repeated_runs_only(db, tmp_path):
    def _bench(*args) -> str:
        """The id of a stored run for compare to read: `rmax bench ARGS` in this process (12 of
        them: no Python start-up each; compare itself runs as a user would)."""
        code, out, err = run_in_process(["bench", *args, "--json"])
        assert code == 0, (args, err)
        return json.loads(out)["id"]

    one = [_bench("peakflops", "--budget", "0.1", "--isa", "sse2") for _ in range(2)]
    out = json.loads(run_cli("compare", one[0], one[1], "--json", check=True).stdout)
    assert out["a"] == [one[0]] and len(out["changes"]) == 4
    for c in out["changes"]:
        # one run a side: its timed blocks are not independent repeats, so no significance is claimed
        assert c["a"] > 0 and c["b"] > 0 and c["n_a"] == c["n_b"] == 0
        assert c["p_value"] is None and c["significant"] is None
    assert "not enough runs to decide" in run_cli("compare", one[0], one[1], "--all", check=True).stdout
    # Three runs a side: the reference BLAS against OpenBLAS (a BLAS swap) is a real change.
    dgemm = ("dgemm", "--sweep", "square", "--sizes", "512", "--budget", "0.2")
    ref = [_bench(*dgemm, "--blas", "reference") for _ in range(3)]
    fast = [_bench(*dgemm, "--blas", "openblas") for _ in range(3)]
    out = json.loads(run_cli("compare", ",".join(ref), ",".join(fast), "--json", check=True).stdout)
    assert out["a"] == ref and out["b"] == fast and len(out["changes"]) == 1 and out["notes"] == []
    for c in out["changes"]:
        assert c["n_a"] == c["n_b"] == 3 and c["p_adjusted"] >= c["p_value"]
        assert c["significant"] == (c["p_adjusted"] < 0.05)
        assert c["b"] > c["a"] and c["significant"], c
    run_cli("compare", ",".join(s[:8] for s in ref), ",".join(fast), "--html", str(tmp_path / "cmp"), check=True)
    page = (tmp_path / "cmp" / "index.html").read_text()
    assert "Significant (p &lt; 0.05)" in page and "<svg" in page and str(db) in page
    # STREAM on arrays in cache against arrays in memory measures two things: not set against each other
    small = [_bench("stream", "--size", "256KiB", "--mode", "one", "--budget", "0") for _ in range(2)]
    large = [_bench("stream", "--size", "64MiB", "--mode", "one", "--budget", "0") for _ in range(2)]
    out = json.loads(run_cli("compare", ",".join(small), ",".join(large), "--json", check=True).stdout)
    assert out["changes"] == [] and len(out["notes"]) == 4
    assert all(w.startswith("not compared: stream on") and "256 KiB arrays in A and 64 MiB arrays in B" in w
               for w in out["notes"])
    text = run_cli("compare", ",".join(small), ",".join(large), check=True).stdout
    assert "not compared: stream on" in text
    assert_one_line_error(run_cli("compare", one[0], "nope"), 2, "not a run id")
    assert_one_line_error(run_cli("compare", f"{one[0]},{small[0]}", one[1]), 2, "mixes run kinds")
    assert_one_line_error(run_cli("compare", f"{small[0]},{small[0][:8]}", large[0]), 2, "named more than once")
    # nothing in common: one clear refusal, not an empty table
    assert_one_line_error(run_cli("compare", one[0], small[0]), 2, "A is a peakflops run and B a stream run")


def test_survey_bad_input(db):
    assert_one_line_error(run_cli("survey", "--steps", "inventory,warp"), 2, "unknown survey step")
    assert_one_line_error(run_cli("survey", "--hosts", "a:1", "--hostfile", "x"), 2, "not both")
    assert_one_line_error(run_cli("report"), 1, "no results store at", "rmax survey")
    # output that cannot be written is refused before anything is measured or stored
    assert_one_line_error(run_cli("survey", "--quick", "--steps", "inventory", "--out", "/proc/rmax-nope"), 2,
                          "--out /proc/rmax-nope is under /proc")
    assert_one_line_error(run_cli("scale", "--ranks", "1,2", "--plot", "/tmp/speedup.png", "--", "true"), 2,
                          "--plot /tmp/speedup.png must end in .svg")
    assert_one_line_error(run_cli("scale", "--ranks", "1,2", "--plot", "/proc/speedup.svg", "--", "true"), 2,
                          "--plot /proc/speedup.svg is under /proc")
    assert json.loads(run_cli("runs", "list", "--json", check=True).stdout) == []


def test_survey_with_tuning_shows_the_trajectory(db, tmp_path):
    out = tmp_path / "report"
    proc = run_cli("survey", "--busy-ok", "--quick", "--steps", "inventory,hpl,tune", "--tune", "20s", "--out", str(out), "--json",
                   timeout=600)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    steps = {s["step"]: s["status"] for s in rec["summary"]["steps"]}
    assert steps == {"inventory": "ok", "hpl": "skipped", "tune": "ok"}
    with open_store() as s:
        (tune,) = [k for k in s.children(rec["id"]) if k.kind == "tune"]
    assert tune.summary["best"]["gflops"] > 0 and tune.summary["trials"] >= 2
    assert (out / "HPL-tuned.dat").read_text().count("\n") >= 31
    html = (out / "index.html").read_text()
    assert 'data-section="tune"' in html and 'data-plot="tune"' in html and "HPL Rmax (tuned" in html

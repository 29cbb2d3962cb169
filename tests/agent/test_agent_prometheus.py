"""The agent starts, probes, serves metrics that a real Prometheus (Debian's, started here on a
loopback port with a temporary configuration and the shipped rules) scrapes: promtool accepts
the metrics, every query of the shipped dashboard returns series, the textfile for node_exporter
is replaced whole; the shipped rules pass promtool's checks and unit tests; SIGTERM during a probe
stops the agent cleanly, the probe stored as interrupted and no run left running. About 20 s."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from agentutil import Agent, runs, wait_for
from rmax.agent.monitoring import DASHBOARD, RULES, shipped

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
HERE = Path(__file__).resolve().parent
needs_prometheus = pytest.mark.skipif(not (PROMETHEUS and PROMTOOL), reason="Debian's prometheus is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str):
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return json.loads(r.read())
    except OSError:
        return None


def promtool(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], input=stdin, capture_output=True, cwd=cwd, timeout=60)


@pytest.fixture
def prometheus(tmp_path):
    """Start Prometheus, with the shipped rules, scraping the target set later by calling the
    fixture's value with host:port."""
    procs = []

    def start(target: str) -> str:
        port = free_port()
        (tmp_path / "rules.yml").write_text(shipped(RULES))
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                       "rule_files: ['rules.yml']\nscrape_configs:\n"
                       f"  - job_name: rmax-agent\n    static_configs:\n      - targets: ['{target}']\n")
        procs.append(subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                       f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return f"http://127.0.0.1:{port}"

    yield start
    for p in procs:
        p.terminate()
        p.wait(30)


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query in the shipped dashboard, its node variable at All
    (that variable's own query, label_values(METRIC, instance), as the query METRIC)."""
    dash = json.loads(shipped(DASHBOARD))
    nodes = next(v for v in dash["templating"]["list"] if v["name"] == "instance")
    metric = re.fullmatch(r"label_values\((\w+), instance\)", nodes["definition"]).group(1)
    all_nodes = nodes["allValue"]
    out = [("variable instance", metric)]
    for panel in dash["panels"]:
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for t in panel["targets"]:
            expr = t["expr"].replace("$instance", all_nodes)
            assert "$" not in expr, f"{panel['title']}: a variable the test does not know in {expr}"
            out.append((panel["title"], expr))
    return out


def doc_queries() -> list[str]:
    """The example queries of docs/AGENT.md (its paragraph "Example queries: ...")."""
    text = (HERE.parents[1] / "docs" / "AGENT.md").read_text()
    paragraph = text.split("Example queries:", 1)[1].split("\n\n", 1)[0]
    found = re.findall(r"`([^`]+)`", paragraph)
    assert len(found) >= 3, paragraph
    return found


class TextfileWatch:
    """Reads DIR/rmax.prom at every call: each version must be whole (the last family present,
    the last line ended) and the versions must be new files renamed into place (new inodes)."""

    def __init__(self, folder: Path):
        self.path = folder / "rmax.prom"
        self.inodes: set[int] = set()
        self.reads = 0

    def __call__(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        with os.fdopen(fd, "rb") as f:
            ino, body = os.fstat(f.fileno()).st_ino, f.read()
        assert body.endswith(b"\n") and b"# TYPE rmax_agent_probes_total counter" in body, body[-200:]
        self.inodes.add(ino)
        self.reads += 1


@needs_prometheus
def test_prometheus_scrapes_the_agent_and_sigterm_stops_it_cleanly(db, prometheus, tmp_path):
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    agent = Agent(db, "--probes", "peakflops,stream,memlat", "--interval", "1", "--window", "0.5", "--max-load", "1000",
                  "--listen", "127.0.0.1:0", "--textfile", str(textfile))
    try:
        assert agent.url.startswith("http://127.0.0.1:")    # loopback by default
        prom = prometheus(agent.url.removeprefix("http://"))
        watch = TextfileWatch(textfile)

        def query(q: str):
            watch()
            data = get_json(f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": q}))
            return data["data"]["result"] if data and data.get("status") == "success" else None

        # memlat is the set's last probe: once its latency is scraped, every quantity is there
        wait_for(lambda: query('rmax_probe_latency_seconds{probe="memory_latency"}'), 60,
                 "Prometheus to scrape a measured memory latency", period=0.05)
        peak = query('rmax_probe_flops_per_second{probe="peakflops_fp64"}')
        assert float(peak[0]["value"][1]) > 1e8              # a measured rate, in flop/s
        assert peak[0]["metric"]["statistic"] == "max"        # a peak: the fastest timed block
        assert float(query('rmax_probe_bytes_per_second{probe="stream_triad"}')[0]["value"][1]) > 1e8
        assert 1e-9 < float(query("rmax_probe_latency_seconds")[0]["value"][1]) < 1e-3
        stored = [r for r in runs(db) if r["kind"] == "peakflops" and r["status"] == "ok"]
        assert stored and all(r["label"] == "agent" for r in stored)   # each probe is a stored run
        assert query("rmax_agent_info")[0]["metric"]["host"] == socket.gethostname()

        # the shipped rules on real data: one node is its own fleet, at 1 x its median for every probe
        fleet = wait_for(lambda: (r := query("instance_probe:rmax_probe_vs_fleet_median:ratio")) and len(r) == 3 and r,
                         15, "the fleet rules to cover the three probes", period=0.05)
        assert {f["metric"]["probe"]: float(f["value"][1]) for f in fleet} == {
            "peakflops_fp64": 1.0, "stream_triad": 1.0, "memory_latency": 1.0}

        # every query of the shipped dashboard returns series (the fleet panel's through the rules)
        found = {}
        for title, expr in dashboard_queries():
            found[expr] = len(wait_for(lambda: query(expr), 15, f"series for {title!r}: {expr}", period=0.05))
        print("dashboard queries, series returned:", *(f"  {n}  {e}" for e, n in found.items()), sep="\n")

        with urllib.request.urlopen(agent.url + "/metrics", timeout=10) as r:
            served = r.read()
        check = promtool("check", "metrics", stdin=served)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr
        # docs/AGENT.md's example queries parse, and name metrics the agent serves
        for expr in doc_queries():
            assert query(expr) is not None, expr
            assert all(name.encode() in served for name in re.findall(r"rmax_\w+", expr)), expr

        # SIGTERM while a probe runs: one that has just started (not one that may be ending)
        before = {r["id"] for r in runs(db)}
        running = wait_for(lambda: watch() or [r for r in runs(db) if r["status"] == "running" and r["id"] not in before],
                           30, "a probe to start", period=0.02)
        assert agent.stop() == 0
    finally:
        agent.stop()
    after = {r["id"]: r for r in runs(db)}
    assert not [r for r in after.values() if r["status"] == "running"]
    assert after[running[0]["id"]]["status"] == "interrupted"
    assert "stopping on a signal" in agent.output()

    # the textfile: read whole every time, replaced by renames (new inodes), no temporary file left
    watch()
    assert watch.reads > 10 and len(watch.inodes) >= 2, (watch.reads, watch.inodes)   # a rewrite in place keeps one
    assert os.listdir(textfile) == ["rmax.prom"]
    check = promtool("check", "metrics", stdin=(textfile / "rmax.prom").read_bytes())
    assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr


@pytest.mark.skipif(not PROMTOOL, reason="Debian's prometheus (promtool) is not installed")
def test_shipped_rules_pass_promtool_and_their_unit_tests(tmp_path):
    (tmp_path / "rules.yml").write_text(shipped(RULES))
    shutil.copy(HERE / "rules_test.yml", tmp_path)
    check = promtool("check", "rules", "rules.yml", cwd=tmp_path)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
    result = promtool("test", "rules", "rules_test.yml", cwd=tmp_path)
    assert result.returncode == 0 and b"SUCCESS" in result.stdout, result.stdout.decode() + result.stderr.decode()
    # every alert is tested, firing and not firing
    alerts = set(re.findall(r"^\s+- alert: (\w+)", shipped(RULES), re.M))
    tests = (HERE / "rules_test.yml").read_text()
    assert alerts and all(tests.count(f"alertname: {a}") >= 2 for a in alerts), alerts

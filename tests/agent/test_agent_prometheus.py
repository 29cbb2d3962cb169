"""The agent starts, probes, serves metrics that a real Prometheus (Debian's, started here on a
loopback port with a temporary configuration) scrapes and answers a query about; SIGTERM during a
probe stops it cleanly, the probe stored as interrupted and no run left running. About 20 s."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request

import pytest

from agentutil import Agent, runs, wait_for

PROMETHEUS = shutil.which("prometheus")


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


@pytest.fixture
def prometheus(tmp_path):
    """Start Prometheus scraping the target set later by calling the fixture's value with host:port."""
    procs = []

    def start(target: str) -> str:
        port = free_port()
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                       f"  - job_name: rmax-agent\n    static_configs:\n      - targets: ['{target}']\n")
        procs.append(subprocess.Popen([PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                       f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        return f"http://127.0.0.1:{port}"

    yield start
    for p in procs:
        p.terminate()
        p.wait(30)


@pytest.mark.skipif(not PROMETHEUS, reason="Debian's prometheus is not installed")
def test_prometheus_scrapes_the_agent_and_sigterm_stops_it_cleanly(db, prometheus):
    agent = Agent(db, "--probes", "peakflops", "--interval", "1", "--window", "0.5", "--max-load", "1000",
                  "--listen", "127.0.0.1:0")
    try:
        assert agent.url.startswith("http://127.0.0.1:")    # loopback by default
        prom = prometheus(agent.url.removeprefix("http://"))

        def query(q: str):
            data = get_json(f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": q}))
            return data["data"]["result"] if data and data.get("status") == "success" else None

        result = wait_for(lambda: query('rmax_rate{probe="peakflops_fp64",unit="flops_per_second"}'), 60,
                          "Prometheus to scrape a measured peakflops rate")
        assert float(result[0]["value"][1]) > 1e8              # a measured rate, in flop/s
        assert result[0]["metric"]["statistic"] == "max"        # a peak: the fastest timed block
        stored = [r for r in runs(db) if r["kind"] == "peakflops" and r["status"] == "ok"]
        assert stored and all(r["label"] == "agent" for r in stored)   # each probe is a stored run
        info = wait_for(lambda: query("rmax_agent_info"), 10, "rmax_agent_info")
        assert info[0]["metric"]["host"] == socket.gethostname()
        assert wait_for(lambda: query("rmax_rate_baseline_samples >= 0"), 10, "the baseline metric")

        # SIGTERM while a probe runs: one that has just started (not one that may be ending)
        before = {r["id"] for r in runs(db)}
        running = wait_for(lambda: [r for r in runs(db) if r["status"] == "running" and r["id"] not in before], 30,
                           "a probe to start", period=0.02)
        assert agent.stop() == 0
    finally:
        agent.stop()
    after = {r["id"]: r for r in runs(db)}
    assert not [r for r in after.values() if r["status"] == "running"]
    assert after[running[0]["id"]]["status"] == "interrupted"
    assert "stopping on a signal" in agent.output()

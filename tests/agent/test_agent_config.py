"""`rmax agent`: bad configuration is one error line (exit 2) and never a started daemon; the drift
verdict; the systemd unit. Fast: no probe runs here (about 8 s, mostly CLI start-up)."""

from __future__ import annotations

import math
import shutil
import socket
import subprocess
import time

import pytest
from cliutil import assert_one_line_error, run_cli

from rmax.agent.config import build, parse_listen, read_file
from rmax.agent.drift import judge
from rmax.errors import RmaxError


def test_bad_options_are_one_line(db):
    assert_one_line_error(run_cli("agent", "run", "--listen", "nowhere", timeout=60), 2, "--listen", "ADDR:PORT")
    assert_one_line_error(run_cli("agent", "run", "--interval", "soon", timeout=60), 2, "--interval", "not a number")
    assert not db.exists()      # refused before the store was even opened


@pytest.mark.parametrize("options, words", [
    ({"probes": "peakflops,linpack"}, ["unknown probe 'linpack'"]),
    ({"listen": "example.org:80"}, ["--listen", "example.org"]),
    ({"listen": "300.1.1.1:80"}, ["--listen", "not an IP address"]),
    ({"listen": "127.0.0.1:70000"}, ["port 70000"]),
    ({"interval": "-5"}, ["--interval", "positive"]),
    ({"recent": "1.5"}, ["--recent", "not a whole number"]),
    ({"alpha": "2"}, ["--alpha", "significance"]),
    ({"peers": "bad host;rm"}, ["--peers", "not a valid host name"]),
    ({"slurm": "maybe"}, ["--slurm", "auto"]),
    ({"launcher": "local"}, ["--launcher", "not an MPI launcher"]),
    ({"probes": "dgemm,pingpong"}, ["pingpong probe needs peers"]),
])
def test_bad_values_are_named(options, words):
    with pytest.raises(RmaxError) as e:
        build({}, options)
    for w in words:
        assert w in str(e.value)


def test_bad_config_files(db, tmp_path):
    cfg = tmp_path / "agent.toml"
    cfg.write_text("[agent]\ninterval = 60\nmax_lod = 1\n")
    assert_one_line_error(run_cli("agent", "run", "--config", str(cfg)), 2, "unknown setting 'max_lod'")
    for text, words in (("[agent]\ninterval = 'often'\n", ["interval", "positive number"]),
                        ("[agent\n", ["not valid TOML"]), ("agent = 3\n", ["[agent] must be a table"])):
        cfg.write_text(text)
        with pytest.raises(RmaxError) as e:
            build(read_file(cfg))
        assert all(w in str(e.value) for w in words), e.value
    with pytest.raises(RmaxError, match="not found"):
        read_file(tmp_path / "none.toml")


def test_a_port_in_use_is_one_line(db):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert_one_line_error(run_cli("agent", "run", "--listen", f"127.0.0.1:{port}", timeout=60), 2,
                              "cannot listen", str(port))


def test_file_then_options():
    cfg = build({"interval": 60, "peers": ["n2", "n3"], "listen": "0.0.0.0:9100"}, {"interval": "30"})
    assert cfg.interval == 30.0 and cfg.peers == ("n2", "n3") and cfg.address == ("0.0.0.0", 9100)
    assert cfg.probe_names[-1] == "pingpong"          # peers add the ping-pong to the set
    assert build().address == ("127.0.0.1", 9477)       # loopback unless told otherwise
    assert parse_listen("[::1]:0") == ("::1", 0)
    with pytest.raises(RmaxError, match="min_history"):
        build({"history": 4, "min_history": 5})
    with pytest.raises(RmaxError, match="can never reach alpha"):    # 1 / C(5 + 3, 3) = 0.018
        build({"min_history": 5, "recent": 3, "alpha": 0.01})
    assert build({"min_history": 5, "recent": 3, "alpha": 0.05}).alpha == 0.05


def test_drift_is_relative_to_the_noise():
    steady = [100.0, 101.5, 99.0, 100.7, 98.9, 100.2, 101.1, 99.4, 100.3, 99.8]
    # 3% below a baseline whose spread is about 1%: flagged when 3% counts
    v = judge(steady + [97.0, 96.8, 97.3], True, recent=3, history=50, min_history=5, alpha=0.01, min_change=0.02)
    assert v.state == "drift" and v.p_value < 0.01 and v.deviation < 0
    # the same 3% drop against a baseline that spreads by 10% is noise
    noisy = [100.0, 112.0, 91.0, 105.0, 88.0, 109.0, 95.0, 115.0, 86.0, 102.0]
    assert judge(noisy + [97.0, 96.8, 97.3], True, 3, 50, 5, 0.01, 0.02).state == "steady"
    # a latency (lower is better) drifts upwards; a faster node is not flagged
    assert judge(steady + [103.0, 103.5, 104.0], False, 3, 50, 5, 0.01, 0.02).drift
    assert not judge(steady + [103.0, 103.5, 104.0], True, 3, 50, 5, 0.01, 0.02).drift
    # too little history: no verdict yet; the baseline is the earlier values' alone, or none
    v = judge(steady[:4] + [50.0], True, 3, 50, 5, 0.01, 0.02)
    assert v.state == "learning" and v.n_baseline == 2 and v.baseline == pytest.approx(100.75)
    assert v.deviation == pytest.approx(50.0 / 100.75 - 1)
    first = judge([50.0, 60.0], True, 3, 50, 5, 0.01, 0.02)
    assert first.state == "learning" and first.n_baseline == 0
    assert math.isnan(first.baseline) and math.isnan(first.noise) and math.isnan(first.deviation)


def test_a_significant_shift_smaller_than_min_change_is_not_drift():
    """A baseline from a few quiet minutes is tight: 7% lower in every recent value reaches the rank
    test's smallest p, yet a shared node wanders that much. At least min_change worse, or steady."""
    base = [27.6, 27.9, 27.8, 27.7, 28.0, 27.85, 27.75, 27.9]
    now = [25.8, 25.9, 25.7]
    small = judge(base + now, True, 3, 50, 8, 0.01, 0.10)
    assert small.p_value < 0.01 and small.state == "steady"
    assert judge(base + now, True, 3, 50, 8, 0.01, 0.05).state == "drift"
    assert judge(base + [2.1, 2.2, 2.0], True, 3, 50, 8, 0.01, 0.10).drift
    # lower is better: 7% higher latencies likewise
    assert judge(base + [29.8, 29.9, 29.7], False, 3, 50, 8, 0.01, 0.10).state == "steady"
    assert build({}).min_change == 10.0 and build({"min_change": 0}).min_change == 0.0
    for bad in (-1, 100, float("nan"), "5", True):
        with pytest.raises(RmaxError, match="min_change must be a percentage"):
            build({"min_change": bad})


def test_install_writes_a_quoted_unit(tmp_path):
    cfg = tmp_path / "odd dir %h $HOME"
    cfg.mkdir()
    (cfg / "agent.toml").write_text("interval = 600\n")
    unit = tmp_path / "rmax-agent.service"
    p = run_cli("agent", "install", "--output", str(unit), "--config", str(cfg / "agent.toml"),
                "--db", "/srv/rmax data/r.db", check=True)     # not under /tmp: the service has its own
    assert "systemctl enable --now rmax-agent.service" in p.stdout
    text = unit.read_text()
    exec_line = next(l for l in text.splitlines() if l.startswith("ExecStart="))
    assert '"agent" "run" "--config"' in exec_line
    assert "odd dir %%h $$HOME/agent.toml" in exec_line           # systemd specifiers and variables escaped
    assert 'Environment="RMAX_DB=/srv/rmax data/r.db"' in text and 'ReadWritePaths="/srv/rmax data"' in text
    assert "KillMode=mixed" in text
    if shutil.which("systemd-analyze"):     # systemd's own parser accepts the unit
        v = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
        assert v.returncode == 0, v.stderr
    assert_one_line_error(run_cli("agent", "install", "--output", str(unit)), 2, "already exists", "--force")
    assert_one_line_error(run_cli("agent", "install", "--output", "relative.service"), 2, "absolute path")
    (cfg / "agent.toml").write_text("interval = -1\n")
    assert_one_line_error(run_cli("agent", "install", "--output", str(tmp_path / "b.service"), "--config",
                                  str(cfg / "agent.toml")), 2, "interval")


def test_fleet_gives_up_on_a_server_that_answers_a_byte_at_a_time():
    """A socket timeout bounds each read only: a server that drips its answer must not hold `agent
    fleet` for ever; the whole answer has a deadline."""
    import socket
    import threading
    import time

    from rmax.agent.fleet import _read

    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def drip():
        conn, _ = srv.accept()
        conn.recv(4096)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
        try:
            for _ in range(20):
                conn.sendall(b" ")
                time.sleep(0.2)
        except OSError:
            pass
        conn.close()

    t = threading.Thread(target=drip, daemon=True)
    t.start()
    start = time.monotonic()
    with pytest.raises(RmaxError, match="did not finish its answer within 1 s"):
        _read(f"http://127.0.0.1:{port}/rates.json", 1.0)
    assert time.monotonic() - start < 3
    srv.close()


ODD_VALUES = [10 ** 30, 2 ** 63 - 1, 3000000, -1, 0, 1e-300, 1e308, -1e308, math.nan, math.inf, -math.inf, True, "x",
              "", ["a"], [1], {"a": 1}, "9" * 5000]


def test_every_setting_refuses_odd_values_in_one_line():
    """Each setting, from a file or as an option's text: refused (RmaxError, one line) or accepted
    within its range; never another exception, and quickly (no unbounded computation)."""
    from rmax.agent.config import CHECKS

    for key in CHECKS:
        for value in ODD_VALUES:
            for given in ({key: value}, None):
                start = time.monotonic()
                try:
                    cfg = build(given, None if given else {key: str(value)})
                except RmaxError as e:
                    assert "\n" not in str(e), (key, value)
                else:
                    assert math.isfinite(cfg.interval) and cfg.history <= 10000, (key, value)
                assert time.monotonic() - start < 5, (key, value)     # 3000000 once ran for minutes


def test_reported_agent_settings_are_refused(tmp_path):
    for settings, words in (({"recent": 3000000, "min_history": 3000000, "history": 3000000}, ["recent", "1000"]),
                            ({"interval": 1e308}, ["interval", "no larger than"]),
                            ({"history": 9223372036854775807}, ["history", "from 2 to 10000"])):
        with pytest.raises(RmaxError) as e:
            build(settings)
        assert all(w in str(e.value) for w in words), e.value
    cfg = tmp_path / "agent.toml"
    cfg.write_text("[agent]\nrecent = 3000000\nmin_history = 3000000\nhistory = 3000000\n")
    assert_one_line_error(run_cli("agent", "run", "--config", str(cfg), timeout=30), 2, "recent")

"""HPL.dat fuzzing: seeded mutants of a small valid HPL.dat (deleted, duplicated
and swapped lines, non-numeric and huge tokens, NaN and infinities, unicode
digits and separators, long lines, lists of 21 values, binary junk), each run
through rmax-hpl directly, through `rmax hpl check` (`rmax hpl run`'s decision,
nothing run) and through `rmax hpl run --np 1 --launcher local`, in this process
with a private store. Every outcome must be a clean run, or exactly one error
line with a non-zero exit and no stored run; the paths must decide alike,
refuse with the same message and, when they run, report the same tests.
About 50 s on this 2-core machine shared with other builds (load 11).

RMAX_FUZZ_SEED, RMAX_FUZZ_COUNT and RMAX_FUZZ_FULL_RUNS change the seed, the
number of mutants (default 240) and how many valid ones also become stored
runs (default the first 20: each costs a stored run's bookkeeping, while every
valid mutant is still run directly and decided by `rmax hpl check`)."""

import json
import os
import random
import subprocess

from cliutil import run_in_process
from hplutil import ALONE_ENV, dat, hpl_executable

SEED = int(os.environ.get("RMAX_FUZZ_SEED", "20261123"))
COUNT = int(os.environ.get("RMAX_FUZZ_COUNT", "240"))
FULL_RUNS = int(os.environ.get("RMAX_FUZZ_FULL_RUNS", "20"))   # valid mutants also run as stored runs
BASE = dat((20,), (4,)).encode()   # N tiny: a valid mutant runs in milliseconds
LISTS = (5, 7, 14, 16, 18, 20, 22, 24)  # count lines; the values follow on the next line

NOT_NUMBERS = ["abc", "x16", "1e3", "0x10", "1.5", "4.0", "+", "-", "--1", "2_00", "1,000", "'20'", "20L", "٢٠",
               "２０", "२०", "²⁰", "2\u00a00", "\u2028", "\u00a0", "{", "\"N\"", "nul"]
HUGE = ["2147483647", "2147483648", "-2147483649", "4294967296", "99999999999999999999", "1" + "0" * 40,
        "0" * 130 + "200", "9" * 127, "-" + "9" * 200]
NON_FINITE = ["nan", "NaN", "-nan", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400", "4.9e-324"]
SMALL = ["-1", "0", "1", "2", "3", "5", "8", "21", "64", "-2147483648"]
JUNK_BYTES = [b for b in range(1, 256) if b != ord("/")]
TEXT = ["\x0c", "\x0b", "\u2028", "\u0085", "\u00e9", "\t", "\r", "é", "\ufeff", "🙂"]


def _line(rng, lines, low=2):
    return rng.randrange(low, min(31, len(lines)))


def _first_token(line: bytes, token: bytes) -> bytes:
    parts = line.split(b" ", 1)
    return token + (b" " + parts[1] if len(parts) > 1 else b"")


def _delete(rng, lines):
    i = rng.randrange(len(lines))
    del lines[i]
    return f"delete line {i + 1}"


def _duplicate(rng, lines):
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return f"duplicate line {i + 1}"


def _swap(rng, lines):
    i, j = rng.sample(range(min(31, len(lines))), 2)
    lines[i], lines[j] = lines[j], lines[i]
    return f"swap lines {i + 1} and {j + 1}"


def _token(pool, name):
    def op(rng, lines):
        i = _line(rng, lines)
        tok = rng.choice(pool)
        lines[i] = _first_token(lines[i], tok.encode())
        return f"{name} {tok[:12]!r} on line {i + 1}"
    return op


def _threshold(rng, lines):
    tok = rng.choice(NON_FINITE)
    lines[12] = _first_token(lines[12], tok.encode())
    return f"threshold {tok}"


def _unicode_digits(rng, lines):
    """An ASCII number rewritten in other digits (fullwidth, Arabic-Indic, Devanagari)."""
    i = _line(rng, lines)
    zero = rng.choice([0xff10, 0x0660, 0x0966])
    tok = lines[i].split(b" ", 1)[0].decode("utf-8", "replace")
    tok = "".join(chr(zero + int(c)) if c.isdigit() and c.isascii() else c for c in tok)
    lines[i] = _first_token(lines[i], tok.encode())
    return f"unicode digits on line {i + 1}"


def _long_line(rng, lines):
    i = rng.randrange(len(lines))
    if rng.random() < 0.5:
        lines[i] += b" " + b"#" * rng.randint(200, 20000)   # a long comment: still valid
        return f"long comment on line {i + 1}"
    lines[i] = bytes([rng.choice(b"0123456789x")]) * rng.randint(128, 5000) + b" " + lines[i]
    return f"long value on line {i + 1}"


def _list(rng, lines):
    """A list of 21 values (refused) or 20 (valid: HPL's limit)."""
    c = rng.choice(LISTS) - 1
    if c + 1 >= len(lines):
        return "list (file too short)"
    k = rng.choice([20, 21])
    lines[c] = _first_token(lines[c], str(k).encode())
    lines[c + 1] = b" ".join([lines[c + 1].split(b" ", 1)[0]] * k) + b" values"
    return f"{k} values on line {c + 2}"


def _junk(rng, lines):
    """Random bytes: no '/' (a junk output file name must stay in the work folder), no NUL (_nul's)."""
    junk = bytes(rng.choice(JUNK_BYTES) for _ in range(rng.randint(1, 48)))
    i = rng.randrange(len(lines))
    at = rng.randint(0, len(lines[i]))
    if rng.random() < 0.3:
        lines[i] = junk
        return f"junk replaces line {i + 1}"
    lines[i] = lines[i][:at] + junk + lines[i][at:]
    return f"junk inside line {i + 1}"


def _text(rng, lines):
    """Form feeds, vertical tabs, U+2028, Latin-1 ... in the title, a comment or a value."""
    ch = rng.choice(TEXT)
    data = ch.encode("latin-1") if ch == "\u00e9" and rng.random() < 0.5 else ch.encode()
    i = rng.randrange(len(lines))
    where = rng.choice(["end", "start", "middle"])
    if where == "end":
        lines[i] = lines[i] + data
    elif where == "start":
        lines[i] = data + lines[i]
    else:
        lines[i] = lines[i][:1] + data + lines[i][1:]
    return f"{ch!r} at the {where} of line {i + 1}"


def _crlf(rng, lines):
    lines[:] = [l + b"\r" for l in lines]
    return "CRLF line ends"


def _nul(rng, lines):
    i = rng.randrange(len(lines))
    lines[i] = lines[i][:3] + b"\0" + lines[i][3:]
    return f"NUL byte in line {i + 1}"


def _device(rng, lines):
    lines[3] = _first_token(lines[3], rng.choice([b"8", b"0", b"-1", b"7"]))
    return "device out changed"


OPS = [(_delete, 3), (_duplicate, 3), (_swap, 4), (_token(NOT_NUMBERS, "non-numeric"), 4),
       (_token(HUGE, "huge"), 3), (_token(SMALL, "small"), 3), (_threshold, 2), (_unicode_digits, 2),
       (_long_line, 2), (_list, 2), (_junk, 3), (_text, 4), (_crlf, 1), (_nul, 1), (_device, 1)]


def mutants(seed: int, count: int):
    rng = random.Random(seed)
    base = BASE.split(b"\n")
    ops, weights = zip(*OPS)
    for k in range(count):
        lines = list(base)
        done = [op(rng, lines) for op in rng.choices(ops, weights, k=rng.choice([1, 1, 2, 3]))]
        yield f"#{k}: " + "; ".join(done), b"\n".join(lines)


def _results(text: str) -> list:
    from rmax.hpl.output import parse_output

    return [(r.code, r.n, r.nb, r.p, r.q, r.verdict or "not checked") for r in parse_output(text)]


def start_direct(path, cwd, env) -> subprocess.Popen:
    """rmax-hpl on the mutant, started (it runs while rmax decides in this process)."""
    return subprocess.Popen([hpl_executable(), str(path)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def direct(started, path, cwd) -> tuple:
    """The started rmax-hpl's outcome: ('ran', tests) or ('refused', message)."""
    try:
        raw_out, raw_err = started.communicate(timeout=60)
    finally:
        started.kill()
        started.wait()
    proc = subprocess.CompletedProcess(started.args, started.returncode, raw_out, raw_err)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    if proc.returncode != 0:
        lines = err.splitlines()
        assert proc.returncode == 2 and out == "", (proc.returncode, out, err)
        assert len(lines) == 1 and lines[0].startswith("rmax-hpl: error: "), err
        return "refused", lines[0][len("rmax-hpl: error: "):]
    # Device out 6: the report on stdout; 7: on stderr; anything else: in the file named on line 3.
    written = [p for p in cwd.iterdir() if p.name != path.name]
    if "End of Tests." in out:
        assert err == "" and written == [], (err, written)
        text = out
    elif "End of Tests." in err:
        assert out == "" and written == [], (out, written)
        text = err
    else:
        assert out == err == "" and len(written) == 1, (out, err, written)
        text = written[0].read_text(errors="replace")
        written[0].unlink()
    assert "End of Tests." in text
    return "ran", _results(text)


def rmax_cli(args, store_path) -> tuple:
    """`rmax ARGS` in this process: (exit status, stdout, stderr, runs it stored)."""
    from rmax.store import open_store

    with open_store(store_path) as store:
        before = len(store.list())
    code, out, err = run_in_process(args)
    with open_store(store_path) as store:
        runs = store.list()
    assert "Traceback" not in err and "internal error" not in err, err
    return code, out, err, runs[: len(runs) - before]   # newest first


def refused(code, out, err, added) -> tuple:
    """A refusal: exit 2, one error line (and at most a hint), nothing printed or stored."""
    lines = err.splitlines()
    assert code == 2 and out == "" and added == [], (code, out, added)
    assert len(lines) in (1, 2) and lines[0].startswith("rmax: error: "), err
    assert len(lines) == 1 or lines[1].startswith("  hint: "), err
    return "refused", lines[0][len("rmax: error: "):]


def rmax_check(path, store_path) -> tuple:
    """`rmax hpl check` (run's decision, nothing run): ('ran', tests without verdicts) or ('refused', message)."""
    code, out, err, added = rmax_cli(["hpl", "check", str(path), "--np", "1", "--json"], store_path)
    if code != 0:
        return refused(code, out, err, added)
    assert err == "" and added == []
    got = json.loads(out)
    assert got["test_count"] == len(got["tests"])
    return "ran", [(t["code"], t["n"], t["nb"], t["p"], t["q"]) for t in got["tests"]]


def rmax_run(path, store_path) -> tuple:
    """`rmax hpl run`: ('ran', tests) with the run and its tests stored, or ('refused', message)."""
    code, out, err, added = rmax_cli(["hpl", "run", str(path), "--np", "1", "--launcher", "local", "--json"],
                                     store_path)
    if code == 2:
        return refused(code, out, err, added)
    rec = json.loads(out)
    assert code == (0 if rec["status"] == "ok" else 1), (code, rec["status"], err)
    assert len(added) == 1 + len(rec["tests"]) and {r.kind for r in added} <= {"hpl", "hpl-test"}
    return "ran", [(t["params"]["code"], t["params"]["n"], t["params"]["nb"], t["params"]["p"], t["params"]["q"],
                    t["summary"]["verdict"]) for t in rec["tests"]]


def same(direct_says, rmax_says, name, data):
    assert direct_says == rmax_says, (name, data[:400], direct_says, rmax_says)


def test_mutants_are_run_or_refused_alike(tmp_path, monkeypatch, capsys):
    store_path = tmp_path / "results.db"
    work = tmp_path / "work"
    work.mkdir()
    for k, v in ALONE_ENV.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("RMAX_DB", str(store_path))
    monkeypatch.delenv("RMAX_DEBUG", raising=False)
    monkeypatch.chdir(work)   # relative output file names resolve to the same folder on both paths
    env = {k: v for k, v in os.environ.items() if k != "RMAX_STEPS"}
    path = work / "mutant.dat"
    tally = {"ran": 0, "refused": 0, "stored runs": 0}
    for name, data in mutants(SEED, COUNT):
        path.write_bytes(data)
        # Every mutant: rmax-hpl itself and, while it runs, rmax's decision (`rmax hpl check`, the
        # code `rmax hpl run` runs before storing anything: it writes nothing to the work folder);
        # then `rmax hpl run` itself (valid ones: the first FULL_RUNS).
        started = start_direct(path, work, env)
        try:
            decided = rmax_check(path, store_path)
        finally:
            got = direct(started, path, work)
        same((got[0], [t[:5] for t in got[1]]) if got[0] == "ran" else got, decided, name, data)
        if got[0] == "refused" or tally["stored runs"] < FULL_RUNS:
            same(got, rmax_run(path, store_path), name, data)
            tally["stored runs"] += got[0] == "ran"
        tally[got[0]] += 1
    with capsys.disabled():
        print(f"\nHPL.dat fuzz: seed {SEED}, {COUNT} mutants, all clean and alike on both paths: {tally['ran']} ran "
              f"({tally['stored runs']} also as stored runs), {tally['refused']} refused")
    # The generator must exercise both outcomes in earnest.
    assert tally["ran"] >= COUNT // 10 and tally["refused"] >= COUNT // 2, tally

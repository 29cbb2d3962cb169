"""Adding a benchmark the documented way (docs/ARCHITECTURE.md, "Adding a benchmark"): in a copy of
the tree, a toy node benchmark gets exactly the files that section lists and nothing else, and then
builds (rmax-node alone) and runs as `rmax bench toy`, its stored figure the toy kernel's answer."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cliutil import ROOT

DOC = ROOT / "docs" / "ARCHITECTURE.md"
# What the copy needs to build rmax-node and run rmax: the build's and the package's sources, the doc.
COPIED = ("CMakeLists.txt", "native", "src", "docs/ARCHITECTURE.md")
N = 1234   # the toy sums 1..N: the stored figure must be N(N+1)/2

TOY_C = r"""/* toy: the sum of a vector holding 1..n, checked against n(n+1)/2. */
#include "measure.h"
#include "node_util.h"

#include "rmx_subcmd.h"
#include "rmx_timer.h"

#include <stdio.h>

static const node_kernel K = {
    "rmax-node toy", "rmax.toy/1", "The sum of a vector holding 1..n.",
    "#        n             sum  Median Melem/s      n",
    "Melem/s: 10^6 elements summed per second, median of n timed sums",
    "a sum differs from n(n+1)/2",
};

typedef struct {
    const double *v;
    long long n;
    double sum;
} toy_ctx;

static double sample(void *arg)
{
    toy_ctx *c = arg;
    double t0 = rmx_now(), s = 0;
    for (long long i = 0; i < c->n; i++)
        s += c->v[i];
    c->sum = s;
    return (double)c->n / (rmx_now() - t0) / 1e6;
}

int cmd_toy(int argc, char **argv)
{
    node_run r = {&K, .budget = 0.05, .sample_time = 0.001, .target = 0.05};
    long long n = 1000;
    const rmx_arg spec[] = {
        {"n", RMX_ARG_INT, &n, "elements summed", 1, 1e6, NULL},
        {"budget", RMX_ARG_DOUBLE, &r.budget, "seconds of measurement", 0.01, 60, NULL},
        NODE_ARG_TARGET(&r),
        NODE_ARG_CORRUPT(&r, "spoil one element"),
        NODE_ARG_JSON(&r),
    };
    node_parse(&r, argc, argv, spec, sizeof spec / sizeof spec[0]);
    node_open(&r);
    double *v = node_alloc(K.prog, (size_t)n * sizeof *v);
    for (long long i = 0; i < n; i++)
        v[i] = (double)(i + 1);
    if (r.corrupt)
        v[n / 2] += 1;
    toy_ctx c = {v, n, 0};
    rmx_repeat_rule rule = node_rule(&r, 1, 5, 0, r.budget);
    node_meas m;
    node_measure(sample, &c, &rule, &m);
    int ok = c.sum == (double)n * (double)(n + 1) / 2;
    if (r.table)
        printf("  %9lld %15.0f %15.1f %6zu%s\n", n, c.sum, m.sum.median, m.sum.n, ok ? "" : "  INVALID");
    rmx_json *j = node_record(&r);
    if (j) {
        rmx_json_int(j, "n", n);
        rmx_json_num(j, "sum", c.sum);
    }
    node_record_end(&r, "Melem/s", &m, ok);
    node_free(v, (size_t)n * sizeof *v);
    return node_finish(&r);
}

RMX_SUBCMD("toy", cmd_toy, "the sum of a vector holding 1..n");
"""

TOY_PY = '''"""toy: the sum of a vector holding 1..n (native/node/toy.c)."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.bench.family import Family, Summary, option, register
from rmax.bench.node_kernel import invalid
from rmax.bench.runner import Parsed
from rmax.bench.view import figure
from rmax.native import executable
from rmax.params import Count, Seconds


@dataclass
class ToyOptions:
    n: int = option(1000, "Elements summed.", type=Count(1, 1_000_000))
    budget: float = option(0.05, "Seconds of measurement.", type=Seconds(0.01, 60, lo_open=False))


@dataclass
class ToySummary(Summary):
    SCHEMA = "rmax.toy/1"
    n: int | None
    sum: float | None       # the kernel's answer
    rate: float | None      # Melem/s, median of timed sums


@register
class Toy(Family):
    name = "toy"
    native = ("rmax-node", "toy")
    title = "the sum of a vector holding 1..n"
    Options = ToyOptions
    Summary = ToySummary

    def argv(self, o):
        return [executable("rmax-node"), "toy", "--json", "-", "--n", str(o.n), "--budget", str(o.budget)]

    def parse(self, records):
        recs = [r for r in records if r.get("schema") == "rmax.toy/1"]
        if not recs:
            return Parsed(ToySummary(None, None, None), {}, "failed", "toy measured nothing")
        r = recs[0]
        err = invalid(recs, lambda r: f"n={r['n']}")
        return Parsed(ToySummary(r["n"], r["sum"], (r["summary"] or {}).get("median")), {"sum": r["samples"]},
                      "invalid" if err else "ok", err)

    def headline(self, s):
        return [f for f in (figure(s, ("sum",), "sum", "sum of 1..n", "1", "the kernel's sum, checked"),
                            figure(s, ("rate",), "rate", "summing rate", "Melem/s", "median of timed sums"))
                if f]
'''


def documented_files(name: str) -> dict[str, bool]:
    """The files of a node benchmark `name` as the section lists them: path -> whether it is new."""
    section = DOC.read_text().split("\n### Adding a benchmark\n", 1)[1].split("\n#", 1)[0]
    after = section.split("these files and no other", 1)
    assert len(after) == 2, "docs/ARCHITECTURE.md, Adding a benchmark: the list of files is gone"
    items = re.findall(r"^- (new )?`([^`]+)`", after[1].split("\n\n", 2)[1], re.M)
    assert items, "docs/ARCHITECTURE.md, Adding a benchmark: no file listed"
    return {path.replace("<name>", name): bool(new) for new, path in items}


def contents(tree: Path) -> dict[str, str]:
    """Every file of the copy by its path, with a digest of its bytes."""
    return {str(p.relative_to(tree)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in tree.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def add_toy(tree: Path, files: dict[str, bool]) -> None:
    """What the section says to do, and nothing more: two new files, the module's name in MODULES."""
    assert files == {"native/node/toy.c": True, "src/rmax/families/toy.py": True,
                     "src/rmax/families/__init__.py": False}, files
    (tree / "native/node/toy.c").write_text(TOY_C)
    (tree / "src/rmax/families/toy.py").write_text(TOY_PY)
    init = tree / "src/rmax/families/__init__.py"
    text, n = re.subn(r"^MODULES = \(", 'MODULES = ("toy", ', init.read_text(), count=1, flags=re.M)
    assert n == 1, "src/rmax/families/__init__.py: no MODULES tuple"
    init.write_text(text)


def build_node(tree: Path, build: Path) -> None:
    """rmax-node alone, unoptimised (the build's flags but -O0): the check is that it builds and registers."""
    for cmd in (["cmake", "-S", str(tree), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Debug",
                 "-DCMAKE_C_FLAGS_DEBUG=-O0", "-DRMAX_WERROR=ON"],
                ["cmake", "--build", str(build), "--target", "rmax-node"]):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def rmax(tree: Path, build: Path, tmp: Path, *args: str) -> subprocess.CompletedProcess:
    """rmax of the copy: -S, so that the installed editable package's import hook (which maps rmax to
    this checkout) is not loaded; the copy's src/ and this interpreter's other paths instead."""
    ours = (ROOT / "src").resolve()
    path = [str(tree / "src"), *(p for p in sys.path if p and Path(p).resolve() != ours)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "RMAX_NATIVE_DIR": str(build / "native"),
           "RMAX_DB": str(tmp / "results.db")}
    return subprocess.run([sys.executable, "-S", "-m", "rmax", *args], capture_output=True, text=True, env=env,
                          cwd=tmp, timeout=120)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("add-benchmark")
    tree, build = tmp / "tree", tmp / "build"
    for rel in COPIED:
        src, dst = ROOT / rel, tree / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)   # bytecode too: valid for the unchanged modules, 1 s less CPU a start
        else:
            shutil.copy2(src, dst)
    before = contents(tree)
    files = documented_files("toy")
    add_toy(tree, files)
    after = contents(tree)
    created = {p for p in after if p not in before}
    changed = {p for p in after if p in before and after[p] != before[p]}
    assert created == {p for p, new in files.items() if new} and changed == {p for p, new in files.items() if not new}
    assert not set(before) - set(after)
    build_node(tree, build)
    return tree, build, tmp


def test_a_toy_benchmark_added_as_documented_builds_runs_and_is_stored(toy):
    tree, build, tmp = toy
    usage = subprocess.run([str(build / "native/rmax-node"), "--help"], capture_output=True, text=True, timeout=30)
    assert usage.returncode == 0 and re.search(r"^  toy +the sum of a vector", usage.stdout, re.M), usage.stdout
    names = re.findall(r"^  (\S+) ", usage.stdout, re.M)
    assert names == sorted(names) and {"toy", "stream", "peakflops"} <= set(names), names
    proc = rmax(tree, build, tmp, "bench", "toy", "--n", str(N), "--json")
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["kind"] == "toy" and run["status"] == "ok", run
    assert run["summary"]["schema"] == "rmax.toy/1" and run["summary"]["n"] == N
    # The stored run's figures, as a family reader sees them (its Figure of the summary field).
    export = rmax(tree, build, tmp, "runs", "export", "--format", "csv")
    assert export.returncode == 0, export.stderr
    rows = {r["key"]: r for r in csv.DictReader(io.StringIO(export.stdout)) if r["run_id"] == run["id"]}
    assert float(rows["sum"]["value"]) == N * (N + 1) / 2      # the kernel's sum, not a Python number
    assert float(rows["rate"]["value"]) > 0 and rows["rate"]["unit"] == "Melem/s"


def test_a_second_subcommand_of_one_name_is_refused_in_one_line(toy):
    """Registration is by file: a new file is picked up by the next build with no other edit, and two
    files registering one name make every call of the executable fail with one line."""
    tree, build, _ = toy
    (tree / "native/node/toy_again.c").write_text(
        '#include "rmx_subcmd.h"\n\nint cmd_toy_again(int argc, char **argv)\n{\n    (void)argc;\n'
        '    (void)argv;\n    return 0;\n}\n\nRMX_SUBCMD("toy", cmd_toy_again, "the same name again");\n')
    proc = subprocess.run(["cmake", "--build", str(build), "--target", "rmax-node"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    for args in (["--help"], ["toy"]):
        proc = subprocess.run([str(build / "native/rmax-node"), *args], capture_output=True, text=True,
                              timeout=30)
        assert proc.returncode == 1 and proc.stdout == "", (proc.returncode, proc.stdout)
        assert proc.stderr.splitlines() == ["rmax-node: error: two sub-commands are named 'toy' "
                                            "(two RMX_SUBCMD lines)"], proc.stderr

"""Layers point one way, no import loops, and all SQL lives in rmax.store.

Every module under src/rmax is parsed (not imported) and every import it makes, at any
depth (inside functions too), is checked against the layer table: one package a layer,
bottom to top, and a module may import from its own layer or the layers below it, never
from a layer above (so no two packages import each other); and no module's imports lead
back to it (a loop inside one package, or hidden in a function)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rmax"

# Bottom to top, one package (or top-level module) a layer: a module may import from its own
# layer and the layers below it. An entry with a dot is that module (or sub-package) apart from the
# rest of its package, at its own height.
LAYERS = [
    "errors", "units", "hostlist", "sizes", "stats", "textfile", "tomlconfig", "terminal", "native",
    "blas",                 # only names and loads BLAS libraries; launch sets their thread variables
    "registry",
    # cluster.toml's format: `vcluster up` declares a cluster's switches in it, params checks it
    "topology.declared",
    "vcluster",
    "launch",               # the vcluster launcher (launch/vcluster.py) reads a cluster's state
    "inventory",
    "store",                # each run stores this host's load (inventory/load.py)
    # params checks hosts, hostfiles, interfaces and cluster.toml while parsing, with their readers,
    # below the families' options
    "params",
    "hpl",                  # HPL's input, output and engines; the family that stores HPL runs is families/hpl.py
    "model",                # pure functions of measured numbers; net's Hockney fit is one
    # where switch groups come from (declared, a virtual cluster's, a stored inference), which bisect
    # and matrix ask for the groups they cut
    "topology",
    "bench",                # the framework families are built on: Family, views, runner, kernel launchers
    "families",             # one module a benchmark family, and the registry's lookups by name
    # which stored runs may feed a model, and the models' inputs read from those runs' typed summaries
    "model.provenance", "model.inputs", "model.hpl_prediction",
    "topology.allpairs",    # the stored all-pairs runs (the matrix family's summaries) groups are inferred from
    "topology.inference_run",   # an inference as a stored run, and the deciding measurement it runs
    "nic",                  # NIC settings, and the MTU experiment that runs families (net, hpl)
    "compare", "scale", "tune",
    "survey",               # its tuning step runs the tuner
    "agent",
    "report",
    "accept",               # rmax accept: surveys' figures judged per node against references and the fleet
    "cli", "__main__",
]
RANK = {name: i for i, name in enumerate(LAYERS)}

# Statements only the store may hold; checked in string constants (f-strings' text too).
SQL = re.compile(r"\bSELECT\s|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\s+SET\b|\bCREATE\s+TABLE\b|\bDELETE\s+FROM\b")


def modules(root: Path = SRC) -> list[Path]:
    return sorted(root.rglob("*.py"))


def top_of(path: Path, root: Path = SRC) -> str:
    """The first part of the module's name under rmax ('rmax/params.py' -> 'params')."""
    return path.relative_to(root).parts[0].removesuffix(".py")


def layer_of(dotted: str) -> str | None:
    """The LAYERS entry of a module named under rmax ('topology.declared', 'bench.family'):
    the longest entry that is the module or a package holding it."""
    parts = dotted.split(".")
    return next((".".join(parts[:n]) for n in range(len(parts), 0, -1) if ".".join(parts[:n]) in RANK), None)


def type_checking_only(tree: ast.AST) -> set[int]:
    """The import statements under `if TYPE_CHECKING:`, which only type checkers run (by id)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            out |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return out


def imported(path: Path, tree: ast.AST, root: Path = SRC, runtime: bool = False) -> list[tuple[int, str]]:
    """(line, dotted name) of every rmax module or name the file imports, relative ones resolved;
    runtime: only those Python runs (not the type checkers' own)."""
    package = ["rmax", *path.relative_to(root).parent.parts]
    skip = type_checking_only(tree) if runtime else set()
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[:len(package) - node.level + 1], *([base] if base else [])])
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("rmax.")]


def import_loops(root: Path = SRC) -> list[list[str]]:
    """The import loops among rmax's modules: each strongly connected component of more than one
    module in the graph of the imports Python runs, at any depth (inside functions too)."""
    def name_of(path: Path) -> str:
        parts = path.relative_to(root).with_suffix("").parts
        return ".".join(["rmax", *(parts[:-1] if parts[-1] == "__init__" else parts)])

    files = {name_of(p): p for p in modules(root)}

    def module(dotted: str) -> str | None:      # 'rmax.a.b.name' -> 'rmax.a.b', the longest that is a module
        parts = dotted.split(".")
        return next((m for n in range(len(parts), 0, -1) if (m := ".".join(parts[:n])) in files), None)

    graph = {m: {t for _, name in imported(p, ast.parse(p.read_text(), str(p)), root, runtime=True)
                 if (t := module(name)) not in (None, m)} for m, p in files.items()}
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(part) > 1:
                loops.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return loops


def test_no_import_loops():
    assert import_loops() == []


def test_the_loop_check_sees_a_loop_inside_a_function(tmp_path):
    """The check itself: a loop closed by an import inside a function is found; one closed only
    for the type checkers (under `if TYPE_CHECKING:`) is none."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from rmax.pkg.b import B\n")
    (tmp_path / "pkg" / "b.py").write_text("def f():\n    from rmax.pkg import a\n")
    (tmp_path / "pkg" / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rmax.pkg.d import D\n")
    (tmp_path / "pkg" / "d.py").write_text("from rmax.pkg import c\n")
    assert import_loops(tmp_path) == [["rmax.pkg.a", "rmax.pkg.b"]]


def test_every_module_has_a_layer():
    root_init = SRC / "__init__.py"
    assert [str(p.relative_to(SRC)) for p in modules() if p != root_init and top_of(p) not in RANK] == []


def test_table_names_only_what_exists():
    missing = [n for n in RANK if not (SRC / n.replace(".", "/")).is_dir()
               and not (SRC / f"{n.replace('.', '/')}.py").exists()]
    assert missing == []


def test_imports_point_down():
    upward = []
    for path in modules():
        if path == SRC / "__init__.py":     # checked on its own below
            continue
        mine = layer_of(".".join(path.relative_to(SRC).with_suffix("").parts))
        for line, name in imported(path, ast.parse(path.read_text(), str(path))):
            theirs = layer_of(name.removeprefix("rmax."))
            if theirs and RANK[theirs] > RANK[mine]:
                upward.append(f"{path.relative_to(SRC)}:{line} (layer {mine}) imports {name} (layer {theirs})")
    assert upward == []


def test_the_architecture_drawing_lists_the_layers():
    """docs/ARCHITECTURE.md draws LAYERS top to bottom, one line a layer (the bottom ones share a line)."""
    doc = (SRC.parents[1] / "docs" / "ARCHITECTURE.md").read_text()
    block = doc.split("Layers, bottom to top", 1)[1].split("```", 2)[1]
    drawn = [name for line in block.strip().splitlines() for name in re.split(r"\s{2,}", line)[0].split(", ")]
    assert drawn[::-1] == LAYERS


def test_the_package_root_imports_nothing_of_rmax():
    root = SRC / "__init__.py"
    assert imported(root, ast.parse(root.read_text())) == []


def sql_outside_store(root: Path = SRC) -> list[str]:
    found = []
    for path in modules(root):
        if top_of(path, root) == "store":
            continue
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(root)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.search(node.value):
                found.append(f"{where}:{node.lineno} SQL text {node.value[:40]!r}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                if "sqlite3" in names:
                    found.append(f"{where}:{node.lineno} imports sqlite3")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                attr = node.func.attr
                text_arg = bool(node.args) and isinstance(node.args[0], (ast.Constant, ast.JoinedStr))
                if attr in ("executescript", "executemany") or (attr == "execute" and text_arg):
                    found.append(f"{where}:{node.lineno} calls .{attr}(...)")
    return found


def test_all_sql_lives_in_the_store():
    assert sql_outside_store() == []


@pytest.mark.parametrize("source, expected", [
    ('rows = conn.execute("SELECT id FROM runs").fetchall()\n', ["SQL text", ".execute"]),
    ('db.executescript(script)\n', [".executescript"]),
    ('import sqlite3\n', ["imports sqlite3"]),
    ('q = f"UPDATE runs SET status = {s}"\n', ["SQL text"]),
    ('plan.execute(options, ctx)\nprint("select a run")\n', []),
])
def test_the_sql_check_sees_sql(tmp_path, source, expected):
    """The check itself: SQL text, a statement run on a connection and sqlite3 are found
    outside the store and allowed inside it; a family's execute() and ordinary words are not."""
    for where in ("model", "store"):
        (tmp_path / where).mkdir()
        (tmp_path / where / "leak.py").write_text(source)
    found = sql_outside_store(tmp_path)
    assert all("store" not in f for f in found)
    assert all(any(e in f for f in found) for e in expected) and (found == []) == (expected == [])


def test_the_import_check_resolves_relative_imports():
    path = SRC / "launch" / "hosts.py"
    tree = ast.parse("from ..cli import app\nfrom . import base\ndef f():\n    import rmax.report.build\n")
    assert [n for _, n in imported(path, tree)] == ["rmax.cli.app", "rmax.launch.base", "rmax.report.build"]

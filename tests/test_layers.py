"""Layers point one way, and all SQL lives in rmax.store.

Every module under src/rmax is parsed (not imported) and every import it makes, at any
depth (inside functions too), is checked against the layer table: a module may import
from its own layer or the layers below it, never from a layer above."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "rmax"

# Bottom to top; the name is the first part under rmax (a package or a top-level module).
LAYERS = [
    # blas only names and loads BLAS libraries; launch sets their thread variables.
    ("errors", "sizes", "stats", "textfile", "tomlconfig", "terminal", "native", "blas"),
    # vcluster needs only errors. The vcluster launcher (launch/vcluster.py) reads a cluster's
    # state to enter its namespaces, and `vcluster up` declares the cluster's switches in
    # cluster.toml (topology.declared, that file's format), so both sit beside launch.
    # params checks hosts, hostfiles, interfaces and cluster.toml while parsing, with the
    # readers in launch and topology.declared, so it sits beside them, below the families' options.
    ("store", "launch", "inventory", "vcluster", "topology.declared", "params"),
    # The rest of topology infers switch groups from stored all-pairs runs (the matrix family's
    # summaries) and places ranks by them; bisect and matrix ask it for the groups they cut.
    ("bench", "hpl", "nic", "model", "topology"),
    # scale runs HPL at several rank counts and fits the speedup models to the times.
    ("tune", "survey", "agent", "compare", "scale"),
    ("report",),
    ("cli", "__main__"),
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}

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


def imported(path: Path, tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted name) of every rmax module or name the file imports, relative ones resolved."""
    package = ["rmax", *path.relative_to(SRC).parent.parts]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[:len(package) - node.level + 1], *([base] if base else [])])
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("rmax.")]


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

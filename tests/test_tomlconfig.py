"""The one TOML reader behind the agent configuration, cluster.toml (`cost`) and topology files:
size and nesting bounded, every refusal one line naming the file; and the topology file's own
checks. Fast: one CLI call."""

from __future__ import annotations

import pytest
from cliutil import assert_one_line_error, run_cli

from rmax.agent.config import read_file
from rmax.errors import RmaxError
from rmax.model.cost import read_cluster
from rmax.tomlconfig import MAX_BYTES, MAX_DEPTH, read_toml
from rmax.topology.declared import read_groups

DEEP = {"arrays": "a = " + "[" * 2000 + "]" * 2000 + "\n",
        "inline tables": "a = " + "{b = " * 2000 + "1" + "}" * 2000 + "\n",
        "dotted keys": "a" + ".a" * 2000 + " = 1\n",
        "table headers": "[" + ".".join(["t"] * 2000) + "]\n",
        "header then key": "[" + ".".join(["t"] * 12) + "]\n" + ".".join(["k"] * 12) + " = [[1]]\n"}


@pytest.mark.parametrize("kind", DEEP)
def test_deep_nesting_is_refused_by_every_reader(tmp_path, kind):
    f = tmp_path / "deep.toml"
    f.write_text(DEEP[kind])
    for reader in (read_file, read_cluster, read_groups):
        with pytest.raises(RmaxError) as e:
            reader(f)
        assert "deep" in str(e.value) and str(f) in str(e.value) and "\n" not in str(e.value)


def test_what_the_reader_accepts_and_refuses(tmp_path):
    f = tmp_path / "c.toml"
    nested = "a = " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "\n"
    f.write_text(nested + 'b = "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[" # [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n')
    assert read_toml(f, "file")["b"].startswith("[[[")        # brackets in strings and comments do not count
    f.write_text("a = 1\n" + "#" * MAX_BYTES)
    with pytest.raises(RmaxError, match="larger than"):
        read_toml(f, "file")
    f.write_text("a = [1,\n")
    with pytest.raises(RmaxError, match=f"file {f} is not valid TOML"):
        read_toml(f, "file")


@pytest.mark.parametrize("text, words", [
    ('[[switch]]\nname = 3\nnodes = ["a"]\n', ["switch 1 needs a name"]),
    ('[[switch]]\nname = "s"\nnodes = "a"\n', ["switch s", "list of node names"]),
    ('[[switch]]\nname = "s"\nnodes = [1]\n', ["switch s", "list of node names"]),
    (f'[[switch]]\nname = "s"\nnodes = ["{"n" * 300}"]\n', ["switch s", "1 to 255 characters"]),
    ('switch = 3\n', ["declares no switches"]),
])
def test_topology_file_values(tmp_path, text, words):
    f = tmp_path / "cluster.toml"
    f.write_text(text)
    with pytest.raises(RmaxError) as e:
        read_groups(f)
    assert all(w in str(e.value) for w in words), e.value


def test_deep_topology_file_is_exit_2(tmp_path):
    f = tmp_path / "deep.toml"
    f.write_text(DEEP["arrays"])
    assert_one_line_error(run_cli("topology", "place", "--topology", str(f), "--order", "block", "--hosts", "a,b"),
                          2, "nests arrays or tables more than 16 deep")

"""The Family core: one registry, options with quick values, typed versioned summaries, and
figures that are their stored field; a survey's headline read from the families."""

import dataclasses
import json

import pytest
from cliutil import run_cli

from rmax.bench.family import FAMILIES, Family, StaleSummary, make_options, option, option_fields, register
from rmax.families import families, loaded
from rmax.bench.view import ROLES, resolve


def test_registry_refuses_a_second_family_of_one_name():
    fams = families()
    name = next(iter(fams))
    with pytest.raises(RuntimeError, match="two benchmark families"):
        register(type("Again", (Family,), {"name": name}))
    assert FAMILIES[name] is fams[name]


@dataclasses.dataclass
class _Opts:
    size: int = option(10, "a size", quick=2)
    mode: str = option("both", "a mode")


def test_options_take_given_then_quick_then_default():
    assert make_options(_Opts) == _Opts(10, "both")
    assert make_options(_Opts, quick=True) == _Opts(2, "both")
    assert make_options(_Opts, quick=True, size=7, mode="one") == _Opts(7, "one")
    with pytest.raises(TypeError, match="no option"):
        make_options(_Opts, sizes=3)


def test_every_family_is_complete():
    for name, fam in families().items():
        assert fam.name == name and fam.title and fam.Summary.SCHEMA.startswith(f"rmax.{name}/"), name
        assert option_fields(fam.Options), name
        fam.options()            # defaults construct
        fam.options(quick=True)  # and so do the quick values
        if fam.survey:
            assert 0 < fam.survey.share < 1 and fam.survey.ranks in ("node", "pair", "all"), name


def test_every_family_has_its_generated_command():
    from click.testing import CliRunner

    from rmax.cli.app import cli

    for name, fam in families().items():
        if not getattr(fam, "command", True):
            continue
        proc = CliRunner().invoke(cli, ["bench", name, "--help"])   # in this process: 25 starts saved
        assert proc.exit_code == 0, proc.output
        for f, info in option_fields(fam.Options):
            if info.cli:
                assert (info.flag or "--" + f.name.replace("_", "-")) in proc.output, (name, f.name)
        assert "--quick" in proc.output and "--json" in proc.output


def test_a_stored_summary_reads_back_typed_and_its_figures_are_its_fields(db):
    from rmax.store import open_store

    proc = run_cli("bench", "stream", "--size", "2MiB", "--budget", "0", "--mode", "one", "--json", check=True)
    rid = json.loads(proc.stdout)["id"]
    with open_store() as store:
        run = store.get(rid)
    fam, s = loaded(run)
    assert fam.name == "stream" and s.to_dict() == run.summary
    figs = fam.metrics(s) + fam.headline(s)
    assert figs
    for f in figs:
        assert f.value == resolve(run.summary, f.path) * f.scale, f
        assert f.role is None or f.role in ROLES
    # A summary of another shape (an older rmax) is never misread: it is skipped.
    run.summary = {**run.summary, "schema": "rmax.stream/1"}
    with pytest.raises(StaleSummary):
        fam.load(run)
    assert loaded(run) is None


def test_a_summary_reads_the_older_schemas_it_names_and_refuses_others():
    """Fields added with defaults keep a user's stored runs readable (READS); another shape is stale."""
    from rmax.families.hpl import HplSummary, HplTest

    t = HplTest("WR11C2R4", 1000, 64, 1, 2, 0, 1, 1, 2, 2, 1, 4, 0.5, 1.34, 0.003, "PASSED")
    d = HplSummary("hpcc", 2, [t], 1, 0, 16.0, {"StarDGEMM_Gflops": "25.9", "PTRANS_GBs": "0.24"}).to_dict()
    old = {**d, "schema": "rmax.hpl/2", "tests": [{k: v for k, v in d["tests"][0].items() if k != "trajectory"}]}
    del old["hpcc"]
    s = HplSummary.load(old)
    assert s.tests[0].gflops == 1.34 and s.tests[0].trajectory is None
    assert s.hpcc == {"StarDGEMM_Gflops": 25.9, "PTRANS_GBs": 0.24}      # typed from the stored block
    with pytest.raises(StaleSummary):
        HplSummary.load({**d, "schema": "rmax.hpl/1"})


def test_each_family_is_found_by_its_kind_alone():
    """family_of imports only the module named for a run's kind (or MODULE_OF's): each family must be
    reachable that way, or its runs would read as no family's."""
    from rmax.families import MODULE_OF, MODULES

    for name in families():
        assert MODULE_OF.get(name, name) in MODULES, name

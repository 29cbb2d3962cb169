"""A benchmark family: one object that holds everything rmax knows about one
benchmark, and that every reader asks instead of decoding its results itself.

A family has a name and a one-line summary; an options dataclass (defaults,
ranges, quick values) from which `rmax bench NAME` is generated; the argv of
its kernel; a parser from the kernel's JSON lines to a typed, versioned
Summary (what the store keeps); the headline figures (each with its statistic,
unit and the summary field it comes from); the tables and plots that the
terminal and the HTML report both render; and its share of a survey.

`run(family, options, context)` is the one path every family's measurement
takes (rmax.bench.runner: a stored run from its start, under the watchdog)."""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Plot, View, plain
from rmax.registry import Registry

MISSING = dataclasses.MISSING


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET = _Unset()   # an option without a quick value of its own


# ---- options ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OptionInfo:
    help: str
    type: Any = None              # a click ParamType (rmax.params), click.Choice, or None for text
    quick: Any = UNSET            # the value under --quick, when it differs from the default
    flag: str | None = None       # a flag's command-line name: "--validate", or "--no-perturb" to set False
    cli: bool = True              # False: set by callers (a survey, the tuner), not on the command line
    metavar: str | None = None
    show: str | None = None       # how the default reads in --help when it is computed (e.g. "4x the cache")


def option(default: Any, help: str, *, type: Any = None, quick: Any = UNSET, flag: str | None = None,
           cli: bool = True, metavar: str | None = None, show: str | None = None):
    """A field of a family's options dataclass, with what its command-line option needs."""
    info = OptionInfo(help, type, quick, flag, cli, metavar, show)
    if isinstance(default, (list, dict, set)):
        raise TypeError("option defaults are immutable: use a tuple")
    return field(default=default, metadata={"option": info})


def option_fields(options_cls) -> list[tuple[dataclasses.Field, OptionInfo]]:
    return [(f, f.metadata["option"]) for f in dataclasses.fields(options_cls) if "option" in f.metadata]


def make_options(options_cls, quick: bool = False, **given):
    """The options a run uses: what the caller gave, else the quick value under --quick, else the default."""
    known = {f.name for f in dataclasses.fields(options_cls)}
    unknown = set(given) - known
    if unknown:
        raise TypeError(f"{options_cls.__name__} has no option {', '.join(sorted(unknown))}")
    values = {}
    for f, info in option_fields(options_cls):
        if f.name in given and given[f.name] is not None:
            values[f.name] = given[f.name]
        elif quick and info.quick is not UNSET:
            values[f.name] = info.quick
    return options_cls(**values)


# ---- summaries ----------------------------------------------------------------------------------------

class StaleSummary(Exception):
    """A stored summary of another schema (an older rmax): readers skip it rather than misread it."""


def _build(tp: Any, value: Any) -> Any:
    """value (decoded JSON) as type tp: dataclasses, lists, tuples and dicts of them, optionals."""
    return None if value is None else _builder(tp)(value)


def _identity(value: Any) -> Any:
    return value


@functools.lru_cache(maxsize=None)
def _builder(tp: Any) -> Callable[[Any], Any]:
    """What turns a value that is not None into tp (_build), decided once per type: a summary holds
    thousands of values, and deciding each one's type again was most of `runs list`'s time."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _builder(inner[0]) if len(inner) == 1 else _identity
    if dataclasses.is_dataclass(tp):
        return functools.partial(_from_fields, tp)
    args = typing.get_args(tp)
    if origin in (list, tuple):
        item = _builder(args[0]) if args else _identity
        return origin if item is _identity else lambda value: origin(_build(args[0], v) for v in value)
    if origin is dict:
        item = _builder(args[1]) if args else _identity
        return dict if item is _identity else lambda value: {k: _build(args[1], v) for k, v in value.items()}
    return _identity


@functools.lru_cache(maxsize=None)
def _fields(cls) -> tuple[tuple[str, Any, bool], ...]:
    """(name, type, required) of a dataclass's init fields, resolved once per class: resolving type
    hints is most of the cost of loading a summary (`runs list` loads one per run it shows)."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name], f.default is MISSING and f.default_factory is MISSING)
                 for f in dataclasses.fields(cls) if f.init)


def _from_fields(cls, data: dict):
    if not isinstance(data, dict):
        raise StaleSummary(f"{cls.__name__}: expected an object, found {type(data).__name__}")
    kwargs = {}
    for name, tp, required in _fields(cls):
        if name in data:
            kwargs[name] = _build(tp, data[name])
        elif required:
            raise StaleSummary(f"{cls.__name__}: field '{name}' is missing")
    return cls(**kwargs)


@dataclass
class Summary:
    """A family's stored summary: a dataclass whose SCHEMA names its shape and version
    ("rmax.stream/2"); the store keeps to_dict(), readers get it back with load()."""

    SCHEMA: ClassVar[str] = ""
    # Older schemas this one reads as it is: they lack only fields added since, with defaults
    # (a user's stored runs stay readable); a change of meaning gets a new SCHEMA and no entry here.
    READS: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict:
        return {"schema": self.SCHEMA, **dataclasses.asdict(self)}

    @classmethod
    def load(cls, data: dict):
        if not isinstance(data, dict) or data.get("schema") not in (cls.SCHEMA, *cls.READS):
            found = data.get("schema") if isinstance(data, dict) else None
            raise StaleSummary(f"summary schema {found or 'unversioned'}, expected {cls.SCHEMA}")
        return _from_fields(cls, data)


# ---- running ------------------------------------------------------------------------------------------

@dataclass
class RunContext:
    """Where and under what a family runs: the store and parent run, the ranks and hosts
    (spec: None means this host, the family's default ranks), the launcher and the watchdog."""

    store: Any = None                       # rmax.store.Store; None: the default store
    parent: str | None = None
    label: str | None = None
    spec: Any = None                        # rmax.launch.LaunchSpec
    launcher: str | None = None
    timeout: float | None = None            # None: the family's own, from its options
    quick: bool = False
    on_stdout: Callable[[str], None] | None = None
    on_progress: Callable[[Any], None] | None = None   # a family's progress events (hpl: rmax.hpl.progress.Progress)


# Where nodes share a machine, at most this many of a polling kernel's ranks per core of it in a
# survey (SurveyPlan.per_core): its MPI waits poll, and more polling ranks than that over a virtual
# cluster's TCP stopped progressing (plan.bounded_nodes; mbw's 96 ranks on 2 cores past 294 s).
POLLING_RANKS_PER_CORE = 8


@dataclass(frozen=True)
class SurveyPlan:
    """A family's place in a survey: its title there, the share of the budget it may use, its
    order among the steps, and where it runs: "node" (one process on every node, all nodes at
    once: survey/fanout.py), "pair" (the first two nodes) or "all" (one rank on every node; with `even`, on
    the largest even number of nodes, for families of sender/receiver pairs); `on_request`: not in a
    survey of every step, only when its steps are named; `per_core`: where the nodes share a
    machine, at most this many of its ranks per core of it (0: no bound)."""

    title: str
    share: float
    order: int
    ranks: str = "node"
    even: bool = False
    on_request: bool = False   # only when `rmax survey --steps` names it
    per_core: int = 0


class Family:
    """The base of every family; a module in rmax.bench subclasses it once and registers it."""

    name: ClassVar[str]
    title: ClassVar[str]                    # one line, for `rmax bench --help`
    Options: ClassVar[type]
    Summary: ClassVar[type[Summary]]
    scope: ClassVar[str] = "node"           # "node": one rmax-node process; "net": ranks of rmax-net
    default_np: ClassVar[int | None] = 2    # net families: ranks when none are asked for (None: every slot)
    survey: ClassVar[SurveyPlan | None] = None
    example: ClassVar[str] = ""             # the example line of `rmax bench NAME --help`
    command: ClassVar[bool] = True          # False: no `rmax bench NAME` (the family has a command of its own)
    # The native option table the Options mirror, ("rmax-node", "stream"), or None: each family says
    # which (no default), and tests/test_option_table.py holds the shared options' defaults and ranges equal.
    native: ClassVar[tuple[str, str | None] | None]

    # -- options and the kernel's argv
    def options(self, quick: bool = False, **given):
        return make_options(self.Options, quick, **given)

    def survey_options(self, o, hpl: tuple[int, int, int, int]):
        """The options of this family's survey step, given (N, NB, P, Q) of the HPL run the survey
        makes: a family whose measurement stands for part of HPL measures it at HPL's own sizes."""
        return o

    def between_ranks_options(self, o):
        """The options of its survey step where a pair step runs between two ranks of one node (a
        one-node survey): what rmax's HPL model needs from it there."""
        return o

    def check(self, o, ctx: RunContext) -> None:
        """Refuse options this machine or these ranks cannot run, before a run exists (RmaxError)."""

    def argv(self, o) -> list[str]:
        raise NotImplementedError

    def params(self, o, ctx: RunContext) -> dict:
        """What the stored run records as its parameters."""
        return {**dataclasses.asdict(o), "quick": ctx.quick}

    def timeout(self, o) -> float:
        return 600.0

    def blas_threads(self, o) -> int:
        return 1

    def env(self, o) -> dict:
        return {}

    def ranks(self, ctx: RunContext) -> int:
        """The ranks a net family's run has: the spec's, else two on this host."""
        return ctx.spec.np if ctx.spec else 2

    # -- results
    def parse(self, records: list[dict]) -> Parsed:
        """The kernel's JSON records as a Parsed whose summary is this family's Summary."""
        raise NotImplementedError

    def parser(self, o, ctx: RunContext) -> Callable[[list[dict]], Parsed]:
        """The parse of one run (a family whose summary needs facts of where it ran overrides this)."""
        return self.parse

    def reading(self, o, ctx: RunContext) -> Callable[[list[dict]], Parsed]:
        """The parser of one run with the list view's line of its summary added: made when the run
        is stored, so that listing runs imports no family module."""
        parse = self.parser(o, ctx)

        def read(records: list[dict]) -> Parsed:
            got = parse(records)
            return dataclasses.replace(got, headline=self.list_line(got.summary))
        return read

    def execute(self, o, ctx: RunContext):
        """Run the kernel once as one stored run (families of several runs override this)."""
        timeout = ctx.timeout if ctx.timeout is not None else self.timeout(o)
        if self.scope == "node":
            from rmax.bench.node_kernel import run_node

            return run_node(self.name, self.argv(o), self.params(o, ctx), self.reading(o, ctx), env=self.env(o),
                            blas_threads=self.blas_threads(o), store=ctx.store, parent=ctx.parent,
                            label=ctx.label, spec=ctx.spec, launcher=ctx.launcher, timeout=timeout,
                            on_stdout=ctx.on_stdout)
        from rmax.bench.netlaunch import launch, with_program

        spec = with_program(ctx.spec, self.argv(o), self.ranks(ctx), ctx.launcher)
        params = {**self.params(o, ctx), "np": spec.np, "launcher": ctx.launcher,
                  "hosts": [h.name for h in spec.hosts] if spec.hosts else None}
        return launch(self.name, spec, params, self.reading(o, ctx), launcher=ctx.launcher, timeout=timeout,
                      store=ctx.store, parent=ctx.parent, on_stdout=ctx.on_stdout, label=ctx.label)

    def load(self, run) -> Any:
        """The typed summary of a stored run of this family; StaleSummary when it has another shape."""
        return self.Summary.load(run.summary)

    def headline(self, s) -> list[Figure]:
        """The figures a survey shows of this family, each from one summary field."""
        return []

    def metrics(self, s) -> list[Figure]:
        """Every figure worth comparing between runs or nodes (the headline's and more)."""
        return self.headline(s)

    def list_line(self, s) -> str:
        """A summary's line in `runs list`: its first two headline figures (else metrics), each with
        its statistic's first words (median, best, maximum of N blocks); `runs show` has the rest."""
        figs = self.headline(s) or self.metrics(s)[:2]
        return "; ".join(f"{f.metric} {plain(f.value)} {f.unit} ({re.split('[;,(]', f.statistic)[0].strip()})"
                         for f in figs[:2])

    def view(self, s) -> View:
        """The tables and notes of one run: the terminal prints them, the report renders them."""
        return View()

    def plots(self, runs: list[tuple[str, Any]]) -> list[Plot]:
        """Plots of several runs of this family, given as (label, summary) pairs."""
        return []

    # the report's sections are ordered by the survey order; families outside a survey come last
    @property
    def order(self) -> int:
        return self.survey.order if self.survey else 90


FAMILIES: Registry = Registry("benchmark families", make=lambda cls: cls())   # name -> Family

register = FAMILIES.register

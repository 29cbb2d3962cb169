"""What a verdict is made of: each node's figures of each metric, one per survey, from the survey's
per-node runs (kind = the family, hosts = [node]) and each family's figures (Family.metrics), named
as the survey's spread names them (rmax.survey.spread.run_metrics: a figure's point of measurement
in its name, so that nodes measured at different points are never set against each other)."""

from __future__ import annotations

from dataclasses import dataclass, field

from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.survey.spread import run_metrics

SKIPPED_KINDS = ("info", "hpl-test")


@dataclass
class Series:
    """One metric on one node: its figure in each survey that measured it."""
    node: str
    metric: str                  # "kind:key" and its point, e.g. "stream:triad.2 at 21 MiB arrays"
    unit: str
    lower_is_better: bool
    values: list[float] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    surveys: list[str] = field(default_factory=list)   # the survey of each value

    def add(self, value: float, run: str, survey: str) -> None:
        """One survey's figure, from its run."""
        self.values.append(value)
        self.runs.append(run)
        self.surveys.append(survey)

    def by_survey(self) -> dict[str, float]:
        return dict(zip(self.surveys, self.values))

    @property
    def kind(self) -> str:
        return self.metric.split(":", 1)[0]

    @property
    def base(self) -> str:
        """The metric without its point of measurement ("stream:triad.2"), as references may name it."""
        return self.metric.split(" at ", 1)[0]


def node_runs(store: Store, survey: RunRecord) -> list[RunRecord]:
    """A survey's ok per-node runs of a family (one host each), its inventories included."""
    return [r for r in store.children(survey.id) if r.status == "ok" and len(r.hosts) == 1]


def gather(store: Store, surveys: list[RunRecord]) -> tuple[dict[tuple[str, str], Series], list[RunRecord]]:
    """((node, metric) -> Series, the inventory runs) of the surveys, in their order."""
    out: dict[tuple[str, str], Series] = {}
    infos: list[RunRecord] = []
    for survey in surveys:
        for r in node_runs(store, survey):
            if r.kind == "info":
                infos.append(r)
            if r.kind in SKIPPED_KINDS:
                continue
            node = r.hosts[0]
            for metric, value, unit, lower in run_metrics(r):
                out.setdefault((node, f"{r.kind}:{metric}"), Series(node, f"{r.kind}:{metric}", unit, lower)).add(
                    value, r.id, survey.id)
    return out, infos

"""Each node's links, from the surveys' all-pairs matrix: per node, the median of its pairs'
concurrent figures in each class of pairs (within its switch, across switches, or every pair when
the switch groups are unknown), as per-node series that the fleet judges like any other figure (a
node against its class's other nodes, survey by survey); and, within a switch, against the link's
rate: declared (--link-rate, references' [links] rate, a virtual cluster's --link) or the NIC's
speed from the node's inventory.

Only pairs within a switch are set against the rate: in the matrix's rounds each node is in one pair
at a time, so a pair within a non-blocking switch can move its link's rate, while the pairs across
switches share their trunks with the round's other pairs (the trunks' class median judges them)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from rmax.accept.classes import latest_inventories
from rmax.accept.measured import Series
from rmax.accept.references import Reference, References
from rmax.sizes import human_size
from rmax.store import Store
from rmax.store.runs import RunRecord

KIND = "link"
STEP = "matrix"      # the survey step whose runs the links come from


@dataclass(frozen=True)
class LinkRate:
    bits: float           # bits/s
    source: str           # where it came from, for the verdict's words

    def reference(self, metric: str, lower: float) -> Reference:
        return Reference(metric, self.bits / 8 / 1e6, "MB/s", lower, None, note=self.source,
                         source=f"the link rate ({self.source})")


def matrix_runs(store: Store, survey: RunRecord) -> list[RunRecord]:
    """A survey's all-pairs runs that measured pairs (a run cut short keeps the rounds it finished)."""
    return [r for r in store.children(survey.id) if r.kind == STEP and r.status in ("ok", "partial")]


def _per_host(s) -> dict[tuple[str, str, str], list[float]]:
    """(host, kind, pair class) -> its pairs' figures, both directions, in MB/s or us; only where the
    host was measured with MIN_PARTNERS others at least in that class: with fewer, a slow partner's
    link reads as its own (the median of its pairs is the slow one's half the time)."""
    from rmax.families.matrix import pair_class
    from rmax.topology.infer import MIN_PARTNERS

    out: dict[tuple[str, str, str], list[float]] = {}
    partners: dict[tuple[str, str, str], set[str]] = {}
    n = len(s.hosts)
    group_of = s.group_of if len(s.group_of or ()) >= n else ()   # a rank without a group: no classes
    for kind, scale in (("bandwidth", 1e-6), ("latency", 1e6)):
        m = getattr(s, kind)
        for i in range(min(n, len(m))):
            for j in range(min(n, len(m[i]))):
                v = m[i][j]
                if v is None or v <= 0 or s.hosts[i] == s.hosts[j]:
                    continue
                cls = pair_class(group_of, i, j)
                for h, other in ((s.hosts[i], s.hosts[j]), (s.hosts[j], s.hosts[i])):
                    out.setdefault((h, kind, cls), []).append(v * scale)
                    partners.setdefault((h, kind, cls), set()).add(other)
    return {k: v for k, v in out.items() if len(partners[k]) >= MIN_PARTNERS}


def metric_name(kind: str, cls: str, size: int | None) -> str:
    return f"{KIND}:{kind}.{cls}" + (f" at {human_size(size)} messages" if size else "")


def link_series(store: Store, surveys: list[RunRecord]) -> dict[tuple[str, str], Series]:
    """((node, metric) -> Series) of every node's links over the surveys: its pairs' median in each
    class, named by the message size measured (sizes differ between surveys: other metrics)."""
    from rmax.families import loaded

    out: dict[tuple[str, str], Series] = {}
    for survey in surveys:
        for r in matrix_runs(store, survey):
            got = loaded(r)
            if got is None:
                continue
            s = got[1]
            for (host, kind, cls), values in _per_host(s).items():
                metric = metric_name(kind, cls, s.bw_size if kind == "bandwidth" else s.lat_size)
                unit, lower = ("MB/s", False) if kind == "bandwidth" else ("us", True)
                out.setdefault((host, metric), Series(host, metric, unit, lower)).add(statistics.median(values), r.id,
                                                                                       survey.id)
    return out


def inventory_rate(summary: dict) -> LinkRate | None:
    """The fastest NIC device's speed in a node's inventory (virtual links report none)."""
    speeds = [i["speed_mbps"] for i in (summary.get("nics") or {}).get("interfaces") or []
              if i.get("kind") == "device" and isinstance(i.get("speed_mbps"), (int, float)) and i["speed_mbps"] > 0]
    return LinkRate(max(speeds) * 1e6, f"NIC speed {max(speeds):g} Mb/s, inventory") if speeds else None


def declared(given: float | None, refs: References, vcluster: str | None) -> LinkRate | None:
    """Every node's declared link rate: --link-rate, else the references' [links] rate, else the
    virtual cluster's --link (its plan); None: each node's NIC speed (rates)."""
    from rmax.vcluster.plan import format_rate

    if given:
        return LinkRate(given, f"--link-rate {format_rate(int(given))}")
    if refs.links.rate:
        return LinkRate(refs.links.rate, f"the references' [links] rate {format_rate(int(refs.links.rate))}")
    if vcluster:
        from rmax.vcluster import find

        plan = find(vcluster).plan
        if plan is not None and plan.link_rate:
            return LinkRate(plan.link_rate, f"virtual cluster {vcluster}'s --link {format_rate(plan.link_rate)}")
    return None


def rates(infos: list[RunRecord], nodes: list[str], given: LinkRate | None) -> dict[str, LinkRate]:
    """node -> the rate its link is judged against: the declared one (`given`, from declared()), else
    its latest ok inventory's NIC speed; a node with neither is judged against its fleet only."""
    if given is not None:
        return {n: given for n in nodes}
    return {n: rate for n, r in latest_inventories(infos).items() if (rate := inventory_rate(r.summary)) is not None}


def judged_against_rate(s: Series) -> bool:
    """A node's bandwidth within its switch is set against its link's rate."""
    return s.kind == KIND and s.base == f"{KIND}:bandwidth.same"

"""The MTU experiment's figures from its repeats: per MTU and metric the median over
repeats with their range (min-max: a handful of repeats gives no 95 % interval for a
median), and against the first MTU (the baseline) a change that counts as `rmax compare`
counts one: Welch's t-test over the repeats, Holm-adjusted over every MTU and metric
tested, and at least stats.MIN_CHANGE. Each repeat is a separate measurement (its own
probe or rmax-net run), stored as a child run and named here. A repeat that measured nothing
(a figure without a value, or a probe that failed at an MTU whose traffic had passed before)
is counted and said (`gaps`): the experiment is then partial, not ok."""

from __future__ import annotations

import math

from rmax.stats import MIN_CHANGE, differ_significantly, holm, spread

# metric -> how a row shows it; all collected per repeat in the units shown
METRICS = ("latency_us", "bandwidth_MBps", "trunk_latency_us", "trunk_bandwidth_MBps", "hpl_gflops")
REPEATS = 5   # enough for a t-test with 4 degrees of freedom per side, a few minutes on a virtual cluster


class Collector:
    """Values per (MTU, metric) as the repeats come in, and the runs they came from."""

    def __init__(self, mtus: list[int]):
        self.mtus = list(mtus)
        self.values: dict[int, dict[str, list[float]]] = {m: {} for m in mtus}
        self.runs: dict[int, list[str]] = {m: [] for m in mtus}
        self.errors: dict[int, str] = {}
        self.extra: dict[int, dict] = {m: {} for m in mtus}
        self.missing: dict[int, dict[str, int]] = {m: {} for m in mtus}   # metric -> repeats without a value
        self.lost: dict[int, list[str]] = {m: [] for m in mtus}           # repeats whose probe failed

    def add(self, mtu: int, runs: list[str], **metrics) -> None:
        self.runs[mtu] += [r for r in runs if r]
        for k, v in metrics.items():
            if v is None:
                self.missing[mtu][k] = self.missing[mtu].get(k, 0) + 1
            else:
                self.values[mtu].setdefault(k, []).append(float(v))

    def measured(self, mtu: int) -> bool:
        """Whether traffic has passed at this MTU in an earlier repeat."""
        return bool(self.values[mtu])

    def lose(self, mtu: int, repeat: int, error: str, runs: list[str] = ()) -> None:
        """A repeat whose probe failed at an MTU that passed before: not the MTU's fault, a lost repeat."""
        self.lost[mtu].append(f"repeat {repeat}: {error}")
        self.runs[mtu] += [r for r in runs if r]

    def gaps(self) -> list[str]:
        """What the experiment planned and did not measure, one phrase per MTU (MTUs whose traffic
        failed are a finding, said in their row, not a gap)."""
        out = []
        for m in self.mtus:
            said = [f"no {k} in {n} repeat(s)" for k, n in self.missing[m].items()] + self.lost[m]
            if said:
                out.append(f"MTU {m}: " + ", ".join(said))
        return out

    def fail(self, mtu: int, error: str, runs: list[str] = ()) -> None:
        self.errors[mtu] = error
        self.runs[mtu] += [r for r in runs if r]

    def rows(self) -> list[dict]:
        base = self.mtus[0]
        out, tested = [], []
        for m in self.mtus:
            row: dict = {"mtu": m, "runs": self.runs[m], **self.extra[m]}
            if m in self.errors:
                row["error"] = self.errors[m]
            if self.missing[m] or self.lost[m]:
                row["missing"] = {**self.missing[m], **({"lost_repeats": self.lost[m]} if self.lost[m] else {})}
            for k in METRICS:
                vals = self.values[m].get(k)
                if not vals:
                    if k in ("latency_us", "bandwidth_MBps"):
                        row[k] = None
                    continue
                sp = spread(vals)
                row.update({k: sp["median"], f"{k}_range": [sp["min"], sp["max"]], f"{k}_repeats": vals})
                if m != base and self.values[base].get(k):
                    b = self.values[base][k]
                    _, p = differ_significantly(b, vals)
                    ref = spread(b)["median"]
                    d = {"baseline_mtu": base, "change": (sp["median"] - ref) / ref if ref else None,
                         "p": None if math.isnan(p) else p, "p_adjusted": None, "significant": None}
                    row.setdefault("vs_baseline", {})[k] = d
                    tested.append(d)
            out.append(row)
        for d, pa in zip(tested, holm([math.nan if d["p"] is None else d["p"] for d in tested])):
            if not math.isnan(pa):
                d["p_adjusted"] = pa
                d["significant"] = pa < 0.05 and d["change"] is not None and abs(d["change"]) >= MIN_CHANGE
        return out


COLUMNS = (("latency_us", "Latency (us)", ".1f"), ("bandwidth_MBps", "Bandwidth (MB/s)", ".1f"),
           ("trunk_latency_us", "Trunk latency (us)", ".1f"), ("trunk_bandwidth_MBps", "Trunk bandwidth (MB/s)", ".1f"),
           ("hpl_gflops", "HPL (GFLOPS)", ".3f"))


def _cell(r: dict, key: str, spec: str, repeats: int) -> str:
    """median [min-max] over repeats (how many, when fewer than planned), and the change against the
    baseline MTU when it is significant."""
    v = r.get(key)
    if v is None:
        return "—"
    rg, n = r.get(f"{key}_range"), len(r[f"{key}_repeats"])
    text = format(v, spec) + (f" [{format(rg[0], spec)}-{format(rg[1], spec)}]" if rg and n > 1 else "")
    if n < repeats:
        text += f" ({n} of {repeats} repeats)"
    d = (r.get("vs_baseline") or {}).get(key)
    if d and d["significant"]:
        text += f" ({d['change'] * 100:+.0f}%, p={d['p_adjusted']:.3f} Holm)"
    elif d and d["p"] is not None:
        text += " (no sig. change)"
    return text


def table(rows: list[dict], repeats: int) -> tuple[list[str], list[list[str]], str]:
    """(columns, cells, caption) of an experiment's results, as the terminal and the report show them:
    the metrics some MTU measured."""
    cols = [c for c in COLUMNS if any(c[0] in r for r in rows)]
    caption = (f"median [min-max] over {repeats} repeat(s); a change against MTU {rows[0]['mtu']} is shown only when "
               f"Welch's t-test over the repeats, Holm-adjusted over every MTU and metric, gives p < 0.05 and the "
               f"change is at least {MIN_CHANGE:.0%}")
    return (["MTU"] + [name for _, name, _ in cols],
            [[str(r["mtu"]), *(_cell(r, k, spec, repeats) for k, _, spec in cols)] for r in rows], caption)

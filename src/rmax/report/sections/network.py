"""Network and MPI: point-to-point curves per layer with the Hockney fit and
flagged dips, collectives vs process count, rings, bisection, the all-pairs heatmap."""

from __future__ import annotations

from rmax.report import plots
from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord


def _pair(r: RunRecord) -> str:
    return " <-> ".join(r.summary.get("hosts") or r.hosts)


@builder("net")
def net(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="net", title="Point-to-point latency and bandwidth", order=40)
    fits, data = [], []
    for r in runs:
        layers = r.summary.get("layers", {})
        lat = {n: ([p["size"] for p in l["points"] if p.get("latency")], [p["latency"] * 1e6 for p in l["points"] if p.get("latency")])
               for n, l in layers.items() if l.get("kind") == "latency"}
        bw = {n: ([p["size"] for p in l["points"] if p.get("bandwidth")], [p["bandwidth"] / 1e6 for p in l["points"] if p.get("bandwidth")])
              for n, l in layers.items()}
        sec.plots.append(plots.line_plot(lat, "message size (bytes)", "one-way latency (us, median)", logx=True, logy=True,
                                         title=f"Latency per layer, {_pair(r)}"))
        sec.plots.append(plots.line_plot(bw, "message size (bytes)", "bandwidth (MB/s, median)", logx=True,
                                         title=f"Bandwidth per layer, {_pair(r)}"))
        for name, layer in layers.items():
            h = layer.get("hockney") or {}
            if "alpha" in h:
                fits.append([_pair(r), name, f"{h['alpha'] * 1e6:.3f} ± {h.get('alpha_err', 0) * 1e6:.3f}",
                             f"{h['beta'] / 1e6:.0f} ± {h.get('beta_err', 0) / 1e6:.0f}", f"{h.get('n_half', 0):.0f}",
                             f"{h.get('rms_rel_residual', 0):.2f}" + ("" if not h.get("warnings") else " (poor)"),
                             (", ".join(str(a["size"]) for a in layer.get("anomalies", [])[:8]) or "none")
                             if layer.get("dips_tested", True) else "not tested (1 repeat)"])
            data += [{"pair": _pair(r), "layer": name, **{k: v for k, v in p.items() if k != "ci95"}}
                     for p in layer.get("points", [])]
    sec.tables.append(Table(["Pair", "Layer", "alpha (us)", "beta (MB/s)", "n1/2 (bytes)", "RMS rel. residual",
                             "Bandwidth dips at (bytes)"], fits,
                            "Hockney fit t(n) = alpha + n / beta (± one standard error; poor: residual above 0.10 or "
                            "an implausible parameter); a dip is a size whose median bandwidth over repeats is more "
                            "than 10% below both neighbours, significantly (Welch's t-test over repeats)"))
    sec.data["p2p"] = data
    return [sec]


@builder("coll")
def coll(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="coll", title="Collectives", order=41)
    data = []
    for r in runs:
        pts = r.summary.get("points", [])
        data += [{k: v for k, v in p.items() if k not in ("ci95", "rank_order")} for p in pts]
        sizes = sorted({p["size"] for p in pts})
        probe = sizes[len(sizes) // 2] if sizes else None
        series: dict[str, tuple[list, list]] = {}
        for p in pts:
            if p["size"] == probe and p["order"] == "natural":
                xs, ys = series.setdefault(p["op"], ([], []))
                xs.append(p["procs"])
                ys.append(p["avg"] * 1e6)
        if series:
            sec.plots.append(plots.line_plot(series, "processes", f"time per call (us, avg over ranks), {probe} B",
                                             title="Collectives vs process count (natural order)"))
    sec.data["collectives"] = data
    return [sec]


@builder("ring")
def ring(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="ring", title="Ring latency and bandwidth", order=42)
    rows, data = [], []
    for r in runs:
        s = r.summary
        rows.append([", ".join(s.get("hosts", [])[:4]) + ("..." if len(s.get("hosts", [])) > 4 else ""),
                     f"{s['natural_latency'] * 1e6:.3f}", f"{s['random_latency'] * 1e6:.3f}",
                     f"{s['natural_bandwidth'] / 1e6:.0f}", f"{s['random_bandwidth'] / 1e6:.0f}"])
        slow = [l for l in s.get("links", []) if l.get("slow")]
        for l in slow:
            sec.notes.append(f"slow hop: rank {l['from']} ({l['from_host']}) -> {l['to']} ({l['to_host']}), "
                             f"{l['size']} B in {l['time'] * 1e6:.2f} us (median) against {l['best'] * 1e6:.2f} us best")
        data += s.get("links", [])
    sec.tables.append(Table(["Ranks on", "Natural latency (us)", "Random latency (us)", "Natural bandwidth (MB/s)",
                             "Random bandwidth (MB/s)"], rows, "HPCC's definitions (8 B latency, 2,000,000 B bandwidth)"))
    sec.data["ring_links"] = data
    return [sec]


@builder("bisect")
def bisect(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="bisect", title="Bisection bandwidth", order=43)
    rows = [[str(len(r.summary.get("hosts", []))), f"{r.summary['bandwidth_median'] / 1e6:.0f}",
             f"{r.summary['bandwidth_min'] / 1e6:.0f}", str(len(r.summary.get("bisections", [])))] for r in runs]
    sec.tables.append(Table(["Ranks", "Median (MB/s)", "Worst (MB/s)", "Bisections"], rows,
                            "half the ranks stream to the other half: across the cut between the switch groups when they are "
                            "known, and over random bisections; worst = the weakest cut"))
    sec.data["bisections"] = [dict(b, run=r.id) for r in runs for b in r.summary.get("bisections", [])]
    return [sec]


@builder("matrix")
def matrix(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="matrix", title="All-pairs latency and bandwidth", order=44)
    data = []
    for r in runs:
        s = r.summary
        labels = [f"{i}:{h}" for i, h in enumerate(s.get("hosts", []))]
        lat = [[(v * 1e6 if v is not None else float("nan")) for v in row] for row in s.get("latency", [])]
        bw = [[(v / 1e6 if v is not None else float("nan")) for v in row] for row in s.get("bandwidth", [])]
        if lat:
            sec.plots.append(plots.heatmap(lat, labels, "one-way latency (us, median)", "Latency, rank to rank"))
        if bw:
            sec.plots.append(plots.heatmap(bw, labels, "bandwidth (MB/s, median)", "Bandwidth, rank to rank"))
        for f in s.get("flagged", []):
            unit = s.get("units", {}).get(f["kind"], "")
            sec.notes.append(f"flagged: {f['kind']} from {f.get('from_host') or f['from']} to "
                             f"{f.get('to_host') or f['to']} ({f['class']} switch class): {f['concurrent']:.3g} {unit} "
                             f"concurrent, {f['alone_median']:.3g} alone vs class median {f['class_median']:.3g} "
                             f"(Welch p={f['p']:.3g})")
        for i, row in enumerate(s.get("latency", [])):
            for j, v in enumerate(row):
                data.append({"from": i, "to": j, "latency_s": v, "bandwidth_Bps": s["bandwidth"][i][j] if s.get("bandwidth") else None})
    sec.data["pairs"] = data
    return [sec]

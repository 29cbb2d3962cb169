"""matrix: all-pairs latency and bandwidth in N-1 rounds of N/2 concurrent pairs
(native/net/cmd_matrix.c, the mpiGraph / ClusterKit method).

A pair whose latency is above 2x its row's median, or whose bandwidth is below
90% of its row's best, is measured again alone; it is flagged when the retest
still breaks the rule. Per pair the kernel reports the median over samples and
keeps up to 64 raw samples."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rmax.bench.netlaunch import (check_memory, check_message_sizes, header_summary, launch, ranks_on_this_host,
                                  require_ranks, split_records, with_program)
from rmax.bench.runner import Parsed
from rmax.launch import LaunchSpec
from rmax.native import executable
from rmax.store import Store
from rmax.store.runs import RunRecord

SCHEMA = "rmax.matrix/1"


@dataclass
class MatrixOptions:
    lat_size: int = 8
    bw_size: int = 1 << 20
    window: int = 8
    budget: float = 0.01
    max_samples: int = 20
    retest: bool = True

    @classmethod
    def quick(cls) -> "MatrixOptions":
        return cls(bw_size=256 << 10, budget=0.003, max_samples=10)


def argv(o: MatrixOptions) -> list[str]:
    a = [executable("rmax-net"), "matrix", "--json", "-", "--lat-size", str(o.lat_size), "--bw-size", str(o.bw_size),
         "--window", str(o.window), "--budget", str(o.budget), "--max-samples", str(o.max_samples)]
    return a + ([] if o.retest else ["--no-retest"])


def parse(records: list[dict]) -> Parsed:
    header, _, done = split_records(records, SCHEMA)
    m = next((r for r in records if r.get("schema") == SCHEMA and r.get("record") == "matrix"), None)
    summary = {**header_summary(header), "lat_size": header.get("lat_size") if header else None,
               "bw_size": header.get("bw_size") if header else None,
               "rounds": header.get("rounds") if header else None,
               "statistic": "per pair: median over samples; latency one-way",
               "units": {"latency": "s", "bandwidth": "bytes/s"}}
    if m is None:
        return Parsed(summary, {}, "failed", "rmax-net matrix wrote no matrix")
    summary.update(latency=m["latency"], bandwidth=m["bandwidth"], suspects=m["suspects"],
                   flagged=[s for s in m["suspects"] if s["flagged"]])
    # raw samples per pair (first pass; latency kept in the lower rank's row), and the first-pass
    # matrices from before the retests
    samples = {"latency": m.get("samples_latency", []), "bandwidth": m.get("samples_bandwidth", []),
               "latency_first": m["latency_first"], "bandwidth_first": m["bandwidth_first"]}
    if not m.get("validated"):
        return Parsed(summary, samples, "invalid", "payload validation failed for some pair")
    if done is None:
        return Parsed(summary, samples, "failed", "rmax-net matrix stopped before the end")
    return Parsed(summary, samples)


def run(spec: LaunchSpec | None = None, *, quick: bool = False, options: MatrixOptions | None = None,
        launcher: str | None = None, timeout: float = 600.0, store: Store | None = None,
        parent: str | None = None, on_point=None) -> RunRecord:
    """All-pairs matrices over the ranks of spec (default: 2 on this host), stored as one run."""
    o = options or (MatrixOptions.quick() if quick else MatrixOptions())
    np_ = spec.np if spec else 2
    require_ranks(np_, "the all-pairs matrix", minimum=2)
    check_message_sizes([o.lat_size, o.bw_size])
    check_memory(2 * max(o.lat_size, o.bw_size), ranks_on_this_host(spec) if spec else np_,
                 "the send and receive buffers")
    full = with_program(spec, argv(o), 2, launcher)
    params = {**asdict(o), "np": full.np, "quick": quick, "launcher": launcher,
              "hosts": [h.name for h in full.hosts] if full.hosts else None}
    return launch("matrix", full, params, parse, launcher=launcher, timeout=timeout, store=store, parent=parent,
                  on_stdout=on_point)

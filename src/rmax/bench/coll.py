"""coll: collectives vs message size, process count and rank order (native/net/cmd_coll.c).

goptest's view (mpptest, Gropp and Lusk): the same operation on 2, 4, ... all of
the launched ranks, and with the ranks in natural order, with the second half
reversed, shuffled, and in the Helix study's node orders (cyclic: one rank of
each node in turn; serpentine: every other turn backwards), since the order
decides which ranks share a node in each step."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rmax.bench.netlaunch import (check_memory, check_message_sizes, header_summary, launch, ranks_on_this_host,
                                  require_ranks, split_records, with_program)
from rmax.bench.runner import Parsed
from rmax.errors import RmaxError
from rmax.launch import LaunchSpec
from rmax.native import executable
from rmax.store import Store
from rmax.store.runs import RunRecord

SCHEMA = "rmax.coll/1"
OPS = ("bcast", "reduce", "allreduce", "allgather", "alltoall", "barrier")
ORDERS = ("natural", "reversed", "random", "cyclic", "serpentine")
DEFAULT_ORDERS = ORDERS[:3]   # the node orders differ from natural only with several ranks per node


@dataclass
class CollOptions:
    ops: tuple[str, ...] = OPS
    sizes: tuple[int, ...] = (8, 64, 512, 4096, 32768, 262144, 1 << 20)
    procs: tuple[int, ...] | None = None      # default 2, 4, ..., all
    orders: tuple[str, ...] = DEFAULT_ORDERS
    seed: int = 1
    budget: float = 0.02
    max_samples: int = 100

    @classmethod
    def quick(cls) -> "CollOptions":
        return cls(sizes=(8, 65536), budget=0.005, max_samples=20)


def argv(o: CollOptions) -> list[str]:
    for name, given, valid in (("operation", o.ops, OPS), ("order", o.orders, ORDERS)):
        bad = [x for x in given if x not in valid]
        if bad:
            raise RmaxError(f"unknown {name} '{bad[0]}'", hint=f"one of: {', '.join(valid)}")
    a = [executable("rmax-net"), "coll", "--json", "-", "--ops", ",".join(o.ops), "--orders", ",".join(o.orders),
         "--sizes", ",".join(map(str, o.sizes)), "--seed", str(o.seed), "--budget", str(o.budget),
         "--max-samples", str(o.max_samples)]
    if o.procs:
        a += ["--procs", ",".join(map(str, o.procs))]
    return a


def _point(r: dict) -> dict:
    def med(key):
        return (r.get(key) or {}).get("median")
    return {"op": r["op"], "procs": r["procs"], "order": r["order"], "size": r["size"],
            "rank_order": r.get("rank_order"), "avg": med("summary"), "min": med("rank_min"), "max": med("rank_max"),
            "n": r["summary"].get("n"), "ci95": r["summary"].get("ci95"), "validated": r.get("validated")}


def parse(records: list[dict]) -> Parsed:
    header, points, done = split_records(records, SCHEMA)
    pts = [_point(r) for r in points]
    samples = {f"{p['op']}/{p['procs']}/{p['order']}/{p['size']}": r.get("samples", [])
               for p, r in zip(pts, points)}
    summary = {**header_summary(header), "points": pts, "procs": header.get("procs") if header else [],
               "statistic": "median over samples of the per-call time; avg/min/max over ranks",
               "units": {"time": "s", "size": "bytes per rank"}}
    bad = [f"{p['op']}/{p['procs']}/{p['order']}/{p['size']}" for p in pts if not p["validated"]]
    if bad:
        return Parsed(summary, samples, "invalid", f"wrong collective results at {', '.join(bad[:5])}")
    if done is None:
        return Parsed(summary, samples, "failed", "rmax-net coll stopped before its last point")
    return Parsed(summary, samples)


def run(spec: LaunchSpec | None = None, *, quick: bool = False, options: CollOptions | None = None,
        launcher: str | None = None, timeout: float = 600.0, store: Store | None = None,
        parent: str | None = None, on_point=None) -> RunRecord:
    """Collectives over the ranks of spec (default: 2 on this host), stored as one run."""
    o = options or (CollOptions.quick() if quick else CollOptions())
    np_ = spec.np if spec else 2
    require_ranks(np_, "the collectives test", minimum=2)
    if o.procs and max(o.procs) > np_:
        raise RmaxError(f"--procs {max(o.procs)} is more than the {np_} ranks launched")
    if o.procs and min(o.procs) < 2:
        raise RmaxError("--procs: a collective needs at least 2 processes")
    check_message_sizes(o.sizes)
    check_memory(2 * max(o.sizes) * np_, ranks_on_this_host(spec) if spec else np_,
                 "the collective buffers (2 x size x ranks)")
    full = with_program(spec, argv(o), 2, launcher)
    params = {**asdict(o), "np": full.np, "quick": quick, "launcher": launcher,
              "hosts": [h.name for h in full.hosts] if full.hosts else None}
    return launch("coll", full, params, parse, launcher=launcher, timeout=timeout, store=store, parent=parent,
                  on_stdout=on_point)

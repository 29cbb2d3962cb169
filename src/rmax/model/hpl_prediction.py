"""`rmax model hpl`'s prediction: HPL's time, GFLOPS and efficiency at each N from the model
(model/hpl_model.py) with its inputs as given or as measured here (model/inputs.py: alpha, beta,
gamma3, the calibrated overhead), each N's interval from its inputs' ranges, % of Rpeak, every
doubt about an input as a warning, and with validate the stored HPL tests predicted again."""

from __future__ import annotations

from rmax.errors import RmaxError
from rmax.model import hpl_model as hm
from rmax.model.hpl_validate import summarize_errors, validate as run_validation
from rmax.model.inputs import hpl_observations, node_facts, resolve_overhead, resolve_rates
from rmax.model.provenance import Scope
from rmax.store import open_store

INTERVAL_MEANING = ("every input at the end of its range that makes the run fastest, then slowest (alpha and beta: "
                    "their Hockney fit's 95% intervals; gamma3: its DGEMM point's slowest and fastest blocks; the "
                    "overhead coefficient: its 95% interval), widened by the calibrated model's rms error on the "
                    "tests it was fitted to")


def predict(nodes: int, ranks_per_node: int | None, grid: str | None, nb: int, ns: list[int] | None,
            memory_per_node: float | None, alpha: float | None, beta: float | None, gamma: float | None,
            given: hm.Overhead | None, no_calibration: bool, validate: bool) -> tuple[dict, list | None]:
    """(the prediction as --json shows it, the validation's checks or None). Inputs left None are read:
    memory, cores and Rpeak from this node's inventory, rates and the overhead from the store; given:
    the overhead term given by hand, else calibrated unless no_calibration. memory_per_node in GiB."""
    pq = hm.parse_grid(grid) if grid else None
    try:  # memory, cores and Rpeak: optional when given on the command line
        facts = node_facts()
    except RmaxError:
        facts = None
    rpn = ranks_per_node or (facts.cores if facts else None)
    if rpn is None:
        raise RmaxError("ranks per node unknown", hint="give --ranks-per-node")
    slots = nodes * rpn
    p, q = pq or hm.square_grid(slots)
    if p * q > slots:
        raise RmaxError(f"grid {p}x{q} needs {p * q} processes, but {nodes} node(s) x {rpn} ranks give {slots}")
    mem = memory_per_node * 2 ** 30 if memory_per_node else (facts.memory_bytes if facts else None)
    if ns is None:
        if mem is None:
            raise RmaxError("memory per node unknown", hint="give --n or --memory-per-node")
        ns = [hm.n_for_memory(nodes * mem, nb, p, q)]

    scope = Scope.here(nodes)
    store = open_store(reading=True) if None in (alpha, beta, gamma) or (given is None and not no_calibration) or validate else None
    try:
        # one DGEMM rate for every N: the shape of the largest (m and n are capped, so they mostly agree)
        rates = resolve_rates(store, alpha, beta, gamma, nb, scope, n=max(ns), grid=(p, q))
        a, b, g = rates["alpha"].value, rates["beta"].value, rates["gamma3"].value
        hm.check_inputs(1, nb, p, q, a, b, g)
        # read once: calibration and --validate
        obs = hpl_observations(store, a, b, g, scope=scope) if store is not None else []
        over, over_note, cal = resolve_overhead(store, given, no_calibration, a, b, g, obs, scope)
    finally:
        if store is not None:
            store.close()

    rpeak = facts.rpeak_gflops * nodes * min(1.0, p * q / slots) if facts and facts.rpeak_gflops else None
    # every doubt about an input is the prediction's: said first, where the prediction is read
    warnings = list(dict.fromkeys([w for m in rates.values() for w in m.warnings] + list(cal.warnings if cal else [])))
    ranges, unbounded = _input_ranges(rates, over, cal)
    preds, above_peak = [], False
    for n in ns:
        terms = hm.hpl_terms(n, nb, p, q, a, b, g, over)
        ref = hm.hpl_terms(n, nb, p, q, a, b, g)
        gf = hm.predicted_gflops(n, terms.total_s)
        lo, hi = hm.time_interval(n, nb, p, q, *ranges[:3], over.form, ranges[3])
        if cal is not None:   # and the model's own misfit on the tests it was calibrated on
            lo, hi = lo * max(0.0, 1 - cal.rms_rel_error), hi * (1 + cal.rms_rel_error)
        if rpeak and gf > rpeak and not above_peak:
            above_peak = True
            # a rate above the peak: the DGEMM rate or the peak is wrong, and a % above 100 would hide which
            warnings.append(f"the prediction at N={n} ({gf:.1f} GFLOPS) is above the peak used for % of Rpeak "
                            f"({rpeak:.1f} GFLOPS): gamma3 ({rates['gamma3'].source}) and that peak cannot both be "
                            "right, so no % of Rpeak is given above 100")
        preds.append({"n": n, "nb": nb, "p": p, "q": q, "terms": terms.as_dict(), "time_s": terms.total_s,
                      "time_interval_s": [lo, hi], "gflops": gf,
                      "gflops_interval": [hm.predicted_gflops(n, hi), hm.predicted_gflops(n, lo) if lo > 0 else None],
                      "efficiency": hm.efficiency(terms),
                      "reference_time_s": ref.total_s, "reference_gflops": hm.predicted_gflops(n, ref.total_s),
                      "percent_of_rpeak": 100 * gf / rpeak if rpeak and gf <= rpeak else None,
                      "memory_fraction": 8.0 * n * n / (nodes * mem) if mem else None})
    checks = run_validation([o for o, _ in obs]) if validate else None
    result = {"nodes": nodes, "ranks_per_node": rpn, "grid": [p, q], "scope": scope.describe(),
              "inputs": {k2: v.as_dict() for k2, v in rates.items()},
              "overhead": {**over.as_dict(), "source": over_note, **({"calibration": cal.as_dict()} if cal else {})},
              "rpeak_gflops": rpeak, "rpeak_source": (f"{nodes} node(s) x {facts.rpeak_gflops:.4g} GFLOPS"
                                                      f"{' x the share of cores used' if p * q < slots else ''}; "
                                                      f"per node: {facts.rpeak_basis}") if rpeak else
              "unknown: no peakflops run stored on this node and no nominal Rpeak (`rmax bench peakflops` measures it)",
              "predictions": preds, "warnings": warnings,
              "interval": {"meaning": INTERVAL_MEANING, "not_included": unbounded},
              **({"validation": {"checks": [c.as_dict() for c in checks],
                                 "summary": [summarize_errors(checks), summarize_errors(checks, 4000)]}}
                 if checks is not None else {})}
    return result, checks


def _input_ranges(rates: dict, over, cal) -> tuple[list[tuple[float, float]], list[str]]:
    """alpha's, beta's, gamma3's and the overhead coefficient's ranges for the prediction's interval, and
    what has no range known (taken at its value, so the interval is too narrow by it)."""
    ranges, unbounded = [], []
    for k in ("alpha", "beta", "gamma3"):
        m = rates[k]
        ranges.append(m.interval or (m.value, m.value))
        if m.interval is None and not m.exact:
            unbounded.append(f"{k}: no spread measured ({m.source})")
    sym = hm.OVERHEADS[over.form].symbol
    if cal is None:
        ranges.append((over.value, over.value))
        unbounded.append("the model's own error: it was not calibrated on stored HPL tests here")
    else:
        ranges.append(cal.interval() or (over.value, over.value))
        if cal.interval() is None:
            unbounded.append(f"{sym}'s uncertainty: calibrated on {cal.points} HPL test(s)")
        if cal.points < 3:   # one coefficient through 1 or 2 tests fits them (nearly) exactly
            unbounded.append(f"the model's own error: {cal.points} HPL test(s) are too few to measure it")
    return ranges, unbounded

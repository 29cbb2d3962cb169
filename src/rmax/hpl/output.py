"""Parsing HPL's text output, as any HPL output parser would: the result lines
(`WR11C2R4  N NB P Q Time Gflops`) and the residual line that follows each.
Used for xhpl and hpcc's HPL section; rmax-hpl's own tests are read from its JSON."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rmax.hpl.result import HplTest

# The code is W, the mapping (R|C), DEPTH, BCAST, RFACT, NDIV, PFACT, NBMIN; the
# reference prints the numbers with %d, so DEPTH, NDIV and NBMIN may have several
# digits while BCAST (0-5) has one: DEPTH is every digit before BCAST's.
CODE = re.compile(r"W([RC])(\d+)(\d)([LCR])(\d+)([LCR])(\d+)")
RESULT = re.compile(rf"^(?P<code>{CODE.pattern})\s+(?P<n>\d+)\s+(?P<nb>\d+)\s+(?P<p>\d+)\s+(?P<q>\d+)"
                    r"\s+(?P<time>[0-9.]+)\s+(?P<gflops>[0-9.eE+\-]+)\s*$")
RESIDUAL = re.compile(r"^\|\|Ax-b\|\|_oo/\(eps\*\(\|\|A\|\|_oo\*\|\|x\|\|_oo\+\|\|b\|\|_oo\)\*N\)=\s*([0-9.eE+\-naNifINF]+)"
                      r"\s*\.+\s*(PASSED|FAILED)")


@dataclass
class HplResult:
    code: str
    n: int
    nb: int
    p: int
    q: int
    time: float
    gflops: float
    residual: float | None = None
    verdict: str | None = None   # PASSED, FAILED, or None when the check was skipped

    @property
    def variant(self) -> dict:
        """The parameters encoded in the result code."""
        pmap, depth, bcast, rfact, ndiv, pfact, nbmin = CODE.fullmatch(self.code).groups()
        return {"pmap": "RC".index(pmap), "depth": int(depth), "bcast": int(bcast), "rfact": "LCR".index(rfact),
                "ndiv": int(ndiv), "pfact": "LCR".index(pfact), "nbmin": int(nbmin)}


def parse_output(text: str) -> list[HplResult]:
    results: list[HplResult] = []
    for line in text.splitlines():
        line = line.strip()
        m = RESULT.match(line)
        if m:
            code, n, nb, p, q, t, g = m.group("code", "n", "nb", "p", "q", "time", "gflops")
            results.append(HplResult(code, int(n), int(nb), int(p), int(q), float(t), float(g)))
            continue
        m = RESIDUAL.match(line)
        if m and results and results[-1].verdict is None:
            results[-1].residual = float(m.group(1))
            results[-1].verdict = m.group(2)
    return results


def parse_tests(text: str) -> list[HplTest]:
    """The tests of an HPL text output (xhpl, hpcc), their variant decoded from the T/V code."""
    return [HplTest(r.code, r.n, r.nb, r.p, r.q, **r.variant, time_s=r.time, gflops=r.gflops, residual=r.residual,
                    verdict=r.verdict or "not checked") for r in parse_output(text)]

"""The verdicts as a JUnit XML file, which CI systems read: a test suite per node, a test case per
node and metric (its reference and fleet verdicts together), a failure for each failed metric with
its verdict as the message, and an undecided one skipped, with what would decide it. The element
and attribute names are those of the JUnit XML schema (testsuites, testsuite, testcase, failure,
skipped; tests, failures, errors, skipped counts)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from rmax.accept.verdicts import Verdict
from rmax.textfile import write_atomic


def cases(verdicts: list[Verdict]) -> dict[str, dict[str, list[Verdict]]]:
    """node -> metric -> its verdicts, in order."""
    out: dict[str, dict[str, list[Verdict]]] = {}
    for v in verdicts:
        out.setdefault(v.node, {}).setdefault(v.metric, []).append(v)
    return out


def _xml_text(s: str) -> str:
    """What XML 1.0 may hold: control characters (but tab and newline) become '?'."""
    return "".join(c if c in "\t\n" or ord(c) >= 32 else "?" for c in s)


def render(verdicts: list[Verdict], name: str, seconds: float = 0.0) -> str:
    root = ET.Element("testsuites", name=_xml_text(name))
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for node, metrics in sorted(cases(verdicts).items()):
        suite = ET.SubElement(root, "testsuite", name=_xml_text(node))
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for metric, vs in sorted(metrics.items()):
            case = ET.SubElement(suite, "testcase", name=_xml_text(metric), classname=_xml_text(f"rmax.accept.{node}"),
                                 time="0")
            counts["tests"] += 1
            failed = [v for v in vs if v.state == "fail"]
            if failed:
                counts["failures"] += 1
                f = ET.SubElement(case, "failure", message=_xml_text(failed[0].why), type="fail")
                f.text = _xml_text("\n".join(f"{v.against}: {v.why}" for v in failed))
            elif any(v.state == "undecided" for v in vs):
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=_xml_text(
                    "; ".join(f"{v.against}: {v.why}" for v in vs if v.state == "undecided")))
            out = ET.SubElement(case, "system-out")
            out.text = _xml_text("\n".join(f"{v.against}: {v.why}" for v in vs))
        suite.set("tests", str(counts["tests"]))
        suite.set("failures", str(counts["failures"]))
        suite.set("errors", "0")
        suite.set("skipped", str(counts["skipped"]))
        suite.set("time", "0")
        for k in totals:
            totals[k] += counts[k]
    for k, v in totals.items():
        root.set(k, str(v))
    root.set("errors", "0")
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(path: str | Path, verdicts: list[Verdict], name: str, seconds: float = 0.0) -> Path:
    return write_atomic(path, render(verdicts, name, seconds), "the JUnit file")

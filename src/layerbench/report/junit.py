"""JUnit XML of a gated comparison, for CI systems: one test case per comparison, a failure per breach.

The shape is the one Jenkins, GitLab and GitHub's test reporters read (the schema tests/data/junit/
junit-10.xsd describes, which tests/unit/test_gates.py validates against): ``<testsuites>`` holding one
``<testsuite>`` named after the two runs, a ``<testcase>`` per cell compared (its class the metric, its name
the cell's label) whose text says the ratio, interval and verdict. A comparison that breached the gate
has a ``<failure type="regression">``; one without an interval (too few trials) is ``<skipped>``, since
it was not decided, never passed.
"""

from __future__ import annotations

import socket
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

from layerbench.analysis.compare import Comparison
from layerbench.analysis.gates import Breach, Gate
from layerbench.analysis.verdicts import shown


def junit_xml(suite: str, rows: Sequence[Comparison], broken: Sequence[Breach], gate: Gate) -> ET.ElementTree:
    """The document for ``rows`` (every comparison) of which ``broken`` breached ``gate``."""
    why = {id(b.comparison): b.why for b in broken}
    skipped = [r for r in rows if r.ratio.ci_low != r.ratio.ci_low]
    counts = {"tests": str(len(rows)), "failures": str(len(broken)), "errors": "0"}
    root = ET.Element("testsuites", {"name": "layerbench", **counts})
    attrs = {"name": suite, **counts, "skipped": str(len(skipped)), "time": "0"}
    attrs["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    node = ET.SubElement(root, "testsuite", {**attrs, "hostname": socket.gethostname()})
    props = ET.SubElement(node, "properties")
    for name, value in (("fail-if-slower", gate.slower), ("fail-if-faster", gate.faster)):
        if value is not None:
            ET.SubElement(props, "property", {"name": name, "value": f"{value:.4g}"})
    for r in rows:
        case = ET.SubElement(node, "testcase", {"classname": f"layerbench.{r.metric}", "name": r.label, "time": "0"})
        said = f"{r.metric} B/A {shown(r.verdict, r.ratio, note=r.note)}, verdict {r.verdict or 'none'}"
        if id(r) in why:
            ET.SubElement(case, "failure", {"message": why[id(r)], "type": "regression"}).text = said
        elif r in skipped:
            ET.SubElement(case, "skipped", {"message": r.note or "no interval"})
        ET.SubElement(case, "system-out").text = f"{said}; trials A={r.n_a} B={r.n_b}"
    ET.indent(root)
    return ET.ElementTree(root)


def write(path: Path, suite: str, rows: Sequence[Comparison], broken: Sequence[Breach], gate: Gate) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    junit_xml(suite, rows, broken, gate).write(path, encoding="utf-8", xml_declaration=True)

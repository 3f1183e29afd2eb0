"""The job-file corpus (tests/data/jobfiles): each file judged as ``layerbench run SPEC --dry-run`` judges
it, natively and in a Docker volume, through the library call the dry run makes (``matrix.expand`` with
the footprint and fio's reading of the file); dry-run itself starts no daemon (the host probe asks
``dockerd --version``), but a Python process per file would take minutes."""

from __future__ import annotations

import collections
import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from layerbench.spec.feasibility import HostCaps
from layerbench.spec.load import validate
from layerbench.spec.matrix import expand
from layerbench.workloads import footprint

CORPUS = Path(__file__).parent / "data" / "jobfiles"
PLACES = {
    "native": {"filesystem": "ext4", "engine": "native", "placement": "host-dir"},
    "docker-volume": {"filesystem": "ext4", "engine": "docker:overlay2", "placement": "volume"},
}


def corpus() -> list[Path]:
    """The corpus (layerbench/ holds the integration tests' own files)."""
    return sorted(p for p in CORPUS.glob("*/*.fio") if p.parent.name != "layerbench")


@dataclass
class Tally:
    accepted: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # "file @ place" → reason
    tracebacks: dict[str, str] = field(default_factory=dict)

    def by_reason(self) -> collections.Counter[str]:
        return collections.Counter(reason_kind(r) for r in self.refused.values())

    def summary(self) -> str:
        lines = [
            f"{len(self.accepted) + len(self.refused) + len(self.tracebacks)} judgements: "
            f"{len(self.accepted)} accepted, {len(self.refused)} refused, {len(self.tracebacks)} tracebacks"
        ]
        lines += [f"  {n:4d}  {kind}" for kind, n in self.by_reason().most_common()]
        return "\n".join(lines)


def reason_kind(reason: str) -> str:
    """A refusal's kind, for counting: the reason without its file's particulars."""
    reason = re.sub(r"^\[[^\]]*\]: ", "", reason)
    if "not loadable" in reason:  # fio's words, as it parsed the file or when asked about the engine
        return "its engine does not load in this fio"
    if "is not given: set env:" in reason:
        return "a ${VARIABLE} it uses is not given (env:)"
    if reason.startswith("fio refuses it"):
        if "${" in reason:
            return "fio refuses it: an environment variable it expects is unset"
        if "Bad option" in reason:
            return "fio refuses it: an option this fio does not know"
        return "fio refuses it: a value this fio does not take"
    if reason.startswith("its files need"):
        return "its files do not fit on the device"
    if "runs a program as root" in reason:
        return "runs a program as root"
    if "names a path outside the placement" in reason:
        return reason.split("=")[0] + "=... names a path outside the placement"
    match = re.match(r"(ioengine=[\w-]+|zonemode=zbd|size=\S+%)", reason)
    return match.group(1) if match else reason.split(";")[0][:60]


def judge(paths: list[Path], caps: HostCaps, device_size: str = "16GiB") -> Tally:
    """Each file at each placement: accepted, or refused with its one-line reason, or a traceback."""
    tally = Tally()
    for path in paths:
        name = str(path.relative_to(CORPUS))
        data = {
            "name": "corpus",
            "device": {"kind": "loop", "size": device_size},
            "stacks": list(PLACES.values()),
            "workloads": [{"name": "job", "job_file": str(path)}],
        }
        try:
            matrix = expand(
                validate(data), caps, files=footprint.files, usable_share=footprint.USABLE_SHARE,
                reads=footprint.refused,
            )  # fmt: skip
        except Exception:
            tally.tracebacks[name] = traceback.format_exc()
            continue
        for place, stack in PLACES.items():
            key = f"{name} @ {place}"
            cells = [c for c in matrix.cells if c.stack.engine.kind == stack["engine"].split(":")[0]]
            refused = [r for r in matrix.refused if r.cell.stack.engine.kind == stack["engine"].split(":")[0]]
            if cells:
                tally.accepted.append(key)
            else:
                assert len(refused) == 1, key
                tally.refused[key] = refused[0].reason
    return tally

"""A user's YCSB workload file (YCSB's own format, as its workloads/workloada): read and checked before
anything runs.

The file is YCSB's: ``key=value`` lines (``key:value`` too, as Java's Properties reads them), ``#`` and
``!`` comments. This pure reader sits in the spec layer so a spec with a broken file is refused when it is
loaded, each error naming its line; the client itself reads the file at run time (``-P``), with what
layerbench must set given after it (``-p``, which YCSB lets win). Java's escapes and continued lines are
refused rather than read differently from the way Java would read them: what layerbench checked is what
YCSB runs.
"""

from __future__ import annotations

from collections.abc import Mapping

CORE_WORKLOAD = "site.ycsb.workloads.CoreWorkload"
# YCSB moved from com.yahoo.ycsb to site.ycsb in 0.14; files written before still name the old package.
LEGACY_PACKAGE, PACKAGE = "com.yahoo.ycsb.", "site.ycsb."
# The workload classes of YCSB 0.17.0 whose operations layerbench's bindings carry out (read, update,
# insert, scan, delete): CoreWorkload and its subclass that keeps the data set's size constant.
WORKLOAD_CLASSES = frozenset({CORE_WORKLOAD, "site.ycsb.workloads.ConstantOccupancyWorkload"})
# CoreWorkload's own defaults (YCSB 0.17.0) for what layerbench reads of a file: a file that leaves one out
# runs with these, so the feasibility rules must count with them too.
DEFAULTS: dict[str, str] = {
    "fieldcount": "10",
    "fieldlength": "100",
    "readproportion": "0.95",
    "updateproportion": "0.05",
    "insertproportion": "0",
    "scanproportion": "0",
    "readmodifywriteproportion": "0",
    "requestdistribution": "uniform",
}
PROPORTIONS = ("readproportion", "updateproportion", "insertproportion", "scanproportion", "readmodifywriteproportion")
WHOLE = ("recordcount", "fieldcount", "fieldlength", "operationcount")
# The client reports to a file instead of stdout with these, and layerbench reads its stdout.
REFUSED = {"exportfile": "layerbench reads YCSB's report from its output: remove exportfile"}


class WorkloadFileError(ValueError):
    """A workload file layerbench cannot run as it is (a ValueError: pydantic reports it against the field)."""


def parse(text: str, source: str) -> dict[str, str]:
    """The file's properties, the last of a key winning (as Java's Properties); an error names the line."""
    props: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        key, value = _pair(line, f"{source}, line {number}")
        props[key] = value
    return props


def _pair(line: str, where: str) -> tuple[str, str]:
    if "\\" in line:
        raise WorkloadFileError(f"{where}: a backslash (an escape or a continued line): write the value plainly")
    cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
    key, value = line[:cut].strip(), line[cut + 1 :].strip()
    if cut < 0 or not key or any(c.isspace() for c in key):
        raise WorkloadFileError(f"{where}: not key=value: {line!r}")
    return key, value


def checked(props: Mapping[str, str], source: str) -> dict[str, str]:
    """``props`` if YCSB 0.17.0 can run them as layerbench reads them: a workload class it has, whole numbers
    and proportions where CoreWorkload parses them, no report to a file."""
    workload_class(props, source)
    for key, why in REFUSED.items():
        if key in props:
            raise WorkloadFileError(f"{source}: {key}: {why}")
    for key in WHOLE:
        if key in props and not (props[key].isdigit() and int(props[key]) < 2**31):
            raise WorkloadFileError(f"{source}: {key}={props[key]}: YCSB reads a whole number (0 to 2^31-1)")
    for key in PROPORTIONS:
        if key in props and not _proportion(props[key]):
            raise WorkloadFileError(f"{source}: {key}={props[key]}: a proportion, from 0 to 1")
    return dict(props)


def _proportion(value: str) -> bool:
    try:
        return 0 <= float(value) <= 1
    except ValueError:
        return False


def workload_class(props: Mapping[str, str], source: str) -> tuple[str, str | None]:
    """The workload class YCSB 0.17.0 runs for this file, and why it differs from the file's (None: it does not).

    A class of the old package (``com.yahoo.ycsb.*``, before 0.14) is mapped to its new name with a notice;
    a file without one runs CoreWorkload, the class every YCSB workload file names; any other is refused."""
    named = props.get("workload")
    if named is None:
        return CORE_WORKLOAD, f"the file names no workload class: {CORE_WORKLOAD}"
    wanted = PACKAGE + named.removeprefix(LEGACY_PACKAGE) if named.startswith(LEGACY_PACKAGE) else named
    if wanted not in WORKLOAD_CLASSES:
        raise WorkloadFileError(
            f"{source}: workload={named}: YCSB 0.17.0 as layerbench runs it has {' or '.join(sorted(WORKLOAD_CLASSES))}"
        )
    return wanted, (f"{named} is YCSB's name before 0.14: {wanted}" if wanted != named else None)


def effective(props: Mapping[str, str]) -> dict[str, str]:
    """What CoreWorkload runs with: the file over its defaults."""
    return DEFAULTS | dict(props)


def inserts(props: Mapping[str, str]) -> bool:
    """Whether the run phase inserts new keys (CoreWorkload's insertproportion)."""
    return float(effective(props)["insertproportion"]) > 0

"""A trial on a device whose cell names a state (a Ceph cluster degraded or recovering, stack/target.TrialStates):
the state entered before the trial, sampled during it (run/measure/state_sampler.py: monitor points), read and
left after it, recorded with the trial (``info.cluster``) with its checks; and a workload that verifies what it
wrote (fio's ``verify``) reads every block back once the cluster is healthy again, so a block lost across the
fault fails the trial with fio's own words (the offset)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from layerbench.errors import LayerbenchError
from layerbench.records.trial import TrialRecord
from layerbench.run.kinds.single import Outcome, record
from layerbench.run.measure.state_sampler import StateSampler
from layerbench.run.schedule import Trial
from layerbench.stack.target import Target, TrialStates
from layerbench.workloads import fio, registry

STATE_ERRORS = (LayerbenchError, OSError)
VERIFY_LIMIT_S = 1800.0  # reading back the whole region after recovery


def states_of(target: object) -> TrialStates | None:
    return target.device.states if isinstance(target, Target) else None


def in_state(target: object, trial: Trial, run: Callable[[], TrialRecord]) -> TrialRecord:
    """``run`` (the trial) inside its device's state, where it has one; else ``run`` as it is."""
    states = states_of(target)
    if states is None:
        rec = run()
        return read_back(target, trial, rec) if isinstance(target, Target) and rec.status == "ok" else rec
    started = time.time()
    try:
        states.enter()
    except STATE_ERRORS as exc:
        return record(trial, started, Outcome(category="state-error", stderr=f"entering the cell's state: {exc}"))
    with StateSampler(states) as sampler:
        rec = run()
    rec = replace(rec, monitor=[*rec.monitor, *sampler.points])
    try:
        cluster, checks = states.leave()
    except STATE_ERRORS as exc:
        return _failed(rec, "state-error", f"leaving the cell's state: {exc}")
    rec = replace(rec, info=replace(rec.info, cluster=cluster), checks=[*rec.checks, *checks])
    return read_back(target, trial, rec) if rec.status == "ok" else rec


def read_back(target: Target, trial: Trial, rec: TrialRecord) -> TrialRecord:
    """A verify workload's blocks read back now the cluster has recovered (fio's ``--verify_only`` replays the
    writes' offsets and checks each block; without ``--do_verify=1`` it reads nothing and says nothing)."""
    argv = registry.of(trial.cell.workload).read_back_argv(trial.cell.workload, rec.argv)
    if argv is None:
        return rec
    done = target.run(argv, VERIFY_LIMIT_S)
    if done.rc != 0:
        said = fio.verify_error(done.stdout + done.stderr) or done.stderr.strip()[-2000:]
        return _failed(rec, "verify-failed", f"reading back the trial's blocks after it: {said}")
    read = fio.verified_bytes(done.stdout)
    if read == 0:  # fio's read-back can succeed having read nothing (without --do_verify=1): never a pass
        return _failed(rec, "verify-failed", "reading back the trial's blocks after it: fio read nothing")
    said = f"{read} bytes read back and verified"
    if rec.info.cluster is None:
        return replace(rec, info=replace(rec.info, verified=said))
    return replace(rec, info=replace(rec.info, cluster=replace(rec.info.cluster, verified_after=said)))


def _failed(rec: TrialRecord, category: str, why: str) -> TrialRecord:
    return replace(rec, status="failed", category=category, stderr=f"{why}\n{rec.stderr}".strip(), samples=[])

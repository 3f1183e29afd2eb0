"""A sample of the job-file corpus (the whole of it: tests/long/test_jobfile_corpus.py), one file per kind
of judgement, natively and in a Docker volume, as `run --dry-run` judges them (about 4 s)."""

from __future__ import annotations

import pytest

from layerbench.spec.feasibility import HostCaps
from tests.jobfile_corpus import CORPUS, PLACES, judge, reason_kind

pytestmark = pytest.mark.requires_fio

EXPECTED = {
    "corpus/rand-read.fio": None,
    "corpus/null-engine.fio": None,  # no files: no space, though it asks for size=
    "corpus/net-loopback.fio": None,
    "corpus/arithmetic.fio": None,  # fio's $mb_memory and its arithmetic
    "corpus/exec-program.fio": "runs a program as root",
    "corpus/rbd-pool.fio": "ioengine=rbd",
    "corpus/pmem.fio": "ioengine=libpmem",
    "corpus/whole-device.fio": "filename=... names a path outside the placement",
    "corpus/zoned.fio": "zonemode=zbd",
    "corpus/too-big.fio": "its files do not fit on the device",
    "corpus/unknown-option.fio": "fio refuses it: an option this fio does not know",
    "corpus/bad-value.fio": "fio refuses it: a value this fio does not take",
    "corpus/http-webdav.fio": "its engine does not load in this fio",
    "perf-suite/random_reads.fio": "a ${VARIABLE} it uses is not given (env:)",
    "corpus/spdk-bdev.fio": "its engine does not load in this fio",
}


def test_a_sample_is_accepted_or_refused_each_for_its_reason(full_caps: HostCaps) -> None:
    tally = judge([CORPUS / name for name in EXPECTED], full_caps)
    assert not tally.tracebacks

    for name, kind in EXPECTED.items():
        for place in PLACES:
            key = f"{name} @ {place}"
            if kind is None:
                assert key in tally.accepted, tally.refused.get(key)
            else:
                assert reason_kind(tally.refused[key]) == kind, tally.refused[key]

"""A sample of the job-file corpus (the whole of it: tests/long/test_jobfile_corpus.py), one file per kind
of judgement, natively and in a Docker volume, as `run --dry-run` judges them (about 4 s)."""

from __future__ import annotations

import pytest

from layerbench.spec.feasibility import HostCaps
from tests.jobfile_corpus import CORPUS, PLACES, judge, reason_kind

pytestmark = pytest.mark.requires_fio

EXPECTED = {
    "fio-examples/fio-rand-read.fio": None,
    "fio-examples/null.fio": None,  # no files: no space, though it asks for size=
    "fio-examples/netio.fio": None,
    "fio-examples/exec.fio": "runs a program as root",
    "fio-examples/rbd.fio": "ioengine=rbd",
    "fio-examples/libpmem.fio": "ioengine=libpmem",
    "fio-examples/jesd219.fio": "filename=... names a path outside the placement",
    "fio-examples/zbd-seq-read.fio": "zonemode=zbd",
    "fio-examples/enospc-pressure.fio": "its files do not fit on the device",
    "fio-examples/sequence-distribution.fio": "fio refuses it: an option this fio does not know",
    "fio-examples/http-webdav.fio": "its engine does not load in this fio",
    "openzfs/random_reads.fio": "a ${VARIABLE} it uses is not given (env:)",
    "spdk/app_fio_bdev_full_bench.fio": "its engine does not load in this fio",
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

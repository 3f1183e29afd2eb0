"""Every job file of the corpus (tests/data/jobfiles: our own files in the shapes users write them, a
performance suite's among them), natively and in a Docker volume on this host: accepted, or refused with a
one-line reason; never a traceback. The counts are printed and written to tests/long/jobfile-corpus.txt
(about 10 s: fio reads each file once, about 0.2 s a file on this 2-core host)."""

from __future__ import annotations

from pathlib import Path

import pytest

from layerbench import proc
from layerbench.stack.capabilities import probe
from tests.jobfile_corpus import PLACES, corpus, judge

pytestmark = [pytest.mark.requires_fio, pytest.mark.timeout(300)]

RECORD = Path(__file__).with_name("jobfile-corpus.txt")


def test_every_job_file_is_accepted_or_refused_with_a_reason(tmp_path: Path) -> None:
    caps = probe(proc.run, tmp_path)  # as `run --dry-run` does: binaries and versions, no daemon started
    files = corpus()
    tally = judge(files, caps)
    summary = f"{len(files)} job files x {len(PLACES)} placements\n{tally.summary()}\n"
    print(summary)
    RECORD.write_text(summary)
    assert not tally.tracebacks, next(iter(tally.tracebacks.values()))
    for key, reason in tally.refused.items():
        assert reason and "\n" not in reason and "Traceback" not in reason, key
    assert len(tally.accepted) + len(tally.refused) == len(files) * len(PLACES)


# What the suite's harness would export before it runs these files (its variables are those of filesystem
# performance suites such as OpenZFS's).
SUITE_ENV = {
    "RUNTIME": "10", "BLOCKSIZE": "128k", "SYNC_TYPE": "0", "DIRECT": "0", "NUMJOBS": "4", "FILESIZE": "64m",
    "FILE_SIZE": "64m", "NUMSNAPS": "0", "RANDSEED": "1", "PERF_RANDSEED": "1", "COMPPERCENT": "66",
    "PERF_COMPPERCENT": "66", "COMPCHUNK": "4096", "PERF_COMPCHUNK": "4096", "DIRECTORY": "/mnt/suite",
}  # fmt: skip


def test_job_files_reading_the_environment_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in SUITE_ENV.items():
        monkeypatch.setenv(key, value)
    files = [p for p in corpus() if p.parent.name == "perf-suite"]
    tally = judge(files, probe(proc.run, tmp_path))
    print(tally.summary())
    # directory= is the placement's; the reads use files mkfiles.fio laid out before them in the suite,
    # and give no size of their own: alone, fio would stop with "you need to specify size=".
    writers = {"mkfiles.fio", "random_writes.fio", "sequential_writes.fio"}
    assert {k.split(" @ ")[0] for k in tally.accepted} == {f"perf-suite/{w}" for w in writers}
    assert all("it gives no size" in reason for reason in tally.refused.values()), tally.refused

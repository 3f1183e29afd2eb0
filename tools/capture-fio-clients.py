"""Capture fio's client/server output for the parser tests: python tools/capture-fio-clients.py DIR OUT [N [JOB]].

Starts N fio servers (default 4) on Unix sockets in a private directory, writes each a job file with
``workloads/fio_clients.job_text`` (a 4k random read, QD4, 1 s, its own 16 MiB file in DIR), runs the one
client layerbench runs (``client_argv``), and copies its stdout and the IOPS logs it wrote into OUT
(``clients-native-<N>.json``, ``clients-native-<N>.c<i>.iops.log``). With JOB, a user's job file, each
server runs it as a stack with clients does (``fio_clients.job_file_text``, ``size: 16MiB`` given, DIR shared
by the clients): ``clients-jobfile-<N>.json``, ``clients-jobfile-<N>.c<i>.iops.<k>.log``. Run it under the
machine lock.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from layerbench.spec.models import FioWorkload
from layerbench.workloads import fio, fio_clients

WORKLOAD = FioWorkload(name="rr", rw="randread", bs=4096, iodepth=4, size=16 * 2**20, runtime_s=1, ramp_s=0.2)
DEADLINE_S = 60


@contextmanager
def servers(n: int) -> Iterator[Path]:
    """N fio servers on Unix sockets in a private directory (yielded), each stopped by its PID after."""
    with tempfile.TemporaryDirectory(prefix="lbfc-") as tmp:
        cwd = Path(tmp)
        started = [
            subprocess.Popen(fio_clients.server_argv(fio_clients.socket_name(i)), cwd=cwd, start_new_session=True)
            for i in range(n)
        ]
        try:
            deadline = time.monotonic() + 10
            while not all((cwd / fio_clients.socket_name(i)).exists() for i in range(n)):
                if time.monotonic() > deadline:
                    raise SystemExit("fio's servers made no sockets within 10 s")
                time.sleep(0.05)
            yield cwd
        finally:
            for s in started:
                s.send_signal(signal.SIGTERM)
                s.wait(10)


def clients(cwd: Path, jobs: list[str]) -> tuple[list[str], str]:
    """The one client layerbench runs, over every server: its argv and its output."""
    argv = fio_clients.client_argv([fio_clients.socket_name(i) for i in range(len(jobs))], jobs)
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=DEADLINE_S)
    if done.returncode != 0:
        raise SystemExit(done.stderr)
    return argv, done.stdout


def main(data_dir: Path, out: Path, n: int, job_file: str | None = None) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    if job_file:
        return main_job_file(data_dir, out, n, FioWorkload(name="own", job_file=job_file, size=16 * 2**20))
    try:
        with servers(n) as cwd:
            jobs = []
            for i in range(n):
                name = fio_clients.data_file(str(data_dir), WORKLOAD, i, shared=True)
                prep = fio_clients.retarget(fio.precondition_argv(int(WORKLOAD.size), str(data_dir), False), name)
                subprocess.run(prep, check=True, capture_output=True, timeout=DEADLINE_S)
                job = cwd / f"c{i}.fio"
                job.write_text(fio_clients.job_text(WORKLOAD, name))
                jobs.append(str(job))
            argv, stdout = clients(cwd, jobs)
            (out / f"clients-native-{n}.json").write_text(stdout)
            for i in range(n):
                for log in fio_clients.log_files(i, WORKLOAD.numjobs):
                    shutil.copy(cwd / log, out / f"clients-native-{n}.c{i}.iops.log")
            print(" ".join(argv))
    finally:
        for i in range(n):
            Path(fio_clients.data_file(str(data_dir), WORKLOAD, i, shared=True)).unlink(missing_ok=True)


def main_job_file(data_dir: Path, out: Path, n: int, w: FioWorkload) -> None:
    try:
        with servers(n) as cwd:
            jobs = []
            for i in range(n):
                job = cwd / f"c{i}.fio"
                job.write_text(fio_clients.job_file_text(w, str(data_dir), i, shared=True))
                jobs.append(str(job))
            argv, stdout = clients(cwd, jobs)
            (out / f"clients-jobfile-{n}.json").write_text(stdout)
            (out / f"clients-jobfile-{n}.c0.fio").write_text(Path(jobs[0]).read_text())
            for i in range(n):
                for k, log in enumerate(fio_clients.log_files(i, fio_clients.job_count(w)), 1):
                    shutil.copy(cwd / log, out / f"clients-jobfile-{n}.c{i}.iops.{k}.log")
            print(" ".join(argv))
    finally:
        for f in data_dir.glob("*.c[0-9]*.*"):  # fio names them after its client, then filename_format
            f.unlink()


if __name__ == "__main__":
    args = sys.argv[1:]
    main(Path(args[0]), Path(args[1]), int(args[2]) if len(args) > 2 else 4, args[3] if len(args) > 3 else None)

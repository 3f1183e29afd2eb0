"""Capture fio 3.33 output and latency logs of two small sweeps, each point a 1 s run on the root ext4."""

import subprocess
import sys
import time
from pathlib import Path

from layerbench.spec.matrix import sweep_points
from layerbench.spec.models import FioWorkload
from layerbench.workloads import fio, fio_log

OUT = Path(sys.argv[1])
WORK = Path("/var/tmp/lbcap")
SPEC = [
    FioWorkload(
        name="RR",
        rw="randread",
        bs=4096,
        size=32 * 2**20,
        runtime_s=1,
        ramp_s=0,
        sweep={"iodepth": (1, 4, 16), "numjobs": (1, 2)},
    ),
    FioWorkload(
        name="SR", rw="read", iodepth=4, size=32 * 2**20, runtime_s=1, ramp_s=0, sweep={"bs": (4096, 65536, 262144)}
    ),
]
points = sweep_points(SPEC)
for w, point in points.values():
    prefix = fio_log.prefix(str(WORK), w.name)
    argv = fio.argv(w, str(WORK), False, lat_log=prefix)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True)
    (OUT / f"{w.name}.json").write_text(done.stdout)
    (OUT / f"{w.name}.lat.log").write_text("".join(Path(f).read_text() for f in fio_log.files(prefix, w.numjobs)))
    print(w.name, point.values, " ".join(argv))
    time.sleep(1)

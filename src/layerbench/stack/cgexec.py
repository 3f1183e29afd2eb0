"""Run a command inside cgroups: ``python -I cgexec.py PROCS_FILE... -- COMMAND...``.

Writes its own PID into each ``cgroup.procs`` file, then execs the command, so the command and every
process it forks start inside the cgroups (moving a PID after it started would race with its forks).
Run as a script, by path, so that it imports nothing of layerbench and starts in milliseconds.
"""

from __future__ import annotations

import os
import sys


def main(args: list[str]) -> None:
    if "--" not in args:
        sys.exit("usage: cgexec.py PROCS_FILE... -- COMMAND...")
    split = args.index("--")
    procs, command = args[:split], args[split + 1 :]
    if not command:
        sys.exit("cgexec.py: no command after --")
    for path in procs:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])

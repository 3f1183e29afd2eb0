"""The guest's command channel, both ends for real: the agent runs as a process of this host (in a guest
it is the same file under the guest's python3), and ``Guest.run`` talks to it through a share folder."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from layerbench.errors import ToolError
from layerbench.proc import FakeRunner
from layerbench.run.kinds.single import category
from layerbench.stack.engines.vm import guest_agent
from layerbench.stack.engines.vm.guest import GONE, GONE_RC, PIDFILE, Guest, reclaim
from layerbench.stack.ledger import Resource


@pytest.fixture
def guest(tmp_path: Path) -> Iterator[Guest]:
    share = tmp_path / "share"
    share.mkdir()
    agent = subprocess.Popen([sys.executable, "-I", guest_agent.__file__, str(share)])
    g = Guest(agent, tmp_path, "tcg")
    try:
        g.wait_ready(120)
        yield g
    finally:
        g.stop()


def test_a_command_comes_back_with_its_code_and_both_streams(guest: Guest) -> None:
    done = guest.run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"], 60)
    assert (done.rc, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert guest.facts["cpus"]


def test_arguments_reach_the_program_as_they_are_never_through_a_shell(guest: Guest) -> None:
    word = "$HOME; echo injected `id` 'quoted' \"x\""
    assert guest.run(["echo", word], 60).stdout == word + "\n"


def test_commands_run_in_the_order_they_were_asked(guest: Guest) -> None:
    outputs = [guest.run(["echo", str(i)], 60).stdout for i in range(12)]
    assert outputs == [f"{i}\n" for i in range(12)]


def test_a_command_past_its_timeout_is_killed_and_reported_as_one(guest: Guest) -> None:
    with pytest.raises(ToolError) as raised:
        guest.run(["sleep", "600"], 0.5)
    assert raised.value.rc is None and "timed out" in raised.value.stderr
    assert guest.run(["echo", "still serving"], 60).stdout == "still serving\n"


def test_a_missing_program_is_the_tools_failure_not_the_channels(guest: Guest) -> None:
    done = guest.run(["no-such-program-here"], 60)
    assert done.rc == 127 and category(done.rc, done.stderr) == "tool-error"


def test_a_file_put_in_the_share_is_readable_by_the_guests_commands(guest: Guest, tmp_path: Path) -> None:
    path = guest.put("job.fio", "[global]\n")
    assert path == "/mnt/lbshare/files/job.fio"
    assert (tmp_path / "share" / "files" / "job.fio").read_text() == "[global]\n"


def test_a_guest_gone_answers_every_later_command_as_the_engines_failure(guest: Guest) -> None:
    guest.process.kill()
    guest.process.wait()
    done = guest.run(["echo", "x"], 60)
    assert done.rc == GONE_RC and GONE in done.stderr
    assert category(done.rc, done.stderr) == "engine-error"


def test_stop_ends_the_agent(guest: Guest) -> None:
    guest.stop()
    assert guest.process.returncode == 0


def test_cleanup_finds_a_guest_the_ledger_never_got_the_pid_of(tmp_path: Path) -> None:
    """A run killed between starting qemu and recording its PID: the PID file qemu wrote finds it, and only
    a process whose command line names that file is killed."""
    pidfile = tmp_path / PIDFILE
    stand_in = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", "-pidfile", str(pidfile)], start_new_session=True
    )
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        pidfile.write_text(f"{bystander.pid}\n")
        reclaim(Resource(1, "run", 1, "vm", str(tmp_path), {}), FakeRunner())
        assert bystander.poll() is None  # its command line does not name the file: not ours
        pidfile.parent.mkdir()  # reclaim removed the guest's directory
        pidfile.write_text(f"{stand_in.pid}\n")
        reclaim(Resource(1, "run", 1, "vm", str(tmp_path), {}), FakeRunner())
        assert stand_in.wait(60) == -9 and not tmp_path.exists()
    finally:
        for p in (stand_in, bystander):
            p.kill()
            p.wait()

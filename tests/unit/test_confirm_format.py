"""A block device is formatted only once its owner agreed, on the command line or at a prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from layerbench.cli.app import app
from layerbench.cli.running import confirm_formatting
from layerbench.errors import PrerequisiteError
from layerbench.spec import load
from layerbench.spec.feasibility import HostCaps
from layerbench.spec.matrix import expand

SPEC = """
name: theirs
device: {kind: block, path: /dev/lb-test-disk}
stacks: [{filesystem: ext4}]
workloads: [{name: RR, rw: randread}]
"""


def test_refused_unless_agreed_and_nothing_is_created(tmp_path: Path) -> None:
    spec = tmp_path / "theirs.yaml"
    spec.write_text(SPEC)
    db, work = tmp_path / "r.db", tmp_path / "work"
    args = ["run", str(spec), "--db", str(db), "--work-dir", str(work), "--state-dir", str(tmp_path / "s")]
    result = CliRunner().invoke(app, args)  # stdin is no terminal: nobody to ask
    assert result.exit_code == 3, result.output
    assert "/dev/lb-test-disk would be formatted" in result.output
    assert "--format-device /dev/lb-test-disk" in result.output
    assert not db.exists() and not work.exists()


def test_the_command_line_agrees_by_path_or_symlink(full_caps: HostCaps, tmp_path: Path) -> None:
    matrix = expand(load.parse(SPEC), full_caps)
    confirm_formatting(matrix, ["/dev/lb-test-disk"])
    link = tmp_path / "disk"
    link.symlink_to("/dev/lb-test-disk")
    confirm_formatting(matrix, [str(link)])
    with pytest.raises(PrerequisiteError):
        confirm_formatting(matrix, ["/dev/some-other-disk"])
    confirm_formatting(expand(load.parse(SPEC.replace("kind: block, path: /dev/lb-test-disk", "kind: loop")),
                              full_caps), [])  # fmt: skip

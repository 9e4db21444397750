"""A Ctrl-C on any command ends it with one line and exit 130, as shells report a SIGINT: never
click's "Aborted!" and exit 1, which a script reads as "the memory has errors"."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from tests.interrupting import interrupted_at_import


@pytest.mark.parametrize(
    ("module", "args"),
    [
        ("remem.daemon.cli.memory", ["memory", "context"]),  # as the command's group loads
        ("remem.daemon.memory.store", ["memory", "context"]),  # as the command runs
        ("remem.daemon.sessions.catalog", ["sessions", "list"]),
        ("remem.daemon.cli.daemon", ["daemon", "status"]),
    ],
)
def test_ctrl_c_exits_130_with_one_line(tmp_path: Path, module: str, args: list[str]) -> None:
    env = {**os.environ, "REMEM_HOME": str(tmp_path / "home"), NO_DAEMON_ENV: "1", "HOME": str(tmp_path)}
    done = subprocess.run(
        interrupted_at_import(module, *args),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "remem: interrupted\n")

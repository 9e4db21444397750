"""A `--json` failure whose stdout cannot take it: said on stderr, or a closed pipe's exit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

_CLOSED_PIPE = 141  # 128 + SIGPIPE, as a shell reports a process its pipe's end closed


def _home_unusable(
    tmp_path: Path, stdout: int | None, preexec: object = None
) -> subprocess.CompletedProcess[str]:
    """`sessions list --json` with a home whose name is not UTF-8: `main` itself says it."""
    home = os.fsencode(tmp_path) + b"/\xff"
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", b"--home", home, "sessions", "list", "--json"],
        stdout=stdout, stderr=subprocess.PIPE, text=True, env=os.environ, timeout=120,
        preexec_fn=preexec,  # type: ignore[arg-type]
    )  # fmt: skip


@pytest.mark.parametrize("where", ["closed", "full"])
def test_a_json_failure_main_says_goes_to_stderr_when_stdout_cannot_take_it(
    tmp_path: Path, where: str
) -> None:
    """It ended in chained tracebacks: the JSON write failed inside `main`'s own handler."""
    if where == "closed":
        done = _home_unusable(tmp_path, None, preexec=lambda: os.close(1))
    else:
        with open("/dev/full", "w") as full:
            done = _home_unusable(tmp_path, full.fileno())
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("remem: remem's home ") and "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr


def test_a_json_failure_main_says_into_a_closed_pipe_exits_as_a_closed_pipe(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = _home_unusable(tmp_path, write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (_CLOSED_PIPE, "")

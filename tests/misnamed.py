"""Test helpers for names that are not UTF-8: a folder made with such a name (skipped where the
file system refuses one), and the real `remem` run with its output's bad bytes kept as `\\xNN`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def misnamed_folder(path: Path) -> Path:
    """`path`, made, whose name is not UTF-8; the test is skipped where the file system refuses it."""
    try:
        path.mkdir(parents=True)
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    return path


def remem_run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`remem ARGS` as its own process under `env`, its output decoded with bad bytes as `\\xNN`."""
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", *args],
        capture_output=True, text=True, errors="backslashreplace", env=env, timeout=120,
    )  # fmt: skip

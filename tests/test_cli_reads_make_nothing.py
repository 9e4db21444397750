"""A command that only reads makes nothing in the home, run without the daemon (decision 0487
for `settings.yml`): neither a home never made nor the folders of an empty one. Those two
commands built the memory store, whose construction laid the home out, without reading memory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home

READS = [("settings", "model"), ("settings", "model", "--json"), ("receipts",), ("receipts", "--json")]


def remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def listed(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


@pytest.mark.parametrize("read", READS, ids=" ".join)
def test_a_read_makes_no_home(home: Home, read: tuple[str, ...]) -> None:
    done = remem(home, *read)
    assert done.returncode == 0, done.stderr
    assert not home.root.exists()


@pytest.mark.parametrize("read", READS, ids=" ".join)
def test_a_read_leaves_a_home_as_it_was(home: Home, read: tuple[str, ...]) -> None:
    home.root.mkdir(mode=0o700)
    home.settings_file.write_text("consolidation:\n  provider: ollama\n  model: llama3\n")
    before = listed(home.root)
    done = remem(home, *read)
    assert done.returncode == 0, done.stderr
    assert listed(home.root) == before == ["settings.yml"]

"""A command that only reads makes nothing in the home, run without the daemon (decision 0487
for `settings.yml`): neither a home never made nor the folders of an empty one. `settings model`
and `receipts` built the memory store, whose construction laid the home out, without reading
memory (decision 0492). `memory show`/`context` took each scope's lock, laying the home out for
it, and `memory log` or a read of an entry by id started the history's repository (decision
0499): a scope never made and a history never started are read as empty and left so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home

CWD = "/home/u/proj"  # a project never seen: its workspace was never made
READS = [
    ("settings", "model"),
    ("settings", "model", "--json"),
    ("receipts",),
    ("receipts", "--json"),
    ("memory", "show", "--cwd", CWD),
    ("memory", "show", "--json", "--cwd", CWD),
    ("memory", "context", "--cwd", CWD),
    ("memory", "log", "--cwd", CWD),
    ("memory", "log", "--global"),
    ("memory", "diff", "abc1234"),
]
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def remem(home: Home, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120)


def listed(root: Path) -> list[str]:
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def answered(done: subprocess.CompletedProcess[str], read: tuple[str, ...]) -> None:
    """The read's answer in a home holding no memory and no history."""
    if read[:2] == ("memory", "diff"):
        assert (done.returncode, done.stderr) == (
            1,
            "remem: `abc1234` names no history entry (see `remem memory log`)\n",
        )
        return
    assert done.returncode == 0, done.stderr
    if read[:2] == ("memory", "show"):
        assert EMPTY in done.stdout and "(no records)" in done.stdout or '"records": []' in done.stdout
    if read[:2] == ("memory", "log"):
        assert done.stdout == "(no history yet)\n"


@pytest.mark.parametrize("read", READS, ids=" ".join)
def test_a_read_makes_no_home(home: Home, read: tuple[str, ...]) -> None:
    done = remem(home, *read)
    answered(done, read)
    assert not home.root.exists()


@pytest.mark.parametrize("read", READS, ids=" ".join)
def test_a_read_leaves_an_empty_home_empty(home: Home, read: tuple[str, ...]) -> None:
    home.root.mkdir(mode=0o700)
    done = remem(home, *read)
    answered(done, read)
    assert listed(home.root) == []


@pytest.mark.parametrize("read", READS, ids=" ".join)
def test_a_read_leaves_a_home_as_it_was(home: Home, read: tuple[str, ...]) -> None:
    home.root.mkdir(mode=0o700)
    home.settings_file.write_text("consolidation:\n  provider: ollama\n  model: llama3\n")
    before = listed(home.root)
    done = remem(home, *read)
    answered(done, read)
    assert listed(home.root) == before == ["settings.yml"]


def test_memory_read_after_a_write_is_locked_and_logged(home: Home) -> None:
    """Once a scope holds memory, its read takes its lock and its log has the entry, as before."""
    record = {
        "name": "prefer-uv",
        "description": "Use uv, not pip",
        "type": "feedback",
        "content": "Faster.\n",
    }
    changes = json.dumps([{"action": "put", "record": record}])
    applied = remem(home, "memory", "apply", "--expected-revision", EMPTY, "--changes", "-", stdin=changes)
    assert applied.returncode == 0, applied.stderr
    assert "prefer-uv" in remem(home, "memory", "show").stdout
    assert "added prefer-uv" in remem(home, "memory", "log").stdout
    assert (home.root / "history").is_dir()

"""More of what a command can be given or meet that is no bug of remem's: one `remem: …` line
(or click's usage error) and the documented exit code, never a traceback. Each runs the real
command line in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home

NOT_UTF8 = os.fsdecode(b"caf\xe9")


def remem(
    *args: str,
    cwd: Path | None = None,
    stdin: int | None = subprocess.DEVNULL,
    input: str | None = None,
    **env: str,
) -> subprocess.CompletedProcess[str]:
    """`remem ARGS` in a process of its own (without the daemon, as the suite's fixture sets)."""
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", *args],
        capture_output=True,
        text=True,
        errors="backslashreplace",
        cwd=cwd,
        stdin=None if input is not None else stdin,
        input=input,
        env={**os.environ, **env},
        timeout=120,
    )


@pytest.fixture
def latin1_root(tmp_path: Path) -> Path:
    folder = tmp_path / NOT_UTF8
    try:
        folder.mkdir()
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    return folder


def shown(path: Path) -> str:
    return os.fsencode(path).decode("utf-8", "backslashreplace")


@pytest.mark.parametrize("exists", [True, False])
@pytest.mark.parametrize(
    "command", [["sessions", "list", "--json"], ["sessions", "turns", "s"], ["sessions", "show", "s"]]
)
def test_a_root_that_is_not_utf8_is_named_as_a_cwd_is(
    home: Home, latin1_root: Path, command: list[str], exists: bool
) -> None:
    """Before, a root that exists ended in a bug's UnicodeEncodeError where the index stores its
    path, and one that does not printed its raw bytes into the JSON."""
    root = latin1_root if exists else latin1_root.parent / f"{latin1_root.name}-gone"
    done = remem("--home", str(home.root), *command, "--root", str(root))
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr == (
        f"remem: the folder name {shown(root)} is not UTF-8; remem names session roots by UTF-8 paths\n"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["memory", "apply", "--expected-revision", "r", "--changes", "-", "--cwd", ""],
        ["memory", "show", "--cwd", ""],
        ["sessions", "list", "--cwd", ""],
        ["sessions", "tree", "--cwd", ""],
        ["sessions", "list", "--root", ""],
    ],
)
def test_an_empty_folder_argument_is_a_usage_error_not_the_current_folder(
    home: Home, tmp_path: Path, command: list[str]
) -> None:
    """`--cwd "$UNSET"` was the current folder: `memory apply` committed to its memory."""
    done = remem("--home", str(home.root), *command, cwd=tmp_path, input="[]")
    option = "--root" if "--root" in command else "--cwd"
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.endswith(
        f"Error: Invalid value for '{option}': must not be empty; name a folder (`.` for the current one)\n"
    )
    assert not (home.root / "memory" / "workspaces").exists() or not any(
        (home.root / "memory" / "workspaces").iterdir()
    ), "no memory was started"

"""Recovering a fork a crash cut off after its temp file never deletes through a link.

`remem sessions fork` killed at `fork.after-temp-write` leaves its temp beside its child's path.
If the first folder below the session root on that path (DSH's project folder, Claude Code's,
Codex's year) is then swapped for a link to a folder outside, holding the same folders and the
same-named temp, the next fork, of another session under another operation id, settles the
crashed one without following the link: everything outside stays. The crashed operation's
retry is refused while the link is there, and gives one complete child once the folder is
back, with no temp left and nothing pending in the journal. So does an entry an older remem
wrote, which records no session root: its path's layout tells it.

The real CLI in processes of its own, on the harnesses' default roots, as a user runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from remem.daemon.faults import EXIT_CODE
from remem.daemon.fsutil import is_temp_name
from remem.daemon.home import Home
from remem.daemon.sessions.reader import read_session
from tests.sessions.factory import SessionSpec, build_session, write_session

from ..sessions.claude_lines import SID
from ..sessions.codex_lines import TID
from .test_harness_forks import claude_parent, codex_parent, read_child

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Parent:
    fmt: str
    root: Path  # the harness's default session root, where the child lands
    session: str


def _parent(fmt: str, tmp_path: Path) -> Parent:
    """The parent, in the default root of its harness whose home is below `tmp_path`."""
    if fmt == "dsh":
        root = tmp_path / "dsh" / "sessions"
        path = write_session(root, build_session(SessionSpec(seed=42, turns=3, cwd="/home/dev/demo")))
        return Parent(fmt, root, read_session(path).header.id)
    if fmt == "claude-code":
        return Parent(fmt, claude_parent(tmp_path).parents[1], SID)
    return Parent(fmt, codex_parent(tmp_path).parents[3], TID)


def _other(tmp_path: Path) -> str:
    """Another session, of another project: a fork of it runs every fork's recovery first."""
    root = tmp_path / "dsh" / "sessions"
    return read_session(
        write_session(root, build_session(SessionSpec(seed=6, turns=3, cwd="/home/other")))
    ).header.id


def _fork(
    tmp_path: Path, home: Home, session: str, op: str, point: str = ""
) -> subprocess.CompletedProcess[str]:
    """`remem sessions fork` after turn 1, in a process of its own (killed at the fault point
    `point`, if any), with every harness's home below `tmp_path`."""
    env = {
        **os.environ,
        "REMEM_FAULTPOINT": point,
        "HOME": str(tmp_path / "user"),
        "DSH_HOME": str(tmp_path / "dsh"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "CODEX_HOME": str(tmp_path / "codex"),
    }
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon"]
    command += ["sessions", "fork", session, "--turn", "1", "--op-id", op, "--json"]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


def _answer(run: subprocess.CompletedProcess[str]) -> dict[str, object]:
    """The fork's JSON: its child, or its refusal (`error`); never a crash."""
    assert run.returncode != EXIT_CODE and "Traceback" not in run.stderr, run.stderr
    return json.loads(run.stdout)


def _temps(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if is_temp_name(p.name)]


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) from `folder` down, by path."""
    return {str(p): None if p.is_dir() else p.read_bytes() for p in [folder, *sorted(folder.rglob("*"))]}


def _complete(parent: Parent, done: dict[str, object]) -> bool:
    """Whether the one file of the child `done` names, below the parent's root, reads whole."""
    child = str(done["child"])
    (path,) = [p for p in parent.root.rglob("*") if p.is_file() and child in str(p.relative_to(parent.root))]
    if parent.fmt == "dsh":
        return read_session(path, expected_id=child).torn is None
    return read_child(parent.fmt, path).problems == ()


def _as_an_older_remem_wrote_it(home: Home) -> None:
    """The journal's one entry without its session root, as older versions of remem wrote it."""
    (entry,) = (home.state / "forks").glob("*.json")
    fields = json.loads(entry.read_bytes())
    fields.pop("root", None)
    entry.write_text(json.dumps(fields))


@pytest.mark.slow
@pytest.mark.parametrize("older", [False, True], ids=["entry", "older-entry"])
@pytest.mark.parametrize("fmt", ["claude-code", "codex", "dsh"])
def test_a_folder_swapped_for_a_link_after_a_crash_keeps_everything_outside(
    home: Home, tmp_path: Path, fmt: str, older: bool
) -> None:
    parent, other = _parent(fmt, tmp_path), _other(tmp_path)
    crashed = _fork(tmp_path, home, parent.session, "op-crash", "fork.after-temp-write")
    assert crashed.returncode == EXIT_CODE, crashed.stderr
    if older:
        _as_an_older_remem_wrote_it(home)
    (temp,) = _temps(parent.root)
    # Outside: the same folders down to the temp's, and a file of the temp's name in it.
    swapped = parent.root / temp.relative_to(parent.root).parts[0]
    outside = tmp_path / "outside" / swapped.name
    copy = outside / temp.relative_to(swapped)
    copy.parent.mkdir(parents=True)
    copy.write_bytes(temp.read_bytes())
    real = swapped.with_name(swapped.name + ".real")
    swapped.rename(real)
    swapped.symlink_to(outside, target_is_directory=True)
    before = _tree(outside)

    assert "child" in _answer(_fork(tmp_path, home, other, "op-other")), "another fork goes on"
    assert _tree(outside) == before, "recovery deleted out of the session root"

    refused = _answer(_fork(tmp_path, home, parent.session, "op-crash"))  # while the link is there
    assert "error" in refused, refused
    assert _tree(outside) == before

    swapped.unlink()  # the folder is back: the crashed operation's retry finishes its fork
    real.rename(swapped)
    done = _answer(_fork(tmp_path, home, parent.session, "op-crash"))
    assert done.get("created") is True and _complete(parent, done), done
    assert _temps(parent.root) == [], "the crashed fork's temp is settled"
    assert list((home.state / "forks" / "pending").iterdir()) == [], "nothing is left pending"
    assert _tree(outside) == before

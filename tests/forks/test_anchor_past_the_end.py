"""`remem sessions fork --at` a number that is no event of a DSH log, or no line of a Claude
Code or Codex file, is refused naming the range there is, and no child is made (decision
0536). It forked after the last turn, as DSH's Host does, so a mistyped anchor made a child."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions.reader import read_session
from tests.cli_process import remem

from ..sessions.harness_roots import SID, TID, build_roots


def _session(roots: dict[str, Path], form: str) -> tuple[str, str]:
    """The id of `form`'s session in `roots` and the range of anchors it has."""
    root = roots[form]
    if form == "dsh":
        (path,) = root.rglob("session.jsonl")
        return "dsh-1", f"its events are 0-{len(read_session(path).events) - 1}"
    session = SID if form == "claude-code" else TID
    (path,) = root.rglob(f"*{session}.jsonl")
    lines = path.read_bytes().count(b"\n")
    return session, f"its lines are 1-{lines}"


@pytest.mark.parametrize("form", ["dsh", "claude-code", "codex"])
@pytest.mark.parametrize("past", [1, 10**23])
def test_an_anchor_past_the_sessions_end_is_refused_naming_the_range(
    home: Home, tmp_path: Path, form: str, past: int
) -> None:
    roots = build_roots(tmp_path)
    session, held = _session(roots, form)
    last = int(held.rsplit("-", 1)[1])
    files = sorted(roots[form].rglob("*"))
    at = str(last + past)
    done = remem(home, "sessions", "fork", session, "--at", at, "--root", str(roots[form]))
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == (
        f"remem: INVALID_ANCHOR: --at {at} is no {'event' if form == 'dsh' else 'line'} of {session}: "
        f"{held}; give {'an event' if form == 'dsh' else 'a line'} of the turn to branch after "
        f"(`remem sessions turns {session}`), or leave "
        "--at out to branch after the last ended turn\n"
    )
    assert sorted(roots[form].rglob("*")) == files  # no child


def test_a_claude_code_files_last_line_without_a_newline_is_an_anchor(home: Home, tmp_path: Path) -> None:
    """The reader numbers a complete last line its harness has not ended with a newline, and a
    turn may end there: `turns` ends a turn there, so the fork takes it."""
    root = build_roots(tmp_path)["claude-code"]
    (path,) = root.rglob(f"{SID}.jsonl")
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    lines = path.read_bytes().count(b"\n") + 1
    listed = remem(home, "sessions", "turns", SID, "--root", str(root), "--json")
    assert json.loads(listed.stdout)["turns"][-1]["endSeq"] == lines, listed
    done = remem(home, "sessions", "fork", SID, "--at", str(lines), "--root", str(root), "--json")
    assert done.returncode == 0, done
    assert json.loads(done.stdout)["forkTurn"] == len(json.loads(listed.stdout)["turns"])

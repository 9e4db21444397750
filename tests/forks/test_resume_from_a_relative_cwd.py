"""A fork of a session whose cwd is not an absolute path (decision 0495): its resume command has
no `cd`, which would go from wherever it is run, and a note says to run it from the session's
folder; the folder the CLI runs in is never looked at in its place."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.daemon.helpers import remem
from tests.sessions.claude_lines import SID, jsonl, prompt, say


def test_a_fork_of_a_session_in_cwd_dot_says_where_to_resume_it(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "me" / ".claude"
    monkeypatch.setenv("HOME", str(tmp_path / "me"))  # its default home: the command needs no variable
    lines = [
        prompt("u1", None, "hi"),
        say("a1", "u1", "hello"),
        prompt("u2", "a1", "more"),
        say("a2", "u2", "ok"),
    ]
    transcript = claude / "projects" / "-" / f"{SID}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(jsonl(*({**line, "cwd": "."} for line in lines)))
    os.utime(transcript, (1_600_000_000, 1_600_000_000))  # idle: a session one may fork
    forked = remem(home, "sessions", "fork", SID, "--op-id", "op-1", "--root", str(claude), "--json")
    assert forked.returncode == 0, forked.stderr
    made = json.loads(forked.stdout)
    assert (made["cwd"], made["env"]) == (".", {})
    assert made["command"] == f"claude --resume {made['child']}", (
        "no `cd .`: it goes nowhere of the session's"
    )
    assert made["note"] == (
        "the session's cwd '.' is not an absolute path: run this from the folder the session was in"
    )

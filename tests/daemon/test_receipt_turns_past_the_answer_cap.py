"""A receipt whose session's turns are past the daemon's answer cap is listed with its changes
said without turns: the read of its turns, asked of a daemon that runs only, ended the whole
command (`remem receipts` exit 1 after its first line, `remem consolidate` after `committed`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from tests.consolidation.conftest import OLD, configure, proposal, put
from tests.fake_openai import FakeOpenAI, tool_call
from tests.sessions import claude_lines as cl

from .helpers import remem

pytestmark = pytest.mark.slow

TURNS = 6000  # their rows (a 120-character prompt each) in the receipt's answer: past 1 MiB


def test_receipts_whose_turns_are_past_the_answer_cap_are_listed_without_turns(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    projects = tmp_path / "claude" / "projects"
    log = projects / "-home-u-proj" / f"{cl.SID}.jsonl"
    log.parent.mkdir(parents=True)
    log.write_bytes(cl.jsonl(cl.prompt("u1", None, "Use uv, never pip."), cl.say("a1", "u1", "Noted.")))
    os.utime(log, (OLD, OLD))
    configure(home, fake, tmp_path / "dsh-sessions", (projects, "claude-code"))
    home.settings_file.write_text(
        home.settings_file.read_text() + f"daemon:\n  idle_minutes: 2\n  max_answer_bytes: {1 << 20}\n"
    )
    fake.reply(tool_call(proposal(put("prefer-uv", [{"fromSeq": 1, "toSeq": 2}]))))
    done = remem(home, "consolidate", cl.SID)
    assert done.returncode == 0, done.stderr
    assert re.match(r"committed, 1 change\(s\)", done.stdout), done.stdout
    # The session goes on, past what one answer of the daemon may hold.
    long = "Refactor the parser " * 6
    more = [
        line
        for n in range(TURNS)
        for line in (cl.prompt(f"p{n}", f"s{n - 1}" if n else "a1", long), cl.say(f"s{n}", f"p{n}", "ok"))
    ]
    with log.open("ab") as file:
        file.write(cl.jsonl(*more))

    listed = remem(home, "receipts")

    assert listed.returncode == 0, (listed.stdout, listed.stderr)
    [receipt] = ReceiptStore(home).all()
    assert receipt.history is not None and receipt.history.workspaceEntry is not None
    entry = receipt.history.workspaceEntry[:12]
    assert listed.stdout.splitlines()[1:] == [
        "    added prefer-uv (feedback) ← lines 1–2",
        f"    History: workspace {entry} (`remem memory diff ENTRY` shows one)",
        f"    To undo it: remem memory revert --before {entry}",
        "1 receipt(s)",
    ]

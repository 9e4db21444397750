"""Failed and interrupted turns as the real harnesses write them, and how remem reads them.

An HTTP error, a stream cut before any content, and Ctrl-C while the model is answering (the
fake never answers). Each such turn has ended, so it can be branched after.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.sessions.formats.claude_code import INTERRUPTED, read_transcript
from remem.daemon.sessions.formats.codex import read_rollout

from .claude import ClaudeCode
from .codex import Codex
from .fake_anthropic import FakeAnthropic
from .fake_responses import FakeResponses, cut, hang, status, text
from .toolchain import interrupt

pytestmark = pytest.mark.slow


def test_codex_writes_errors_as_ended_turns_and_ctrl_c_as_an_aborted_one(tmp_path: Path) -> None:
    with FakeResponses() as fake:
        cx = Codex(tmp_path, fake)
        fake.reply(text("fine"))
        first = cx.exec("first question")
        fake.reply(status(400, "rejected by the fake"))
        assert cx.exec("resume", first.session_id, "rejected question", check=False).returncode != 0
        fake.reply(cut())
        assert cx.exec("resume", first.session_id, "cut question", check=False).returncode != 0
        fake.reply(hang())
        interrupt(
            cx.command("resume", first.session_id, "stopped question"), cx.cwd, cx.env(), lambda: fake.count
        )
    r = read_rollout(first.rollout.read_bytes())
    assert [(t.prompt, t.status, t.forkable) for t in r.turns] == [
        ("first question", "completed", True),
        ("rejected question", "error", True),
        ("cut question", "error", True),
        ("stopped question", "aborted", True),
    ]
    assert r.problems == ()


def test_claude_code_writes_an_api_error_answer_and_ctrl_c_as_an_interruption(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        fake.reply(text("fine"))
        first = cc.run("first question")
        # Claude Code retries some errors: every attempt is refused, however many it makes.
        fake.reply(*[status(400, "rejected by the fake")] * 8)
        failed = cc.run("rejected question", resume=first.session_id, check=False)
        assert failed.result["is_error"] and fake.drop_script() < 8
        fake.reply(hang())
        interrupt(
            cc.command("stopped question", resume=first.session_id), cc.cwd, cc.env(), lambda: fake.count
        )
    data = first.transcript.read_bytes()
    t = read_transcript(data, first.transcript.name)
    # Claude Code appends its interruption marker after its exit bookkeeping, and on a loaded
    # machine the process sometimes exits first: the stopped turn is then a bare prompt, which
    # remem cannot tell from a turn still waiting for the model, so it is open, not a fork point.
    stopped = ("aborted", True) if INTERRUPTED.encode() in data else ("open", False)
    assert [(turn.prompt, turn.status, turn.forkable) for turn in t.turns] == [
        ("first question", "completed", True),
        ("rejected question", "error", True),
        ("stopped question", *stopped),
    ]
    assert t.turns[1].answer is not None and "rejected by the fake" in t.turns[1].answer

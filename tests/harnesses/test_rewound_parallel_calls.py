"""A turn of parallel tool calls that a rewind left half off the path, and an answer Claude
Code wrote itself, as the real CLI writes and resumes them.

Claude Code writes one assistant record per content block: two parallel calls are two records
of one `message.id`, chained, each result hanging off its own call's record. A
`--resume-session-at` the first call's record hangs the new prompt there, so the path walked
back from the leaf holds that record only; on resume the CLI (as claude-agent-sdk's reader)
puts back the response's other record and both results — and nothing else the rewind
abandoned. remem's turn and its fork must hold what the CLI puts back, no more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home
from remem.daemon.sessions.formats.claude_code import INTERRUPTED, read_transcript

from .claude import ClaudeCode
from .fake_anthropic import FakeAnthropic, hang, text, tool_uses
from .requests import comparable
from .toolchain import interrupt

pytestmark = pytest.mark.slow


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _line_of(records: list[dict[str, Any]], kind: str, has: str) -> int:
    """The 1-based line of the first `kind` record whose message says `has`."""
    return next(
        at
        for at, record in enumerate(records, 1)
        if record.get("type") == kind and has in json.dumps(record.get("message"))
    )


def test_a_claude_code_fork_after_calls_a_rewind_left_off_the_path_resumes_as_the_parent_does(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeAnthropic() as fake:  # one fake: each response a message id of its own
        cc = ClaudeCode(tmp_path, fake)
        for name in ("notes.txt", "more.txt"):
            (cc.cwd / name).write_text(f"{name}\n")
        reads = [("Read", {"file_path": str(cc.cwd / name)}) for name in ("notes.txt", "more.txt")]
        fake.reply(text("first answer"))
        parent = cc.run("first question")
        session = parent.session_id
        fake.reply(tool_uses(*reads), text("that was big"))
        cc.run("big output", resume=session)
        fake.reply(text("third answer"))
        cc.run("third question", resume=session)
        records = _lines(parent.transcript)
        first_call = records[_line_of(records, "assistant", '"tool_use"') - 1]["uuid"]
        fake.reply(text("mid answer"))
        cc.run("mid rewind question", resume=session, resume_at=first_call)
        fake.reply(text("after mid answer"))
        cc.run("after mid", resume=session)
        after_mid = fake.requests[-1]["messages"]
        parent_bytes = parent.transcript.read_bytes()

        records = _lines(parent.transcript)
        calls = [
            at
            for at, r in enumerate(records, 1)
            if r.get("type") == "assistant" and '"tool_use"' in json.dumps(r)
        ]
        results = [
            at
            for at, r in enumerate(records, 1)
            if r.get("type") == "user" and "tool_result" in json.dumps(r)
        ]
        assert len(calls) == 2 and len(results) == 2  # the shape this test is about
        assert records[calls[1] - 1]["parentUuid"] == first_call  # chained, one message id
        assert records[calls[0] - 1]["message"]["id"] == records[calls[1] - 1]["message"]["id"]
        # Each result hangs off its own call's record (written in the order the calls ended).
        assert sorted(records[at - 1]["parentUuid"] for at in results) == sorted(
            records[at - 1]["uuid"] for at in calls
        )
        assert records[_line_of(records, "user", "mid rewind question") - 1]["parentUuid"] == first_call

        t = read_transcript(parent_bytes, parent.transcript.name)
        assert [turn.prompt for turn in t.turns] == [
            "first question",
            "big output",
            "mid rewind question",
            "after mid",
        ]
        big = t.turns[1]
        assert (big.start, big.end, big.status, big.forkable, big.answer) == (
            _line_of(records, "user", "big output"),
            results[-1],  # both calls and both results, put back after the first call
            "completed",
            True,
            None,  # "that was big" answered the abandoned continuation, not this turn
        )
        assert [(tool.name, tool.ok) for tool in big.tools] == [("Read", True), ("Read", True)]
        assert t.turns[3].tools == ()  # nothing of turn 2 counts twice

        done = HarnessForks(home).fork(
            HarnessForkRequest(
                harness="claude-code", path=str(parent.transcript), operationId="op-rw", afterTurn=2
            )
        )
        child_records = _lines(Path(done.path))
        copied = [r["forkedFrom"]["messageUuid"] for r in child_records if r.get("forkedFrom")]
        wanted = [records[at - 1]["uuid"] for at in (*calls, *results)]
        assert all(uuid in copied for uuid in wanted)
        abandoned = {
            records[_line_of(records, kind, said) - 1]["uuid"]
            for kind, said in (("assistant", "that was big"), ("user", "third question"))
        }
        assert not abandoned & set(copied)

        # claude-agent-sdk reads the child as the parent up to the cut.
        import claude_agent_sdk

        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cc.config_dir))
        of_parent = claude_agent_sdk.get_session_messages(session, directory=str(cc.cwd))
        of_child = claude_agent_sdk.get_session_messages(done.child, directory=str(cc.cwd))
        assert len(of_child) == 7  # two prompts, an answer, two calls, two results
        assert [(m.type, m.message) for m in of_child] == [
            (m.type, m.message) for m in of_parent[: len(of_child)]
        ]

        fake.reply(text("child answer"))
        child = cc.run("child question", resume=done.child)
        sent = fake.requests[-1]["messages"]

    assert child.session_id == done.child and child.result["result"] == "child answer"
    # What resuming the parent sent through the turn: the whole response and both real results
    # (no result the CLI makes up for a call it finds none for). The parent's next prompt
    # follows the results in the same user message; the child's conversation ends at them, so,
    # as on resuming any conversation that ends with a tool result, the CLI puts its own "No
    # response requested." before the new prompt (decision 0353).
    cut = next(at for at, message in enumerate(after_mid) if "mid rewind question" in json.dumps(message))
    *returned, asked = after_mid[cut]["content"]
    assert [block["type"] for block in returned] == ["tool_result", "tool_result"] and asked["type"] == "text"
    through = [*after_mid[:cut], {**after_mid[cut], "content": returned}]
    assert comparable(sent[: cut + 1], "") == comparable(through, "")
    assert comparable(sent[cut + 1 :], "child question") == [
        {"role": "assistant", "content": [{"type": "text", "text": "No response requested."}]},
        {"role": "user", "content": [{"type": "text", "text": "PROMPT"}]},
    ]
    said = json.dumps(sent)
    assert "interrupted" not in said and "missing" not in said
    assert "that was big" not in said and "third question" not in said
    assert parent.transcript.read_bytes() == parent_bytes


def test_the_answer_claude_code_writes_after_a_stopped_turn_is_not_the_models(tmp_path: Path) -> None:
    """Resumed with a new prompt after Ctrl-C, Claude Code writes an assistant record of its
    own ("No response requested.", model "<synthetic>", no API error) before that prompt."""
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path, fake)
        fake.reply(text("fine"))
        first = cc.run("first question")
        fake.reply(hang())
        interrupt(
            cc.command("stopped question", resume=first.session_id), cc.cwd, cc.env(), lambda: fake.count
        )
        fake.drop_script()
        fake.reply(text("next answer"))
        cc.run("next question", resume=first.session_id)
    data = first.transcript.read_bytes()
    records = _lines(first.transcript)
    synthetic = [
        r for r in records if r.get("type") == "assistant" and r["message"].get("model") == "<synthetic>"
    ]
    assert [r["message"]["content"] for r in synthetic] == [
        [{"type": "text", "text": "No response requested."}]
    ]
    assert synthetic[0]["isApiErrorMessage"] is False
    t = read_transcript(data, first.transcript.name)
    # Without its interruption marker (written after Claude Code's exit bookkeeping, which a
    # loaded machine may cut short) the stopped turn is a prompt the next one followed.
    stopped = "aborted" if INTERRUPTED.encode() in data else "completed"
    assert [(turn.prompt, turn.answer, turn.status, turn.forkable) for turn in t.turns] == [
        ("first question", "fine", "completed", True),
        ("stopped question", None, stopped, True),
        ("next question", "next answer", "completed", True),
    ]

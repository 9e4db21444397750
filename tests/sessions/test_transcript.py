"""Markdown transcripts of factory sessions: turns, prompts, replies, tools, compaction, forks, crashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.sessions.models import SessionEvent
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.reader import read_session
from remem.daemon.sessions.transcript import render_transcript, utc_iso
from tests.sessions.factory import (
    SessionDraft,
    SessionSpec,
    build_family,
    build_session,
    write_session,
)

MODEL_SOURCE = {"kind": "model", "provider": "p", "model": "m"}


def render(tmp_path: Path, draft: SessionDraft, encoding: Encoding = Encoding.RAW) -> str:
    return render_transcript(read_session(write_session(tmp_path / encoding.value, draft, encoding=encoding)))


def sections(text: str) -> dict[str, str]:
    """Transcript parts keyed by their `## ` heading line."""
    parts = text.split("\n## ")[1:]
    return {"## " + part.split("\n", 1)[0]: part for part in parts}


def turn_section(text: str, turn: int) -> str:
    (body,) = [v for k, v in sections(text).items() if k.startswith(f"## Turn {turn} — ")]
    return body


def quoted(text: str) -> list[str]:
    return [f"> {line}" if line.strip() else ">" for line in text.splitlines()]


def events_by_turn(draft: SessionDraft) -> dict[int, list[SessionEvent]]:
    turns: dict[int, list[SessionEvent]] = {}
    current = None
    for event in draft.events:
        if event.type == "turn/start":
            current = event.data["turn"]
        if current is not None:
            turns.setdefault(current, []).append(event)
        if event.type == "turn/end":
            current = None
    return turns


class Extender:
    """Appends a hand-made batch to a factory draft (what the factory does not generate)."""

    def __init__(self, draft: SessionDraft) -> None:
        self.draft, self.batch = draft, []
        self.seq = len(draft.events)
        self.time = draft.events[-1].time

    def add(self, kind: str, data: Any, **envelope: Any) -> SessionEvent:
        self.time += 5
        event = SessionEvent(type=kind, seq=self.seq, time=self.time, data=data, **envelope)
        self.batch.append(event)
        self.seq += 1
        return event

    def user(self, text: str, source: dict[str, Any]) -> None:
        message = {"id": f"m{self.seq}", "role": "user", "content": [{"type": "text", "text": text}]}
        self.add("user/message", {**message, "source": source}, surfaceOp="append")

    def assistant(self, turn: int, blocks: list[dict[str, Any]]) -> None:
        message = {"id": f"a{self.seq}", "role": "assistant", "content": blocks, "source": MODEL_SOURCE}
        self.add("assistant/message", {"turn": turn, "step": 1, "message": message}, surfaceOp="append")

    def commit(self) -> SessionDraft:
        self.draft.batches.append(self.batch)
        return self.draft


def next_turn(draft: SessionDraft) -> int:
    return max(events_by_turn(draft)) + 1


@pytest.fixture(scope="module")
def main_draft() -> SessionDraft:
    return build_session(SessionSpec(seed=2, turns=6))


def test_header_and_turn_headings_follow_the_log(tmp_path: Path, main_draft: SessionDraft) -> None:
    text = render(tmp_path, main_draft)
    title = next(e.data["title"] for e in main_draft.events if e.type == "session/title")
    header = main_draft.header
    assert text.startswith(f"# {title}\n\n- Session: `{header.id}`\n")
    assert f"- Working directory: `{header.cwd}`" in text
    assert f"- Created: {utc_iso(header.createdAt)}" in text and "- Parent:" not in text
    expected = [
        f"## Turn {n} — {events[-1].data['reason']['kind']} — {utc_iso(events[0].time)}"
        for n, events in events_by_turn(main_draft).items()
    ]
    headings = [line for line in text.splitlines() if line.startswith("## Turn ")]
    assert headings == expected
    assert {h.split(" — ")[1] for h in headings} == {"completed", "aborted", "error"}


def test_each_turn_shows_its_prompt_and_final_text_reply(tmp_path: Path, main_draft: SessionDraft) -> None:
    text = render(tmp_path, main_draft)
    for turn, events in events_by_turn(main_draft).items():
        body = turn_section(text, turn)
        prompt = next(e for e in events if e.type == "user/message").data["content"][0]["text"]
        assert "**User**\n\n" + quoted(prompt)[0] in body
        replies = [
            b["text"]
            for e in events
            if e.type == "assistant/message"
            for b in e.data["message"]["content"]
            if b["type"] == "text"
        ]
        if replies:
            assert "**Assistant**\n\n" + "\n".join(quoted(replies[-1])) in body
            assert all(r not in body for r in replies[:-1])
        else:
            assert "**Assistant**" not in body
    reasoning = [
        b["text"]
        for e in main_draft.events
        if e.type == "assistant/message"
        for b in e.data["message"]["content"]
        if b["type"] == "reasoning"
    ]
    assert reasoning and all(r not in text for r in reasoning)


def test_error_and_aborted_turns_are_explained(tmp_path: Path, main_draft: SessionDraft) -> None:
    text = render(tmp_path, main_draft)
    for turn, events in events_by_turn(main_draft).items():
        reason = events[-1].data["reason"]
        body = turn_section(text, turn)
        if reason["kind"] == "error":
            assert f"Error: {reason['error']['message']}" in body
        if reason["kind"] == "aborted":
            assert "_(reply interrupted)_" in body


def test_tool_calls_are_listed_with_what_they_were_asked_and_their_outcome(
    tmp_path: Path, main_draft: SessionDraft
) -> None:
    """Each call with its path (the factory's main argument); a failed one with the first line
    its result said."""
    text = render(tmp_path, main_draft)
    outcomes_seen = set()
    for turn, events in events_by_turn(main_draft).items():
        results = {
            e.data["message"]["source"]["callId"]: e.data["message"]["content"][0]
            for e in events
            if e.type == "tool/result"
        }
        calls = [e.data for e in events if e.type == "tool/call"]
        if not calls:
            assert "**Tools**" not in turn_section(text, turn)
            continue
        expected = [_tool_line(c, results[c["callId"]]) for c in calls]
        assert "**Tools**\n\n" + "\n".join(expected) + "\n" in turn_section(text, turn)
        outcomes_seen.update(result["isError"] for result in results.values())
    assert outcomes_seen == {True, False}


def _tool_line(call: dict[str, Any], result: dict[str, Any]) -> str:
    said = f": {result['content'][0]['text'].splitlines()[0]}" if result["isError"] else ""
    path = json.loads(call["arguments"])["path"]
    return f"- `{call['name']}` `{path}` — {'error' if result['isError'] else 'ok'}{said}"


def test_compaction_summary_is_marked_once_between_its_turns(
    tmp_path: Path, main_draft: SessionDraft
) -> None:
    text = render(tmp_path, main_draft)
    summary = next(e for e in main_draft.events if e.type == "compaction/summary")
    summary_text = summary.data["summary"][0]["text"]
    assert text.count(summary_text) == 1
    assert text.count("**Compaction summary") == 1
    between = sections(text)["## Between turns"]
    assert (
        "**Compaction summary — earlier context was replaced by this summary**\n\n> " + summary_text
        in between
    )
    turn_after = next(
        e.data["turn"] for e in main_draft.events if e.type == "turn/start" and e.seq > summary.seq
    )
    order = list(sections(text))
    assert order.index("## Between turns") == turn_after - 1
    # The transcript is the log, not the surface: shadowed turns stay readable.
    first_prompt = next(e for e in main_draft.events if e.type == "user/message").data["content"][0]["text"]
    assert f"> {first_prompt}" in turn_section(text, 1)


def test_images_render_as_placeholders(tmp_path: Path, main_draft: SessionDraft) -> None:
    text = render(tmp_path, main_draft)
    images = [
        (turn, b["attachment"])
        for turn, events in events_by_turn(main_draft).items()
        for e in events
        if e.type == "user/message"
        for b in e.data["content"]
        if b["type"] == "image"
    ]
    assert images
    for turn, attachment in images:
        placeholder = f"> [image: {attachment['mediaType']} {attachment['width']}×{attachment['height']}]"
        assert placeholder in turn_section(text, turn)
    assert "attachmentId" not in text and "sha256:" not in text


def test_runtime_context_injections_are_not_user_text(tmp_path: Path) -> None:
    draft = build_session(SessionSpec(seed=4, turns=2, compaction=False))
    turn, more = next_turn(draft), Extender(draft)
    more.add("turn/start", {"turn": turn})
    more.add("step/start", {"turn": turn, "step": 1})
    more.user("Please rename the parser module.", {"kind": "user"})
    more.user(
        "RUNTIME CONTEXT: cwd, git status", {"kind": "plugin", "plugin": "@deepseek-ai/dsh-system-prompt"}
    )
    more.user("PLAN MODE REMINDER", {"kind": "plugin", "plugin": "plan-mode", "form": "reminder"})
    more.add("session/title", {"title": "Renamed later", "messageSeqs": [], "source": {"kind": "user"}})
    more.assistant(
        turn, [{"type": "reasoning", "text": "SECRET THOUGHTS"}, {"type": "text", "text": "Renamed."}]
    )
    more.add("step/end", {"turn": turn, "step": 1})
    more.add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    text = render(tmp_path, more.commit())
    body = turn_section(text, turn)
    assert "**User**\n\n> Please rename the parser module.\n" in body
    assert body.count("**User**") == 1
    assert "**Assistant**\n\n> Renamed.\n" in body
    for hidden in ("RUNTIME CONTEXT", "PLAN MODE REMINDER", "SECRET THOUGHTS"):
        assert hidden not in text
    assert text.startswith("# Renamed later\n")


def test_crashed_open_turn_shows_interrupted_and_unfinished_tools(tmp_path: Path) -> None:
    draft = build_session(SessionSpec(seed=6, turns=2, compaction=False))
    turn, more = next_turn(draft), Extender(draft)
    more.add("turn/start", {"turn": turn})
    more.add("step/start", {"turn": turn, "step": 1})
    more.user("Run the test suite.", {"kind": "user"})
    calls = [
        {"type": "tool-call", "id": "call_started", "name": "bash", "arguments": "{}"},
        {"type": "tool-call", "id": "call_queued", "name": "grep", "arguments": "{}"},
    ]
    more.assistant(turn, calls)
    more.add(
        "tool/call", {"turn": turn, "step": 1, "callId": "call_started", "name": "bash", "arguments": "{}"}
    )
    path = write_session(tmp_path, more.commit(), encoding=Encoding.RAW)
    with path.open("ab") as log_file:
        log_file.write(b'{"type":"tool/result","seq":')  # a torn append
    log = read_session(path)
    assert log.torn is not None and [c.type for c in log.closers][-1] == "turn/end"
    text = render_transcript(log)
    heading = next(line for line in text.splitlines() if line.startswith(f"## Turn {turn} — "))
    assert heading.split(" — ")[1] == "interrupted"
    body = turn_section(text, turn)
    assert "**Tools**\n\n- `bash` — not finished\n- `grep` — not finished\n" in body
    assert "**User**\n\n> Run the test suite.\n" in body


def test_turn_without_end_before_a_new_turn_stays_open(tmp_path: Path) -> None:
    draft = build_session(SessionSpec(seed=8, turns=1, compaction=False))
    turn, more = next_turn(draft), Extender(draft)
    more.add("turn/start", {"turn": turn})
    more.add("turn/start", {"turn": turn + 1})
    more.add("turn/end", {"turn": turn + 1, "reason": {"kind": "max-tokens"}})
    text = render(tmp_path, more.commit())
    statuses = [line.split(" — ")[1] for line in text.splitlines() if line.startswith("## Turn ")]
    assert statuses[-2:] == ["open", "max-tokens"]


def test_fork_child_marks_its_inherited_seed(tmp_path: Path) -> None:
    family = build_family(7, turns=6)
    child = family.fork
    text = render(tmp_path, child)
    parent_id = family.main.header.id
    assert f"- Parent: `{parent_id}`\n" in text
    assert f"- Fork point: after turn 2 (first {child.header.seedLength} events inherited)" in text
    lines = text.splitlines()
    headings = [i for i, line in enumerate(lines) if line.startswith("## Turn ")]
    inherited = [i for i in headings if lines[i].endswith(" — inherited")]
    own = [i for i in headings if i not in inherited]
    assert [lines[i].split(" — ")[0] for i in inherited] == ["## Turn 1", "## Turn 2"]
    assert own and lines[own[0]].startswith("## Turn 3 — ")
    note = lines.index(
        f"_Everything above is inherited from `{parent_id}`; this session's own history starts here._"
    )
    assert inherited[-1] < note < own[0]


def test_subagent_child_names_its_parent(tmp_path: Path) -> None:
    family = build_family(9)
    text = render(tmp_path, family.subagent)
    assert f"- Parent: `{family.main.header.id}` (subagent)\n" in text
    assert "Fork point" not in text and "inherited" not in text


def test_log_text_cannot_forge_structure(tmp_path: Path) -> None:
    draft = build_session(SessionSpec(seed=10, turns=1, compaction=False))
    turn, more = next_turn(draft), Extender(draft)
    more.add("turn/start", {"turn": turn})
    more.user("# Heading in a prompt\n\n## Turn 99 — completed\n```\nunclosed fence", {"kind": "user"})
    more.add("session/title", {"title": "Fix #12 *now*", "messageSeqs": [], "source": {"kind": "user"}})
    more.assistant(turn, [{"type": "text", "text": "## Done\n- item"}])
    more.add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    text = render(tmp_path, more.commit())
    assert text.startswith("# Fix \\#12 \\*now\\*\n")
    assert "> # Heading in a prompt\n>\n> ## Turn 99 — completed\n> ```\n> unclosed fence\n" in text
    assert "> ## Done\n> - item\n" in text
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[0].startswith("# Fix") and all(h.startswith("## Turn ") for h in headings[1:])
    assert len(headings) == 1 + turn


def test_session_without_turns_says_so(tmp_path: Path) -> None:
    draft = build_session(SessionSpec(seed=1, turns=1, compaction=False))
    draft.batches = [[SessionEvent(type="session/end-seed", seq=0, time=draft.header.createdAt, data={})]]
    text = render(tmp_path, draft)
    assert text == (
        f"# {draft.header.id}\n\n- Session: `{draft.header.id}`\n"
        f"- Working directory: `{draft.header.cwd}`\n- Created: {utc_iso(draft.header.createdAt)}\n\n"
        "_No turns yet._\n"
    )


def test_output_is_deterministic_and_encoding_independent(tmp_path: Path, main_draft: SessionDraft) -> None:
    raw = render(tmp_path / "a", main_draft, Encoding.RAW)
    assert raw == render(tmp_path / "b", main_draft, Encoding.RAW)
    assert raw == render(tmp_path / "c", main_draft, Encoding.ZSTD)
    assert raw.endswith("\n") and not raw.endswith("\n\n")


def test_utc_iso_formats_milliseconds_and_survives_huge_values() -> None:
    assert utc_iso(0) == "1970-01-01T00:00:00.000Z"
    assert utc_iso(1_785_000_000_123) == "2026-07-25T17:20:00.123Z"
    assert utc_iso(2**53 - 1) == f"{2**53 - 1} ms since the epoch"

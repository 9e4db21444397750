"""Bad input to the Claude Code and Codex readers: every shape is a per-session problem, never a raise.

Each shape the issue names is fed to both readers and to what consolidation and forks derive
from them (evidence, fork points): torn last lines, unknown line types, lines that are not
JSON or not UTF-8, over-long lines (refused while reading, with bounded memory), duplicate
uuids, parentUuid cycles and missing parents; then random damage to real-shaped files.
"""

from __future__ import annotations

import contextlib
import json
import tracemalloc
import uuid
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from remem.daemon.consolidation.harness_evidence import project_harness
from remem.daemon.consolidation.harness_source import Unreadable, observe
from remem.daemon.forks.claude_code_child import child_lines
from remem.daemon.sessions.formats.claude_code import fork_selection, read_transcript
from remem.daemon.sessions.formats.codex import first_line_cwd, fork_point, read_rollout
from remem.daemon.sessions.formats.jsonl import LineTooLong, read_bounded
from remem.daemon.sessions.formats.model import Edge, NotAForkPoint
from remem.daemon.sessions.tool_details import tool_details

from . import claude_lines as cl
from . import codex_lines as cx

NAME = f"{cl.SID}.jsonl"
CLAUDE = cl.jsonl(
    cl.prompt("u1", None, "first"),
    cl.use("t1", "u1", "c1"),
    cl.result("r1", "t1", "c1"),
    cl.say("a1", "r1", "one"),
    cl.prompt("u2", "a1", "second"),
    cl.say("a2", "u2", "two"),
)
CODEX = cx.rollout(
    cx.meta(), *cx.turn("t1", "first", "one", cx.call("c1"), cx.output("c1")), *cx.turn("t2", "second", "two")
)
SHAPES = {
    "torn-tail": (b'{"type":"user","uuid":"x","par', "torn-tail"),
    "not-json": (b"this is not json\n", "not-json"),
    # Not JSON even with U+FFFD for its bad bytes (how Claude Code reads them, decision 0415).
    "not-utf8": (b'\xff\xfe{"type":"x"}\n', "not-utf8"),
    "not-an-object": (b"[1, 2, 3]\n", "bad-record"),
    "byte-order-mark": (b'\xef\xbb\xbf{"type":"user","uuid":"x"}\n', "not-json"),
}


def codes(problems) -> list[str]:
    return [problem.code for problem in problems]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_each_bad_line_is_a_problem_of_its_session_in_both_formats(shape: str) -> None:
    bad, code = SHAPES[shape]
    at_end = shape == "torn-tail"
    claude = (
        CLAUDE + bad
        if at_end
        else CLAUDE[: CLAUDE.index(b"\n") + 1] + bad + CLAUDE[CLAUDE.index(b"\n") + 1 :]
    )
    codex = CODEX + bad if at_end else CODEX[: CODEX.index(b"\n") + 1] + bad + CODEX[CODEX.index(b"\n") + 1 :]
    transcript, rollout = read_transcript(claude, NAME), read_rollout(codex)
    assert codes(transcript.problems) == [code] == codes(rollout.problems)
    line = 7 if at_end else 2
    assert transcript.problems[0].line == line and f"line {line}" in transcript.problems[0].reason
    if shape == "byte-order-mark":  # msgspec alone says "invalid character (byte 0)"
        assert (
            "begins with a UTF-8 byte-order mark"
            in transcript.problems[0].reason
            == rollout.problems[0].reason
        )
    # the rest of the session reads on: the same turns as without the bad line
    assert [t.prompt for t in transcript.turns] == ["first", "second"] == [t.prompt for t in rollout.turns]
    assert transcript.error is None and rollout.error is None
    assert len(project_harness("claude-code", NAME, claude).turns) == 2
    assert len(project_harness("codex", "r.jsonl", codex).turns) == 2
    assert fork_selection(claude, NAME, 2).turn.prompt == "second"
    assert fork_point(codex, 2).turn.prompt == "second"


def test_unknown_line_types_are_skipped_without_a_problem() -> None:
    future = {"type": "hologram", "uuid": "h1", "parentUuid": "a2", "payload": {"x": [1]}}
    transcript = read_transcript(CLAUDE + cl.jsonl(future), NAME)
    rollout = read_rollout(CODEX + cx.rollout(cx.line("hologram", x=1), cx.event("new_event_kind", y=2)))
    assert transcript.problems == () == rollout.problems
    assert len(transcript.turns) == 2 == len(rollout.turns)


def test_a_line_over_the_cap_is_skipped_by_the_readers_and_refused_by_the_file_read(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from remem.daemon.sessions.formats import jsonl

    monkeypatch.setattr(jsonl, "MAX_LINE", 300)
    long = cl.jsonl(cl.prompt("u3", "a2", "x" * 400))
    transcript = read_transcript(CLAUDE + long, NAME)
    assert codes(transcript.problems) == ["too-long"] and "over 300" in transcript.problems[0].reason
    path = tmp_path / NAME
    path.write_bytes(CLAUDE + long + CLAUDE)
    with pytest.raises(Unreadable, match="line 7 is longer than 300 bytes"):
        observe("claude-code", path, 120)


def test_reading_a_100_mb_line_stops_at_the_cap_with_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write(CODEX)
        for _ in range(100):
            handle.write(b"x" * (1 << 20))  # a 100 MiB line, written without holding it
        handle.write(b"\n")
    tracemalloc.start()
    try:
        with path.open("rb") as handle, pytest.raises(LineTooLong, match="line 14 is longer than") as refused:
            read_bounded(handle, cap=8 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "refused" in refused.value.reason
    assert peak < 24 << 20  # the cap and a chunk, never the line


@pytest.mark.parametrize("size", [1, 5, 64, 1000])
def test_read_bounded_returns_every_byte_of_a_file_within_the_cap(tmp_path: Path, size: int) -> None:
    data = b"".join(b"%d\n" % n * (n % 7) for n in range(size)) + b"tail"
    path = tmp_path / "f"
    path.write_bytes(data)
    longest = max(len(line) for line in data.split(b"\n"))
    for cap in (longest, longest + 1, 40):
        with path.open("rb") as handle:
            assert read_bounded(handle, cap=cap, chunk=3) == data
    with path.open("rb") as handle, pytest.raises(LineTooLong):
        read_bounded(handle, cap=longest - 1, chunk=2)


def test_duplicate_uuids_cycles_and_missing_parents_are_flagged_and_evidence_still_reads() -> None:
    data = cl.jsonl(
        cl.prompt("u1", "gone", "orphaned start"),
        cl.say("a1", "u1", "a"),
        cl.say("a1", "u1", "a again"),
        # A minute later: nothing is stamped in the 5 s before the loop, which is cut there.
        cl.prompt("c1", "c2", "loop", timestamp="2026-01-01T00:01:00Z"),
        cl.say("c2", "c1", "loop back", timestamp="2026-01-01T00:01:01Z"),
    )
    transcript = read_transcript(data, NAME)
    assert sorted(set(codes(transcript.problems))) == ["cycle", "duplicate-uuid", "missing-parent"]
    reasons = {problem.code: problem.reason for problem in transcript.problems}
    assert (
        "repeats uuid a1" in reasons["duplicate-uuid"]
        and "parent gone is not in the file" in reasons["missing-parent"]
    )
    assert "loops back" in reasons["cycle"]
    assert [t.user for t in project_harness("claude-code", NAME, data).turns] == [["loop"]]
    assert fork_selection(data, NAME, 1).turn.answer == "loop back"


def _damaged(data: bytes, cuts: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(data)
    for at, length, insert in cuts:
        at %= max(len(out), 1)
        out[at : at + length] = insert
    return bytes(out)


DAMAGE = st.lists(
    st.tuples(
        st.integers(0, 10_000),
        st.integers(0, 40),
        st.binary(max_size=12) | st.sampled_from([b"\n", b'"', b"{", b"\xff"]),
    ),
    max_size=6,
)


@settings(max_examples=150, deadline=None)
@given(DAMAGE)
def test_damaged_claude_code_files_never_raise_out_of_the_reader(cuts: list[tuple[int, int, bytes]]) -> None:
    data = _damaged(
        CLAUDE + cl.jsonl(cl.rec("system", "b1", None, subtype="compact_boundary", logicalParentUuid="a2")),
        cuts,
    )
    transcript = read_transcript(data, NAME)
    project_harness("claude-code", NAME, data)
    for index in range(1, len(transcript.turns) + 2):
        with contextlib.suppress(NotAForkPoint):
            fork_selection(data, NAME, index)


@settings(max_examples=150, deadline=None)
@given(DAMAGE)
@example(cuts=[(159, 30, b""), (1204, 40, b"\n")])  # a line holding two values: two events of one
def test_damaged_codex_files_never_raise_out_of_the_reader(cuts: list[tuple[int, int, bytes]]) -> None:
    data = _damaged(
        CODEX + cx.rollout(cx.line("compacted", message="s"), cx.event("thread_rolled_back", num_turns=1)),
        cuts,
    )
    rollout = read_rollout(data)
    project_harness("codex", "r.jsonl", data)
    for index in range(1, len(rollout.turns) + 2):
        try:
            point = fork_point(data, index)
        except NotAForkPoint:
            continue
        assert point.turn.forkable and 0 < point.cut <= len(data)


def test_a_session_of_only_garbage_is_an_error_for_that_session() -> None:
    garbage = b"\x00\x01\x02\n{}\n[]\n"
    assert "no conversation" in (read_transcript(garbage, NAME).error or "")
    assert "no session_meta" in (read_rollout(garbage).error or "")
    assert project_harness("codex", "r.jsonl", garbage).turns == []
    with pytest.raises(NotAForkPoint):
        fork_point(garbage, 1)


def _spoiled(data: bytes, number: int, old: bytes, new: bytes) -> bytes:
    """`data` with `old` on its line `number` (1-based) replaced by `new`."""
    lines = data.split(b"\n")
    assert old in lines[number - 1]
    lines[number - 1] = lines[number - 1].replace(old, new, 1)
    return b"\n".join(lines)


def test_bytes_not_utf8_in_fields_the_readers_skip_are_seen_by_every_reader() -> None:
    """msgspec checks only the bytes it decodes: these lines were read as good ones, and the
    fork that copies such a line whole, or a line 1's session_meta, raised on them."""
    side = cl.rec("attachment", "x1", "t1", attachment={"type": "hook"})  # beside turn 1, read by none
    claude = CLAUDE + cl.jsonl(side)
    for old, new in (
        (b'"attachment": {', b'"attachment": {"k\xff": "\xfe", '),
        (b'"uuid"', b'"\xffuuid": 1, "uuid"'),
    ):
        spoiled = _spoiled(claude, 7, old, new)
        transcript = read_transcript(spoiled, NAME)
        # Claude Code reads it with U+FFFD for its bad bytes: so does remem, and flags it (0415).
        assert [(p.line, p.code) for p in transcript.problems] == [(7, "replaced-utf8")]
        assert [t.prompt for t in transcript.turns] == ["first", "second"]
    # A fork that copies such a line (turn 1's tool result) writes it as UTF-8 text, U+FFFD for
    # the bad bytes, as claude-agent-sdk's fork writes it.
    copied = _spoiled(claude, 3, b'"uuid"', b'"\xffuuid": 1, "uuid"')
    selection = fork_selection(copied, NAME, 2)
    assert 3 in selection.lines
    child = b"".join(child_lines(copied, selection, str(uuid.uuid4()), "t", "2026-01-01T00:00:00.000Z"))
    assert '"\ufffduuid":1' in child.decode("utf-8")
    # Codex: inside the session_meta's base instructions, or one of its keys: line 1 is refused.
    for old, new in (
        (b'"cwd"', b'"base_instructions": {"text": "\xff\xfe"}, "cwd"'),
        (b'"cwd"', b'"c\xffwd"'),
    ):
        codex = _spoiled(CODEX, 1, old, new)
        error = read_rollout(codex).error or ""
        assert error.startswith("no session_meta line opens the rollout (line 1 is not UTF-8 text"), error
        assert first_line_cwd(codex.split(b"\n")[0]) is None  # a workspace glance reads it whole
        with pytest.raises(NotAForkPoint, match="not UTF-8"):
            fork_point(codex, 1)
    # A task event whose bad bytes lie in a field skipped: the fork's scan skips it as the reader does.
    started = CODEX.split(b"\n").index(next(x for x in CODEX.split(b"\n") if b'"t2"' in x)) + 1
    codex = _spoiled(CODEX, started, b'"turn_id"', b'"x": "\xff", "turn_id"')
    turns = read_rollout(codex).turns
    assert [p.code for p in read_rollout(codex).problems] == ["not-utf8"] and len(turns) == 1
    assert fork_point(codex, 1).turn == turns[0]
    with pytest.raises(NotAForkPoint, match="turn 2 does not exist"):
        fork_point(codex, 2)


@pytest.mark.parametrize(
    ("shape", "said"),
    [
        # In UTF-16 an ASCII character is its byte and a NUL, both UTF-8: the byte-order mark is not.
        (
            "utf-16",
            "7 lines refused (not-utf8 ×1, not-json ×5, torn-tail ×1; line 1 is not UTF-8 text (byte 0))",
        ),
        ("numeric timestamps", "lines refused (bad-record ×6; line 1: Expected str | null, got int - at $"),
        ("text isSidechain", "lines refused (bad-record ×6; line 1: Expected bool | null, got str - at $"),
    ],
)
def test_a_file_whose_every_line_is_refused_says_how_many_and_why(shape: str, said: str) -> None:
    records = [json.loads(line) for line in CLAUDE.splitlines()]
    if shape == "utf-16":
        data = CLAUDE.decode().encode("utf-16")
    else:
        key, value = ("timestamp", 12345) if shape == "numeric timestamps" else ("isSidechain", "no")
        data = cl.jsonl(*({**record, key: value} for record in records))
    transcript = read_transcript(data, NAME)
    assert transcript.error is not None
    assert transcript.error.startswith("no conversation records (user/assistant lines with a uuid); ")
    assert said in transcript.error, transcript.error
    with pytest.raises(NotAForkPoint, match="lines refused"):
        fork_selection(data, NAME, 1)


def test_a_rollout_whose_every_line_is_refused_says_so_after_its_line_1() -> None:
    error = read_rollout(CODEX.decode().encode("utf-16")).error
    assert error == (
        "no session_meta line opens the rollout (line 1 is not UTF-8 text (byte 0)); "
        "14 lines refused (not-utf8 ×1, not-json ×12, torn-tail ×1)"
    )


def test_an_inherited_ordinal_past_what_the_index_holds_is_a_problem_of_its_rollout() -> None:
    for upto in (10**30, -5, "12", 2**53):
        data = cx.rollout(
            cx.meta(history_base={"thread_id": "p", "end_ordinal_exclusive": upto}), *cx.turn("t1", "a", "b")
        )
        rollout = read_rollout(data)
        assert rollout.error is None and rollout.lineage == (Edge("history", "p", None),)
        assert [(p.line, p.code) for p in rollout.problems] == [(1, "bad-value")]
        assert "history_base.end_ordinal_exclusive is" in rollout.problems[0].reason
        assert len(rollout.problems[0].reason) < 200  # the number is shown short, however long
    kept = cx.rollout(cx.meta(history_base={"thread_id": "p", "end_ordinal_exclusive": 2**53 - 1}))
    assert (
        read_rollout(kept).lineage == (Edge("history", "p", 2**53 - 1),) and not read_rollout(kept).problems
    )


def test_a_file_past_the_caps_on_bytes_or_lines_is_refused_before_it_is_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from remem.daemon.sessions.formats import jsonl

    path = tmp_path / NAME
    path.write_bytes(CLAUDE * 3)  # 18 lines
    monkeypatch.setattr(jsonl, "MAX_FILE", len(CLAUDE * 3) - 1)
    with path.open("rb") as handle:
        with pytest.raises(jsonl.FileTooLarge, match="refused unread") as big:
            read_bounded(handle)
        assert handle.tell() == 0  # not a byte read
    assert isinstance(big.value, LineTooLong)  # every reader refuses it as a file with a line past the cap
    monkeypatch.setattr(jsonl, "MAX_FILE", 1 << 30)
    monkeypatch.setattr(jsonl, "MAX_LINES", 17)
    longest = max(map(len, CLAUDE.splitlines()))
    for cap, chunk in ((None, 1 << 20), (longest, 16)):  # read whole, or in blocks (a file past the line cap)
        with path.open("rb") as handle, pytest.raises(jsonl.FileTooLarge, match="more than 17 lines"):
            read_bounded(handle, cap=cap, chunk=chunk)
    monkeypatch.setattr(jsonl, "MAX_LINES", 18)
    with path.open("rb") as handle:
        assert read_bounded(handle, cap=longest, chunk=16) == CLAUDE * 3
    monkeypatch.setattr(jsonl, "MAX_LINES", 17)
    with path.open("rb") as handle:
        handle.seek(len(CLAUDE))  # read on from an earlier read of 6 lines: 18 in all
        with pytest.raises(jsonl.FileTooLarge, match=r"\(18 read\)"):
            read_bounded(handle, lines_before=6)


def test_lines_not_utf8_are_read_again_with_replacement_characters_for_evidence_and_details() -> None:
    """A prompt typed while the agent worked (evidence) and a tool call's input (the transcript's
    details) are read again from their lines: as the reader reads them, U+FFFD for bad bytes."""
    queued = {"type": "queued_command", "prompt": "QUEUED", "commandMode": "prompt"}
    data = cl.jsonl(
        cl.prompt("u1", None, "first"),
        cl.rec(
            "assistant",
            "t1",
            "u1",
            [{"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "CMD"}}],
        ),
        cl.result("r1", "t1", "c1"),
        cl.rec("attachment", "q1", "r1", attachment=queued),
        cl.say("a1", "q1", "one"),
    )
    data = data.replace(b"QUEUED", b"and \xff too").replace(b"CMD", b"ls \xfe")
    evidence = project_harness("claude-code", NAME, data)
    assert [t.user for t in evidence.turns] == [["first", "and \ufffd too"]]
    assert tool_details(data).asked["c1"] == "ls \ufffd"

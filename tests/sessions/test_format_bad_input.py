"""Bad input to the Claude Code and Codex readers: every shape is a per-session problem, never a raise.

Each shape the issue names is fed to both readers and to what consolidation and forks derive
from them (evidence, fork points): torn last lines, unknown line types, lines that are not
JSON or not UTF-8, over-long lines (refused while reading, with bounded memory), duplicate
uuids, parentUuid cycles and missing parents; then random damage to real-shaped files.
"""

from __future__ import annotations

import contextlib
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from remem.daemon.consolidation.harness_evidence import project_harness
from remem.daemon.consolidation.harness_source import Unreadable, observe
from remem.daemon.sessions.formats.claude_code import fork_selection, read_transcript
from remem.daemon.sessions.formats.codex import fork_point, read_rollout
from remem.daemon.sessions.formats.jsonl import LineTooLong, read_bounded
from remem.daemon.sessions.formats.model import NotAForkPoint

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
    "not-utf8": (b'{"type":"\xff\xfe"}\n', "not-utf8"),
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
        cl.prompt("c1", "c2", "loop"),
        cl.say("c2", "c1", "loop back"),
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

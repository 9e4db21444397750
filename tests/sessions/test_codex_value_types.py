"""A Codex line whose values are of a type Codex never writes is a problem of its line, never a
raise: a `payload.type` (a response item's or an event's kind) that is an array or an object
was looked up in the reader's sets of kinds, and failed the whole listing of a rollout without
task events ("unhashable type"). Such a line is a `bad-record` on its line, the rest of the
rollout read; any JSON value in any field the reader looks at is read or refused, never raised."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.formats.codex import (
    Unjoined,
    continued,
    evidence_turns,
    fork_point,
    listed_rollout,
    read_rollout,
    thread_history,
    turns_begun_before,
)
from remem.daemon.sessions.formats.model import NotAForkPoint
from remem.daemon.sessions.sources import Root

from .codex_lines import TID, call, event, line, meta, output, rollout, turn

KINDS = {"array": ["function_call"], "object": {"type": "task_started"}, "empty-array": []}
REVERTED = "019c0000-0000-7000-8000-0000000000ee"
NAME = f"rollout-2026-05-01T00-00-00-{TID}_{REVERTED}.jsonl"


def bad_lines(kind: Any) -> dict[str, dict[str, Any]]:
    """A line of each shape whose kind is `kind`: a response item, an event, an end event's item."""
    return {
        "response-item": line("response_item", type=kind, call_id="c9", name="exec_command"),
        "event": line("event_msg", type=kind, call_id="c1", exit_code=0),
        "late-event": line("event_msg", type=kind, item={"id": "c1", "status": "completed"}),
    }


def with_tasks(bad: dict[str, Any]) -> bytes:
    first = turn("t1", "first", "one", call("c1"), output("c1"))
    return rollout(meta(), *first[:-1], bad, first[-1], bad, *turn("t2", "second", "two"))


def without_tasks(bad: dict[str, Any]) -> bytes:
    plain = [r for r in (*turn("t1", "first", "one", call("c1"), output("c1")), *turn("t2", "second", "two"))]
    plain = [r for r in plain if r["type"] != "event_msg"]
    return rollout(meta(), *plain[:4], bad, *plain[4:])


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("shape", ["response-item", "event", "late-event"])
@pytest.mark.parametrize("tasks", [True, False], ids=["task-events", "no-task-events"])
def test_a_kind_that_is_no_text_is_a_bad_record_on_its_line(kind: str, shape: str, tasks: bool) -> None:
    bad = bad_lines(KINDS[kind])[shape]
    data = with_tasks(bad) if tasks else without_tasks(bad)
    lines = [n for n, raw in enumerate(data.splitlines(), start=1) if json.loads(raw) == bad]
    read = read_rollout(data)
    assert [(p.line, p.code) for p in read.problems] == [(n, "bad-record") for n in lines]
    assert all("payload.type" in p.reason and f"line {p.line}" in p.reason for p in read.problems)
    assert read.error is None
    assert [t.prompt for t in read.turns] == ["first", "second"]
    assert read.turns[0].forkable and read.turns[0].tools[0].call_id == "c1"
    listed, _ = listed_rollout(data)
    assert (listed.turn_count, listed.title, listed.problems) == (2, "first", read.problems)
    assert fork_point(data, 1).turn.prompt == "first"
    assert fork_point(data, 2).turn.prompt == "second"
    assert [t.turn.prompt for t in evidence_turns(data)] == ["first", "second"]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_rollout_without_task_events_holding_such_a_line_lists_with_the_others(
    home: Home, tmp_path: Path, kind: str
) -> None:
    day = tmp_path / "codex" / "sessions" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    bad = bad_lines(KINDS[kind])["response-item"]
    (day / f"rollout-2026-05-01T00-00-00-{TID}.jsonl").write_bytes(without_tasks(bad))
    other = "019c0000-0000-7000-8000-0000000000ff"
    (day / f"rollout-2026-05-01T00-10-00-{other}.jsonl").write_bytes(
        rollout(meta(other), *turn("t1", "hi", "hello"))
    )
    listing = SessionCatalog(home, [Root(tmp_path / "codex" / "sessions", "codex")], 120).listing()
    assert listing.errors == []
    by_id = {s.id: s for s in listing.sessions}
    assert set(by_id) == {TID, other}
    assert (by_id[TID].turns, by_id[TID].problems) == (2, 1)


# Every field a rollout's lines give the reader, by where it sits: a path of keys into a line.
FIELDS = [
    ("payload", "type"),
    ("payload", "turn_id"),
    ("payload", "message"),
    ("payload", "role"),
    ("payload", "content"),
    ("payload", "call_id"),
    ("payload", "id"),
    ("payload", "name"),
    ("payload", "exit_code"),
    ("payload", "item"),
    ("payload", "item", "id"),
    ("payload", "item", "type"),
    ("payload", "item", "exit_code"),
    ("payload", "item", "status"),
    ("payload", "error"),
    ("payload", "num_turns"),
    ("payload", "success"),
    ("payload", "output"),
    ("payload", "cwd"),
    ("payload", "timestamp"),
    ("payload", "source"),
    ("payload", "forked_from_id"),
    ("payload", "history_base"),
    ("payload", "history_base", "thread_id"),
    ("payload", "history_base", "end_ordinal_exclusive"),
    ("payload", "replacement_history"),
    ("payload", "git"),
    ("type",),
    ("timestamp",),
    ("payload",),
]
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
) | st.sampled_from(["task_started", "task_complete", "item_completed", "exec_command_end", "message"])


def sample() -> list[dict[str, Any]]:
    """A rollout of every kind of line the reader takes apart, continuing a reverted thread."""
    base = {"thread_id": TID, "end_ordinal_exclusive": 3}
    return [
        meta(history_base=base, source={"subagent": {"thread_spawn": {"parent_thread_id": TID}}}),
        *turn(
            "t1",
            "first",
            "one",
            call("c1"),
            output("c1"),
            event("exec_command_end", call_id="c1", exit_code=0),
        ),
        event("item_completed", item={"id": "c1", "type": "CommandExecution", "exit_code": 1}),
        line(
            "compacted", message="", replacement_history=[{"type": "message", "role": "user", "content": []}]
        ),
        event("task_started", turn_id="t2"),
        event("user_message", message="second"),
        event("patch_apply_end", call_id="c2", success=True),
        event("thread_rolled_back", num_turns=1),
        event("task_complete", turn_id="t2", error=None),
    ]


def put(record: Any, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        if not isinstance(record.get(key), dict):
            record[key] = {}
        record = record[key]
    record[path[-1]] = value


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 13), st.sampled_from(FIELDS), JSON), min_size=1, max_size=3),
    st.booleans(),
)
def test_any_json_value_in_any_field_is_read_or_refused_never_raised(
    changes: list[tuple[int, tuple[str, ...], Any]], tasks: bool
) -> None:
    lines = sample()
    if not tasks:
        lines = [r for r in lines if r["type"] != "event_msg"]
    lines = copy.deepcopy(lines)
    for at, path, value in changes:
        put(lines[at % len(lines)], path, value)
    data = rollout(*lines)
    read = read_rollout(data)
    listed, _ = listed_rollout(data)
    assert (listed.session_id, listed.turn_count, listed.error) == (
        read.session_id,
        read.turn_count,
        read.error,
    )
    evidence_turns(data)
    turns_begun_before(data, 5)
    for index in range(1, read.turn_count + 2):
        with contextlib.suppress(NotAForkPoint):
            fork_point(data, index)
    continued(data, NAME)
    parent = rollout(meta(), *turn("t1", "first", "one"))
    with contextlib.suppress(Unjoined):
        thread_history(data, NAME, lambda rollout_id: (f"rollout-2026-05-01T00-00-00-{TID}.jsonl", parent))

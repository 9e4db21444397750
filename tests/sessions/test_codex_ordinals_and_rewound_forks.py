"""Codex's ordinals are the numbers it writes on its lines, and a rewound fork continues its own
thread (decision 0400), on hand-made lines in the shapes Codex 0.163 writes."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

from remem.daemon.forks.codex_child import child_meta
from remem.daemon.sessions.formats.codex import (
    continued,
    ordinal_cut,
    read_rollout,
    thread_history,
    turns_begun_before,
)
from remem.daemon.sessions.harness_sources import superseded_rollouts
from remem.daemon.sessions.index import LogRow

from .codex_lines import TID, meta, rollout, turn

PARENT = "019c0000-0000-7000-8000-0000000000aa"
ROTATED = "019c0000-0000-7000-8000-0000000000bb"
FIRST_NAME = f"rollout-2026-05-01T00-00-00-{TID}.jsonl"
ROTATED_NAME = f"rollout-2026-05-01T00-00-09-{TID}_{ROTATED}.jsonl"


def numbered(records: list[dict[str, Any]], start: int) -> list[dict[str, Any]]:
    """`records` with Codex's ordinals from `start`, written where Codex writes them."""
    return [{"timestamp": r["timestamp"], "ordinal": start + n, **r} for n, r in enumerate(records)]


def remem_fork() -> bytes:
    """A remem fork of a paginated rollout: its own `session_meta` (not numbered), then the
    parent's (numbered 0) and the parent's numbered lines, then two turns Codex resumed it with."""
    parent = numbered([meta(PARENT), *turn("p1", "parent question", "parent answer")], 0)
    own = numbered(
        [*turn("c1", "child question 1", "ok"), *turn("c2", "child question 2", "ok")], len(parent)
    )
    return rollout(meta(TID, forked_from_id=PARENT), *parent, *own)


def test_codex_ordinals_count_the_numbers_it_wrote_not_the_lines() -> None:
    data = remem_fork()
    lines = data.splitlines(keepends=True)
    # Ordinal 6 (the child's first turn) begins on line 8: line 1 is not numbered, and the
    # parent's session_meta is ordinal 0.
    assert ordinal_cut(data, 6) == (len(b"".join(lines[:7])), 5)
    assert ordinal_cut(data, 16) == (None, 15)  # all of it, as `codex exec fork` inherits it
    assert [turns_begun_before(data, n) for n in (1, 2, 6, 7, 11, 12, 16)] == [0, 1, 1, 2, 2, 3, 3]


def test_a_rollout_no_codex_numbered_counts_its_lines_even_with_an_ordinal_in_its_text() -> None:
    data = rollout(meta(), *turn("t1", '"ordinal"', "ok"), *turn("t2", "next", "ok"))
    assert ordinal_cut(data, 6)[0] == len(b"".join(data.splitlines(keepends=True)[:6]))
    assert [turns_begun_before(data, n) for n in (1, 2, 6, 7)] == [0, 1, 1, 2]


def test_an_ordinal_written_elsewhere_on_the_line_is_read() -> None:
    records = [meta(PARENT), *turn("p1", "parent question", "parent answer")]
    data = rollout(meta(TID, forked_from_id=PARENT), *[{**r, "ordinal": n} for n, r in enumerate(records)])
    lines = data.splitlines(keepends=True)
    assert ordinal_cut(data, 1) == (len(lines[0] + lines[1]), 0)  # line 2 is ordinal 0


def rotated(history_base: dict[str, Any], forked_from: str | None = PARENT) -> bytes:
    """The rollout a revert rotated the thread `TID` to: line 1 copies the thread's
    `forked_from_id` and names the history it continues, then a turn after the revert."""
    upto = history_base["end_ordinal_exclusive"]
    head = meta(TID, history_base=history_base, **({"forked_from_id": forked_from} if forked_from else {}))
    return rollout(*numbered([head, *turn("c3", "after the revert", "ok")], upto))


def test_a_reverted_fork_is_joined_with_the_history_of_its_own_thread() -> None:
    first = remem_fork()
    upto = 11  # before the child's second turn
    offset = ordinal_cut(first, upto)[0]
    assert offset is not None
    data = rotated({"thread_id": TID, "end_ordinal_exclusive": upto, "end_byte_offset": offset})
    base = continued(data, ROTATED_NAME)
    assert base is not None and (base.rollout, base.upto, base.offset) == (TID, upto, offset)
    history = thread_history(data, ROTATED_NAME, lambda rollout_id: (FIRST_NAME, first))
    assert history == first[:offset] + data[data.index(b"\n") + 1 :]
    r = read_rollout(history)
    assert (r.session_id, r.error) == (TID, None)
    assert [(t.prompt, t.status) for t in r.turns] == [
        ("parent question", "completed"),
        ("child question 1", "completed"),
        ("after the revert", "completed"),
    ]


def test_a_rotated_rollouts_history_base_naming_the_thread_it_was_forked_from_is_a_fork_boundary() -> None:
    data = rotated({"thread_id": PARENT, "end_ordinal_exclusive": 6, "end_byte_offset": 100})
    assert continued(data, ROTATED_NAME) is None


def test_a_fork_of_a_codex_fork_child_drops_the_ordinal_it_was_forked_at() -> None:
    """The parent's `forked_from_ordinal_exclusive` is an ordinal of the parent's own parent."""
    line = rollout(
        meta(
            PARENT,
            forked_from_id="019c0000-0000-7000-8000-0000000000cc",
            forked_from_ordinal_exclusive=25,
            history_base={"thread_id": "019c0000-0000-7000-8000-0000000000cc", "end_ordinal_exclusive": 25},
        )
    ).rstrip(b"\n")
    made = json.loads(child_meta(line, TID, PARENT, datetime(2026, 5, 1, tzinfo=timezone.utc)))["payload"]
    assert made["forked_from_id"] == PARENT and "forked_from_ordinal_exclusive" not in made
    assert made["history_base"]["end_ordinal_exclusive"] == 25


def test_a_thread_rotated_within_the_second_it_began_is_its_newest_rollout() -> None:
    """The names' times tie, and the rollout ids decided: a remem fork's first rollout id (a
    UUIDv5, not time-ordered) could come after the one Codex rotated it to, and the thread
    listed twice. Once rotated, the first rollout is never the thread's current one."""
    thread, later = "fffffff0-0000-5000-8000-000000000000", "0195aaaa-0000-7000-8000-000000000000"
    stamp = "2026-01-01T00-00-00"
    first = f"/r/2026/01/01/rollout-{stamp}-{thread}.jsonl"
    rotated = f"/r/2026/01/01/rollout-{stamp}-{thread}_{later}.jsonl"
    rows = [LogRow(path=p, revision="r", id=thread, format="codex") for p in (first, rotated)]
    assert superseded_rollouts(rows) == {first}


def test_a_rollout_numbered_after_many_forks_leading_lines_is_cut_at_its_ordinal() -> None:
    """Each remem fork of a fork leads with one more `session_meta` line (tens of KB with its
    instructions): past a fixed window, the rollout was taken for one Codex never numbered and
    cut by lines, in the middle of those."""
    lead = (
        json.dumps(
            {
                "timestamp": "2026-01-01T00:00:00Z",
                "type": "session_meta",
                "payload": {"id": TID, "x": "a" * 40_000},
            },
            separators=(",", ":"),
        ).encode()
        + b"\n"
    )
    numbered = [
        json.dumps(
            {"timestamp": "2026-01-01T00:00:01Z", "ordinal": n, "type": "event_msg"}, separators=(",", ":")
        ).encode()
        + b"\n"
        for n in range(10)
    ]
    data = lead * 30 + b"".join(numbered)  # 1.2 MB of leading lines
    assert ordinal_cut(data, 5) == (len(lead) * 30 + sum(map(len, numbered[:5])), 4)

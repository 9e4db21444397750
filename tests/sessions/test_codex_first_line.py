"""A Codex rollout is identified by its line 1 alone: a legacy fork copies its parent's
`session_meta` after its own, so a later one is never the rollout's, and a rollout whose line 1
is not its `session_meta` (damaged, torn while Codex writes it, another record) is an error of
its own that names the line, in the whole read and the listing's incremental one alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.formats.codex import (
    cwd_at_start,
    first_line_cwd,
    fork_point,
    listed_rollout,
    read_rollout,
)
from remem.daemon.sessions.formats.model import NotAForkPoint
from remem.daemon.sessions.sources import Root

from .codex_lines import TID, event, line, listed_as_read, meta, rollout, turn

CHILD = "019c0000-0000-7000-8000-0000000000cc"
PARENT_LINES = [meta(TID, model_provider="openai"), *turn("t1", "q1", "a1"), *turn("t2", "q2", "a2")]
DAMAGED_META = {
    "not-utf8": b'{"timestamp":"2026-05-01T01:00:00Z","type":"session_meta","payload":{"id":"019c\xff\n',
    "not-json": b'{"timestamp":"2026-05-01T01:00:00Z","type":"session_meta","payl\n',
    "bad-record": b'{"type":"session_meta","payload":[1]}\n',
}


def legacy_child(first: bytes) -> bytes:
    """A legacy-mode fork of the parent whose own first line is `first`: its copy of the
    parent, the parent's session_meta included, follows."""
    return first + rollout(*PARENT_LINES)


@pytest.mark.parametrize("damage", sorted(DAMAGED_META))
def test_a_fork_whose_line_1_is_damaged_is_an_error_never_its_parent(damage: str) -> None:
    read = listed_as_read(legacy_child(DAMAGED_META[damage]))
    assert (read.session_id, read.cwd, read.lineage, read.meta_line) == (None, None, (), 0)
    assert [(p.line, p.code) for p in read.problems] == [(1, damage)]
    assert read.error is not None and read.error.startswith("no session_meta line opens the rollout (line 1")
    assert "the first session_meta is on line 2" in read.error
    with pytest.raises(NotAForkPoint) as refused:
        fork_point(legacy_child(DAMAGED_META[damage]), 1)
    assert refused.value.code == "no-conversation" and "line 1" in refused.value.reason


def test_a_rollout_whose_line_1_is_another_record_is_an_error_naming_it() -> None:
    read = listed_as_read(rollout(line("turn_context", cwd="/else"), meta("019c-late", cwd="/else")))
    assert (read.session_id, read.cwd, read.meta_line) == (None, None, 0)
    assert read.error == (
        "no session_meta line opens the rollout (line 1 is a 'turn_context' record); the first "
        "session_meta is on line 2, and a later one is never the rollout's own (a fork copies its "
        "parent's after its own)"
    )
    plain = listed_as_read(rollout(event("task_started", turn_id="t1"), *turn("t1", "q", "a")))
    assert plain.error == "no session_meta line opens the rollout (line 1 is a 'event_msg' record)"


def test_a_first_line_codex_is_still_writing_is_not_yet_readable_then_reads() -> None:
    whole = legacy_child(rollout(meta(CHILD, forked_from_id=TID)))
    first_line = whole.index(b"\n") + 1
    for cut in (1, first_line // 2, first_line - 2):  # one partial line: no newline yet
        read, kept = listed_rollout(whole[:cut])
        assert kept is None and read == read_rollout(whole[:cut])
        assert read.session_id is None and [(p.line, p.code) for p in read.problems] == [(1, "torn-tail")]
        assert read.error == "no session_meta line yet: line 1 has no newline: being written, or torn"
    done = listed_as_read(whole)
    assert (done.session_id, done.error, [(e.kind, e.parent) for e in done.lineage]) == (
        CHILD,
        None,
        [("fork", TID)],
    )


def test_a_damaged_fork_beside_its_parent_leaves_the_parent_listed(home: Home, tmp_path: Path) -> None:
    day = tmp_path / "codex" / "sessions" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-05-01T00-00-00-{TID}.jsonl").write_bytes(rollout(*PARENT_LINES))
    damaged = day / f"rollout-2026-05-01T01-00-00-{CHILD}.jsonl"
    damaged.write_bytes(legacy_child(DAMAGED_META["not-utf8"]))
    listing = SessionCatalog(home, [Root(tmp_path / "codex" / "sessions", "codex")], 120).listing()
    assert [(s.id, s.turns) for s in listing.sessions] == [(TID, 2)]
    assert [Path(e.path).name for e in listing.errors] == [damaged.name]
    assert "line 1 is not UTF-8" in listing.errors[0].message


_VALUES = st.one_of(st.text(), st.integers(), st.none(), st.dictionaries(st.text(), st.text(), max_size=2))


@given(
    before=st.dictionaries(st.text().filter(lambda k: k != "cwd"), st.one_of(st.text(), _VALUES), max_size=3),
    cwd=st.one_of(st.text(), _VALUES),
    after=st.dictionaries(st.text().filter(lambda k: k != "cwd"), _VALUES, max_size=3),
    spaced=st.booleans(),
    ascii_only=st.booleans(),
    stamped_first=st.booleans(),
)
def test_a_cwd_read_off_a_first_lines_start_is_the_one_the_whole_line_names(
    before: dict[str, object],
    cwd: object,
    after: dict[str, object],
    spaced: bool,
    ascii_only: bool,
    stamped_first: bool,
) -> None:
    """A glance takes the cwd from the line's start only when that start is the session_meta's
    opening up to its cwd; it is then the cwd the whole line names, whatever the keys before
    it, the spacing or the escapes. Codex's own layout (string fields, then the cwd) is read
    there, so its tens of KB of instructions after it are neither read nor decoded."""
    payload = {**before, "cwd": cwd, **{k: v for k, v in after.items() if k not in before}}
    top = {"timestamp": "2026-05-01T00:00:00Z", "type": "session_meta", "payload": payload}
    if not stamped_first:
        top = {"type": top["type"], "payload": payload, "timestamp": top["timestamp"]}
    separators = (", ", ": ") if spaced else (",", ":")
    data = json.dumps(top, separators=separators, ensure_ascii=ascii_only).encode()
    whole = first_line_cwd(data)
    assert whole == (cwd if isinstance(cwd, str) and cwd else None)
    start = cwd_at_start(data)
    assert start in (None, whole)
    if whole is not None and all(isinstance(v, str) for v in before.values()):
        assert start == cwd

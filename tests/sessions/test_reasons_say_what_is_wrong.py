"""A reason says what is wrong, not something near it: a session root that is a file or a FIFO is
not a folder (it was "does not exist"); a Codex `session_meta` whose id or cwd is a number or an
array has them of the wrong type (it "has no id"); a `history_base` that names no thread is a
problem of line 1, as one whose ordinal is no ordinal already was (it was passed by unsaid)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.formats.codex import read_rollout
from remem.daemon.sessions.sources import Root, configured_roots, named_roots
from remem.daemon.settings import SessionRootSetting

from .codex_lines import TID, listed_as_read, meta, rollout, turn


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_root_that_is_no_folder_is_said_to_be_no_folder(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "sessions"
    if kind == "file":
        path.write_text("not a folder\n")
    else:
        os.mkfifo(path)
    said = f"session root is {'a file' if kind == 'file' else 'a FIFO'}, not a folder"
    entries: list[Any] = [
        str(path),
        SessionRootSetting(path=str(path)),
        SessionRootSetting(path=str(path), format="codex"),
    ]
    for entry in entries:
        (root,) = configured_roots(entry)
        assert root.problem is not None and root.problem.startswith(said), entry
    (root,) = named_roots(path)
    assert root.problem is not None and root.problem.startswith(said)
    assert "name the folder that holds the sessions" in root.problem
    (error,) = SessionCatalog(Home(tmp_path / "home"), [path], 120).listing().errors
    assert (error.path, error.message) == (str(path), root.problem)  # not "does not exist"


def test_a_root_not_there_or_a_folder_has_no_such_problem(tmp_path: Path) -> None:
    assert named_roots(tmp_path / "missing")[0].problem is None
    (tmp_path / "empty").mkdir()
    assert named_roots(tmp_path / "empty")[0].problem is None


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"tid": 123}, "has an id of the wrong type (expected a string, got a number: 123)"),
        ({"cwd": ["a"]}, 'has a cwd of the wrong type (expected a string, got an array: ["a"])'),
        ({"cwd": {"a": 1}}, 'has a cwd of the wrong type (expected a string, got an object: {"a":1})'),
        ({"tid": True}, "has an id of the wrong type (expected a string, got a boolean: true)"),
        (
            {"tid": None, "cwd": 1.5},
            "has no id and has a cwd of the wrong type (expected a string, got a number: 1.5)",
        ),
        ({"tid": None}, "has no id"),
        ({"tid": "", "cwd": None}, "has no id or cwd"),
    ],
)
def test_a_session_meta_whose_id_or_cwd_is_no_text_says_which_and_what_it_is(
    fields: dict[str, Any], said: str
) -> None:
    data = rollout(meta(**fields), *turn("t1", "hi", "hello"))
    assert listed_as_read(data).error == f"session_meta on line 1 {said}"


@pytest.mark.parametrize(
    ("base", "said"),
    [
        ("bogus", 'history_base is "bogus", not an object naming the thread it continues'),
        ([TID], f'history_base is ["{TID}"], not an object naming the thread it continues'),
        ({"thread_id": 5}, "history_base.thread_id is 5, not a thread id (a non-empty string)"),
        ({"thread_id": ""}, 'history_base.thread_id is "", not a thread id (a non-empty string)'),
        ({"end_ordinal_exclusive": 3}, "history_base has no thread_id"),
    ],
)
def test_a_history_base_naming_no_thread_is_a_problem_of_line_1(
    home: Home, tmp_path: Path, base: Any, said: str
) -> None:
    child = "019c0000-0000-7000-8000-0000000000b1"
    data = rollout(meta(child, history_base=base), *turn("t1", "hi", "hello"))
    read = listed_as_read(data)
    assert read.error is None and read.lineage == ()
    assert [(p.line, p.code, p.reason) for p in read.problems] == [
        (1, "bad-value", f"line 1: {said}: the thread it inherits lines from, and which lines, are not known")
    ]
    assert read_rollout(data).problems == read.problems
    day = tmp_path / "codex" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-05-01T00-00-00-{child}.jsonl").write_bytes(data)
    (day / f"rollout-2026-05-01T00-00-01-{TID}.jsonl").write_bytes(
        rollout(meta(), *turn("t1", "hi", "hello"))
    )
    listing = SessionCatalog(home, [Root(tmp_path / "codex", "codex")], 120).listing()
    by_id = {s.id: s for s in listing.sessions}
    assert listing.errors == [] and (by_id[child].problems, by_id[child].parent) == (1, None)


def test_a_null_history_base_is_none_at_all() -> None:
    assert listed_as_read(rollout(meta(history_base=None), *turn("t1", "hi", "hello"))).problems == ()

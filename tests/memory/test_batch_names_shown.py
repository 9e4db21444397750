"""A batch's problems quote the names its changes sent cut after 60 characters and on one line,
and `memory apply` refuses a name longer than a file name with its input: a problem repeated a
name whole (a 400 000-character one included), and one holding a line break made a problem line
of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.batch import InvalidChanges
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.daemon.helpers import remem

from .factory import delete
from .test_store import EMPTY

LONGEST = 255 - len(".md")  # a record file's name fills a file name at most


def test_a_problem_quotes_a_name_cut_short_and_on_one_line(
    store: MemoryStore, workspace: WorkspaceId
) -> None:
    with pytest.raises(InvalidChanges) as caught:
        store.commit_workspace(
            workspace, EMPTY, [delete("z" * LONGEST), delete("w" * 100), delete("w" * 100), delete("a\nb")]
        )
    assert [problem.message for problem in caught.value.problems] == [
        f"deletes `{'z' * 60}…`, which does not exist; re-read the workspace and drop this change",
        f"deletes `{'w' * 60}…`, which does not exist; re-read the workspace and drop this change",
        f"changes 1 and 2 both touch `{'w' * 60}…`; a batch changes each record at most once",
        f"deletes `{'w' * 60}…`, which does not exist; re-read the workspace and drop this change",
        "deletes `a\\nb`, which does not exist; re-read the workspace and drop this change",
    ]


def test_memory_apply_refuses_a_name_longer_than_a_file_name_and_quotes_others_cut_short(
    home: Home, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    said = {}
    for name in ("z" * 400_000, "y" * LONGEST):
        changes = tmp_path / "changes.json"
        changes.write_text(json.dumps([{"action": "delete", "name": name}]))
        applied = remem(
            home,
            "memory",
            "apply",
            "--cwd",
            str(project),
            "--expected-revision",
            EMPTY,
            "--changes",
            str(changes),
        )
        assert applied.returncode == 2 and applied.stdout == "", applied.stderr[:300]
        said[name[0]] = applied.stderr
    assert (
        said["z"]
        == f"invalid: change 0: name: String should have at most {LONGEST} characters [remem/bad-change]\n"
    )
    assert said["y"] == (
        f"invalid: change 0: deletes `{'y' * 60}…`, which does not exist; re-read the workspace and drop "
        "this change [remem/delete-missing]\n"
    )

"""A KeyError in a merge of the small packs that is not pygit2's object not found is a bug's.

pygit2 says an object not found as NotFoundError (a GitError and a KeyError) from 1.21 on, as a
bare KeyError before; so every KeyError of a merge was taken as an object not found: a bug's was
told as the history's damage, with 'move history aside', and no traceback, at every merge. Only
pygit2's calls that look objects up are read so now.
"""

from __future__ import annotations

import logging

import pygit2
import pytest

from remem.daemon.memory import history as history_module
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .test_crash_recovery import EMPTY
from .test_histaud_damaged_packs import NEVER, indexes


def _packbuilder_without_its_setting(repo: pygit2.Repository) -> pygit2.PackBuilder:
    """A pygit2 whose PackBuilder remem does not fit: a lookup of a setting it lacks."""
    raise KeyError("threads")


def test_a_key_error_of_a_bug_in_a_merge_is_logged_with_its_traceback_not_as_damage(
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(history_module, "PACK_EVERY", NEVER)
    first = store.commit_workspace(workspace, EMPTY, [put("alpha")])
    monkeypatch.setattr(history_module, "PACK_EVERY", 1)
    monkeypatch.setattr(pygit2, "PackBuilder", _packbuilder_without_its_setting)
    done = store.commit_workspace(workspace, first.revision, [put("beta")])

    assert done.history is not None
    [said] = caplog.records
    assert "is damaged" not in said.getMessage(), said.getMessage()
    assert said.levelno == logging.ERROR and said.exc_info is not None and said.exc_info[0] is KeyError
    assert "a bug of remem" in said.getMessage() and "the entry is written" in said.getMessage()
    assert len(indexes(store)) == 2  # left for a remem without the bug

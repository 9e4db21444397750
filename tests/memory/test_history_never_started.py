"""A history never started is read as empty and left unstarted: its log, a page of it, and a
lookup of an entry by id make no repository, no mark and no lock, in a home not made yet
(decision 0499). One deleted after it was started is still started again by its next read."""

from __future__ import annotations

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.history import HistoryError
from remem.daemon.memory.store import MemoryStore


def test_its_reads_answer_empty_and_make_nothing(home: Home) -> None:
    history = MemoryStore(home).history
    assert history.never_started()
    assert history.log(None) == []
    assert history.page("my-project-0123456789abcdef", 10) == ([], 0)
    with pytest.raises(HistoryError, match=r"^`abc1234` names no history entry \(see `remem memory log`\)$"):
        history.entry("abc1234")
    assert not home.root.exists()


def test_one_deleted_after_it_started_is_started_again_by_a_read(home: Home) -> None:
    home.ensure_layout()
    (home.state / "history-started").touch()  # a history was started here, and `history/` deleted
    history = MemoryStore(home).history
    assert not history.never_started()
    assert history.log(None) == []
    assert (home.root / "history").is_dir()

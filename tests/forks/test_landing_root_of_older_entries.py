"""The session root an older remem's journal entry (which records none) is recovered from: its
child path's layout tells it. A Codex rollout's `sessions` folder counts only above the date
folders Codex keeps; a root of another shape below a folder of that name is its own folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.forks.journal import JournalEntry, landing_root_of

CHILD = "0199a000-0000-7000-8000-000000000001"


def _older_entry(path: str) -> JournalEntry:
    return JournalEntry(
        operationId="op", requestHash="h", status="prepared", source="s", sourceRevision="r",
        child=CHILD, path=path, seedLength=1, forkTurn=1, title=None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("path", "root"),
    [
        (f"/u/.dsh/sessions/--proj--/{CHILD}/session.jsonl.zstd", "/u/.dsh/sessions"),
        (f"/u/.claude/projects/-u-proj/{CHILD}.jsonl", "/u/.claude/projects"),
        (f"/u/.codex/sessions/2026/12/06/rollout-2026-12-06T10-00-00-{CHILD}.jsonl", "/u/.codex/sessions"),
        (f"/u/sessions/codex-copy/rollout-2026-12-06T10-00-00-{CHILD}.jsonl", "/u/sessions/codex-copy"),
        (f"/u/sessions/a/b/rollout-2026-12-06T10-00-00-{CHILD}.jsonl", "/u/sessions/a/b"),
    ],
    ids=["dsh", "claude-code", "codex-dated", "codex-beside-its-parent", "codex-two-below"],
)
def test_an_older_entry_lands_where_its_layout_says(path: str, root: str) -> None:
    assert landing_root_of(_older_entry(path)) == Path(root)

"""Polling, a kept answer is proved current by the `stat` of each log it lists, compared with the
`stat` that answer was made from: after a patch, the patched answer's own.

While they hold, the listing is the very same object (the daemon then sends the bytes it encoded
before); a log that changed is shown by the next listing, and the listing after that is kept
again rather than patched at every request. A listing takes each `stat` once: the pass that
found the kept answer stale names what to patch, and no pass of an earlier listing ever does.
Each `stat` is taken from a descriptor of its root, or by path when the root cannot be opened.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.sessions import Listing
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.sources import Root
from remem.daemon.sessions.writer import SessionWriter
from tests.sessions.claude_lines import CWD as CLAUDE_CWD
from tests.sessions.claude_lines import jsonl, prompt, say
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.sessions.harness_roots import SID, build_roots

CWD = "/home/dev/projects/demo"


def _listing(home: Home, root: Path | Sequence[Root], memo: ListingMemo) -> Listing:
    roots = [root] if isinstance(root, Path) else root
    catalog = SessionCatalog(home, roots, idle_seconds=120, memo=memo)  # as the daemon, per request
    try:
        return catalog.listing()
    finally:
        catalog.close()


def test_a_patched_answer_is_kept_from_the_stat_it_was_patched_at(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "r"
    draft = build_session(SessionSpec(seed=3, turns=3, cwd=CWD))
    write_session(root, build_session(SessionSpec(seed=4, turns=1, cwd=CWD)))
    memo = ListingMemo(lambda: False)  # polling: no mark is trusted to come in time

    def listing() -> Listing:
        return _listing(home, root, memo)

    writer = SessionWriter(root, draft.header)
    try:
        writer.append(draft.batches[0])
        first = listing()
        assert listing() is first, "every stat holds: the kept answer"
        for turns, batch in enumerate(draft.batches[1:], start=2):
            writer.append(batch)
            changed = listing()
            assert {s.id: s.turns for s in changed.sessions}[draft.header.id] == turns
            assert listing() is changed, "kept from the stat it was patched at"
    finally:
        writer.close()


def test_an_unmarked_change_is_seen_when_a_mark_on_another_log_comes_with_it(
    home: Home, tmp_path: Path
) -> None:
    root = tmp_path / "r"
    drafts = [build_session(SessionSpec(seed=seed, turns=2, cwd=CWD)) for seed in (5, 6)]
    memo = ListingMemo(lambda: False)
    writers = [SessionWriter(root, draft.header) for draft in drafts]
    try:
        for writer, draft in zip(writers, drafts, strict=True):
            writer.append(draft.batches[0])
        kept = _listing(home, root, memo)
        assert _listing(home, root, memo) is kept  # its pass found every stat as it was
        for writer, draft in zip(writers, drafts, strict=True):
            writer.append(draft.batches[1])
        memo.changed([str(writers[1].path)])  # the watcher's mark of one; the other's still to come
        turns = {s.id: s.turns for s in _listing(home, root, memo).sessions}
        assert turns == {draft.header.id: 2 for draft in drafts}
    finally:
        for writer in writers:
            writer.close()


def _every_format(folder: Path) -> tuple[dict[str, Path], list[Root]]:
    """A Claude Code root (a subagent log too), a Codex root and a DSH root, as sources."""
    roots = build_roots(folder)
    return roots, [
        Root(roots["claude-code"], "claude-code"),
        Root(roots["codex"], "codex"),
        Root(roots["dsh"], "dsh"),
    ]


def test_the_first_listing_after_an_append_takes_each_logs_stat_once(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # By their real paths, as a descriptor's folder is read back.
    roots, sources = _every_format(tmp_path.resolve())
    logs = {str(p) for root in roots.values() for p in root.rglob("*.jsonl")}
    memo = ListingMemo(lambda: False)
    _listing(home, sources, memo)
    taken: Counter[str] = Counter()
    lstat = os.lstat

    def counted(name: str, *, dir_fd: int | None = None) -> os.stat_result:
        folder = "" if dir_fd is None else os.readlink(f"/proc/self/fd/{dir_fd}")
        if (target := os.path.join(folder, name)) in logs:
            taken[target] += 1
        return lstat(name, dir_fd=dir_fd)

    monkeypatch.setattr(os, "lstat", counted)
    kept = _listing(home, sources, memo)
    assert _listing(home, sources, memo) is kept and taken == Counter(2 * list(logs))
    taken.clear()
    log = roots["claude-code"] / CLAUDE_CWD.replace("/", "-") / f"{SID}.jsonl"
    with log.open("ab") as f:
        f.write(jsonl(prompt("u5", "a4", "one more"), say("a5", "u5", "done")))
    changed = _listing(home, sources, memo)
    assert changed is not kept
    assert taken == Counter(logs), "one pass: the one that found the kept answer stale"


def test_a_root_that_cannot_be_opened_has_its_logs_stat_ed_by_path(home: Home, tmp_path: Path) -> None:
    _, sources = _every_format(tmp_path)
    memo = ListingMemo(lambda: False)
    kept = _listing(home, sources, memo)
    assert _listing(home, sources, memo) is kept
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    taken: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/dev/fd")) + 16, limits[1]))
    try:
        with contextlib.suppress(OSError):
            while True:  # no descriptor left: a root's open fails, a path's `stat` needs none
                taken.append(os.open(os.devnull, os.O_RDONLY))
        listing = _listing(home, sources, memo)
    finally:
        for fd in taken:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)
    assert listing is kept, "every log is where it was: the kept answer, not one made anew"

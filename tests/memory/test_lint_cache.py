"""The lint cache gives the same verdicts as judging from scratch, and never a stale text."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.memory import lint_cache
from remem.daemon.memory.index import render_index
from remem.daemon.memory.lint import lint_workspace_folder
from remem.daemon.memory.lint_cache import LintCache
from remem.daemon.memory.record import render_record
from remem.daemon.memory.stamps import RACY_NS
from remem.daemon.memory.validation import ParsedRecord, parse_record

from .factory import rec


def _folder(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    records = [rec(name) for name in names]
    for record in records:
        (folder / f"{record.name}.md").write_text(render_record(record), encoding="utf-8")
    (folder / "MEMORY.md").write_text(render_index(records), encoding="utf-8")
    return folder


def _codes(reports: dict[str, list]) -> dict[str, list[str]]:
    return {name: [d.code for d in found] for name, found in reports.items()}


def _verdict(parsed: ParsedRecord) -> tuple[object, ...]:
    return parsed.record, parsed.diagnostics, parsed.name_span, parsed.fields


def test_a_cached_parse_is_not_changed_by_the_workspace_rules_that_judged_it(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "alpha", "beta")
    cache = LintCache()
    duplicate = lint_workspace_folder(folder, {"beta.md": render_record(rec("alpha"))}, cache)
    assert "remem/name-duplicate" in _codes(duplicate)["beta.md"]
    assert _codes(duplicate)["alpha.md"] == ["remem/name-duplicate"]
    # The duplicate's problem was added to copies: fixing the name clears it everywhere.
    fixed = lint_workspace_folder(folder, {"beta.md": render_record(rec("beta"))}, cache)
    assert _codes(fixed) == {"alpha.md": [], "beta.md": [], "MEMORY.md": []}
    assert fixed == lint_workspace_folder(folder, {"beta.md": render_record(rec("beta"))})


def test_the_parse_cache_answers_as_parse_record_does() -> None:
    cache = LintCache()
    text = render_record(rec("alpha")).replace("type: project", "type: opinion")
    for _ in range(2):
        assert _verdict(cache.parse(text, "alpha.md")) == _verdict(parse_record(text, "alpha.md"))
    other = _verdict(cache.parse(text, "other.md"))  # the file name is checked against the name
    assert other == _verdict(parse_record(text, "other.md")) != _verdict(parse_record(text, "alpha.md"))


class _CountedHashes(str):
    hashed = 0

    def __hash__(self) -> int:
        type(self).hashed += 1
        return super().__hash__()


def test_a_new_text_is_never_hashed_and_the_same_one_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each keystroke is a new text; hashing a 1 MiB one to look it up cost half a millisecond."""
    parses: list[str] = []
    monkeypatch.setattr(
        lint_cache, "parse_record", lambda text, *a, **k: parses.append(text) or parse_record(text, *a, **k)
    )
    cache = LintCache()
    text = _CountedHashes(render_record(rec("alpha")))
    for _ in range(3):
        assert _verdict(cache.parse(text, "alpha.md")) == _verdict(parse_record(text, "alpha.md"))
    assert (_CountedHashes.hashed, len(parses)) == (0, 1)
    equal = _CountedHashes(str(text) + "")  # the same characters, another string: judged anew
    assert equal is not text and _verdict(cache.parse(equal, "alpha.md")) == _verdict(
        cache.parse(text, "alpha.md")
    )
    assert (_CountedHashes.hashed, len(parses)) == (0, 2)


def test_a_file_rewritten_in_place_with_the_same_size_is_read_again(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "alpha")
    cache = LintCache()
    assert _codes(lint_workspace_folder(folder, cache=cache))["alpha.md"] == []
    path = folder / "alpha.md"
    same_size = path.read_text(encoding="utf-8").replace("type: project", "type: nonsuch")
    path.write_text(same_size, encoding="utf-8")
    assert "remem/type-invalid" in _codes(lint_workspace_folder(folder, cache=cache))["alpha.md"]


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file counts as settled, as if its last change were long ago."""
    later = lint_cache.time.time_ns() + 10 * RACY_NS
    monkeypatch.setattr(lint_cache.time, "time_ns", lambda: later)


@pytest.mark.usefixtures("settled")
def test_a_settled_file_is_read_once_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path, "alpha")
    reads: list[Path] = []
    read = lint_cache.read_file_stat
    monkeypatch.setattr(lint_cache, "read_file_stat", lambda path, odd: reads.append(path) or read(path, odd))
    cache = LintCache()
    first = lint_workspace_folder(folder, cache=cache)
    assert lint_workspace_folder(folder, cache=cache) == first
    assert sorted(p.name for p in reads) == ["MEMORY.md", "alpha.md"]
    (folder / "MEMORY.md").write_text("# stale\n", encoding="utf-8")
    assert "remem/index-out-of-sync" in _codes(lint_workspace_folder(folder, cache=cache))["MEMORY.md"]
    assert sorted(p.name for p in reads) == ["MEMORY.md", "MEMORY.md", "alpha.md"]


def test_the_cache_holds_a_bounded_number_of_entries() -> None:
    cache = LintCache(entries=2)
    texts = [render_record(rec(name)) for name in ("a1", "b2", "c3")]
    for text in texts:
        cache.parse(text, "x.md")
    assert len(cache._parses) == 2
    assert ("x.md", id(texts[0])) not in cache._parses


def test_the_cache_holds_a_bounded_amount_of_text() -> None:
    """Every keystroke in a long document is a new text: a count of entries alone let the
    language server keep a megabyte a keystroke in a 1 MiB record."""
    cache = LintCache(entries=100, chars=5000)
    texts = [render_record(rec(name, body="y" * 2000 + "\n")) for name in ("a1", "b2", "c3")]
    for text in texts:
        cache.parse(text, "x.md")
    assert len(cache._parses) == 2
    assert ("x.md", id(texts[0])) not in cache._parses
    huge = render_record(rec("d4", body="z" * 6000 + "\n"))
    assert _verdict(cache.parse(huge, "x.md")) == _verdict(parse_record(huge, "x.md"))
    assert ("x.md", id(huge)) not in cache._parses  # larger than the whole budget: never kept
    assert ("x.md", id(texts[2])) in cache._parses  # and nothing dropped for it


@pytest.mark.usefixtures("settled")
def test_a_record_added_to_a_settled_folder_is_judged(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "alpha")
    cache = LintCache()
    assert sorted(lint_workspace_folder(folder, cache=cache)) == ["MEMORY.md", "alpha.md"]
    (folder / "beta.md").write_text(render_record(rec("beta")), encoding="utf-8")
    reports = lint_workspace_folder(folder, cache=cache)
    assert sorted(reports) == ["MEMORY.md", "alpha.md", "beta.md"]
    assert _codes(reports)["MEMORY.md"] == ["remem/index-out-of-sync"]  # beta is not in the index yet


@pytest.mark.usefixtures("settled")
def test_the_index_verdict_follows_a_sibling_edited_on_disk(tmp_path: Path) -> None:
    """MEMORY.md's verdict and the rendering it is compared with are kept by content: an edit
    of a sibling's description on disk (same size, in place) is judged again, as is its undo."""
    folder = _folder(tmp_path, "alpha", "beta")
    cache = LintCache()
    edited = {"beta.md": render_record(rec("beta", body="Typed.\n"))}
    assert _codes(lint_workspace_folder(folder, edited, cache))["MEMORY.md"] == []
    path = folder / "alpha.md"
    original = path.read_text(encoding="utf-8")
    path.write_text(original.replace("About alpha", "About ALPHA"), encoding="utf-8")
    assert _codes(lint_workspace_folder(folder, edited, cache))["MEMORY.md"] == ["remem/index-out-of-sync"]
    path.write_text(original, encoding="utf-8")
    assert _codes(lint_workspace_folder(folder, edited, cache))["MEMORY.md"] == []
    assert lint_workspace_folder(folder, edited, cache) == lint_workspace_folder(folder, edited)


@pytest.mark.parametrize("kept", [False, True], ids=["first-look", "after-a-reading"])
def test_a_link_put_at_a_folder_lists_nothing_of_where_it_leads(tmp_path: Path, kept: bool) -> None:
    """Whoever asks a folder's entries (a keystroke's judge, a lint of the folder), a link at its
    path is no folder: the folder outside it leads to is never listed, before or after a reading."""
    folder, outside = tmp_path / "ws", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    (outside / "secret-name.md").write_text("x", encoding="utf-8")
    cache = LintCache()
    if kept:
        assert cache.entries(folder).regular == frozenset()
        folder.rmdir()
    else:
        folder.rmdir()
    folder.symlink_to(outside, target_is_directory=True)
    with pytest.raises(NotADirectoryError):
        cache.entries(folder)

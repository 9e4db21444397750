"""Typed texts' parses never push the folder's records out of the lint cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.memory import lint_cache
from remem.daemon.memory.lint import judge_edited, lint_workspace_folder, read_folder
from remem.daemon.memory.lint_cache import LintCache
from remem.daemon.memory.record import render_record
from remem.daemon.memory.stamps import RACY_NS
from remem.daemon.memory.validation import parse_record

from .factory import rec


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The file names parsed, in order (each a real `parse_record`), every file settled."""
    names: list[str] = []
    monkeypatch.setattr(
        lint_cache,
        "parse_record",
        lambda text, name, **k: names.append(name) or parse_record(text, name, **k),
    )
    later = lint_cache.time.time_ns() + 10 * RACY_NS
    monkeypatch.setattr(lint_cache.time, "time_ns", lambda: later)
    return names


def _folder(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    for name in names:
        (folder / f"{name}.md").write_text(render_record(rec(name)), encoding="utf-8")
    return folder


def test_a_burst_of_keystrokes_leaves_the_folders_records_parsed(tmp_path: Path, parsed: list[str]) -> None:
    """Faster than a person types (a formatter, an agent writing), more typed texts than the
    cache holds entries came between two readings of the folder, which parsed every record again."""
    folder = _folder(tmp_path, "alpha", "beta", "gamma")
    cache = LintCache(entries=4)
    files = read_folder(folder, {"delta.md": ""}, cache)
    files.siblings(cache)
    assert sorted(parsed) == ["alpha.md", "beta.md", "gamma.md"]
    for n in range(10):  # each judged against that reading, as the language server does
        typed = {"delta.md": render_record(rec("delta", body=f"version {n}\n"))}
        assert judge_edited(files, typed, cache) == {
            name: found for name, found in lint_workspace_folder(folder, typed).items() if name in typed
        }
    del parsed[:]
    read_folder(folder, {"delta.md": ""}, cache).siblings(cache)  # the folder's next reading
    assert parsed == []


def test_typed_texts_are_bounded_apart_from_the_files() -> None:
    cache = LintCache(entries=100, typed_entries=2)
    texts = [render_record(rec(name)) for name in ("a1", "b2", "c3")]
    for text in texts:
        cache.parse(text, "x.md", typed=True)
    assert len(cache._typed) == 2 and len(cache._parses) == 0
    assert ("x.md", id(texts[0])) not in cache._typed
    kept = cache.parse(texts[2], "x.md", typed=True)
    assert kept.record is cache.parse(texts[2], "x.md", typed=True).record  # the one parse, copied

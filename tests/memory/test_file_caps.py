"""A memory file past its cap is refused before it is held, and YAML work is bounded before parsing.

Every reader says the same: the store refuses the scope naming the file, the validator and the
editor report `remem/file-too-large` as the file's only problem, and a front matter past its
cap is `remem/front-matter-too-large` without being parsed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon import safe_yaml
from remem.daemon.home import Home
from remem.daemon.memory import canonical
from remem.daemon.memory.diagnostics import Diagnostic
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.lint import lint_paths, lint_workspace_folder
from remem.daemon.memory.store import MemoryInvalid, MemoryStore
from remem.daemon.memory.validation import parse_record

RECORD = "---\nname: small\ndescription: A small record\ntype: project\n---\nBody.\n"


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> int:
    cap = len(RECORD)
    monkeypatch.setattr(canonical, "MEMORY_FILE_MAX_BYTES", cap)
    return cap


def _codes(diagnostics: list[Diagnostic]) -> list[str]:
    return [d.code for d in diagnostics]


def test_a_record_past_the_cap_is_refused_by_the_store(
    store: MemoryStore, workspace: WorkspaceId, small_cap: int
) -> None:
    folder = store.folder(workspace)
    folder.mkdir(parents=True)
    (folder / "small.md").write_text(RECORD)
    assert [r.name for r in store.read_workspace(workspace).records] == ["small"]
    (folder / "large.md").write_text(RECORD.replace("small", "large") + "x\n")
    with pytest.raises(MemoryInvalid) as caught:
        store.read_workspace(workspace)
    [file] = caught.value.files
    assert file.path == str(folder / "large.md") and _codes(file.diagnostics) == ["remem/file-too-large"]
    assert "the most remem reads of a memory file" in file.diagnostics[0].message


def test_global_past_the_cap_is_refused_by_the_store(home: Home, store: MemoryStore, small_cap: int) -> None:
    home.ensure_layout()
    home.global_file.write_text("x" * (small_cap + 1))
    with pytest.raises(MemoryInvalid) as caught:
        store.read_global()
    assert _codes(caught.value.files[0].diagnostics) == ["remem/file-too-large"]


def test_the_validator_and_the_editor_report_only_the_cap(tmp_path: Path, small_cap: int) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    large = RECORD.replace("small", "large") + "x\n"
    (folder / "large.md").write_text(large)
    [report] = lint_paths([folder / "large.md"])
    assert _codes(report.diagnostics) == ["remem/file-too-large"]
    edited = lint_workspace_folder(folder, {"large.md": large + "y" * 4 * small_cap})
    assert _codes(edited["large.md"]) == ["remem/file-too-large"]
    assert (
        _codes(lint_workspace_folder(folder, {"large.md": RECORD.replace("small", "large")})["large.md"])
        == []
    )


def test_a_front_matter_past_its_cap_is_not_parsed() -> None:
    keys = "".join(f"k{i}: v\n" for i in range(3000))  # about 30 KB
    parsed = parse_record(RECORD.replace("type: project\n", f"type: project\n{keys}"), "small.md")
    assert "remem/front-matter-too-large" in _codes(parsed.diagnostics)
    assert parsed.record is None


def test_a_yaml_document_past_its_cap_is_refused_before_parsing() -> None:
    with pytest.raises(safe_yaml.TooLarge, match="over the 1024 KiB remem parses"):
        safe_yaml.load("k: v\n" * (safe_yaml.MAX_BYTES // 5 + 1))

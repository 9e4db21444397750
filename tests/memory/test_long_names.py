"""A file whose name is as long as the file system allows is deleted and replaced like any other.

The write protocol names a temp (and a kept hand save) after the file it stands for: such a
derived name is cut to fit, never one the file system refuses. A journal an earlier version left
naming a temp too long to exist is still finished, not replayed to the same error on every read.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import pytest

from remem.daemon import fsutil
from remem.daemon.cli import main
from remem.daemon.fsutil import TEMP_MARKER, is_temp_name, temp_path_for, unmerged_path_for
from remem.daemon.home import Home
from remem.daemon.memory import journal
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.journal import JOURNAL_NAME, write_generation
from remem.daemon.memory.store import MemoryInvalid, MemoryStore
from remem.daemon.safe_open import HeldFolder
from remem.daemon.swap import digest

from .factory import delete, put
from .test_store import EMPTY

HAND_MADE = "---\nname: {name}\ndescription: Made by hand\ntype: project\n---\nBy hand.\n"


def _long_name(folder: Path, size: int | None) -> str:
    """A record file name of `size` bytes, or of the longest the folder takes."""
    return "e" * ((size or _longest(folder)) - len(".md")) + ".md"


def _hand_made(store: MemoryStore, workspace: WorkspaceId, size: int | None) -> tuple[Path, str]:
    """A workspace holding `keep` and a hand-made record named `size` bytes long; its revision."""
    store.commit_workspace(workspace, EMPTY, [put("keep")])
    folder = store.folder(workspace)
    path = folder / _long_name(folder, size)
    path.write_text(HAND_MADE.format(name=path.stem))
    with pytest.raises(MemoryInvalid) as invalid:  # longer than a record name may be: shown, kept
        store.read_workspace(workspace)
    assert invalid.value.revision is not None
    return path, invalid.value.revision


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if is_temp_name(p.name) or p.name == JOURNAL_NAME]


@pytest.mark.parametrize("size", [250, None], ids=["250-bytes", "longest-allowed"])
def test_a_record_with_a_name_as_long_as_allowed_is_deleted(
    store: MemoryStore, workspace: WorkspaceId, size: int | None
) -> None:
    path, revision = _hand_made(store, workspace, size)
    result = store.commit_workspace(workspace, revision, [delete(path.stem)])
    assert result.status == "committed"
    assert not path.exists() and _leftovers(path.parent) == []
    assert [record.name for record in store.read_workspace(workspace).records] == ["keep"]


@pytest.mark.parametrize("size", [250, None], ids=["250-bytes", "longest-allowed"])
def test_a_file_with_a_name_as_long_as_allowed_is_replaced(
    store: MemoryStore, workspace: WorkspaceId, size: int | None
) -> None:
    """Through the store's own write protocol: no batch may put a record named this long."""
    path, _ = _hand_made(store, workspace, size)
    folder, old = path.parent, path.read_bytes()
    new = HAND_MADE.format(name=path.stem).replace("By hand.", "Replaced.").encode()
    with HeldFolder.at(folder) as held:
        write_generation(held, "sha256:" + "0" * 64, {path.name: new}, [], {path.name: digest(old)})
    assert path.read_bytes() == new and _leftovers(folder) == []
    with pytest.raises(MemoryInvalid) as invalid:  # read, and reported as the hand-made file was
        store.read_workspace(workspace)
    assert [Path(problem.path).name for problem in invalid.value.files] == [path.name]


def test_the_cli_deletes_a_record_with_the_longest_name_and_reads_on(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    store = MemoryStore(home)
    path, revision = _hand_made(store, WorkspaceId.from_cwd(cwd), None)
    changes = tmp_path / "changes.json"
    changes.write_text(f'[{{"action": "delete", "name": "{path.stem}"}}]')
    apply = ["memory", "apply", "--cwd", str(cwd), "--expected-revision", revision, "--changes", str(changes)]
    for command in (apply, ["memory", "show", "--cwd", str(cwd)], ["memory", "log", "--cwd", str(cwd)]):
        assert _exit_code(monkeypatch, home, command) == 0, capsys.readouterr().err
    assert not path.exists()


def test_a_journal_naming_a_temp_too_long_to_exist_is_finished(
    store: MemoryStore, workspace: WorkspaceId, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal an earlier version left: its deletion failed (ENAMETOOLONG) after the journal
    was published, and every later read replayed that step and failed the same way."""
    path, revision = _hand_made(store, workspace, 240)
    with monkeypatch.context() as patched:
        patched.setattr(journal, "temp_path_for", _whole_name_temp)
        with pytest.raises(OSError, match="File name too long"):
            store.commit_workspace(workspace, revision, [delete(path.stem)])
    assert (path.parent / JOURNAL_NAME).exists(), "the interrupted generation's journal"
    assert [record.name for record in store.read_workspace(workspace).records] == ["keep"]
    assert not path.exists() and _leftovers(path.parent) == []
    assert "[keep]" in (path.parent / "MEMORY.md").read_text(), "the generation was finished"


def test_the_cli_reads_a_workspace_an_old_journal_was_left_in(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cwd = tmp_path / "project"
    cwd.mkdir()
    store, workspace = MemoryStore(home), WorkspaceId.from_cwd(cwd)
    path, revision = _hand_made(store, workspace, 240)
    with monkeypatch.context() as patched:
        patched.setattr(journal, "temp_path_for", _whole_name_temp)
        with pytest.raises(OSError):
            store.commit_workspace(workspace, revision, [delete(path.stem)])
    for command in (["memory", "show", "--cwd", str(cwd)], ["memory", "log", "--cwd", str(cwd)]):
        assert _exit_code(monkeypatch, home, command) == 0, capsys.readouterr().err
    assert not path.exists() and not (path.parent / JOURNAL_NAME).exists()


def _temp_boundary(folder: Path, size: int | str) -> int:
    """`size`, or for "whole" the longest name (in bytes) a temp's name holds whole in `folder`,
    for "cut" one byte more: the boundary as `temp_path_for` draws it, not a number copied here."""
    whole = fsutil.name_max(folder) - 1 - fsutil._TEMP_TAIL
    return {"whole": whole, "cut": whole + 1}.get(size, size) if isinstance(size, str) else size


@pytest.mark.parametrize("size", [1, "whole", "cut", 250, 255])
def test_derived_names_fit_and_stay_recognisable(tmp_path: Path, size: int | str) -> None:
    length = _temp_boundary(tmp_path, size)
    target = tmp_path / ("é" * (length // 2) + "e" * (length % 2))  # two bytes a character: none split
    for derived in (temp_path_for(target), temp_path_for(target), unmerged_path_for(target)):
        assert len(os.fsencode(derived.name)) <= _longest(tmp_path), derived.name
        derived.write_text("fits")  # the file system takes it
    temps = sorted(p.name for p in tmp_path.iterdir() if is_temp_name(p.name))
    assert len(temps) == 2 and all(TEMP_MARKER in name for name in temps), "unique, and remem's"
    assert fsutil.remove_stale_temps(tmp_path) and not any(is_temp_name(p.name) for p in tmp_path.iterdir())


@pytest.mark.parametrize("size", [1, "whole", "cut", 250, 255])
def test_a_files_own_temps_are_told_from_its_neighbours(tmp_path: Path, size: int | str) -> None:
    length = _temp_boundary(tmp_path, size)
    target = tmp_path / ("é" * (length // 2) + "e" * (length % 2))
    own = [temp_path_for(target), temp_path_for(target, swap=(digest(b"a"), digest(b"b")))]
    own.append(fsutil.locked_temp_path_for(target))
    if size in ("whole", "cut"):  # the boundary is where it is said to be
        assert own[0].name.startswith(f".{target.name}{TEMP_MARKER}") is (size == "whole")
    neighbours = [temp_path_for(tmp_path / f"x{target.name}"), temp_path_for(tmp_path / "other.yml")]
    for path in [*own, *neighbours, target]:
        path.write_text("in flight")
    assert sorted(fsutil.remove_stale_temps_of(target)) == sorted(own)
    assert all(path.exists() for path in [*neighbours, target]), "only the target's own temps go"


def test_a_short_name_is_kept_whole(tmp_path: Path) -> None:
    assert temp_path_for(tmp_path / "a-fact.md").name.startswith(f".a-fact.md{TEMP_MARKER}")
    assert unmerged_path_for(tmp_path / "a-fact.md").name.startswith("a-fact.md.unmerged-")
    long = temp_path_for(tmp_path / ("e" * 250 + ".md")).name
    assert long.startswith(".eee") and f".md{TEMP_MARKER}" in long, "its start and extension kept"


def _longest(folder: Path) -> int:
    """The longest file name `folder` takes, in bytes (255 on the usual file systems)."""
    return os.pathconf(folder, "PC_NAME_MAX")


def _whole_name_temp(target: Path) -> Path:
    """How temps were named before they were cut to fit."""
    return target.with_name(f".{target.name}{TEMP_MARKER}{secrets.token_hex(6)}")


def _exit_code(monkeypatch: pytest.MonkeyPatch, home: Home, command: list[str]) -> int:
    """`remem` run in this process as from a shell: `main` maps each failure to its exit code."""
    monkeypatch.setattr(sys, "argv", ["remem", "--home", str(home.root), "--no-daemon", *command])
    try:
        main()
    except SystemExit as exited:
        return int(exited.code or 0)
    return 0

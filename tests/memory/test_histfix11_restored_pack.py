"""A `.pack` without its index is never removed nor opened by a merge, only said once.

Restore and sync tools (`cp -p`, `rsync -a`, Syncthing, a backup) copy file by file and keep the
original's old mtime. A merge that came between a restored pack's `.pack` and its `.idx` took the
`.pack` for an older remem's leftover and removed it: once its index arrived, the entries in it
were lost (`git fsck`: a missing commit). Then a merge read such a pack itself to prove it
redundant, and a pack of a few hundred bytes whose deltas each double their base took gigabytes
and stopped every merge. A merge now lists such packs by name and says each once (decision 0483).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.memory import git_pack, history
from remem.daemon.memory.git_pack import pack_ids
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .factory import put
from .history_packs import NEVER, indexes
from .test_crash_recovery import EMPTY
from .test_histfix_merge_kill import every_entry_reads, halves


def _entries(
    store: MemoryStore, workspace: WorkspaceId, count: int, revision: str = EMPTY
) -> tuple[str, list[str]]:
    """`count` commits, each its own small pack (no merge); the revision and the entries."""
    ids = []
    for n in range(count):
        done = store.commit_workspace(workspace, revision, [put("alpha", f"Body {n} {revision}.\n")])
        assert done.history is not None
        revision, ids = done.revision, [*ids, done.history]
    return revision, ids


def _backup(pack_dir: Path, to: Path) -> None:
    """A backup of the packs taken an hour ago, the copy tool keeping their times."""
    to.mkdir()
    hour_ago = time.time() - 3600
    for path in pack_dir.iterdir():
        os.utime(path, (hour_ago, hour_ago))
        subprocess.run(["cp", "-p", str(path), str(to)], check=True)


@pytest.mark.parametrize("slow_copy", [False, True], ids=["copying", "copying-past-ten-minutes"])
def test_a_pack_restored_ahead_of_its_index_is_kept_and_reads_once_its_index_follows(
    slow_copy: bool,
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    if slow_copy:
        monkeypatch.setattr(git_pack, "LEFTOVER_SECONDS", -1)
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision, ids = _entries(store, workspace, 3)
    git_dir = store.home.root / "history"
    pack_dir = git_dir / "objects" / "pack"
    _backup(pack_dir, tmp_path / "backup")
    [index] = [index for index in indexes(store) if ids[0] in pack_ids(index)]
    # the restore under way: the first entry's pack is copied back, its index not yet
    index.unlink()
    index.with_suffix(".pack").unlink()
    subprocess.run(
        ["cp", "-p", str(tmp_path / "backup" / index.with_suffix(".pack").name), str(pack_dir)], check=True
    )

    monkeypatch.setattr(history, "PACK_EVERY", 1)
    assert MemoryStore(store.home).commit_workspace(workspace, revision, [put("beta")]).history is not None
    assert index.with_suffix(".pack").exists(), "a merge removed a pack whose index was still to come"

    subprocess.run(["cp", "-p", str(tmp_path / "backup" / index.name), str(pack_dir)], check=True)  # it comes
    every_entry_reads(MemoryStore(store.home), workspace, 4)
    if shutil.which("git") is not None:
        checked = subprocess.run(
            ["git", "--git-dir", str(git_dir), "fsck", "--strict", "--no-dangling"],
            capture_output=True,
            text=True,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr


def _object(kind: int, body: bytes, base: bytes = b"") -> bytes:
    """An object: its header (its kind and its body's size), its `base` (a delta's) and its
    deflated `body`."""
    size = len(body)
    header = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        header.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    return bytes([*header, byte]) + base + zlib.compress(body)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes([*out, value])


def _delta_bomb(doublings: int) -> bytes:
    """A pack whose objects are a 1 KiB blob and offset deltas each copying the object before it
    twice: its last object is 2**`doublings` KiB, from a pack of some hundred bytes per delta."""
    pack = bytearray(b"PACK" + struct.pack(">II", 2, doublings + 1))
    size, previous = 1024, len(pack)
    pack += _object(3, b"x" * size)
    for _ in range(doublings):
        copy = bytes([0x80 | 0x10 | 0x20 | 0x40]) + size.to_bytes(3, "little")  # from 0, all of it
        delta = _varint(size) + _varint(2 * size) + copy + copy
        here, size = len(pack), 2 * size
        assert here - previous < 0x80  # the distance back to its base, in a byte
        pack += _object(6, delta, bytes([here - previous]))
        previous = here
    return bytes(pack + hashlib.sha1(pack).digest())


# Who hears the files this process opens: an audit hook stays for the process, so it is set up
# by the first test that listens, and quiet but while one does.
_LISTENERS: list[set[str]] = []


def _heard(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and _LISTENERS and isinstance(args[0], (str, bytes, os.PathLike)):
        _LISTENERS[-1].add(os.path.basename(os.fsdecode(args[0])))


@functools.cache
def _hooked() -> None:
    sys.addaudithook(_heard)


@contextlib.contextmanager
def _files_opened() -> Iterator[set[str]]:
    """The names of the files opened in this process meanwhile (`open`'s audit event)."""
    _hooked()
    _LISTENERS.append(set())
    try:
        yield _LISTENERS[-1]
    finally:
        _LISTENERS.pop()


def test_a_pack_without_its_index_is_never_opened_whatever_it_holds(
    store: MemoryStore,
    workspace: WorkspaceId,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A delta bomb or garbage named as a pack, without its index: kept, said once, and never
    opened (each file opened in this process is heard: none is one of them)."""
    caplog.set_level(logging.WARNING)
    monkeypatch.setattr(git_pack, "LEFTOVER_SECONDS", -1)  # every leftover stale, long ago
    monkeypatch.setattr(history, "PACK_EVERY", NEVER)
    revision, _ = _entries(store, workspace, 2)
    pack_dir = store.home.root / "history" / "objects" / "pack"
    strays = {
        pack_dir / f"pack-{'b' * 40}.pack": _delta_bomb(14),
        pack_dir / f"pack-{'c' * 40}.pack": os.urandom(4096),
    }
    for path, data in strays.items():
        path.write_bytes(data)
    monkeypatch.setattr(history, "PACK_EVERY", 1)
    with _files_opened() as opened:
        for n in range(3):
            done = store.commit_workspace(workspace, revision, [put("beta", f"Merge {n}.\n")])
            assert done.history is not None
            revision = done.revision
    assert not opened & {path.name for path in strays}, "a pack without its index was opened"
    assert all(path.read_bytes() == data for path, data in strays.items())
    packs, with_index = halves(pack_dir)
    assert packs - with_index == {path.stem for path in strays} and len(with_index) == 1
    for path in strays:
        said = [record.getMessage() for record in caplog.records if path.stem in record.getMessage()]
        assert len(said) == 1 and "has no index" in said[0], caplog.text
    every_entry_reads(MemoryStore(store.home), workspace, 5)

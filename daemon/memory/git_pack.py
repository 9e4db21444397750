"""Git pack files written directly: one history entry's objects as one pack and its index.

libgit2 writes each object as a loose file (a temp file created, linked, unlinked), so an entry
of ten blobs, a tree and a commit was some forty file-system changes, each waiting its turn in
the disk's journal behind the memory commit's syncs. A pack of them is two files. The format is
git's own (`gitformat-pack`: a version 2 pack of undeltified objects and a version 2 index), so
libgit2 and plain `git` read it like any other pack; `pack_merge` merges small packs into one
now and then (`small_packs`, `pack_ids`). A pack whose write fails (a full disk) leaves nothing: its
temp is removed, and so is its `.pack` when its index cannot be written; the temp a killed
writer left, or libgit2's in a killed merge, is removed at the next merge (`remove_leftovers`).
A `.pack` without its index is never removed, only found (`packs_without_index`): libgit2 does
not read it, and it may be the only copy of entries (a restore copying it ahead of its index).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import stat
import struct
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from ..fsutil import PRIVATE_FILE_MODE
from ..safe_open import open_regular

KINDS = {b"commit": 1, b"tree": 2, b"blob": 3}
_IDX_MAGIC = b"\377tOc" + struct.pack(">I", 2)
_FANOUT_END = len(_IDX_MAGIC) + 256 * 4
_TEMP_PREFIX = "tmp_pack_"
# The temps of libgit2's own pack writer (a merge): `pack_git2_<hex>`, `pack_git2_<hex>idx.lock`.
_LEFTOVER_PREFIXES = (_TEMP_PREFIX, "pack_git2_")
# A leftover older than this is no writer's at work (a pack is written in milliseconds); a
# younger one may be another program's (git's own temp packs are named so), and is left alone.
LEFTOVER_SECONDS = 600


def write_pack(pack_dir: Path, objects: Sequence[tuple[bytes, bytes]]) -> str:
    """Write `(kind, data)` objects as a new pack in `pack_dir`; the pack's name. The index is
    published last: until it is there, readers do not see the pack at all."""
    pack = bytearray(b"PACK" + struct.pack(">II", 2, len(objects)))
    entries = []  # (object id, offset, crc32 of its packed bytes)
    for kind, data in objects:
        packed = _header(KINDS[kind], len(data)) + zlib.compress(data, 1)
        oid = hashlib.sha1(b"%s %d\0%s" % (kind, len(data), data)).digest()
        entries.append((oid, len(pack), zlib.crc32(packed)))
        pack += packed
    checksum = hashlib.sha1(pack).digest()
    pack += checksum
    entries.sort()
    fanout = [0] * 256
    for oid, _, _ in entries:
        fanout[oid[0]] += 1
    for i in range(1, 256):
        fanout[i] += fanout[i - 1]
    index = bytearray(_IDX_MAGIC + struct.pack(">256I", *fanout))
    index += b"".join(oid for oid, _, _ in entries)
    index += b"".join(struct.pack(">I", crc) for _, _, crc in entries)
    index += b"".join(struct.pack(">I", offset) for _, offset, _ in entries)
    index += checksum
    index += hashlib.sha1(index).digest()
    name = f"pack-{checksum.hex()}"
    pack_path = pack_dir / f"{name}.pack"
    known = os.path.lexists(pack_path)  # the same objects, written before: never removed here
    _publish(pack_path, bytes(pack))
    try:
        _publish(pack_dir / f"{name}.idx", bytes(index))
    except BaseException:
        if not known:  # a pack without its index is read by nobody and merged by nothing
            with contextlib.suppress(OSError):
                pack_path.unlink()
        raise
    return name


def remove_leftovers(pack_dir: Path) -> list[str]:
    """Remove the temps a writer killed in its work left (this module's, or libgit2's in a
    merge), once stale; the names removed. (A `.pack` without its index is left: unseen by every
    reader, it may be a damaged history's objects, which `git index-pack` recovers.)"""
    removed = []
    now = time.time()
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(pack_dir)):
            if not name.startswith(_LEFTOVER_PREFIXES):
                continue
            with contextlib.suppress(OSError):
                found = os.lstat(pack_dir / name)
                if stat.S_ISREG(found.st_mode) and now - found.st_mtime > LEFTOVER_SECONDS:
                    os.unlink(pack_dir / name)
                    removed.append(name)
    return removed


def packs_without_index(pack_dir: Path) -> list[Path]:
    """The `.pack` files in `pack_dir` whose index is not there, by name alone: never opened, so
    one of any size or bytes costs a listing. An older remem's merge killed between its two
    removals left such a pack (a copy of objects its merged pack holds); a copy tool restoring
    the history file by file leaves one until its index follows."""
    with contextlib.suppress(OSError):
        names = set(os.listdir(pack_dir))
        return [
            pack_dir / name
            for name in sorted(names)
            if name.endswith(".pack") and f"{name.removesuffix('.pack')}.idx" not in names
        ]
    return []


def pack_ids(index: Path) -> list[str]:
    """The ids of the objects a pack holds, from its index."""
    with os.fdopen(open_regular(index), "rb") as handle:
        data = handle.read()
    count = _count(data)
    names = data[_FANOUT_END : _FANOUT_END + 20 * count]
    return [names[i : i + 20].hex() for i in range(0, len(names), 20)]


def small_packs(pack_dir: Path, most: int) -> list[Path]:
    """The indexes of the packs holding at most `most` objects (an entry's, or a few merged), and
    of those whose count does not read (an index a power cut left empty): a merge that tries one
    finds it damaged and says so, where counting it stopped every merge."""
    found = []
    for name in os.listdir(pack_dir):
        if name.endswith(".idx"):
            try:  # never waiting on a FIFO for a writer, nor through a link: no index of remem's
                fd = open_regular(pack_dir / name)
            except OSError:
                continue
            with os.fdopen(fd, "rb") as handle:
                head = handle.read(_FANOUT_END)
            with contextlib.suppress(ValueError):
                if _count(head) > most:
                    continue
            found.append(pack_dir / name)
    return found


def _count(index: bytes) -> int:
    if index[: len(_IDX_MAGIC)] != _IDX_MAGIC or len(index) < _FANOUT_END:
        raise ValueError("not a version 2 pack index")
    return int(struct.unpack_from(">I", index, _FANOUT_END - 4)[0])


def _header(kind: int, size: int) -> bytes:
    """An object's type and size: 3 bits of type, then the size 4 and 7 bits at a time."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _publish(target: Path, data: bytes) -> None:
    # Unsynced, as libgit2 writes loose objects: the history is never the source of truth, and a
    # pack a power cut left empty is the history's damage, said by the reads of its entries and
    # by the merges, which leave it out.
    # A temp the write or the rename failed on (a full disk) is removed: nothing else would.
    temp = target.with_name(f"{_TEMP_PREFIX}{secrets.token_hex(6)}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise

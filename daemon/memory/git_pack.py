"""Git pack files written directly: one history entry's objects as one pack and its index.

libgit2 writes each object as a loose file (a temp file created, linked, unlinked), so an entry
of ten blobs, a tree and a commit was some forty file-system changes, each waiting its turn in
the disk's journal behind the memory commit's syncs. A pack of them is two files. The format is
git's own (`gitformat-pack`: a version 2 pack of undeltified objects and a version 2 index), so
libgit2 and plain `git` read it like any other pack; `pack_merge` merges small packs into one
now and then (`small_packs`, `pack_ids`). A pack whose write fails (a full disk) leaves nothing: its
temp is removed, and so is its `.pack` when its index cannot be written; the temp a killed
writer left, or libgit2's in a killed merge, are removed at the next merge once stale, and so is
a `.pack` without its index whose objects, read from the pack itself (`pack_file_ids`), the
history holds otherwise (`remove_leftovers`): an older remem's killed merge left such packs.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import secrets
import stat
import struct
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

from ..fsutil import PRIVATE_FILE_MODE
from ..safe_open import open_regular

log = logging.getLogger("remem.daemon")

KINDS = {b"commit": 1, b"tree": 2, b"blob": 3}
_NAMES = {**{kind: name for name, kind in KINDS.items()}, 4: b"tag"}
_OFS_DELTA, _REF_DELTA = 6, 7
_IDX_MAGIC = b"\377tOc" + struct.pack(">I", 2)
_FANOUT_END = len(_IDX_MAGIC) + 256 * 4
_TEMP_PREFIX = "tmp_pack_"
# The temps of libgit2's own pack writer (a merge): `pack_git2_<hex>`, `pack_git2_<hex>idx.lock`.
_LEFTOVER_PREFIXES = (_TEMP_PREFIX, "pack_git2_")
# A leftover older than this is no writer's at work (a pack is written in milliseconds); a
# younger one may be another program's (git's own temp packs are named so), or a `.pack` whose
# index is being written now, and is left alone.
LEFTOVER_SECONDS = 600
# The most bytes of a pack without its index read to prove it redundant, packed and inflated: a
# small pack (an entry's, or a merge's of at most `pack_merge.MERGED_MAX` objects) is far less.
ORPHAN_READ_MAX = 32 * 1024 * 1024


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


def remove_leftovers(pack_dir: Path, held: Callable[[str], bool]) -> list[Path]:
    """Remove what a writer killed in its work left, once stale: the temps (this module's, or
    libgit2's in a merge), and a `.pack` without its index whose every object `held` (the
    repository has it through the other packs' indexes or as a loose object: an older remem's
    merge, killed between removing a merged small pack's index and its pack, left one for good).
    Each such pack removed is logged, named. The stale ones without their index kept (an object
    of theirs held nowhere else, or not read within `ORPHAN_READ_MAX` bytes) are returned: a pack
    restored by a copy tool ahead of its index, which may be the only copy of entries."""
    kept = []
    now = time.time()
    with contextlib.suppress(OSError):
        names = set(os.listdir(pack_dir))
        for name in sorted(names):
            orphan = _without_index(name, names)
            if not (orphan or name.startswith(_LEFTOVER_PREFIXES)):
                continue
            with contextlib.suppress(OSError):
                found = os.lstat(pack_dir / name)
                if not stat.S_ISREG(found.st_mode) or now - _changed(found, orphan) <= LEFTOVER_SECONDS:
                    continue
                if not orphan:
                    os.unlink(pack_dir / name)
                elif _redundant(pack_dir / name, held):
                    os.unlink(pack_dir / name)
                    log.info(
                        "memory history: removed %s, a pack without its index whose objects the history has",
                        name,
                    )
                else:
                    kept.append(pack_dir / name)
    return kept


def _changed(found: os.stat_result, orphan: bool) -> float:
    """When a leftover last changed. A `.pack`'s ctime counts too: a copy tool (`cp -p`, `rsync
    -a`, a restore) sets its mtime back to the original's, ctime it cannot, so a pack restored
    just now, its index still to come, is young. A temp is never data: its mtime is enough."""
    return max(found.st_mtime, found.st_ctime) if orphan else found.st_mtime


def _redundant(pack: Path, held: Callable[[str], bool]) -> bool:
    """Whether every object of `pack` (read from the pack itself) is `held` elsewhere."""
    ids = pack_file_ids(pack)
    return ids is not None and all(held(oid) for oid in ids)


def _without_index(name: str, names: set[str]) -> bool:
    """Whether `name` is a `.pack` whose index is not among `names`."""
    return name.endswith(".pack") and f"{name.removesuffix('.pack')}.idx" not in names


def pack_file_ids(pack: Path) -> list[str] | None:
    """The ids of the objects a pack holds, read from the pack itself (no index needed): each
    object inflated, its deltas applied on their base earlier in the pack (as git and libgit2
    write them), and hashed. None when it does not read whole, or holds more than
    `ORPHAN_READ_MAX` bytes packed or inflated: a bounded read, never a proof of anything."""
    with os.fdopen(open_regular(pack), "rb") as handle:
        data = handle.read(ORPHAN_READ_MAX + 1)
    if len(data) > ORPHAN_READ_MAX:
        return None
    try:
        return _read_objects(memoryview(data))
    except (ValueError, LookupError, struct.error, zlib.error):  # a delta's base not in it, too
        return None


def _read_objects(data: memoryview) -> list[str]:
    if bytes(data[:4]) != b"PACK" or struct.unpack_from(">I", data, 4)[0] not in (2, 3):
        raise ValueError("not a pack")
    count = struct.unpack_from(">I", data, 8)[0]
    at, inflated = 12, 0
    by_offset: dict[int, tuple[bytes, bytes]] = {}  # an object's kind and bytes, by its offset
    by_id: dict[bytes, tuple[bytes, bytes]] = {}
    for _ in range(count):
        start = at
        kind, at = _object_header(data, at)
        if kind == _OFS_DELTA:
            back, at = _offset(data, at)
            base = by_offset[start - back]
        elif kind == _REF_DELTA:
            base, at = by_id[bytes(data[at : at + 20])], at + 20
        body, at = _inflated(data, at)
        inflated += len(body)
        if inflated > ORPHAN_READ_MAX:
            raise ValueError("too large to read")
        found = (
            (base[0], _patched(base[1], body)) if kind in (_OFS_DELTA, _REF_DELTA) else (_NAMES[kind], body)
        )
        oid = hashlib.sha1(b"%s %d\0%s" % (found[0], len(found[1]), found[1])).digest()
        by_offset[start], by_id[oid] = found, found
    return [oid.hex() for oid in by_id]


def _object_header(data: memoryview, at: int) -> tuple[int, int]:
    """An object's kind and where its data starts (its size is the inflated data's length)."""
    byte = data[at]
    kind = (byte >> 4) & 7
    while byte & 0x80:
        at += 1
        byte = data[at]
    if kind not in _NAMES and kind not in (_OFS_DELTA, _REF_DELTA):
        raise ValueError(f"unknown object kind {kind}")
    return kind, at + 1


def _offset(data: memoryview, at: int) -> tuple[int, int]:
    """An offset delta's distance back to its base (git's own varint, each more byte adding one)."""
    byte = data[at]
    back = byte & 0x7F
    while byte & 0x80:
        at += 1
        byte = data[at]
        back = ((back + 1) << 7) | (byte & 0x7F)
    return back, at + 1


def _inflated(data: memoryview, at: int) -> tuple[bytes, int]:
    """The zlib stream at `at`, inflated, and where it ends; fed in growing chunks, so a pack's
    read costs its length, not its length per object."""
    stream = zlib.decompressobj()
    out, fed = [], 4096
    while not stream.eof:
        chunk = data[at : at + fed]
        if not chunk:
            raise ValueError("a pack cut short")
        out.append(stream.decompress(chunk))
        at += len(chunk) - len(stream.unused_data)
        fed *= 2
    return b"".join(out), at


def _patched(base: bytes, delta: bytes) -> bytes:
    """`base` with git's `delta` applied: copies from the base and inserts of the delta's bytes."""
    _, at = _varint(delta, 0)
    size, at = _varint(delta, at)
    out = bytearray()
    while at < len(delta):
        op = delta[at]
        at += 1
        if op & 0x80:  # a copy: which of 4 offset and 3 length bytes follow, by the op's bits
            fields = bytearray()
            for bit in range(7):
                fields.append(delta[at] if op & (1 << bit) else 0)
                at += bool(op & (1 << bit))
            offset = int.from_bytes(fields[:4], "little")
            out += base[offset : offset + (int.from_bytes(fields[4:], "little") or 0x10000)]
        elif op:
            out += delta[at : at + op]
            at += op
        else:
            raise ValueError("a delta's reserved op")
    if len(out) != size:
        raise ValueError("a delta's result is not its size")
    return bytes(out)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


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

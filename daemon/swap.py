"""Replacing a file a person may be editing, without ever discarding their save.

A compare-and-swap reads a file, checks its revision, then publishes; an editor's save can land
between the check and the publish, and a plain rename would then throw the save away. So the
publish is an atomic exchange (`renameat2(RENAME_EXCHANGE)`): the new file takes the name, the
file it displaced moves to the temp name, and only if that file holds exactly the bytes the
comparison saw, and nobody is writing it, is it discarded. Otherwise a save landed in between
or is landing: the exchange is undone and the caller reports a conflict.
docs/decisions/0090-exchange-publish.md lists which saves this covers (all but an in-place save
the comparison read half-written) and the fallback used where the kernel or file system cannot
exchange.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import logging
import os
import signal
import sys
import time
from pathlib import Path

from .faults import faultpoint
from .fsutil import (
    atomic_write,
    fsync_dir,
    raise_as_unwritable,
    refused_as_unwritable,
    temp_path_for,
    unmerged_path_for,
    write_temp,
)
from .safe_open import open_regular

ABSENT = "absent"  # the target must not exist: publish without replacing anything
ANY = "any"  # a generated file nobody edits: replace it whatever it holds
EMPTY = hashlib.sha256(b"").hexdigest()
SETTLE_SECONDS = 0.25

log = logging.getLogger("remem.swap")
_LEASES = hasattr(fcntl, "F_SETLEASE")  # Linux only
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# Kernels or file systems without the flag answer with these; the fallback then applies.
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP}


class Displaced(Exception):
    """The file to be replaced no longer held the compared bytes: someone saved it meanwhile."""

    def __init__(self, target: Path, put_back: bytes | None = None) -> None:
        super().__init__(f"{target} changed while it was being replaced; it was left as saved")
        self.target = target
        self.put_back = put_back  # the save an undo put back, once readers may have seen ours


def digest(data: bytes) -> str:
    """How an expectation names exact bytes (the revision canonicalises; this must not)."""
    return hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> str | None:
    """The digest of the regular file at `path`, None when nothing (or no plain file) is there."""
    data = _read(path)
    return None if data is None else digest(data)


def _read(path: Path) -> bytes | None:
    fd = _open_regular(path)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _displaced(path: Path) -> tuple[bytes | None, bool]:
    """The bytes of the file an exchange moved to `path`, and whether a save is writing it."""
    fd = _open_regular(path)
    if fd is None:
        return None, False
    with os.fdopen(fd, "rb") as handle:
        return handle.read(), _open_for_writing(fd)  # probed last: as late as it can be


def _open_regular(path: Path) -> int | None:
    """A read-only descriptor of the regular file at `path`; None when nothing (or no plain
    file) is there."""
    try:
        return open_regular(path)
    except OSError:
        return None


def publish(target: Path, data: bytes, expected: str, *, written: str, exchanged: str) -> None:
    """Replace one file with `data` if it holds `expected` (`swap_in`), the displaced file
    discarded; raises Displaced, the save found kept and watched (`watch_put_back`), and
    Unwritable when the file system refuses the write (`target` untouched, no temp left).
    `written` and `exchanged` name the fault points after the temp file is written and right
    after the new file takes the name (before the displaced file is checked): the temp's name
    records our digest and the expected one, so recovery keeps a save it finds there.
    """
    ours = digest(data)
    swapped = None if expected in (ABSENT, ANY) else (ours, expected)  # what recovery tells a save from
    with refused_as_unwritable(target.parent):  # `write_synced` removed its partial temp
        temp = write_temp(target, data, swap=swapped)
    faultpoint(written)
    try:
        swap_in(temp, target, expected, ours=ours, published=exchanged)
    except Displaced as displaced:
        discard(temp)
        watch_put_back(displaced)
        raise
    except OSError as exc:
        # Refused before the publish (a new name on a full disk needs a block of its folder):
        # ours is still only at the temp, which goes now rather than at the next access.
        # Anything else (our file published, or the temp holding another) is left as it is.
        if file_digest(temp) != ours or file_digest(target) == ours:
            raise
        discard(temp)
        raise_as_unwritable(exc, target.parent)
    discard(temp)


def swap_in(
    temp: Path,
    target: Path,
    expected: str,
    *,
    ours: str | None = None,
    durable: bool = True,
    published: str | None = None,
) -> None:
    """Publish `temp` at `target` if `target` holds `expected` (a digest, ABSENT or ANY).

    Afterwards `temp` names the displaced old file (for ABSENT, a second link to the new one;
    for ANY, nothing): the caller removes it with `discard`, or undoes with `swap_back`. Raises
    Displaced when `target` no longer holds `expected`, leaving `target` as it was saved and
    `temp` holding the unpublished new file; once the caller has undone the rest of its batch, it
    hands the error to `watch_put_back`. `ours`: the digest of `temp`, when the caller knows it.
    `durable=False` leaves the directory unsynced, for a caller that syncs it once after a batch
    whose durable journal replays any step a power cut undid. `published` names the fault point
    right after the new file takes the name.
    """
    if expected == ABSENT:
        try:
            os.link(temp, target)
        except FileExistsError:
            raise Displaced(target) from None
        _sync(target.parent, durable)
        _reached(published)
        return
    if expected == ANY:
        os.replace(temp, target)
        _sync(target.parent, durable)
        _reached(published)
        return
    ours = ours or file_digest(temp)
    try:
        # Writing and syncing the temp took a while: a save since then is caught here, before
        # any reader could see the new file (the exchange's own check covers the last instant).
        if file_digest(target) != expected or not _settled(target, expected):
            raise Displaced(target)
        exchanged = _exchange(temp, target)
    except FileNotFoundError:  # deleted by hand since the comparison
        raise Displaced(target) from None
    if not exchanged:
        _compare_and_replace(temp, target, expected, durable)
        _reached(published)
        return
    _reached(published)
    displaced, writing = _displaced(temp)
    changed = displaced is None or digest(displaced) != expected
    if changed or writing:
        swap_back(temp, target, ours)
        raise Displaced(target, displaced if changed else None)
    _sync(target.parent, durable)


def swap_out(target: Path, tomb: Path, expected: str, *, durable: bool = True) -> None:
    """Move `target` to the fresh name `tomb` if it holds `expected`; Displaced otherwise."""
    try:
        os.rename(target, tomb)
    except FileNotFoundError:
        raise Displaced(target) from None
    displaced, writing = _displaced(tomb)
    changed = displaced is None or digest(displaced) != expected
    if changed or writing:
        put_back(tomb, target)
        raise Displaced(target, displaced if changed else None)
    _sync(target.parent, durable)


def put_back(tomb: Path, target: Path) -> None:
    """Return a file `swap_out` moved away; a file saved at `target` since then is kept too."""
    try:
        os.link(tomb, target)
    except FileExistsError:
        os.rename(tomb, _unmerged(target))
    else:
        tomb.unlink()
    fsync_dir(target.parent)


def swap_back(temp: Path, target: Path, ours: str | None) -> None:
    """Undo a `swap_in` of the file with digest `ours`, whose displaced file is still at `temp`.

    Readers may have seen our file meanwhile, and an editor may have saved over it: what the
    exchange takes back is checked afterwards, and a save found there is kept beside `target`
    (as `<name>.unmerged-*`) rather than discarded, since it and the file put back each hold
    lines the other lacks.
    """
    if not _exchange(temp, target):
        os.replace(temp, target)
    elif file_digest(temp) != ours:
        os.rename(temp, _unmerged(target))
    fsync_dir(target.parent)


def set_aside(temp: Path, target: Path) -> None:
    """Keep `temp`, a commit's version of `target` that a save since the crash stands in place
    of, beside it as `<name>.unmerged-*`: the save stays, and neither is lost."""
    kept = unmerged_path_for(target)
    os.rename(temp, kept)
    fsync_dir(target.parent)
    log.warning(
        "a hand save of %s stands where a commit put it; the commit's is kept as %s", target.name, kept.name
    )


def discard(temp: Path) -> None:
    temp.unlink(missing_ok=True)
    fsync_dir(temp.parent)


def _reached(point: str | None) -> None:
    if point is not None:
        faultpoint(point)


def _sync(folder: Path, durable: bool) -> None:
    if durable:
        fsync_dir(folder)


def watch_put_back(displaced: Displaced) -> None:
    """Keep the save an undo put back, should the next saves drop it; call after every undo.

    Between the exchange and its undo a reader may have seen our file (or, for a removal, no
    file). A writer that builds its next save on that read and saves right after the undo would
    overwrite the save put back, losing its lines. So the target is watched for SETTLE_SECONDS:
    a change that lacks a line of the save put back gets that save kept beside it as
    `<name>.unmerged-*`, as `swap_back` keeps a save it finds on our file.
    """
    target, saved = displaced.target, displaced.put_back
    if not saved:
        return
    lines, seen = set(saved.splitlines()), saved
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.005)
        now = _read(target) or b""
        if now == seen:
            continue
        seen = now
        if not lines <= set(now.splitlines()):
            atomic_write(_unmerged(target), saved)
            return


def _unmerged(target: Path) -> Path:
    path = unmerged_path_for(target)
    log.warning(
        "a hand save of %s met a commit; it is kept as %s for a person to merge", target.name, path.name
    )
    return path


def _open_for_writing(fd: int) -> bool:
    """Whether some process holds the file open for writing: a save is under way.

    An in-place save that opened the old file just before the exchange truncates and writes it
    just after (its truncation waits for the exchange to release the file), so the displaced
    file still holds the compared bytes while a save is about to land in it, and we would
    discard it. Linux grants no read lease on a file open for writing: that is the probe.
    Without leases (other systems, some file systems) it says False and that window stays.
    """
    if not _LEASES:
        return False
    try:
        # A writer opening the file while the lease is held breaks it, which signals the holder:
        # SIGURG is ignored unless handled; the default, SIGIO, would end the process.
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError as exc:
        return exc.errno == errno.EAGAIN  # others (EACCES, EINVAL): no leases here
    fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
    return False


def _settled(target: Path, expected: str) -> bool:
    """False when an empty file turns out to be an in-place save between truncate and write.

    Such a save truncates when it opens and writes a moment later, into whichever file it
    opened: a comparison that read it empty would otherwise discard the bytes it writes next.
    A file emptied within SETTLE_SECONDS is watched until then; any byte arriving means a save.
    """
    if expected != EMPTY:
        return True
    while True:
        status = os.stat(target)
        if status.st_size:
            return False
        left = SETTLE_SECONDS - (time.time_ns() - status.st_mtime_ns) / 1e9
        if left <= 0:
            return True
        time.sleep(min(left, 0.005))


def _compare_and_replace(temp: Path, target: Path, expected: str, durable: bool) -> None:
    """Without an exchange, compare right before the rename: the window shrinks, it stays open.

    The old file is held by a second link so that, as after an exchange, `temp` ends up naming it.
    """
    held = temp_path_for(target)
    try:
        os.link(target, held)
    except FileNotFoundError:
        raise Displaced(target) from None
    if file_digest(held) != expected:
        held.unlink()
        raise Displaced(target)
    os.replace(temp, target)
    os.rename(held, temp)
    _sync(target.parent, durable)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap the names `a` and `b`; False when this system cannot."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def _load_renameat2() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    function = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)  # glibc >= 2.28
    if function is not None:
        function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        function.restype = ctypes.c_int
    return function


_renameat2 = _load_renameat2()

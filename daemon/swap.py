"""Replacing a file a person may be editing, without ever discarding their save.

A compare-and-swap reads a file, checks its revision, then publishes; an editor's save can land
between the check and the publish, and a plain rename would then throw the save away. So the
publish is an atomic exchange (`renameat2(RENAME_EXCHANGE)`): the new file takes the name, the
file it displaced moves to the temp name, and only if that file holds exactly the bytes the
comparison saw, and nobody is writing it, is it discarded. Otherwise a save landed in between
or is landing: the exchange is undone and the caller reports a conflict.
docs/decisions/0090-exchange-publish.md lists which saves this covers (all but an in-place save
the comparison read half-written) and the fallback used where the kernel or file system cannot
exchange. Every file is named in a folder the caller opened (`safe_open.HeldFolder`), so no step
is led elsewhere by a link swapped in at the folder's path (decision 0465).
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
from .safe_open import HeldFolder

ABSENT = "absent"  # the target must not exist: publish without replacing anything
ANY = "any"  # a generated file nobody edits: replace it whatever it holds
EMPTY = hashlib.sha256(b"").hexdigest()
SETTLE_SECONDS = 0.25

log = logging.getLogger("remem.swap")
_LEASES = hasattr(fcntl, "F_SETLEASE")  # Linux only
_RENAME_EXCHANGE = 2
# Kernels or file systems without the flag answer with these; the fallback then applies.
_UNSUPPORTED = {errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP}


class Displaced(Exception):
    """The file to be replaced no longer held the compared bytes: someone saved it meanwhile."""

    def __init__(self, folder: HeldFolder, name: str, put_back: bytes | None = None) -> None:
        super().__init__(f"{folder.path / name} changed while it was being replaced; it was left as saved")
        self.folder, self.name = folder, name
        self.put_back = put_back  # the save an undo put back, once readers may have seen ours


def digest(data: bytes) -> str:
    """How an expectation names exact bytes (the revision canonicalises; this must not)."""
    return hashlib.sha256(data).hexdigest()


def digest_at(folder: HeldFolder, name: str) -> str | None:
    """The digest of the regular file `name` in `folder`, None when nothing (or no plain file)
    is there."""
    data = _read(folder, name)
    return None if data is None else digest(data)


def _read(folder: HeldFolder, name: str) -> bytes | None:
    fd = _open_regular(folder, name)
    if fd is None:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _displaced(folder: HeldFolder, name: str) -> tuple[bytes | None, bool]:
    """The bytes of the file an exchange moved to `name`, and whether a save is writing it."""
    fd = _open_regular(folder, name)
    if fd is None:
        return None, False
    with os.fdopen(fd, "rb") as handle:
        return handle.read(), _open_for_writing(fd)  # probed last: as late as it can be


def _open_regular(folder: HeldFolder, name: str) -> int | None:
    """A read-only descriptor of the regular file `name`; None when nothing (or no plain file)
    is there."""
    try:
        return folder.open_regular(name)
    except OSError:
        return None


def write_temp_at(folder: HeldFolder, name: str, data: bytes, *, swap: tuple[str, str] | None = None) -> str:
    """`fsutil.write_temp` in `folder`: the name of a fresh synced temp beside `name`."""
    return write_temp(folder.path / name, data, swap=swap, dir_fd=folder.fd).name


def publish(target: Path, data: bytes, expected: str, *, written: str, exchanged: str) -> None:
    """`publish_in` of `target` in its folder, whose path is followed once."""
    with HeldFolder.at(target.parent) as folder:
        publish_in(folder, target.name, data, expected, written=written, exchanged=exchanged)


def publish_in(
    folder: HeldFolder, name: str, data: bytes, expected: str, *, written: str, exchanged: str
) -> None:
    """Replace the file `name` in `folder` with `data` if it holds `expected` (`swap_in`), the
    displaced file discarded; raises Displaced, the save found kept and watched
    (`watch_put_back`), and Unwritable when the file system refuses the write (the file
    untouched, no temp left). `written` and `exchanged` name the fault points after the temp
    file is written and right after the new file takes the name (before the displaced file is
    checked): the temp's name records our digest and the expected one, so recovery keeps a save
    it finds there.
    """
    ours = digest(data)
    swapped = None if expected in (ABSENT, ANY) else (ours, expected)  # what recovery tells a save from
    with refused_as_unwritable(folder.path):  # `write_synced` removed its partial temp
        temp = write_temp_at(folder, name, data, swap=swapped)
    faultpoint(written)
    try:
        swap_in(folder, temp, name, expected, ours=ours, published=exchanged)
    except Displaced as displaced:
        _discard(folder, temp)
        watch_put_back(displaced)
        raise
    except OSError as exc:
        # Refused before the publish (a new name on a full disk needs a block of its folder):
        # ours is still only at the temp, which goes now rather than at the next access.
        # Anything else (our file published, or the temp holding another) is left as it is.
        if digest_at(folder, temp) != ours or digest_at(folder, name) == ours:
            raise
        _discard(folder, temp)
        raise_as_unwritable(exc, folder.path)
    _discard(folder, temp)


def swap_in(
    folder: HeldFolder,
    temp: str,
    target: str,
    expected: str,
    *,
    ours: str | None = None,
    durable: bool = True,
    published: str | None = None,
) -> None:
    """Publish `temp` at `target`, both in `folder`, if `target` holds `expected` (a digest,
    ABSENT or ANY).

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
            folder.link(temp, target)
        except FileExistsError:
            raise Displaced(folder, target) from None
        _sync(folder, durable)
        _reached(published)
        return
    if expected == ANY:
        folder.replace(temp, target)
        _sync(folder, durable)
        _reached(published)
        return
    ours = ours or digest_at(folder, temp)
    try:
        # Writing and syncing the temp took a while: a save since then is caught here, before
        # any reader could see the new file (the exchange's own check covers the last instant).
        if digest_at(folder, target) != expected or not _settled(folder, target, expected):
            raise Displaced(folder, target)
        exchanged = _exchange(folder, temp, target)
    except FileNotFoundError:  # deleted by hand since the comparison
        raise Displaced(folder, target) from None
    if not exchanged:
        _compare_and_replace(folder, temp, target, expected, durable)
        _reached(published)
        return
    _reached(published)
    displaced, writing = _displaced(folder, temp)
    changed = displaced is None or digest(displaced) != expected
    if changed or writing:
        swap_back(folder, temp, target, ours)
        raise Displaced(folder, target, displaced if changed else None)
    _sync(folder, durable)


def swap_out(folder: HeldFolder, target: str, tomb: str, expected: str, *, durable: bool = True) -> None:
    """Move `target` to the fresh name `tomb` if it holds `expected`; Displaced otherwise."""
    try:
        folder.rename(target, tomb)
    except FileNotFoundError:
        raise Displaced(folder, target) from None
    displaced, writing = _displaced(folder, tomb)
    changed = displaced is None or digest(displaced) != expected
    if changed or writing:
        put_back(folder, tomb, target)
        raise Displaced(folder, target, displaced if changed else None)
    _sync(folder, durable)


def put_back(folder: HeldFolder, tomb: str, target: str) -> None:
    """Return a file `swap_out` moved away; a file saved at `target` since then is kept too."""
    try:
        folder.link(tomb, target)
    except FileExistsError:
        folder.rename(tomb, _unmerged(folder, target))
    else:
        folder.unlink(tomb)
    folder.sync()


def swap_back(folder: HeldFolder, temp: str, target: str, ours: str | None) -> None:
    """Undo a `swap_in` of the file with digest `ours`, whose displaced file is still at `temp`.

    Readers may have seen our file meanwhile, and an editor may have saved over it: what the
    exchange takes back is checked afterwards, and a save found there is kept beside `target`
    (as `<name>.unmerged-*`) rather than discarded, since it and the file put back each hold
    lines the other lacks.
    """
    if not _exchange(folder, temp, target):
        folder.replace(temp, target)
    elif digest_at(folder, temp) != ours:
        folder.rename(temp, _unmerged(folder, target))
    folder.sync()


def set_aside(folder: HeldFolder, temp: str, target: str) -> None:
    """Keep `temp`, a commit's version of `target` that a save since the crash stands in place
    of, beside it as `<name>.unmerged-*`: the save stays, and neither is lost."""
    kept = unmerged_path_for(folder.path / target).name
    folder.rename(temp, kept)
    folder.sync()
    log.warning("a hand save of %s stands where a commit put it; the commit's is kept as %s", target, kept)


def discard(temp: Path) -> None:
    temp.unlink(missing_ok=True)
    fsync_dir(temp.parent)


def _discard(folder: HeldFolder, temp: str) -> None:
    folder.unlink(temp, missing_ok=True)
    folder.sync()


def _reached(point: str | None) -> None:
    if point is not None:
        faultpoint(point)


def _sync(folder: HeldFolder, durable: bool) -> None:
    if durable:
        folder.sync()


def watch_put_back(displaced: Displaced) -> None:
    """Keep the save an undo put back, should the next saves drop it; call after every undo.

    Between the exchange and its undo a reader may have seen our file (or, for a removal, no
    file). A writer that builds its next save on that read and saves right after the undo would
    overwrite the save put back, losing its lines. So the target is watched for SETTLE_SECONDS:
    a change that lacks a line of the save put back gets that save kept beside it as
    `<name>.unmerged-*`, as `swap_back` keeps a save it finds on our file.
    """
    folder, target, saved = displaced.folder, displaced.name, displaced.put_back
    if not saved:
        return
    lines, seen = set(saved.splitlines()), saved
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.005)
        now = _read(folder, target) or b""
        if now == seen:
            continue
        seen = now
        if not lines <= set(now.splitlines()):
            atomic_write(folder.path / _unmerged(folder, target), saved, dir_fd=folder.fd)
            return


def _unmerged(folder: HeldFolder, target: str) -> str:
    name = unmerged_path_for(folder.path / target).name
    log.warning("a hand save of %s met a commit; it is kept as %s for a person to merge", target, name)
    return name


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


def _settled(folder: HeldFolder, target: str, expected: str) -> bool:
    """False when an empty file turns out to be an in-place save between truncate and write.

    Such a save truncates when it opens and writes a moment later, into whichever file it
    opened: a comparison that read it empty would otherwise discard the bytes it writes next.
    A file emptied within SETTLE_SECONDS is watched until then; any byte arriving means a save.
    """
    if expected != EMPTY:
        return True
    while True:
        status = folder.lstat(target)
        if status.st_size:
            return False
        left = SETTLE_SECONDS - (time.time_ns() - status.st_mtime_ns) / 1e9
        if left <= 0:
            return True
        time.sleep(min(left, 0.005))


def _compare_and_replace(folder: HeldFolder, temp: str, target: str, expected: str, durable: bool) -> None:
    """Without an exchange, compare right before the rename: the window shrinks, it stays open.

    The old file is held by a second link so that, as after an exchange, `temp` ends up naming it.
    """
    held = temp_path_for(folder.path / target).name
    try:
        folder.link(target, held)
    except FileNotFoundError:
        raise Displaced(folder, target) from None
    if digest_at(folder, held) != expected:
        folder.unlink(held)
        raise Displaced(folder, target)
    folder.replace(temp, target)
    folder.rename(held, temp)
    _sync(folder, durable)


def _exchange(folder: HeldFolder, a: str, b: str) -> bool:
    """Atomically swap the names `a` and `b` in `folder`; False when this system cannot."""
    if _renameat2 is None:
        return False
    if _renameat2(folder.fd, os.fsencode(a), folder.fd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), str(folder.path / a), None, str(folder.path / b))


def _load_renameat2() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    function = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)  # glibc >= 2.28
    if function is not None:
        function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        function.restype = ctypes.c_int
    return function


_renameat2 = _load_renameat2()

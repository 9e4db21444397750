"""Durable file primitives shared by every write protocol: private dirs, fsync, atomic publish.

Every helper here fsyncs what it wrote and the directory entry that names it, because a
rename or link that is not on disk yet can vanish in a power cut and undo a "committed" write.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import secrets
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

from .faults import faultpoint

log = logging.getLogger("remem.fsutil")

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600
TEMP_MARKER = ".remem-tmp-"
# A hand save that met a publish and was kept beside its file, not discarded (`swap.py`).
UNMERGED_MARKER = ".unmerged-"
NAME_MAX = 255  # bytes in one file name, on Linux's and macOS's usual file systems
# The writes a file system refuses whatever remem does, and what a person does about each: no
# bug of remem's, but room, a limit, a mount or a permission to fix.
WRITE_REMEDIES = {
    errno.ENOSPC: "free some space on its disk",
    errno.EDQUOT: "free some of your disk quota",
    errno.EFBIG: "raise the file-size limit (`ulimit -f`) of the process writing it (the daemon "
    "has the limit of the shell that started it: `remem daemon stop`, then retry from a shell "
    "without it)",
    errno.EROFS: "mount its file system read-write",
    errno.EACCES: "let your user write in that folder",
    errno.EPERM: "let your user write in that folder (an immutable flag, say)",
}


class Unwritable(OSError):
    """A write the file system refused (`WRITE_REMEDIES`) before anything was published: the
    folder's files are as they were, and the temp files of the write are gone. An OSError still,
    with the refusal's errno, so code that handles any OSError goes on doing so."""

    def __init__(self, error: OSError, folder: Path) -> None:
        super().__init__(error.errno, error.strerror, str(folder))
        self.folder = folder

    @property
    def code(self) -> str:
        """The errno's name (`ENOSPC`), for a client to tell a full disk from a read-only one."""
        return errno.errorcode.get(self.errno or 0, str(self.errno))

    def __str__(self) -> str:
        return (
            f"{self.folder} refused a write ({self.strerror}), so nothing was changed there; to go "
            f"on, {remedy(self.errno)}, then retry"
        )


def remedy(code: int | None) -> str:
    """What to do about a write refused with errno `code` (`WRITE_REMEDIES`)."""
    return WRITE_REMEDIES.get(code or 0, "free some space or fix the folder")


def is_refused_write(exc: OSError) -> bool:
    """Whether `exc` is a write the file system refused (`WRITE_REMEDIES`), no bug of remem's."""
    return exc.errno in WRITE_REMEDIES


def raise_as_unwritable(exc: OSError, folder: Path) -> NoReturn:
    """Raise `exc`, as `Unwritable` naming `folder` when it is a refused write. Only for an error
    after which nothing is published and no temp is left: the message says so."""
    if isinstance(exc, Unwritable) or not is_refused_write(exc):
        raise exc
    raise Unwritable(exc, folder) from exc


@contextmanager
def refused_as_unwritable(folder: Path) -> Iterator[None]:
    """`raise_as_unwritable` for what the block raises: a block that publishes nothing if it fails."""
    try:
        yield
    except OSError as exc:
        raise_as_unwritable(exc, folder)


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) user-only; tighten an existing directory we own.

    A symbolic link at `path` is refused (an OSError, ELOOP), never written through; a folder of
    the home is made with `Home.private_dir`, which says how to fix it.
    """
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    if not own_private_dir(path) and path.is_symlink():
        raise OSError(errno.ELOOP, "a symbolic link stands where remem makes a folder", str(path))
    return path


def own_private_dir(path: Path) -> bool:
    """Whether `path` is a real directory of this user, tightened to 0700 if it was looser.

    The mode is changed through a descriptor opened without following a link, after checking
    its owner: a chmod by name would follow a link another user planted and open up, or close,
    a folder of the victim's choosing.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return False  # a link (ELOOP), not a directory, or gone
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            return False
        if st.st_mode & 0o077:
            os.fchmod(fd, PRIVATE_DIR_MODE)
        return True
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_path_for(target: Path, *, swap: tuple[str, str] | None = None) -> Path:
    """A hidden sibling of `target`, unique per call, recognisable by `TEMP_MARKER`.

    It names `target` as far as it fits the folder's longest name (the random tail keeps it
    unique), so a file whose name is already as long as allowed can still be replaced or removed.
    `swap`: the digests of the temp's bytes and of the bytes it is to replace, for a temp an
    exchange may turn into the file it displaced (`swap.py`): their starts are in its name, so
    that recovery tells a displaced save from either (`remove_stale_temps`, decision 0090).
    """
    tags = "".join(f"-{digest[:_DIGEST_HEX]}" for digest in swap) if swap else ""
    return target.with_name(_temp_prefix(target) + secrets.token_hex(_TEMP_RANDOM_BYTES) + tags)


_TEMP_RANDOM_BYTES = 6
_DIGEST_HEX = 16
# The marker, the random hex, and room for the two digests of an exchange's temp: every temp of
# a file is cut alike, so all of them share one prefix.
_TEMP_TAIL = len(TEMP_MARKER) + 2 * _TEMP_RANDOM_BYTES + 2 * (1 + _DIGEST_HEX)
_TAIL = re.compile(
    rf"[0-9a-f]{{{2 * _TEMP_RANDOM_BYTES}}}(?:-([0-9a-f]{{{_DIGEST_HEX}}})-([0-9a-f]{{{_DIGEST_HEX}}}))?"
)


def _temp_prefix(target: Path, dir_fd: int | None = None) -> str:
    """What every temp of `target` is named before its random hex: its (cut) name and the marker.
    `dir_fd`: its folder's descriptor, asked for the folder's longest name instead of its path."""
    room = name_max(target.parent if dir_fd is None else dir_fd)
    return f".{_cut(target.name, room - 1 - _TEMP_TAIL)}{TEMP_MARKER}"


def is_temp_of(name: str, target: Path) -> bool:
    """Whether `name` is one of `temp_path_for(target)`'s names, cut or not.

    Exact for a name that fits whole; a name cut to fit is told apart from another only as far
    as their cut forms differ (decision 0409)."""
    return _temps_named(_temp_prefix(target))(name)


def _temps_named(prefix: str) -> Callable[[str], bool]:
    """`is_temp_of` for the target whose temps start with `prefix`: for a listing, the prefix
    (a `pathconf` and a cut) worked out once, not per name."""

    def chosen(name: str) -> bool:
        return name.startswith(prefix) and _TAIL.fullmatch(name, len(prefix)) is not None

    return chosen


def name_max(folder: Path | int) -> int:
    """The longest file name, in bytes, `folder` (or the folder of that descriptor) takes;
    NAME_MAX where it cannot tell."""
    try:
        return min(NAME_MAX, os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):  # gone, or a system without the query
        return NAME_MAX


def fits(name: str, folder: Path) -> bool:
    """Whether `folder` can hold a file called `name` (a name too long gets ENAMETOOLONG)."""
    return len(os.fsencode(name)) <= name_max(folder)


def _cut(name: str, room: int) -> str:
    """`name`, or its start and its extension (`.md`) when it is longer than `room` bytes: what a
    derived name keeps of the file it comes from, for a person listing the folder."""
    if len(os.fsencode(name)) <= room:
        return name
    stem, extension = os.path.splitext(name)
    if len(os.fsencode(extension)) * 2 > room:
        stem, extension = name, ""
    while len(os.fsencode(stem + extension)) > room:  # characters, not bytes: none is split
        stem = stem[:-1]
    return stem + extension


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and TEMP_MARKER in name


def unmerged_path_for(target: Path) -> Path:
    """Where a save of `target` that lost to another is kept, for a person to merge (named as
    `temp_path_for` names, cut to fit beside a name as long as allowed)."""
    tail = f"{UNMERGED_MARKER}{time.time_ns()}"
    return target.with_name(f"{_cut(target.name, name_max(target.parent) - len(tail))}{tail}")


def write_synced(path: Path, *parts: bytes | memoryview, dir_fd: int | None = None) -> None:
    """Create `path` exclusively with user-only permissions, write `parts` in order, fsync.

    Several parts let a caller write a large file from slices without concatenating them.
    With `dir_fd`, `path` is a name in that folder (`safe_open.open_folder`).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE, dir_fd=dir_fd)
    try:
        for part in parts:
            view = memoryview(part)
            while view:
                view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError:  # a full disk: no partial file is left behind
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path, dir_fd=dir_fd)
        raise
    os.close(fd)


def write_temp(
    target: Path, *parts: bytes | memoryview, swap: tuple[str, str] | None = None, dir_fd: int | None = None
) -> Path:
    """Write `parts` to a fresh synced temp file beside `target` and return its path (`swap`:
    as `temp_path_for` takes it). With `dir_fd`, `target`'s folder opened (`safe_open.HeldFolder`):
    the temp is made through it."""
    temp = temp_path_for(target, swap=swap)
    write_synced(temp if dir_fd is None else Path(temp.name), *parts, dir_fd=dir_fd)
    return temp


def replace_durably(temp: Path, target: Path) -> None:
    os.replace(temp, target)
    fsync_dir(target.parent)


def atomic_write(target: Path, data: bytes, *, written: str | None = None, dir_fd: int | None = None) -> None:
    """Replace `target` so that readers see the old or the new bytes, never a mix. `written`
    names the fault point between the synced temp and the rename, if the protocol has one.
    `dir_fd`: as `write_temp` takes it, every step through it."""
    _put_in_place(write_temp(target, data, dir_fd=dir_fd), target, written, dir_fd)


def atomic_rewrite(target: Path, data: bytes, *, written: str | None = None) -> None:
    """`atomic_write` by the holder of the lock every writer of `target` takes: its temp has
    one name, `target`'s own (`locked_temp_path_for`), so the temp a crashed writer of `target`
    left (killed before its rename) is removed by name first, with no listing of the folder, and
    no other file's temp is touched (decision 0411)."""
    temp = locked_temp_path_for(target)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)
    write_synced(temp, data)
    _put_in_place(temp, target, written)


def _put_in_place(temp: Path, target: Path, written: str | None, dir_fd: int | None = None) -> None:
    """Rename the synced `temp` over `target` durably, past the fault point `written` if any;
    a rename that fails leaves no temp behind. `dir_fd`: their folder opened."""
    if written is not None:
        faultpoint(written)
    try:
        if dir_fd is None:
            replace_durably(temp, target)
        else:
            os.replace(temp.name, target.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            os.fsync(dir_fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_in(temp, dir_fd), dir_fd=dir_fd)
        raise


def locked_temp_path_for(target: Path) -> Path:
    """The one temp name of `target` for writers holding the lock all its writers take
    (`atomic_rewrite`): a `temp_path_for` name (`is_temp_of` matches it), its random hex zeros."""
    return target.with_name(_temp_prefix(target) + "0" * (2 * _TEMP_RANDOM_BYTES))


def publish_new(temp: Path, target: Path, *, linked: str, dir_fd: int | None = None) -> None:
    """Publish `temp` at `target` only if `target` does not exist (hard link), then drop `temp`.

    Raises FileExistsError when something already occupies `target`: a publish never
    overwrites. With `dir_fd`, both are names in that folder (`safe_open.open_folder`).
    `linked` names the fault point between the link and the unlink: a crash there leaves the
    temp as a second name of the published file, for the writer's recovery to remove even
    though `target` exists.
    """
    if dir_fd is None:
        os.link(temp, target)
        fsync_dir(target.parent)
        faultpoint(linked)
        temp.unlink()
        fsync_dir(temp.parent)
        return
    os.link(temp, target, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    os.fsync(dir_fd)
    faultpoint(linked)
    os.unlink(temp, dir_fd=dir_fd)
    os.fsync(dir_fd)


def remove_stale_temps(directory: Path, *, dir_fd: int | None = None) -> list[Path]:
    """Delete every temp file in `directory` (a save an exchange displaced into one is kept
    beside its file instead, `_settle_temp`); return what was removed.

    Only for a caller holding the one lock every writer of the folder takes: another writer's
    temp, in flight under another lock, would go too. A writer of one file in a folder others
    write under their own locks uses `remove_stale_temps_of` (decision 0409). With `dir_fd`,
    `directory` opened (`safe_open.HeldFolder`): it is listed and its temps removed through it."""
    return _remove_temps(directory, is_temp_name, None, dir_fd)


def remove_stale_temps_of(target: Path, *, dir_fd: int | None = None) -> list[Path]:
    """Delete the temp files a crashed writer of `target` left beside it, and no other file's;
    for a caller holding the lock every writer of `target` takes. Return what was removed.

    With `dir_fd`, the descriptor of the folder `target` lies in (`safe_open.open_folder`):
    that folder is listed and its temps removed through it, so a folder on `target`'s path
    swapped for a link since is never followed out of its root."""
    return _remove_temps(target.parent, _temps_named(_temp_prefix(target, dir_fd)), target, dir_fd)


def _remove_temps(
    directory: Path, chosen: Callable[[str], bool], target: Path | None, dir_fd: int | None = None
) -> list[Path]:
    """Settle each temp `chosen` names in `directory` (`_settle_temp`); a symbolic link at a temp's
    name, which only an exchange puts there (one put in place of the file just before it), is
    kept beside its file, never followed nor deleted. `target`: the file the temps are of, when
    the caller knows it (a cut temp name does not say it whole). `dir_fd`: `directory` opened,
    every name is then looked up in it."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory if dir_fd is None else dir_fd))
    except FileNotFoundError:
        return removed
    for entry in entries:
        if not chosen(entry.name):
            continue
        temp = directory / entry.name
        if entry.is_symlink():
            _keep(temp, target or _target_of(temp), "a link put in place of", dir_fd)
        elif entry.is_file(follow_symlinks=False):
            _settle_temp(temp, target, dir_fd)
        else:
            continue
        removed.append(temp)
    if removed and dir_fd is not None:
        os.fsync(dir_fd)
    elif removed:
        fsync_dir(directory)
    return removed


def _in(path: Path, dir_fd: int | None) -> Path | str:
    """What names `path` for a call given `dir_fd`: its own name in that folder, else itself."""
    return path if dir_fd is None else path.name


def _settle_temp(temp: Path, target: Path | None, dir_fd: int | None) -> None:
    """Remove a stale temp, unless an exchange left in it a file that held neither of the bytes
    its name records (ours, or those compared): a save by hand that landed just before the
    exchange, whose check a crash cut off. That one is kept beside its file, for a person to
    merge. Not when the file holds the same bytes, nor when it still holds the compared ones:
    then the exchange never happened, and the temp is our own write that a crash cut short (a
    kill in mid-write, a power cut before its sync left it partial or empty)."""
    tags = _TAIL.fullmatch(temp.name.rpartition(TEMP_MARKER)[2])
    swapped = tags.groups() if tags is not None and tags.group(1) else ()
    data = _read_bytes(_in(temp, dir_fd), dir_fd) if swapped else None
    if data is not None and _short_digest(data) not in swapped:
        target = target or _target_of(temp)
        now = _read_bytes(_in(target, dir_fd), dir_fd)
        if now != data and (now is None or _short_digest(now) != swapped[1]):
            _keep(temp, target, "a hand save of", dir_fd)
            return
    with contextlib.suppress(FileNotFoundError):  # gone meanwhile: as good as removed
        os.unlink(_in(temp, dir_fd), dir_fd=dir_fd)


def _short_digest(data: bytes) -> str:
    """The start of `data`'s digest a temp's name records (`temp_path_for`'s `swap`)."""
    return hashlib.sha256(data).hexdigest()[:_DIGEST_HEX]


def _target_of(temp: Path) -> Path:
    """The file `temp` was made for, as far as its (maybe cut) name tells."""
    return temp.with_name(temp.name.rpartition(TEMP_MARKER)[0][1:])


def _keep(temp: Path, target: Path, what: str, dir_fd: int | None) -> None:
    kept = unmerged_path_for(target)
    os.rename(_in(temp, dir_fd), _in(kept, dir_fd), src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    log.warning("%s %s met a commit a crash cut short; it is kept as %s", what, target.name, kept.name)


def _read_bytes(path: Path | str, dir_fd: int | None) -> bytes | None:
    """The bytes of the regular file at `path` (a name in `dir_fd`, given one), never through a
    link nor waiting on a FIFO; None when there is none."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read()

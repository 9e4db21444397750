"""Opening a file or a folder below a root, never through a link and never waiting on a non-file.

Session logs and memory files are found by a scan, then opened: in between, a link or a FIFO
can be swapped in, for the file or for any folder on its way. A link could lead out of the
roots; opening a FIFO or a device would wait for a writer and hold a daemon thread for good.
So a file is opened without following a link (`ELOOP`) and refused unless it is a regular
file (`EINVAL`); given its root, every folder from the root down is opened the same way, one
at a time, each from the descriptor of the one above (`open_folder`): a folder swapped for a
link is refused, never followed (`ELOOP`; not a folder: `ENOTDIR`). The root itself may be
a link: the user chose it, so its path is followed once. Given the identity (device and inode)
a listing saw, a file that is another one now is refused too (`ESTALE`, `REPLACED`).

Writes below a root go through `open_folder`'s descriptor as well (`os.open(..., dir_fd=)`,
`os.link(..., src_dir_fd=, dst_dir_fd=)`): what they create lies in the folder that was
opened, whatever its path names meanwhile (decision 0364). A memory commit holds its folder so
(`HeldFolder`) and does every read, create, rename and removal through it (decision 0465).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

NOT_REGULAR = "not a regular file"
LINK = "a symbolic link"
_KINDS = (
    (stat.S_ISREG, "a file"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, LINK),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind_of(mode: int) -> str:
    """What a file of `mode` is, said for a person: "a file", "a FIFO", ..."""
    return next((said for test, said in _KINDS if test(mode)), "something else")


LINKED = "a symbolic link on the way; remem follows no link below a session root"
NOT_A_FOLDER = "not a folder"
REPLACED = "it was replaced since it was listed"
OUTSIDE = "not inside its session root"
FOLDER_MODE = 0o700  # what `open_folder` makes: user-only, whatever the umask
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
# What a folder or file on the way that is gone, is a link or is another file now raises.
MOVED = frozenset({errno.ENOENT, errno.ELOOP, errno.ENOTDIR, errno.ESTALE})

Identity = tuple[int, int]  # a file's (st_dev, st_ino)


def open_folder(root: Path, folder: str | os.PathLike[str], *, make: bool = False) -> int:
    """A descriptor of `folder`, opened from `root` one folder at a time without following a
    link. `OSError` naming the folder that stopped it: `ELOOP` for a link, `ENOTDIR` for
    anything but a folder, `ENOENT` for none; `EINVAL` when `folder` is not `root` or below it.

    With `make`, the folders missing from `root` down (the root too) are made user-only.
    """
    parts = _below(os.fspath(root), os.fspath(folder))
    if parts is None:
        raise OSError(errno.EINVAL, OUTSIDE, str(folder))
    if make:
        _make_root(root)
    fd = os.open(root, _FOLDER)  # the root itself may be a link: the user chose it
    for depth, part in enumerate(parts, 1):
        fd = _step(fd, part, root, parts[:depth], make)  # closes the folder above, whatever happens
    return fd


def _below(root: str, folder: str) -> list[str] | None:
    """The names from `root` down to `folder` (both normalised, as `Path` keeps them), or None
    when `folder` is not `root` or below it. Strings, not `Path`s: a listing opens every file
    this way, and `relative_to` cost more than the opens."""
    if folder == root:
        return []
    prefix = root if root.endswith(os.sep) else root + os.sep
    if not folder.startswith(prefix):
        return None
    parts = folder[len(prefix) :].split(os.sep)
    return None if ".." in parts else parts


@contextmanager
def folder_at(root: Path, folder: Path, *, make: bool = False) -> Iterator[int]:
    """`open_folder`'s descriptor, closed when the block ends."""
    fd = open_folder(root, folder, make=make)
    try:
        yield fd
    finally:
        os.close(fd)


def _step(fd: int, name: str, root: Path, parts: list[str], make: bool) -> int:
    """The folder `name` in the folder `fd` (closed), not through a link; made if missing and
    `make`. `root` and `parts` (down to `name`) name it in an error."""
    try:
        try:
            return os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            if not make:
                raise
            with suppress(FileExistsError):  # made meanwhile, by another fork or anything else
                os.mkdir(name, FOLDER_MODE, dir_fd=fd)
            return os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=fd)
    except OSError as exc:
        raise _named(exc, fd, name, root.joinpath(*parts)) from None
    finally:
        os.close(fd)


def _named(exc: OSError, fd: int, name: str, path: Path) -> OSError:
    """`exc` saying what stands at `path` (Linux answers ENOTDIR for a link, as for a file)."""
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        try:
            linked = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
        except OSError:
            linked = exc.errno == errno.ELOOP
        if linked:
            return OSError(errno.ELOOP, LINKED, str(path))
        return OSError(errno.ENOTDIR, NOT_A_FOLDER, str(path))
    return OSError(exc.errno, exc.strerror, str(path))


def _make_root(root: Path) -> None:
    """Make `root` and its missing parents user-only (`mkdir(parents=True)` would give the
    parents the umask's mode); an existing one is left as its owner set it."""
    missing = [root, *root.parents]
    missing = missing[: next((i for i, p in enumerate(missing) if p.is_dir()), len(missing))]
    for folder in reversed(missing):
        with suppress(FileExistsError):
            os.mkdir(folder, FOLDER_MODE)


def open_regular(
    path: str | os.PathLike[str], *, root: Path | None = None, identity: Identity | None = None
) -> int:
    """A read-only descriptor of the regular file at `path`; `OSError` otherwise (`ELOOP` for a
    link, `EINVAL` for anything but a regular file). Given its `root`, the folders from the root
    down are opened as `open_folder` opens them; given the `identity` it was listed with, a file
    that is another one now is refused (`ESTALE`)."""
    with Walk() as walk:
        return walk.open_regular(path, root=root, identity=identity)


class Walk:
    """Files opened one after another as `open_regular` opens them, the folder they lie in
    opened from the root once while they share it: a workspace's listing glances at thousands
    of Codex rollouts in a few date folders, and opening every folder on the way again for each
    file was half of a glance's cost. One folder is held at a time, so a walk holds a single
    descriptor however many folders it passes; a file opened through it lies in the folder that
    was opened, below the root, whatever that folder's path names since (decision 0381)."""

    def __init__(self) -> None:
        self._at: tuple[Path, str] | None = None
        self._folder = -1

    def __enter__(self) -> Walk:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the folder held."""
        if self._folder >= 0:
            os.close(self._folder)
        self._at, self._folder = None, -1

    def open_regular(
        self, path: str | os.PathLike[str], *, root: Path | None = None, identity: Identity | None = None
    ) -> int:
        """`open_regular`'s descriptor, through the folder held when `path` lies in it."""
        name, folder = path, None
        if root is not None:
            parent, name = os.path.split(os.fspath(path))
            folder = self._folder_at(root, parent)  # its errors name the folder that stopped it
        try:
            fd = os.open(name, _FILE, dir_fd=folder)
        except OSError as exc:
            raise _file_refused(exc, path) from None
        return _regular(fd, path, identity)

    def _folder_at(self, root: Path, folder: str) -> int:
        if self._at != (root, folder):
            self.close()
            self._folder = open_folder(root, folder)
            self._at = (root, folder)
        return self._folder


def open_linked(path: str | os.PathLike[str]) -> int:
    """`open_regular`'s descriptor, but through a link at `path`: for a file the user may keep
    elsewhere and link in (`settings.yml` from a dotfiles repository, decision 0375)."""
    try:
        fd = os.open(path, _FILE & ~os.O_NOFOLLOW)
    except OSError as exc:
        raise _file_refused(exc, path) from None
    return _regular(fd, path, None)


def _file_refused(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """`exc` of opening the file at `path`, naming it; a socket (which no `open` reads: ENXIO)
    is refused as anything but a regular file is (`EINVAL`)."""
    if exc.errno == errno.ENXIO:
        return OSError(errno.EINVAL, NOT_REGULAR, os.fspath(path))
    return OSError(exc.errno, exc.strerror, os.fspath(path))


def _regular(fd: int, path: str | os.PathLike[str], identity: Identity | None) -> int:
    """`fd`, once it is a regular file (and the one of `identity`, when given); closed and
    `OSError` otherwise (`EINVAL`, `ESTALE`)."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, NOT_REGULAR, os.fspath(path))
        if identity is not None and (st.st_dev, st.st_ino) != identity:
            raise OSError(errno.ESTALE, REPLACED, os.fspath(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def refused(exc: OSError) -> bool:
    """Whether `open_regular` refused the path for what is there (a link, or no regular file)."""
    return exc.errno in (errno.ELOOP, errno.EINVAL)


def kind_at(path: str | os.PathLike[str], *, through_link: bool = False) -> str | None:
    """What stands at `path` (its own `lstat`, or what a link there leads to), said for a person;
    None when nothing can be told."""
    try:
        return kind_of(os.stat(path, follow_symlinks=through_link).st_mode)
    except OSError:
        return None


def standing_at(path: str | os.PathLike[str], *, through_link: bool = False) -> str:
    """Why `open_regular` (`open_linked`, `through_link`) refused `path`, by what stands there
    now: "a symbolic link, never followed", "a FIFO, not a regular file"."""
    kind = kind_at(path, through_link=through_link)
    if kind is None:
        return NOT_REGULAR
    return f"{kind}, " + ("never followed" if kind == LINK else NOT_REGULAR)


def moved(exc: OSError) -> bool:
    """Whether `exc` says the file or a folder on its way is gone, a link, or another file now:
    what a swap or a removal since the listing leaves, not what the file holds."""
    return exc.errno in MOVED


def reason(exc: OSError, path: str | os.PathLike[str]) -> str:
    """Why `open_regular` refused `path`, naming the folder on the way that stopped it."""
    said = exc.strerror or str(exc)
    named = exc.filename is not None and exc.filename != os.fspath(path)
    return f"{exc.filename} is {said}" if named else said


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """The bytes of the regular file at `path`, opened as `open_regular` opens it (`OSError`
    likewise); None when it holds more than `limit` bytes (`read_capped`)."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return read_capped(handle, limit)


def read_capped(handle: BinaryIO, limit: int) -> bytes | None:
    """The open file's bytes, or None when it holds more than `limit`: no more than one byte
    past `limit` is read, even from a file that grows meanwhile."""
    size = os.fstat(handle.fileno()).st_size
    if size > limit:
        return None
    data = handle.read(size + 1)  # sized by the file: asking for `limit` costs its allocation
    if len(data) > size:  # it grew since: read on, up to the limit
        data += handle.read(limit + 1 - len(data))
    return None if len(data) > limit else data


class HeldFolder:
    """A folder opened once, whose files are named relative to its descriptor: whatever is
    read, created, renamed or removed through it lies in the folder that was opened, whatever
    its path names since, a symbolic link swapped in included (decision 0465). `path` is where
    it was opened, for messages; `in_place` tells whether that path still names it."""

    def __init__(self, fd: int, path: Path) -> None:
        self.fd, self.path = fd, path
        st = os.fstat(fd)
        self.identity: Identity = (st.st_dev, st.st_ino)

    @classmethod
    def below(cls, root: Path, folder: Path, *, make: bool = False) -> HeldFolder:
        """The folder `open_folder` opens (no link from `root` down; made 0700 with `make`)."""
        return cls(open_folder(root, folder, make=make), folder)

    @classmethod
    def at(cls, folder: Path) -> HeldFolder:
        """The folder at `folder`, its path followed once as the caller gave it."""
        return cls(os.open(folder, _FOLDER), folder)

    def __enter__(self) -> HeldFolder:
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)

    def in_place(self) -> bool:
        """Whether `path` still names this folder (not moved, removed, or swapped for a link)."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.identity

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def lstat(self, name: str) -> os.stat_result:
        return os.stat(name, dir_fd=self.fd, follow_symlinks=False)

    def exists(self, name: str) -> bool:
        """Whether anything, a link too, stands at `name`."""
        try:
            self.lstat(name)
        except FileNotFoundError:
            return False
        return True

    def open_regular(self, name: str) -> int:
        """`open_regular`'s descriptor of the file `name` in this folder."""
        try:
            fd = os.open(name, _FILE, dir_fd=self.fd)
        except OSError as exc:
            raise _file_refused(exc, self.path / name) from None
        return _regular(fd, self.path / name, None)

    def read_regular(self, name: str, limit: int) -> bytes | None:
        """`read_regular` of the file `name` in this folder."""
        with os.fdopen(self.open_regular(name), "rb") as handle:
            return read_capped(handle, limit)

    def link(self, source: str, target: str) -> None:
        os.link(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd, follow_symlinks=False)

    def rename(self, source: str, target: str) -> None:
        os.rename(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def replace(self, source: str, target: str) -> None:
        os.replace(source, target, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def unlink(self, name: str, *, missing_ok: bool = False) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def sync(self) -> None:
        os.fsync(self.fd)

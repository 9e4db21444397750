"""`REMEM_HOME` resolution and its folder layout, created on demand and user-only."""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .fsutil import PRIVATE_DIR_MODE, PRIVATE_FILE_MODE, own_private_dir
from .os_names import is_utf8, shown
from .safe_open import kind_at

HOME_ENV = "REMEM_HOME"
DEFAULT_HOME = "~/.remem"  # when neither `--home` nor $REMEM_HOME names one
# A review receipt's file name, directly in `reviews`: its review id (a sha256 in hex,
# `consolidation.receipts.review_id`) and `.md`. No other file there is a receipt.
RECEIPT_NAME = re.compile(r"[0-9a-f]{64}\.md")


class HomeUnusable(Exception):
    """A folder of the home cannot be made: a file stands where it must be, or it is not ours."""


@dataclass(frozen=True)
class Home:
    """Where remem keeps everything: memory, its own sessions, state and settings.

    The paths are computed once per home: the language server compares them on every keystroke.
    """

    root: Path

    @classmethod
    def resolve(cls, explicit: str | os.PathLike[str] | None = None) -> Home:
        """`--home` wins, then `$REMEM_HOME` (if not blank), then `~/.remem`; made absolute."""
        chosen = explicit or os.environ.get(HOME_ENV, "").strip() or DEFAULT_HOME
        return cls(Path(os.path.abspath(os.path.expanduser(os.fspath(chosen)))))

    @cached_property
    def memory(self) -> Path:
        return self.root / "memory"

    @cached_property
    def global_file(self) -> Path:
        return self.memory / "GLOBAL.md"

    @cached_property
    def workspaces(self) -> Path:
        return self.memory / "workspaces"

    @cached_property
    def reviews(self) -> Path:
        return self.memory / "reviews"

    @cached_property
    def debug(self) -> Path:
        return self.memory / "debug"

    @cached_property
    def sessions(self) -> Path:
        return self.root / "sessions"

    @cached_property
    def state(self) -> Path:
        return self.root / "state"

    @cached_property
    def locks(self) -> Path:
        return self.state / "locks"

    @cached_property
    def settings_file(self) -> Path:
        return self.root / "settings.yml"

    @cached_property
    def credentials_file(self) -> Path:
        return self.root / "credentials.yml"

    def identity(self) -> str | None:
        """The home folder's "device:inode" (its path followed, links and all), None when there
        is none: a copy of the home is another home, a moved one the same."""
        try:
            st = os.stat(self.root)
        except OSError:
            return None
        return f"{st.st_dev}:{st.st_ino}"

    def refuse_non_utf8_name(self) -> Home:
        """HomeUnusable when the home's name is not UTF-8: remem keeps and sends its paths as
        UTF-8 text (the index, the daemon's answers), which would fail on them as a bug. Asked
        by what stores or sends them, never by what only reads files it is given, nor by the
        servers, which start whatever the home and say this as why they are degraded."""
        if not is_utf8(str(self.root)):
            raise HomeUnusable(
                f"remem's home {shown(str(self.root))} cannot be used: its name is not UTF-8, and remem "
                f"keeps its paths as UTF-8 text; choose another home with --home or ${HOME_ENV}"
            )
        return self

    def ensure_layout(self) -> Home:
        """Create the fixed folders (0700); existing ones, and a hand-made `settings.yml`, are
        tightened to user-only, never loosened. A symbolic link at any of them, or at a folder or
        file remem makes in them (`ENTRIES`), is refused: remem would read and write through it."""
        for folder in self._layout:
            self._make_folder(folder, used_by_all=folder != self.reviews)
        for entry in self._entries:  # a parent before its children: the last part is enough
            try:
                linked = entry.is_symlink()
            except PermissionError:  # in the receipts' folder closed to its user: said where used
                continue
            if linked:
                raise HomeUnusable(linked_message(entry, self.root))
        _tighten(self.settings_file)
        return self

    def refuse_unusable_layout(self) -> Home:
        """HomeUnusable when a link or a file stands where `ensure_layout` makes a folder, in its
        words; nothing made: for what lays the home out only once it is used."""
        for folder in self._layout:
            self.refuse_unusable(folder)
        return self

    @cached_property
    def _layout(self) -> tuple[Path, ...]:
        return (self.root, self.memory, self.workspaces, self.reviews, self.sessions, self.state, self.locks)

    @cached_property
    def _entries(self) -> tuple[Path, ...]:
        return tuple(self.root / name for name in ENTRIES)

    @cached_property
    def own_entries(self) -> frozenset[Path]:
        """What remem lays out directly in the home (`memory/`, `state/`, `history`, the
        settings…): anything else there is the user's, a project kept in the home, say."""
        made = (*self._layout, *self._entries, self.settings_file, self.credentials_file)
        return frozenset(
            self.root / path.relative_to(self.root).parts[0] for path in made if path != self.root
        )

    def private_dir(self, folder: Path) -> Path:
        """Make `folder` (inside the home) and the folders between the home and it, each 0700;
        HomeUnusable when one is a link, as for the fixed folders."""
        self.refuse_link(folder)
        self._make_folder(self.root)
        at = self.root
        for part in folder.relative_to(self.root).parts:
            at = at / part
            self._make_folder(at)
        return folder

    def refuse_link(self, path: Path) -> Path:
        """HomeUnusable when `path`, or a folder between the home and it, is a symbolic link
        (the home itself may be one, the user's choice); what does not exist yet passes."""
        link = self._first_link(path)
        if link is not None:
            raise HomeUnusable(linked_message(link, self.root))
        return path

    def refuse_linked_write(self, path: Path, change: str) -> Path:
        """HomeUnusable, before anything is written, when `path` or a folder between the home and
        it is a symbolic link, for a file the user may keep elsewhere and link into the home
        (`settings.yml`, `credentials.yml`): remem reads it through the link, but never writes
        through one, nor replaces the user's link (decision 0375). `change`: what the write would
        have done, said as what to set (never a secret's value)."""
        link = self._first_link(path)
        if link is not None:
            raise HomeUnusable(linked_write_message(link, path, change))
        return path

    def _first_link(self, path: Path) -> Path | None:
        """The first of `path` and the folders between the home and it that is a symbolic link."""
        at = self.root
        for part in path.relative_to(self.root).parts:
            at = at / part
            try:
                if at.is_symlink():
                    return at
            except PermissionError as exc:  # a folder on the way this user may not search
                stopped = self.first_impassable(at, exc)
                refused = stopped and self._refusal(stopped)  # as `ensure_layout` would say it
                said = self._unreachable_message(exc) or refused or self.unreadable_message(at, exc)
                raise HomeUnusable(said) from None
        return None

    def open_file(self, path: Path, flags: int) -> int:
        """`os.open` of `path`, a file of the home, never through a link (0600 if created) nor
        anything but a regular file: a FIFO there would wait for a reader for good (a daemon
        never started, a consolidation never committed). Either is `HomeUnusable`."""
        self.refuse_link(path)
        try:
            fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK, PRIVATE_FILE_MODE)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # swapped for a link since the check
                raise HomeUnusable(linked_message(path, self.root)) from None
            if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO no one reads, a socket, a folder
                raise HomeUnusable(self._not_a_file(path)) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise HomeUnusable(self._not_a_file(path))
        os.set_blocking(fd, True)  # a regular file's writes never wait anyway: as asked
        return fd

    def refuse_non_file(self, path: Path) -> Path:
        """HomeUnusable when something other than a regular file stands at `path` (a file of the
        home that remem replaces by renaming, such as the daemon's status file: a folder there
        would be met only by the rename, as a bug's IsADirectoryError); nothing there passes."""
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return path
        if stat.S_ISLNK(mode):
            raise HomeUnusable(linked_message(path, self.root))
        if not stat.S_ISREG(mode):
            raise HomeUnusable(self._not_a_file(path))
        return path

    def _not_a_file(self, path: Path) -> str:
        kind = kind_at(path) or "not a regular file"
        return (
            f"remem's home {self.root} cannot be used: {path} is {kind}, where remem keeps a file; remove it"
        )

    def _make_folder(self, folder: Path, *, used_by_all: bool = True) -> None:
        """Make `folder` 0700 (or tighten it), refused when a link or no folder stands there, and,
        when every command reads or writes in it (`used_by_all`), when this user may not. The
        review receipts' folder is used by consolidation's commands alone, which say it closed
        as they meet it: every other command (a session listing) works on (decision 0529)."""
        try:
            folder.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
        except OSError as exc:
            if unreachable := self._unreachable_message(exc):
                raise HomeUnusable(unreachable) from None
            if folder != self.root and folder.is_symlink():  # a dangling link
                raise HomeUnusable(linked_message(folder, self.root, "folder")) from None
            if exc.errno == errno.ENOTDIR:
                raise HomeUnusable(self._blocked_message(folder)) from None
            raise HomeUnusable(self._unmade_message(folder, exc.strerror or str(exc))) from None
        try:
            ours = own_private_dir(folder)
        except OSError as exc:  # ours, but it cannot be made user-only: a read-only mount, say
            raise HomeUnusable(self._unwritable_message(folder, exc.strerror or str(exc))) from None
        # Looked at only when the folder is not plainly ours (`own_private_dir` opens none
        # through a link); the home itself may be a link, the user's choice.
        if not ours and folder != self.root and folder.is_symlink():
            raise HomeUnusable(linked_message(folder, self.root, "folder"))
        refused = self._refusal(folder) if used_by_all else None
        if refused is not None:
            raise HomeUnusable(refused)

    def refuse_non_folder(self, folder: Path) -> Path:
        """HomeUnusable when something other than a folder (a file, a FIFO) stands at `folder`, in
        the words `ensure_layout` would use: for a command that reads a fixed folder but never
        makes it (`daemon status`), and would otherwise meet it as a bug's NotADirectoryError.
        A file on its way, above the home too, is named as such."""
        try:
            mode = os.stat(folder).st_mode
        except NotADirectoryError:
            raise HomeUnusable(self._blocked_message(folder)) from None
        except PermissionError as exc:  # a folder on its way, above the home too, closed to its user
            raise HomeUnusable(self.unreadable_message(folder, exc)) from None
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ELOOP):  # nothing there yet, or a link loop
                raise
            return folder
        if not stat.S_ISDIR(mode):
            raise HomeUnusable(self._unmade_message(folder, os.strerror(errno.EEXIST)))
        return folder

    def names_in(self, folder: Path) -> list[str]:
        """The names in `folder`, a folder of the home that only a write makes: none while it is
        not made. HomeUnusable when it, or a folder between the home and it, is a link, is no
        folder (in the words `ensure_layout` would use), or cannot be read: a read of a home
        changed under a running daemon is said as what to fix, never as a bug's OSError."""
        try:
            return os.listdir(self.refuse_link(folder))
        except FileNotFoundError:
            return []
        except NotADirectoryError:  # a file where it, or a folder on its way, goes
            self.refuse_unusable(folder)
            raise  # a folder again since: what is left is a bug's
        except PermissionError as exc:
            raise HomeUnusable(self.unreadable_message(folder, exc)) from None

    def refuse_unusable(self, folder: Path) -> Path:
        """HomeUnusable when `folder`, or a folder between the home and it, is a symbolic link or
        no folder (a file), in the words `ensure_layout` would use: for a read under `folder`
        that met NotADirectoryError, said as what to fix, never as a bug's. What is not there
        yet passes."""
        self.refuse_link(folder)
        for at in self._way_to(folder):
            self.refuse_non_folder(at)
        return folder

    def first_impassable(self, path: Path, error: OSError) -> Path | None:
        """The first folder in the home, on the way down to `path` (the home, then each folder
        between it and `path`), that cannot be passed through with `error`'s error number; None
        when each can be. Tried, not guessed from a mode, which root is not held to: what fails
        under a refused folder is said of that folder, however deep the failure."""
        if error.errno is None:
            return None
        return next((at for at in self._way_to(path)[:-1] if _impassable(at) == error.errno), None)

    def _way_to(self, path: Path) -> list[Path]:
        """The home, each folder between it and `path`, and `path`, in that order."""
        return [at for at in reversed((path, *path.parents)) if at.is_relative_to(self.root)]

    def unreadable_message(self, path: Path, error: OSError) -> str:
        """Why `path` (a folder of the home to list, or a file in it to read) cannot be opened,
        said of the folder that stops it: the first on its way that cannot be passed through,
        above the home too, else `path` itself."""
        if unreachable := self._unreachable_message(error):
            return unreachable
        stopped = self.first_impassable(path, error) or path
        reason = error.strerror or str(error)
        return (
            f"remem's home {self.root} cannot be used: {stopped} cannot be read ({reason}); "
            f"let your user read it, or choose another home with --home or ${HOME_ENV}"
        )

    def made(self) -> bool:
        """Whether the home folder is there, for what must not make it by looking (a mistyped
        --home would be left behind); HomeUnusable when a folder above it cannot be entered,
        where whether it is there cannot be told."""
        try:
            return self.root.is_dir()
        except PermissionError as exc:
            raise HomeUnusable(self.unreadable_message(self.root, exc)) from None

    def _unreachable_message(self, error: OSError) -> str | None:
        """Why nothing in the home can be reached, when a folder above it, from `/` down, cannot be
        passed through with `error`'s error number (`chmod 000` on the home's parent); None when
        each can be. Said of the home, whose own folders are then blamed for their parent's mode.
        A home that is a link is looked for above its target too: the link itself can be read."""
        if not isinstance(error, PermissionError):
            return None
        # `realpath` resolves as far as it can, never raising (a loop, a folder it cannot enter).
        above = [*reversed(self.root.parents), *reversed(Path(os.path.realpath(self.root)).parents)]
        blocker = next((at for at in above if _impassable(at) == error.errno), None)
        if blocker is None:
            return None
        return (
            f"remem's home {self.root} cannot be used: {blocker}, a folder it is in, cannot be entered "
            f"({error.strerror or error}); let your user enter it (its x permission), or choose another "
            f"home with --home or ${HOME_ENV}"
        )

    def _unmade_message(self, folder: Path, reason: str) -> str:
        return (
            f"remem's home {self.root} cannot be used: {folder} cannot be made a folder ({reason}); "
            f"move what is in the way, or choose another home with --home or ${HOME_ENV}"
        )

    def _blocked_message(self, folder: Path) -> str:
        """Why `folder` cannot be reached (ENOTDIR): the first path on its way, from `/` down,
        that is no folder (a file where `$REMEM_HOME` goes through one), named as what it is."""
        blocker = next((at for at in reversed(folder.parents) if not at.is_dir()), folder)
        kind = kind_at(blocker, through_link=True) or "not a folder"
        return (
            f"remem's home {self.root} cannot be used: {blocker} is {kind}, where the way to "
            f"{folder} needs a folder; move it, or choose another home with --home or ${HOME_ENV}"
        )

    def _unwritable_message(self, folder: Path, reason: str) -> str:
        return (
            f"remem's home {self.root} cannot be used: {folder} cannot be written ({reason}); "
            f"let your user write in it (on a file system mounted read-write), or choose another "
            f"home with --home or ${HOME_ENV}"
        )

    def _refusal(self, folder: Path) -> str | None:
        """Why this user cannot make files in `folder`, naming all it refuses (a folder it may
        not read either is said so: told only of the write, a user let it be written and met
        the read next); None when it can. Every command writes in the home (a lock at least),
        and would otherwise meet the refusal as a bug's exception."""
        if _may(folder, os.W_OK):
            return None
        if _may(folder, os.R_OK):
            return self._unwritable_message(folder, _why_unwritable(folder))
        return (
            f"remem's home {self.root} cannot be used: {folder} cannot be read or written "
            f"({os.strerror(errno.EACCES)}); let your user read and write in it, or choose another "
            f"home with --home or ${HOME_ENV}"
        )


# What remem makes inside the fixed folders, by path: a link at one is refused with them (each
# folder listed before what it holds).
ENTRIES = (
    "history",
    "memory/audit",
    "memory/debug",
    "memory/reviews/committing",
    "state/forks",
    "state/forks/pending",
    "state/published",
    "state/index.sqlite",
    "state/index.sqlite-wal",
    "state/index.sqlite-shm",
    "state/daemon.json",
    "state/daemon.log",
    "state/history-started",
    "state/last-error.log",
    "state/session-meta.json",
    "state/settings.valid.json",
)


def linked_message(path: Path, root: Path | None = None, kind: str | None = None) -> str:
    """Why a link at `path` in the home `root` (None: not known here) stops remem, and the fix;
    `kind`: what it stands for (by default what it points to)."""
    kind = kind or ("folder" if path.is_dir() else "file")
    said = f"remem's home {root} cannot be used: {path} is" if root else f"remem cannot use {path}: it is"
    return (
        f"{said} a symbolic link, and remem reads and writes only inside its home; move the "
        f"{kind} it points to into the home, or choose a home that holds it with --home or ${HOME_ENV}"
    )


def linked_write_message(link: Path, path: Path, change: str) -> str:
    """Why remem does not write `path` through `link` (the file itself, or a folder on its way),
    and the two fixes: the user edits the file the link reaches, or makes it a copy."""
    kind = "folder" if link != path and link.is_dir() else "file"
    target = os.path.realpath(path)  # what the user edits: the file, whatever the links on its way
    return (
        f"{link} is a symbolic link to {os.path.realpath(link)}, and remem does not write through "
        f"links (it writes only inside its home), so nothing was written; to {change}, edit "
        f"{target} yourself, or replace the link with a copy of the {kind}"
    )


_EFFECTIVE_IDS = os.access in os.supports_effective_ids  # judged as a write would be


def _may(folder: Path, access: int) -> bool:
    """Whether this user may `access` (`os.R_OK`, `os.W_OK`) what is in `folder`: it is searched too."""
    return os.access(folder, access | os.X_OK, effective_ids=_EFFECTIVE_IDS)


def _why_unwritable(folder: Path) -> str:
    """The reason of a folder this user may not write in: its file system's, mounted read-only,
    else its mode's."""
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return os.strerror(errno.EROFS if read_only else errno.EACCES)


def _impassable(folder: Path) -> int | None:
    """The error number of reaching a name in `folder` (its path resolved, then searched), as
    judging a path under it does; None when it can be passed through."""
    try:
        os.stat(os.path.join(folder, os.curdir))  # `Path` would drop the `.`: `folder` is then not searched
    except OSError as error:
        return error.errno
    return None


def _tighten(path: Path) -> None:
    """Make a file of ours user-only; one owned by someone else is left alone, as for folders,
    and so is a link (a chmod by name would change what it points to)."""
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_mode & 0o077 and st.st_uid == os.getuid():
        os.chmod(path, PRIVATE_FILE_MODE)

"""Where a daemon's lock, status file, log and socket live, and how to read its status.

The socket sits in a short user-only folder (AF_UNIX paths are limited to 107 bytes, 103 on
macOS, and a home can be deep): `$XDG_RUNTIME_DIR/remem` when the session has a private runtime
dir, else `<tmp>/remem-<uid>`. In a shared temp dir another user can take that name first, so a
name that is not a real directory of ours (a link, someone else's folder) is never used nor
touched: the daemon makes a fresh private folder instead, and clients find it in the status
file. A folder whose socket path would be too long is passed over, and a temp dir too deep for
a fresh folder's socket gives way to /tmp, under the same rules; when not even that can be had,
`NoSocketFolder` says which variable to change. The socket's name is keyed by the home, so
daemons of different homes never meet. The log, kept under a cap, is `log_cap`'s.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import socket
import stat
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from pydantic import ValidationError

from ..fsutil import PRIVATE_DIR_MODE, own_private_dir
from ..home import Home, HomeUnusable
from ..locks import held_elsewhere, try_file_lock
from ..protocol.rpc import DaemonInfo
from ..safe_open import Identity, kind_of, read_regular

log = logging.getLogger("remem.daemon")
POLL_SECONDS = 0.02  # how often a waiting client looks at the lock and the status file again
# The bytes a socket's path may hold: `sun_path` less its terminating NUL (104 bytes on the BSDs).
SOCKET_PATH_MAX = 107 if sys.platform.startswith("linux") else 103
SHORT_TEMP = Path("/tmp")  # short on every Unix: where a socket goes when the temp dir is too deep
_KEY_CHARS = 16  # of the home's digest, in the socket's name
_SOCKET_NAME_BYTES = _KEY_CHARS + len(".sock")
_RANDOM_CHARS = 8  # what `mkdtemp` adds to its prefix
# The status file holds a pid, a socket's path and versions: a few hundred bytes. One past this
# is no daemon's, and is not read whole each time a client polls.
STATUS_MAX_BYTES = 64 * 1024


class NoSocketFolder(HomeUnusable):
    """No folder can give the daemon's socket a path AF_UNIX takes. Said as a home in the way
    is, in one line (exit 2): the user's environment stands in the way, not a bug of remem's."""


@dataclass(frozen=True)
class DaemonPaths:
    home: Home
    # False: only to reach a daemon that runs (to stop it, or ask its status), which needs its
    # state folder alone: a home whose memory folder stands in the way (a link) can still have
    # its daemon stopped, where every other command is refused.
    layout: bool = True

    def __post_init__(self) -> None:
        if self.layout:
            # Its files are refused where they are opened, not here, which every client and the
            # daemon pass: the log by the client that spawns a daemon (`client._spawn`), the
            # status file by the daemon that writes it (`remem daemon run`).
            self.home.ensure_layout()
        else:  # no daemon can run with a file at state/: said as every other command says it
            self.home.refuse_non_folder(self.home.refuse_link(self.home.state))

    @property
    def lock(self) -> Path:
        return self.home.state / "daemon.lock"

    @property
    def status(self) -> Path:
        return self.home.state / "daemon.json"

    @property
    def spawn_lock(self) -> Path:
        return self.home.state / "spawn.lock"

    @property
    def log(self) -> Path:
        return self.home.state / "daemon.log"

    @property
    def old_log(self) -> Path:
        """What `log` held before it last reached the cap."""
        return self.home.state / "daemon.log.1"

    @cached_property
    def socket(self) -> Path:
        """Where this home's daemon listens (chosen once: a fallback folder is unique)."""
        return socket_dir() / self._socket_name

    @property
    def _socket_name(self) -> str:
        return f"{hashlib.sha256(os.fsencode(self.home.root)).hexdigest()[:_KEY_CHARS]}.sock"

    def answering(self) -> bool:
        """Whether a daemon of this home listens, whether or not it holds the lock (its file was
        deleted, decision 0331): in each usual socket folder that is ours (none is made), and
        where the status file says, under the same name (one started in another environment).
        A daemon that finds one leaves rather than take its socket over; a client does not move
        its log aside (`rotate_log`)."""
        sockets = {
            folder / self._socket_name
            for folder in _usual_socket_dirs(_temp_dir())
            if own_private_dir(folder)
        }
        info = self.read_status()
        if info is not None and Path(info.socket).name == self._socket_name:
            sockets.add(Path(info.socket))
        return any(_listening(path) for path in sockets)

    def running(self) -> bool:
        """Whether a daemon holds this home's lock (the kernel drops it when a daemon dies)."""
        try:
            held = try_file_lock(self.lock)
        except FileNotFoundError:  # no state folder (paths without the layout): none ever ran here
            return False
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            return held_elsewhere(self.lock)  # a state folder that cannot be written (EPERM: immutable)
        if held is None:
            return True
        held.release()
        return False

    def gone_by(self, deadline: float) -> bool:
        """Wait until no daemon holds this home's lock: whether none did by `deadline` (monotonic)."""
        while self.running():
            if time.monotonic() > deadline:
                return False
            time.sleep(POLL_SECONDS)
        return True

    def read_status(self) -> DaemonInfo | None:
        """The status file's content, or None when it is missing or unreadable (a crash), or no
        regular file: opened as `safe_open.open_regular` opens it, since a FIFO put there would
        hold every client that looks for the daemon (and the daemon's status keeper) for good."""
        try:
            raw = read_regular(self.status, STATUS_MAX_BYTES)
            return None if raw is None else DaemonInfo.model_validate_json(raw)
        except (OSError, ValidationError):
            return None


def identity_at(path: Path) -> Identity | None:
    """The device and inode of what is at `path` (a link itself, not followed), None when
    nothing is there or it cannot be looked at."""
    try:
        return identity(os.stat(path, follow_symlinks=False))
    except OSError:
        return None


def identity(found: os.stat_result) -> Identity:
    """A file's device and inode: the same file while they are."""
    return found.st_dev, found.st_ino


def socket_dir() -> Path:
    """A user-only folder where a socket's path fits (`SOCKET_PATH_MAX`): the first usual one
    that is ours, else a fresh private one; `NoSocketFolder` when none can be had."""
    temp = _temp_dir()
    for folder in _usual_socket_dirs(temp):
        if _claimed(folder):
            return folder
    if temp is None:
        raise _no_folder(f"{tempfile.gettempdir()} and {SHORT_TEMP} are too deep for one")
    try:
        fresh = Path(tempfile.mkdtemp(prefix=f"{_shared_name()}-", dir=temp))  # 0700, a name nobody had
    except OSError as exc:
        raise _no_folder(f"none can be made in {temp} ({exc.strerror})") from None
    log.warning("using %s for the socket instead", fresh)
    return fresh


def _claimed(folder: Path) -> bool:
    """Whether `folder` is ours to listen in, made if missing; a name someone else holds is
    logged, for the user to remove."""
    try:
        folder.mkdir(mode=PRIVATE_DIR_MODE)
    except FileExistsError:
        pass
    except OSError:
        return False
    if own_private_dir(folder):
        return True
    log.warning("%s is not a folder of this user (a link, or another user's); remove it", folder)
    return False


def _listening(path: Path) -> bool:
    # The kernel answers a connect to a local socket at once, whether or not its owner accepts.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.setblocking(False)
        try:
            probe.connect(str(path))
        except BlockingIOError:
            return True  # its backlog is full: busy, not gone
        except OSError:
            return False  # no socket, or a dead daemon's that nobody listens on
        return True


def _no_folder(why: str) -> NoSocketFolder:
    return NoSocketFolder(
        f"no folder can hold the daemon's socket (AF_UNIX takes paths of at most {SOCKET_PATH_MAX} "
        f"bytes): {why}; set TMPDIR to a short folder of yours"
    )


def release_socket(path: Path, ours: Identity | None, replaced_said: bool = False) -> None:
    """Remove a stopping daemon's socket (`ours`: its device and inode), and the fresh folder it
    was given, if any. Anything else at its path (a folder put there, another socket) is left
    alone, said in one line: a warning, but only a note when the daemon already warned that its
    socket was replaced (`replaced_said`), the one event it stopped on."""
    try:
        found = os.stat(path, follow_symlinks=False)
        if identity(found) == ours:
            path.unlink()
        else:
            log.log(
                logging.INFO if replaced_said else logging.WARNING,
                "%s is no longer the daemon's socket (%s stands there): left alone",
                path,
                kind_of(found.st_mode),
            )
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("the daemon's socket %s cannot be removed (%s)", path, exc.strerror or exc)
    if path.parent.name.startswith(f"{_shared_name()}-"):
        with contextlib.suppress(OSError):  # not empty: something else put a file there
            path.parent.rmdir()


def _usual_socket_dirs(temp: Path | None) -> list[Path]:
    folders = [] if temp is None else [temp / _shared_name()]
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    # The spec requires it to be the user's own and 0700; one that is not is ignored, not fixed.
    if os.path.isabs(runtime) and _private_as_is(Path(runtime)):
        if _fits(Path(runtime) / "remem"):
            folders.insert(0, Path(runtime) / "remem")
        else:
            log.info("XDG_RUNTIME_DIR %s is too deep for a socket; passed over", runtime)
    return folders


def _temp_dir() -> Path | None:
    """The temp dir, else `SHORT_TEMP`: the first whose fresh folder (the longest path
    `socket_dir` makes there) a socket fits in; None when neither. A deep TMPDIR (a sandbox's,
    a build's) must not keep the daemon from listening."""
    fresh = f"{_shared_name()}-{'X' * _RANDOM_CHARS}"
    temp = Path(tempfile.gettempdir())
    if _fits(temp / fresh):
        return temp
    log.info("the temp dir %s is too deep for a socket; trying %s", temp, SHORT_TEMP)
    return SHORT_TEMP if _fits(SHORT_TEMP / fresh) else None


def _fits(folder: Path) -> bool:
    """Whether a socket's path in `folder` is short enough for AF_UNIX."""
    return len(os.fsencode(folder)) + 1 + _SOCKET_NAME_BYTES <= SOCKET_PATH_MAX


def _private_as_is(folder: Path) -> bool:
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _shared_name() -> str:
    return f"remem-{os.getuid()}"

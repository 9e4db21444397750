"""Where a daemon's lock, status file, log and socket live, and how to read its status.

The socket sits in a short user-only folder (AF_UNIX paths are limited to 107 bytes, 103 on
macOS, and a home can be deep): `$XDG_RUNTIME_DIR/remem` when the session has a private runtime
dir, else `<tmp>/remem-<uid>`. In a shared temp dir another user can take that name first, so a
name that is not a real directory of ours (a link, someone else's folder) is never used nor
touched: the daemon makes a fresh private folder instead, and clients find it in the status
file. A folder whose socket path would be too long is passed over, and a temp dir too deep for
a fresh folder's socket gives way to /tmp, under the same rules; when not even that can be had,
`NoSocketFolder` says which variable to change. The socket's name is keyed by the home, so
daemons of different homes never meet.

The log, `state/daemon.log`, is kept under a cap (`LOG_CAP_ENV`, default `LOG_CAP_BYTES`): over
it, it becomes `daemon.log.1` (replacing the one before) and a fresh log follows: before a client
spawns a daemon (`rotate_log`), and while a spawned daemon runs, once it listens (`LogCap`;
decision 0453).
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
from ..safe_open import folder_at, kind_of, read_regular

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
LOG_CAP_ENV = "REMEM_DAEMON_LOG_BYTES"
LOG_CAP_BYTES = 4 * 1024 * 1024  # of `daemon.log`, and as much again in `daemon.log.1`
LOG_CAP_MIN = 1024  # below, a line or two would rotate the log
LOG_CAP_MAX = 1024**3  # above, no cap: what a client reads looking for a daemon's line stays bounded
CRASH_MESSAGE_CHARS = 300  # of a crash's message, said in a full log in place of its traceback


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
            if exc.errno not in (errno.EROFS, errno.EACCES):
                raise
            return held_elsewhere(self.lock)  # a state folder that became read-only: still asked
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


class LogCapInvalid(HomeUnusable):
    """`LOG_CAP_ENV` is no size the log can be kept under: said in one line (exit 2), as the
    user's environment in the way."""


def log_cap() -> int:
    """The bytes `daemon.log` is kept under: `LOG_CAP_ENV` when set, else `LOG_CAP_BYTES`."""
    said = os.environ.get(LOG_CAP_ENV, "").strip()
    if not said:
        return LOG_CAP_BYTES
    # ASCII digits only: `isdigit` takes "²" too, which `int` refuses. The length first: `int`
    # refuses thousands of digits.
    if (
        not (said.isascii() and said.isdigit())
        or len(said) > len(str(LOG_CAP_MAX))
        or not (LOG_CAP_MIN <= int(said) <= LOG_CAP_MAX)
    ):
        raise LogCapInvalid(
            f"{LOG_CAP_ENV}={said!r} is not a size for the daemon's log: set it to a whole number of "
            f"bytes from {LOG_CAP_MIN} to {LOG_CAP_MAX} (the default is {LOG_CAP_BYTES}), or unset it"
        )
    return int(said)


def rotate_log(paths: DaemonPaths, cap: int) -> None:
    """Rename `paths.log` to `paths.old_log` (replacing it) when it is a file of more than `cap` bytes.
    By names in the state folder opened without following a link, so neither a
    link there nor one swapped in for a folder on the way is followed (a rename never follows
    the link it renames)."""
    with folder_at(paths.home.root, paths.home.state) as state:
        try:
            found = os.stat(paths.log.name, dir_fd=state, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(found.st_mode) or found.st_size <= cap:
            return  # a link or a FIFO there is refused where the log is opened
        try:
            os.rename(paths.log.name, paths.old_log.name, src_dir_fd=state, dst_dir_fd=state)
        except OSError as exc:  # named by the file in the way (a folder there), not a bare name
            raise OSError(exc.errno, exc.strerror, str(paths.old_log)) from exc


class LogCap(logging.Handler):
    """Keeps a spawned daemon's log under the cap while it runs: once a line takes it over, the
    log becomes `daemon.log.1` and the daemon's standard output and error (descriptors 1 and 2,
    where the interpreter writes a traceback too) a fresh `daemon.log`, headed by `header`, the
    line saying where it listens and its pid (what a client looks for, `client._its_log`). Armed
    once it listens: a daemon that fails to start never moves the words its spawner quotes.

    Only while `daemon.log` is the file it writes, or nothing (moved aside or removed: the way to
    a fresh one is clear): once a regular file other than its own is there (a daemon started
    after this one let go of its lock), it is that daemon's, and this one just stops capping. A
    log that cannot be moved aside (a folder at `daemon.log.1`) is said once, and written no
    more: descriptors 1 and 2 go nowhere until a later line finds the way clear (while /dev/null
    cannot be opened, they stay, until a later line opens it); so is a log that
    cannot be looked at (its folder made unsearchable, an I/O error). A fresh log
    that cannot be opened (no descriptor left) is tried again at the next line, the descriptors
    kept as they were."""

    def __init__(self, paths: DaemonPaths, cap: int, header: logging.LogRecord) -> None:
        super().__init__()
        self._paths, self._cap, self._header = paths, cap, header
        self._blocked = False  # no more capping: the log is not ours
        self._full: tuple[int, int] | None = None  # the log left full (device, inode), written no more
        self._failing = False  # the last line could not be capped (an unexpected error, said)
        # Where descriptors 1 and 2 go while the log takes nothing: opened now, as a log that
        # cannot be moved aside for want of descriptors would find none left for it then; None
        # when it cannot be (no descriptor now, no /dev/null), opened when needed, and at each
        # later line until it is: a daemon never fails to start for want of it.
        self._nowhere = _open_nowhere()

    def emit(self, record: logging.LogRecord) -> None:
        if self._blocked:
            return
        # Never raises: logging does not catch a handler's error, so it raised where the line was
        # logged (the status keeper died of it, and no client could find the daemon again).
        try:
            self._keep_under_cap()
        except Exception:  # said once, with its traceback, until a line is capped again
            if not self._failing:
                self.handleError(record)
            self._failing = True
        else:
            self._failing = False

    def crashed(self, exc: Exception) -> None:
        """Before the daemon logs its crash: a log that takes nothing more would lose the
        traceback. A fresh log the way to which is clear now is begun, and takes it; else one
        line at the end of the full log says the daemon crashed and on what (the exception's type
        and message, cut short), so a crash is never silent and the log stays bounded."""
        if self._blocked or self._full is None:
            return
        self._keep_under_cap()
        if self._blocked or self._full is None:
            return
        try:
            full = self._paths.home.open_file(self._paths.log, os.O_WRONLY | os.O_APPEND)
        except (OSError, HomeUnusable):
            return
        if _identity(os.fstat(full)) != self._full:  # replaced since: not ours to write
            os.close(full)
            return
        _write_to(full)
        os.close(full)
        message = " ".join(str(exc).split())[:CRASH_MESSAGE_CHARS]
        self._last_line(
            logging.ERROR, "the daemon stopped on an unexpected error, %s: %s (its traceback is not "
            "logged: the log is full)", type(exc).__name__, message,
        )  # fmt: skip

    def _keep_under_cap(self) -> None:
        if self._full is None:
            written = os.fstat(sys.stderr.fileno())
            if written.st_size <= self._cap:
                return
            ours = _identity(written)
        else:
            ours = self._full
            if self._nowhere is None:  # still writing to the full log: quiet it if it can be now
                self._go_quiet()
        try:
            there = os.stat(self._paths.log, follow_symlinks=False)
        except FileNotFoundError:
            there = None  # moved aside (its fresh log could not be opened) or removed: the way is clear
        except OSError as exc:  # the state folder unsearchable or a file, an I/O error: in the way
            if self._full is None:
                self._stop_writing(exc)
            return  # looked at again at the next line
        if there is not None and _identity(there) == ours:
            try:
                rotate_log(self._paths, self._cap)
            except (OSError, HomeUnusable) as exc:
                if self._full is None:
                    self._stop_writing(exc)
                return
        elif there is not None:
            # Another daemon's log; or, while this one's is full, something in the way of a fresh
            # one (a folder, a link), which the next line looks at again.
            self._blocked = self._full is None or stat.S_ISREG(there.st_mode)
            return
        self._begin_fresh(ours)

    def _begin_fresh(self, ours: tuple[int, int]) -> None:
        """Go on in a fresh log, once the one written (`ours`) is moved aside or gone."""
        try:
            fresh = self._paths.home.open_file(self._paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except (OSError, HomeUnusable):
            return  # no descriptor left, or a link put there: tried again at the next line
        _write_to(fresh)
        os.close(fresh)
        dropped, self._full = self._full is not None, None
        log.handle(self._header)
        if _is(self._paths.old_log, ours):
            log.info(
                "the log passed %d bytes: its earlier lines are in %s", self._cap, self._paths.old_log.name
            )
        else:
            log.info("the log passed %d bytes and was removed: its earlier lines are gone", self._cap)
        if dropped:
            log.warning("the lines logged while it could not be moved aside were dropped")

    def _stop_writing(self, exc: OSError | HomeUnusable) -> None:
        """Say why the log cannot be moved aside, as its last line, and write nothing more to it."""
        self._full = _identity(os.fstat(sys.stderr.fileno()))
        self._last_line(
            logging.WARNING, "%s passed %d bytes and cannot be moved aside (%s): remove what stands in "
            "the way; until then the daemon logs nothing more, and goes on in a fresh log once it can",
            self._paths.log, self._cap, exc,
        )  # fmt: skip

    def _last_line(self, level: int, message: str, *args: object) -> None:
        """Log one line where descriptor 2 goes, then send descriptors 1 and 2 nowhere."""
        self._blocked = True  # the line passes through this handler too
        try:
            log.log(level, message, *args)
        finally:
            self._blocked = False
        self._go_quiet()

    def _go_quiet(self) -> None:
        """Send descriptors 1 and 2 nowhere; kept as they are when /dev/null cannot be opened."""
        if self._nowhere is None:
            self._nowhere = _open_nowhere()
        if self._nowhere is not None:
            _write_to(self._nowhere)

    def close(self) -> None:
        if self._nowhere is not None:  # logging closes at exit too what `uncap_log` closed
            os.close(self._nowhere)
            self._nowhere = None
        super().close()


def _open_nowhere() -> int | None:
    """/dev/null for writing, None when it cannot be opened (no descriptor left, none there)."""
    try:
        return os.open(os.devnull, os.O_WRONLY)
    except OSError:
        return None


def _write_to(fd: int) -> None:
    """Make `fd` this process's standard output and error."""
    sys.stdout.flush()
    sys.stderr.flush()
    for std in (1, 2):
        os.dup2(fd, std)


def cap_log(paths: DaemonPaths, header: logging.LogRecord) -> None:
    """Keep the log under the cap from now on, when this daemon's standard error is its log (a
    client spawned it); one run in the foreground logs wherever its standard error goes."""
    if _writes_to(paths.log):
        logging.getLogger().addHandler(LogCap(paths, log_cap(), header))


def log_crash(exc: Exception) -> None:
    """Log the daemon's crash, its traceback; in a full log, one line in its place (`LogCap.crashed`)."""
    for handler in _caps():
        handler.crashed(exc)
    log.exception("the daemon stopped on an unexpected error", exc_info=exc)


def uncap_log() -> None:
    """Stop keeping the log under the cap: before the daemon lets go of its lock, after which
    `daemon.log` may be another daemon's."""
    for handler in _caps():
        logging.getLogger().removeHandler(handler)
        handler.close()


def _caps() -> list[LogCap]:
    return [handler for handler in logging.getLogger().handlers if isinstance(handler, LogCap)]


def _writes_to(log: Path) -> bool:
    """Whether this process's standard error is the file at `log` (not through a link)."""
    try:
        return _is(log, _identity(os.fstat(sys.stderr.fileno())))
    except OSError:
        return False


def _is(path: Path, file: tuple[int, int]) -> bool:
    """Whether the file at `path` (not through a link) is `file` (device, inode)."""
    try:
        return _identity(os.stat(path, follow_symlinks=False)) == file
    except OSError:
        return False


def _identity(found: os.stat_result) -> tuple[int, int]:
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


def release_socket(path: Path, ours: tuple[int, int] | None, replaced_said: bool = False) -> None:
    """Remove a stopping daemon's socket (`ours`: its device and inode), and the fresh folder it
    was given, if any. Anything else at its path (a folder put there, another socket) is left
    alone, said in one line: a warning, but only a note when the daemon already warned that its
    socket was replaced (`replaced_said`), the one event it stopped on."""
    try:
        found = os.stat(path, follow_symlinks=False)
        if _identity(found) == ours:
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

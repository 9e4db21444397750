"""Keeping the daemon's log, `state/daemon.log`, under a cap (`LOG_CAP_ENV`, default
`LOG_CAP_BYTES`): over it, it becomes `daemon.log.1` (replacing the one before) and a fresh log
follows: before a client spawns a daemon (`rotate_log`), and while a spawned daemon runs, once
it listens (`LogCap`; decision 0453).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import sys
from pathlib import Path

from ..home import HomeUnusable
from ..safe_open import Identity, folder_at
from .runtime import DaemonPaths, identity, identity_at

log = logging.getLogger("remem.daemon")
LOG_CAP_ENV = "REMEM_DAEMON_LOG_BYTES"
LOG_CAP_BYTES = 4 * 1024 * 1024  # of `daemon.log`, and as much again in `daemon.log.1`
LOG_CAP_MIN = 1024  # below, a line or two would rotate the log
LOG_CAP_MAX = 1024**3  # the most one may ask for: a log past it is no longer one a person reads
CRASH_MESSAGE_CHARS = 300  # of a crash's message, said in a full log in place of its traceback


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
    line saying where it listens and its pid, so a fresh log still says whose it is. Armed
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
        self._full: Identity | None = None  # the log left full (device, inode), written no more
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
            full = self._open_full()
        except (OSError, HomeUnusable):
            return
        if identity(os.fstat(full)) != self._full:  # replaced since: not ours to write
            os.close(full)
            return
        _write_to(full)
        os.close(full)
        message = " ".join(str(exc).split())[:CRASH_MESSAGE_CHARS]
        self._last_line(
            logging.ERROR, "the daemon stopped on an unexpected error, %s: %s (its traceback is not "
            "logged: the log is full)", type(exc).__name__, message,
        )  # fmt: skip

    def _open_full(self) -> int:
        """The full log, for its last line. With no descriptor left (its limit reached, which
        may be why it is full), the one held for /dev/null is given up for it, where the crash
        went unsaid: descriptors 1 and 2 go there already, and it is opened again once the line
        is written (`_go_quiet`)."""
        flags = os.O_WRONLY | os.O_APPEND
        try:
            return self._paths.home.open_file(self._paths.log, flags)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE) or self._nowhere is None:
                raise
        os.close(self._nowhere)
        self._nowhere = None
        return self._paths.home.open_file(self._paths.log, flags)

    def _keep_under_cap(self) -> None:
        if self._full is None:
            written = os.fstat(sys.stderr.fileno())
            if written.st_size <= self._cap:
                return
            ours = identity(written)
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
        if there is not None and identity(there) == ours:
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

    def _begin_fresh(self, ours: Identity) -> None:
        """Go on in a fresh log, once the one written (`ours`) is moved aside or gone."""
        try:
            fresh = self._paths.home.open_file(self._paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        except (OSError, HomeUnusable):
            return  # no descriptor left, or a link put there: tried again at the next line
        _write_to(fresh)
        os.close(fresh)
        dropped, self._full = self._full is not None, None
        log.handle(self._header)
        if identity_at(self._paths.old_log) == ours:
            log.info(
                "the log passed %d bytes: its earlier lines are in %s", self._cap, self._paths.old_log.name
            )
        else:
            log.info("the log passed %d bytes and was removed: its earlier lines are gone", self._cap)
        if dropped:
            log.warning("the lines logged while it could not be moved aside were dropped")

    def _stop_writing(self, exc: OSError | HomeUnusable) -> None:
        """Say why the log cannot be moved aside, as its last line, and write nothing more to it."""
        self._full = identity(os.fstat(sys.stderr.fileno()))
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
        return identity_at(log) == identity(os.fstat(sys.stderr.fileno()))
    except OSError:
        return False

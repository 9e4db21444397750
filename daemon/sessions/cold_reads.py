"""Logs read whole for the index: one (`read_whole`), or a cold listing's many over processes.

A log read whole costs Python work on every line (decoding is in C, the checks and the fold
are not), so one process lists at one core's speed: a heavy user's first listing of gigabytes
would take minutes. `ColdReads` spreads the logs that have no index row yet over worker
processes, when they are enough to repay starting them (decision 0330). The listing's own
process reads shares too, and takes back the shares of a worker still starting once none is
left, so a listing the workers cannot help is read as fast as alone. A worker reads a share
with the very code a serial listing runs and stores the rows in the index itself, in its own
transactions; its link to the listing is its own pipe and carries share numbers back, so a
worker killed at any instant tears nothing another process reads. A worker only reads session
files: its environment is the listing's without credentials (decision 0374).

A worker that dies, or none that can start, costs time, never a row: what it held is read
by the listing. The index is derived data, stored a transaction per batch of rows.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe
from multiprocessing.connection import wait as wait_for
from pathlib import Path

from ..credentials import without_credentials
from ..faults import faultpoint
from ..protocol.sessions import SessionFormat
from .errors import SessionLogError
from .harness_sources import HARNESS_SOURCES
from .index import UNKEPT, LogRow, LogState, SessionIndex, Update
from .models import SessionHeader
from .projection import PROJECTED_TYPES, Projection
from .reader import LogNotReached, gc_paused, skim_session

log = logging.getLogger("remem.daemon")
# Rows stored per transaction: holding a whole cold listing's (about 50 KB a log) until the
# end made a daemon's memory peak, and so its idle size, grow with the root.
INDEX_BATCH = 50
# A worker (a fresh interpreter importing the readers) takes about a fifth of a second to
# start, in which this process reads some 20 MB of logs: less is not worth a worker's start,
# though it would cost the listing no time (this process reads what no worker has taken).
MIN_SPREAD_BYTES = 16 << 20
# What a log costs to open, check and store besides its lines, in bytes of lines read in
# that time: 2 000 logs of 17 KB took as long as 60 MB of logs of 100 KB.
LOG_COST_BYTES = 16 << 10
# A share is at most this many bytes of logs: large enough that handing it over costs nothing
# next to reading it (the last shares are smaller: `_shares`).
SHARE_BYTES = 4 << 20
# How long the listing waits for a worker's message when it has nothing to read itself.
ANSWER_WAIT_SECONDS = 0.05
READY = -1  # a worker's first message: it has started, and takes shares
AHEAD = 2  # shares a worker holds: one it reads, one it finds waiting when it is done
# Each process holds its readers (about 40 MB) and a log at a time; past four, a listing's
# memory grows faster than its speed on the machines remem runs on.
MAX_PROCESSES = 4


@dataclass(frozen=True)
class ColdRead:
    """A log with no index row yet: where it is, its format, its revision and size at `stat`,
    and the root it was found in (a Claude Code or Codex file is opened from there, without
    following a link on the way; a DSH log from the root its layout shows)."""

    path: str
    format: SessionFormat
    revision: str
    size: int
    root: str | None = None


def read_whole(log: ColdRead) -> Update:
    """The log's index entry from reading it whole; an unreadable log's row names why."""
    path = Path(log.path)
    if log.format != "dsh":
        return HARNESS_SOURCES[log.format].index(
            path, log.revision, None if log.root is None else Path(log.root)
        )
    try:
        projection = Projection()
        read = skim_session(path, PROJECTED_TYPES, fold=projection.fold, hashed=False)
    except SessionLogError as exc:
        return Update(error_row(log.path, log.revision, exc))
    state = LogState.of(read.header, projection, read.resume, read.digest_state)
    return Update(dsh_row(path, read.revision, read.header, projection, read.digest), state, projection.turns)


def error_row(path: str, revision: str, exc: SessionLogError) -> LogRow:
    """The row of a DSH log that does not read: of `revision` (the `stat` taken before the read)
    when what it holds is at fault, a fact of that revision; of no revision (`UNKEPT`) when the
    read failed for where the log is (`LogNotReached`): the listing reports it, and the next
    one reads the log again (decision 0394)."""
    kept = UNKEPT if isinstance(exc, LogNotReached) else revision
    return LogRow(path=path, revision=kept, error=exc.reason)


def known_row(row: LogRow | None) -> LogRow | None:
    """`row`, or None for a row of no revision (`UNKEPT`): the log is then read as one the
    index has no row of (a cold read, spread over processes when there are many)."""
    return None if row is not None and row.revision == UNKEPT else row


def dsh_row(
    path: Path, revision: str, header: SessionHeader, projection: Projection, digest: str | None
) -> LogRow:
    """A DSH log's listing row, from its header and projection."""
    return LogRow(
        path=str(path),
        revision=revision,
        id=header.id,
        cwd=header.cwd,
        created_at=header.createdAt,
        parent=header.parentSession,
        origin=header.origin,
        seed_length=header.seedLength,
        title=projection.title,
        turns=len(projection.turns),
        open_turn=projection.open_turn,
        fork_turn=projection.fork_turn(header.seedLength),
        last_seq=projection.lastSeq,
        digest=digest,
    )


def store_share(index: SessionIndex, share: Iterable[ColdRead]) -> list[LogRow]:
    """Read each log of `share` whole and store its entry, `INDEX_BATCH` at a time: the rows."""
    rows: list[LogRow] = []
    updates: list[Update] = []
    with gc_paused():
        for log in share:
            updates.append(read_whole(log))
            if len(updates) >= INDEX_BATCH:
                index.put(updates)
                rows.extend(u.row for u in updates)
                updates.clear()
        index.put(updates)
    rows.extend(u.row for u in updates)
    return rows


def _start_worker(index_path: Path, env: dict[str, str]) -> tuple[Connection, subprocess.Popen[bytes]]:
    """A worker process for the index at `index_path`, in the environment `env`, and the
    listing's end of its link.

    A fresh interpreter runs `work` alone: unlike `multiprocessing`'s spawn it neither runs
    the parent's `__main__` again (a console script would import the whole CLI) nor starts a
    resource tracker that outlives the listing. Its own session keeps a terminal's Ctrl-C,
    which is the listing's to handle, away from it; should the listing's process die, the
    worker meets the closed link and ends."""
    mine, theirs = Pipe()
    try:
        fd = theirs.fileno()
        command = [sys.executable, "-c", f"from {__name__} import work; work()", str(index_path), str(fd)]
        worker = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, pass_fds=(fd,), start_new_session=True, env=env
        )
    except BaseException:
        mine.close()
        raise
    finally:
        theirs.close()
    return mine, worker


def work() -> None:
    """A worker process's entry: `_work` on the index and link descriptor of its arguments."""
    index_path, fd = sys.argv[1:]
    _work(Path(index_path), Connection(int(fd)))


def _work(index_path: Path, link: Connection) -> None:
    """A worker process: store each share the listing sends over `link` in the index at
    `index_path` and answer with its number, until the listing sends the end (None) or goes.
    Rows travel through the index; the link carries small messages only, each one write, so
    a worker killed at any instant leaves no torn message behind. A bug kills the worker; the
    listing's own reads then meet it again, and raise."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the listing's to handle
    index = SessionIndex(index_path)
    try:
        link.send(READY)
        while (task := link.recv()) is not None:
            number, share = task
            faultpoint("sessions.cold-reads.before-share")
            store_share(index, share)
            faultpoint("sessions.cold-reads.after-share")  # stored, unanswered: read there
            link.send(number)
            faultpoint("sessions.cold-reads.after-answer")  # gone as the next share is handed
    except (EOFError, BrokenPipeError, ConnectionResetError):  # the listing is done without it
        pass


def default_processes() -> int:
    """The cores this process may run on, up to `MAX_PROCESSES`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, MAX_PROCESSES))


@dataclass(frozen=True)
class ColdReads:
    """How a listing reads the logs the index does not know: over `processes` processes (this
    one included) once they cost `min_bytes` (`LOG_COST_BYTES` a log on top of its size), else
    here alone; in shares costing at most `share_bytes`."""

    processes: int = default_processes()
    min_bytes: int = MIN_SPREAD_BYTES
    share_bytes: int = SHARE_BYTES

    def store(
        self,
        index: SessionIndex,
        logs: list[ColdRead],
        told: Callable[[int], None],
        key_variables: Collection[str] = (),
    ) -> dict[str, LogRow]:
        """The rows of `logs` stored in `index`, when they are worth spreading; `told(n)` hears
        of each `n` logs read. The caller reads each log left out itself: all of them when
        they are not worth it, and those a worker held when it died. The workers' environment
        is this process's without `key_variables` (the settings' key variables) and the
        variables whose name says they hold a credential (`credentials.without_credentials`)."""
        total = sum(_cost(log) for log in logs)
        if self.processes < 2 or total < self.min_bytes or index.in_memory:  # no worker could read it
            return {}
        spread = _Spread(index, told, without_credentials(os.environ, key_variables))
        spread.run(_shares(logs, total, self.share_bytes, self.processes), self.processes - 1)
        log.info(
            "cold listing: %d logs indexed, %d of them by worker processes",
            len(spread.rows),
            spread.by_workers,
        )
        return spread.rows


SPREAD = ColdReads()  # over this machine's cores


def _shares(logs: list[ColdRead], total: int, most: int, processes: int) -> list[list[ColdRead]]:
    """`logs` in shares that shrink as the rest does (at most `most` bytes, at least a log): the
    last to be taken are small, so no process waits long for another to finish."""
    shares: list[list[ColdRead]] = []
    share: list[ColdRead] = []
    size, left = 0, total
    for cold in logs:
        share.append(cold)
        size += _cost(cold)
        if size >= min(most, left // (2 * processes)):
            shares.append(share)
            left -= size
            share, size = [], 0
    if share:
        shares.append(share)
    return shares


def _cost(log: ColdRead) -> int:
    return log.size + LOG_COST_BYTES


class _Spread:
    """A cold listing's shares. Each worker is handed two as it starts and one more for each it
    answers, so it never waits on this process; this process reads the others in order. When
    none is left, the shares of a worker not started yet are taken back and read here, so none
    waits with it; a worker that ends early gives back what it held."""

    def __init__(self, index: SessionIndex, told: Callable[[int], None], env: dict[str, str]) -> None:
        self.index = index
        self.told = told
        self.env = env  # the workers' environment
        self.rows: dict[str, LogRow] = {}
        self.by_workers = 0
        self.shares: list[list[ColdRead]] = []
        self.left: deque[int] = deque()  # the shares nobody has taken yet
        self.held: dict[Connection, list[int]] = {}  # a worker's link -> its shares, unanswered
        self.ready: set[Connection] = set()  # the links of the workers that have started
        self.answered: list[int] = []

    def run(self, shares: list[list[ColdRead]], workers: int) -> None:
        self.shares = shares
        self.left.extend(range(len(shares)))
        started: dict[Connection, subprocess.Popen[bytes]] = {}  # never forked: the daemon runs threads
        try:
            for _ in range(workers):
                mine, process = _start_worker(self.index.path, self.env)
                started[mine] = process
                self.held[mine] = []
                self._hand(mine, AHEAD)
        except OSError as exc:  # no process can start here (a sandbox): all is read here
            log.warning("cold listing: no worker process can start (%s); reading in this one", exc)
        try:
            while self.left or any(self.held.values()):
                if self.left:
                    self._read_here(self.left.popleft())
                    self._hear(wait=0)
                elif not self._take_back():
                    self._hear(wait=ANSWER_WAIT_SECONDS)
            self._collect()
        finally:
            for link, worker in started.items():
                link.close()
                worker.terminate()  # each is idle, or still starting, or gone: it holds nothing
                worker.wait()

    def _take_back(self) -> bool:
        """The shares of the workers not started yet, to read here (those are left unused):
        any?"""
        self._hear(wait=0)
        for link in [link for link in self.held if link not in self.ready]:
            self.left.extend(self.held.pop(link))
        return bool(self.left)

    def _read_here(self, number: int) -> None:
        stored = store_share(self.index, self.shares[number])
        self.rows.update((row.path, row) for row in stored)
        self.told(len(stored))

    def _hear(self, wait: float) -> None:
        """Take the workers' messages (waiting up to `wait` seconds for one), handing a share
        for each answer; a worker that ended gives its shares back."""
        for link in wait_for(list(self.held), timeout=wait) if self.held else ():
            assert isinstance(link, Connection)
            try:
                message = link.recv()
            except (EOFError, OSError):  # it ended: what it held is read here
                self.left.extendleft(self.held.pop(link))
                log.warning("cold listing: a worker process ended early; its logs are read in this one")
                continue
            if message == READY:
                self.ready.add(link)
            elif message in self.held[link]:
                self.held[link].remove(message)
                self.answered.append(message)
                self.told(len(self.shares[message]))
                self._hand(link, 1)

    def _hand(self, link: Connection, count: int) -> None:
        for _ in range(min(count, len(self.left))):
            number = self.left.popleft()
            self.held[link].append(number)
            try:
                link.send((number, self.shares[number]))
            except OSError:  # it ended: `_hear` meets its closed link and gives its shares back
                return

    def _collect(self) -> None:
        """The rows the workers stored, read back from the index."""
        stored = self.index.rows()
        for number in self.answered:
            for cold in self.shares[number]:
                if (row := stored.get(cold.path)) is not None:
                    self.rows[cold.path] = row
                    self.by_workers += 1

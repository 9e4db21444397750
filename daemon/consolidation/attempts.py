"""What crashes left of a review's earlier attempts: adopt a final proposal, or close the attempt.

An attempt is recorded in its receipt (`running`, naming its worker session) before that
session exists, so attempt numbers only grow and no worker id is used twice. A worker session
its receipt does not name (left by an older remem, or its receipt removed by hand) is remem's
own all the same: it is recorded as the attempt its id was derived from, never a reason to
refuse. Such sessions are looked for by the ids the review's next numbers derive, one look at a
folder each, never by listing remem's sessions; of them, only those the receipt goes on listing
(its first and newest attempts, decision 0446) are read back (decision 0458). The last attempt,
if still in flight, is adopted when its session holds an accepted final proposal made on
exactly the input this request would show the model: that proposal is planned and committed
without asking the model again. Every other in-flight attempt is closed as `internal-error:
interrupted`, and the temp files its writer left are removed. A worker session's folder is
never looked at nor cleaned through a symbolic link (`worker_log`): what a link reaches is no
attempt of remem's.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count, takewhile

from ..home import Home
from ..protocol.consolidation import Attempt, Status
from .receipts import IN_FLIGHT, iso, kept_attempts, next_attempt, now
from .worker_log import Recorded, read_back, recover_worker_dir, worker_log_path, worker_session_id

INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Settled:
    """A review's attempts with no crashed one left in flight, and the proposal to adopt, if any."""

    attempts: list[Attempt]
    adopted: str | None  # the final proposal's arguments; the last attempt, still running, made it


def settle_attempts(home: Home, review: str, attempts: list[Attempt], context: str) -> Settled:
    """Record unrecorded worker sessions, adopt the last attempt's proposal or close it."""
    everyone: list[Attempt | int] = [*attempts, *_unrecorded(home, review, next_attempt(attempts))]
    kept = kept_attempts(list(range(len(everyone))))
    for dropped in sorted(set(range(len(everyone))) - set(kept)):
        _dropped(home, review, everyone[dropped])
    # Only the worker sessions the receipt goes on listing are read back: a receipt removed
    # after many retries leaves as many sessions, each holding a whole review input.
    listed = [_recorded(home, review, a) if isinstance(a, int) else a for a in (everyone[i] for i in kept)]
    last = listed[-1] if listed else None
    adopted = _adoptable(home, last, context) if last is not None and last.status in IN_FLIGHT else None
    if adopted is not None:
        return Settled([*[_closed(home, a) for a in listed[:-1]], listed[-1]], adopted)
    return Settled([_closed(home, a) for a in listed], None)


def _dropped(home: Home, review: str, attempt: Attempt | int) -> None:
    """An attempt the receipt no longer lists: only the temps its crashed writer left matter."""
    if isinstance(attempt, int):  # an unrecorded worker session, not read back
        recover_worker_dir(home, worker_session_id(review, attempt))
    else:
        _closed(home, attempt)


def _unrecorded(home: Home, review: str, first: int) -> list[int]:
    """The numbers, from `first` on, of the worker sessions `review`'s attempts published: their
    ids derive from the review and the number, so each is one look at its own folder, and no
    other review's session is looked at."""
    published = (worker_log_path(home, worker_session_id(review, n)) is not None for n in count(first))
    return [first + n for n, _ in enumerate(takewhile(bool, published))]


def _recorded(home: Home, review: str, number: int) -> Attempt:
    """Attempt `number`, as its worker session recorded it, still running as far as is known."""
    session = worker_session_id(review, number)
    path = worker_log_path(home, session)
    recorded = read_back(path) if path is not None else None
    return Attempt(
        number=number,
        workerSession=session,
        provider=recorded.provider if recorded else "unknown",
        model=recorded.model if recorded else "unknown",
        status=Status.RUNNING,
        startedAt=iso(recorded.created_ms / 1000) if recorded else now(),
    )


def read_attempt(home: Home, attempt: Attempt) -> Recorded | None:
    """What `attempt`'s worker session recorded, if it has a readable one."""
    path = worker_log_path(home, attempt.workerSession) if attempt.workerSession else None
    return read_back(path) if path is not None else None


def _adoptable(home: Home, attempt: Attempt, context: str) -> str | None:
    recorded = read_attempt(home, attempt)
    if recorded is None or recorded.context != context:
        return None  # the model saw other memory or evidence: its proposal answers another input
    return recorded.final


def _closed(home: Home, attempt: Attempt) -> Attempt:
    if attempt.status not in IN_FLIGHT:
        return attempt
    if attempt.workerSession is not None:
        recover_worker_dir(home, attempt.workerSession)
    closed = {"status": Status.INTERNAL_ERROR, "error": INTERRUPTED, "endedAt": now()}
    return attempt.model_copy(update=closed)

"""What crashes left of a review's earlier attempts: adopt a final proposal, or close the attempt.

An attempt is recorded in its receipt (`running`, naming its worker session) before that
session exists, so attempt numbers only grow and no worker id is used twice. A worker session
its receipt does not name (left by an older remem, or its receipt removed by hand) is remem's
own all the same: it is recorded as the attempt its id was derived from, never a reason to
refuse. The last attempt, if still in flight, is adopted when its session holds an accepted
final proposal made on exactly the input this request would show the model: that proposal is
planned and committed without asking the model again. Every other in-flight attempt is closed
as `internal-error: interrupted`, and the temp files its writer left are removed.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..home import Home
from ..protocol.consolidation import Attempt, Status
from ..sessions.writer import recover_dir
from .receipts import IN_FLIGHT, iso, kept_attempts, next_attempt, now
from .worker_log import Recorded, read_back, worker_dir, worker_log_path, worker_session_id

INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Settled:
    """A review's attempts with no crashed one left in flight, and the proposal to adopt, if any."""

    attempts: list[Attempt]
    adopted: str | None  # the final proposal's arguments; the last attempt, still running, made it


def settle_attempts(home: Home, review: str, attempts: list[Attempt], context: str) -> Settled:
    """Record unrecorded worker sessions, adopt the last attempt's proposal or close it."""
    attempts = [*attempts, *_unrecorded(home, review, next_attempt(attempts))]
    last = attempts[-1] if attempts else None
    adopted = _adoptable(home, last, context) if last is not None and last.status in IN_FLIGHT else None
    if adopted is not None:
        return Settled(kept_attempts([*[_closed(home, a) for a in attempts[:-1]], attempts[-1]]), adopted)
    return Settled(kept_attempts([_closed(home, a) for a in attempts]), None)


def _unrecorded(home: Home, review: str, first: int) -> list[Attempt]:
    found: list[Attempt] = []
    number = first
    while (path := worker_log_path(home, worker_session_id(review, number))) is not None:
        recorded = read_back(path)
        found.append(
            Attempt(
                number=number,
                workerSession=worker_session_id(review, number),
                provider=recorded.provider if recorded else "unknown",
                model=recorded.model if recorded else "unknown",
                status=Status.RUNNING,
                startedAt=iso(recorded.created_ms / 1000) if recorded else now(),
            )
        )
        number += 1
    return found


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
        recover_dir(worker_dir(home, attempt.workerSession))
    closed = {"status": Status.INTERNAL_ERROR, "error": INTERRUPTED, "endedAt": now()}
    return attempt.model_copy(update=closed)

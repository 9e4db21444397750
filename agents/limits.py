"""How much an agent session may write (a rate for `memory_update` calls and a size per call),
and how long any one of its calls may wait for memory.

A looping agent must not churn memory (every commit is a new generation and an audit entry),
so each session gets a token bucket: a burst of `BURST` commits, refilled at `PER_MINUTE`.
Only commits spend it: a refused call (stale, invalid) wrote nothing, and an agent retrying
after a fresh read is doing what it was told. A commit is spent as it is sent and given back
if refused, so one whose answer never comes (the call cancelled, a failure) counts: the daemon
may have committed it. An empty bucket refuses any update whose arguments are well formed (a
malformed one is told what is wrong instead, and spends nothing). The size cap keeps a call well
inside the daemon's message limit; the store's own limits (8 KiB a record body, 24 KiB Global,
200 records) are checked by its validator and reported as problems.

A harness waits for a tool's answer as long as its own timeout allows (Claude Code, by default,
for hours): a daemon that is stopped or stuck must not hold the agent's turn that long, so every
tool call is answered within `CALL_SECONDS` (`$REMEM_MCP_CALL_SECONDS`), all it asks of memory
together, as unavailable.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Mapping

BURST = 10
PER_MINUTE = 20
MAX_UPDATE_BYTES = 512 * 1024
# Room for a daemon to be started (its own wait is 15 s at most on a slow machine) and a cold
# read of 200 records; a scope's lock is waited for 5 s at most (`LOCK_WAIT_SECONDS`).
CALL_SECONDS = 20.0
CALL_SECONDS_ENV = "REMEM_MCP_CALL_SECONDS"
log = logging.getLogger("remem.agents")


def call_seconds(env: Mapping[str, str] = os.environ) -> float:
    """How long one tool call may wait for memory: `$REMEM_MCP_CALL_SECONDS`, a positive number of
    seconds, else `CALL_SECONDS` (a value that is none is logged, for the user, and passed over)."""
    said = env.get(CALL_SECONDS_ENV)
    if said is None:
        return CALL_SECONDS
    try:
        seconds = float(said)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        log.warning(
            "%s=%r is not a positive number of seconds: calls wait %g s for memory",
            CALL_SECONDS_ENV,
            said,
            CALL_SECONDS,
        )
        return CALL_SECONDS
    return seconds


class UpdateBudget:
    """A token bucket; `clock` is monotonic seconds (tests pass their own)."""

    def __init__(
        self, burst: int = BURST, per_minute: float = PER_MINUTE, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.burst = burst
        self.per_minute = per_minute
        self._clock = clock
        self._tokens = float(burst)
        self._at = clock()

    def wait(self) -> float:
        """0 when a commit may go ahead now, else the seconds until one may."""
        self._refill()
        return 0.0 if self._tokens >= 1 else (1 - self._tokens) * 60 / self.per_minute

    def spend(self) -> None:
        """Count one commit, before it is sent."""
        self._refill()
        self._tokens -= 1

    def give_back(self) -> None:
        """Undo `spend` for a commit that was refused: it wrote nothing."""
        self._refill()
        self._tokens = min(self.burst, self._tokens + 1)

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._at) * self.per_minute / 60)
        self._at = now

    def refusal(self, wait: float) -> str:
        return (
            f"memory_update may commit {self.per_minute:g} times a minute (bursts of {self.burst}) per "
            f"session; nothing was written. Try again in {max(1, round(wait))} s, and put several "
            "changes in one call where you can."
        )

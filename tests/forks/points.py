"""What a retry finds after a crash at each fork fault point, for every crash test of forks."""

from __future__ import annotations

# Before the child is published: the retry writes it (`created: true`). At the later points it
# is already there, and the retry adopts it (`created: false`).
BEFORE_PUBLISH = frozenset({"fork.after-mark", "fork.after-prepare", "fork.after-temp-write"})

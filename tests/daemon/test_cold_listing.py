"""A daemon's first listing of a large root reads it over worker processes, and lists it whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths
from remem.daemon.sessions.cold_reads import LOG_COST_BYTES, MIN_SPREAD_BYTES
from tests.sessions.factory import write_copies

from .helpers import calls

pytestmark = pytest.mark.slow
CWDS = ("/home/dev/projects/one", "/home/dev/projects/two")
# Small logs, many of them: about half a second of reading for the daemon alone, twice what a
# worker takes to start, so a worker reads some; and 64 MiB of cost, well over the threshold.
COUNT = 2000


def test_a_daemons_first_listing_of_a_large_root_spreads_and_lists_every_session(
    home: Home, tmp_path: Path
) -> None:
    """The workers are started from the daemon's own process (threads, an event loop, a
    session of its own), which no in-process test of the catalog covers."""
    logs = write_copies(tmp_path / "root", COUNT, CWDS, target_bytes=16_000)
    assert sum(p.stat().st_size + LOG_COST_BYTES for p in logs) >= MIN_SPREAD_BYTES  # worth spreading
    root = tmp_path / "root" / "corpus"
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(root)!r}]\n")
    listing, tree = calls(home, [("sessions/list", {}), ("sessions/tree", {"cwd": CWDS[1]})])
    assert listing["errors"] == []
    assert sorted(s["id"] for s in listing["sessions"]) == [f"session-bench-{n:05d}" for n in range(COUNT)]
    assert len(tree["nodes"]) == COUNT // 2
    log = DaemonPaths(home).log.read_text()
    spread = re.search(r"cold listing: (\d+) logs indexed, (\d+) of them by worker processes", log)
    assert spread is not None and int(spread[1]) == COUNT and int(spread[2]) > 0, log
    assert "worker process" not in log.replace(spread[0], "")  # none ended early, all started
    assert "Traceback" not in log

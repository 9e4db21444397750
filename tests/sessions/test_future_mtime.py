"""A log whose mtime lies in the future (`touch -d 2027-12-01`, a clock stepped back) is not
live for being recent: it would be until that time, and could be neither consolidated nor
branched. A little in the future (a network file system's clock ahead) still is."""

from __future__ import annotations

import os
import time
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.sessions.catalog import FUTURE_SLACK_NS, SessionCatalog
from tests.sessions.factory import SessionSpec, build_session, write_session

CWD = "/home/dev/projects/demo"
YEAR_NS = 365 * 24 * 3600 * 1_000_000_000


def live(home: Home, root: Path) -> bool:
    return SessionCatalog.open(home, [root]).listing().sessions[0].live


def test_an_mtime_far_in_the_future_is_not_recent(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "dsh-sessions"
    root.mkdir()
    path = write_session(root, build_session(SessionSpec(seed=3, turns=3, cwd=CWD)))
    now = time.time_ns()
    os.utime(path, ns=(now, now + FUTURE_SLACK_NS // 2))
    assert live(home, root) is True, "a clock a little ahead: still written just now"
    os.utime(path, ns=(now, now + YEAR_NS))
    assert live(home, root) is False

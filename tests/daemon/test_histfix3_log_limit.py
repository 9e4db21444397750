"""A `memory/log` limit of any size is answered through the daemon's socket: a limit larger than
the history lists every entry (the schema bounds it only below).

With `file`, a limit past `sys.maxsize` (2**63) was an internal error, its traceback in the
daemon's log: the file's entries were cut with `itertools.islice`, which refuses such a limit.
Without `file` it was answered."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.runtime import DaemonPaths

from .helpers import calls

pytestmark = pytest.mark.slow
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
RECORD = {"name": "prefer-uv", "description": "Use uv", "type": "feedback", "content": "Faster.\n"}
HUGE = [2**63, 2**70]


def test_a_limit_past_every_machine_integer_lists_every_entry(home: Home, tmp_path: Path) -> None:
    cwd = str(tmp_path / "project")
    put = {"action": "put", "record": RECORD}
    [committed] = calls(
        home, [("memory/commitWorkspace", {"cwd": cwd, "expectedRevision": EMPTY, "changes": [put]})]
    )
    pages = calls(home, [
        ("memory/log", {"cwd": cwd, "limit": limit, "stat": False, "file": file})
        for limit in HUGE
        for file in ("prefer-uv.md", None)
    ])  # fmt: skip
    for page in pages:
        assert isinstance(page, dict), page
        assert [entry["id"] for entry in page["entries"]] == [committed["history"]], page
        assert page["more"] == 0, page
    assert "Traceback" not in DaemonPaths(home).log.read_text()

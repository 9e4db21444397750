"""`remem consolidate` and `remem receipts` name each change a review made, with the turns of the
session its evidence lies in, as the editor's receipt view words them; `--json` is unchanged.
Each runs the real command line in a process of its own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from remem.daemon.home import Home
from tests.consolidation.conftest import Source, fake, proposal, put, source  # noqa: F401 - fixtures
from tests.fake_openai import FakeOpenAI, tool_call


def _remem(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(home.root), *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )


def test_each_change_is_named_with_the_turns_of_its_evidence(
    home: Home,
    fake: FakeOpenAI,  # noqa: F811 - a parameter, not the fixture
    source: Source,  # noqa: F811
) -> None:
    """It said only "committed, 2 change(s) — review …", and `receipts` only the names."""
    both = [*source.evidence(0), *source.evidence(2)]
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence(1)), put("run-ci", both))))
    done = _remem(home, "consolidate", source.id)
    assert done.returncode == 0, done.stderr
    head, *changes = done.stdout.splitlines()
    assert re.fullmatch(r"committed, 2 change\(s\) — review [0-9a-f]{64}, attempt 1", head), head
    assert changes == ["  added prefer-uv (feedback) ← turn 2", "  added run-ci (feedback) ← turns 1, 3"]

    listed = _remem(home, "receipts")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert "  changes: prefer-uv, run-ci  " in lines[0]
    assert lines[1:] == [
        "    added prefer-uv (feedback) ← turn 2",
        "    added run-ci (feedback) ← turns 1, 3",
        "1 receipt(s)",
    ]
    as_json = json.loads(_remem(home, "receipts", "--json").stdout)
    assert [c["name"] for c in as_json["receipts"][0]["changes"]] == ["prefer-uv", "run-ci"]

    # The session gone: its turns cannot be said, its evidence's events can.
    source.path.unlink()
    first = source.ranges[1]
    gone = _remem(home, "receipts").stdout.splitlines()
    assert gone[1] == f"    added prefer-uv (feedback) ← events {first.fromSeq}–{first.toSeq}", gone

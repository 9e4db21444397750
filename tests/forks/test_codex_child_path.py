"""A Codex child is filed and named by local time, as Codex files its own rollouts (codex-rs's
`now_local`: a real rollout named `...T11-26-55` holds a `session_meta` stamped `08:26:55Z` at
UTC+3), while the times inside it stay UTC. Each test runs in a zone other than UTC."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from remem.daemon.forks import codex_child
from remem.daemon.forks.harness_service import HarnessForkRequest, HarnessForks
from remem.daemon.home import Home

from .test_harness_forks import codex_parent

CHILD = "019c0000-0000-7000-8000-0000000000cc"


@pytest.fixture
def zone(request: pytest.FixtureRequest) -> Iterator[str]:
    """The process in the POSIX zone `request.param` (UTC+3 unless told), restored after."""
    spec = getattr(request, "param", "<+03>-3")
    saved = os.environ.get("TZ")
    os.environ["TZ"] = spec
    time.tzset()
    try:
        yield spec
    finally:
        if saved is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = saved
        time.tzset()


@pytest.mark.parametrize(
    ("zone", "utc", "folder", "stamp"),
    [
        ("<+03>-3", datetime(2026, 5, 11, 22, 30, 5), "2026/05/12", "2026-05-12T01-30-05"),
        ("<-05>5", datetime(2026, 5, 12, 2, 0, 0), "2026/05/11", "2026-05-11T21-00-00"),
    ],
    indirect=["zone"],
)
def test_the_date_folders_and_the_file_name_are_local(
    zone: str, tmp_path: Path, utc: datetime, folder: str, stamp: str
) -> None:
    now = utc.replace(tzinfo=timezone.utc)
    sessions = tmp_path / "sessions"
    path = codex_child.child_path(sessions / "parent.jsonl", sessions, CHILD, now)
    assert path == sessions / folder / f"rollout-{stamp}-{CHILD}.jsonl"
    meta = json.loads(
        codex_child.child_meta(b'{"type":"session_meta","payload":{"id":"p"}}', CHILD, "p", now)
    )
    assert meta["timestamp"] == meta["payload"]["timestamp"] == now.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def test_a_forks_name_is_its_utc_meta_time_in_local_time(zone: str, home: Home, tmp_path: Path) -> None:
    parent = codex_parent(tmp_path)
    done = HarnessForks(home).fork(
        HarnessForkRequest(harness="codex", path=str(parent), operationId="op", afterTurn=1)
    )
    child = Path(done.path)
    named = datetime.strptime(child.name[len("rollout-") :][:19], "%Y-%m-%dT%H-%M-%S")
    stamp = json.loads(child.read_bytes().split(b"\n", 1)[0])["payload"]["timestamp"]
    assert stamp.endswith("Z")
    made = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(microsecond=0)
    assert named - made == timedelta(hours=3)
    assert child.parent.relative_to(parent.parents[3]) == Path(named.strftime("%Y/%m/%d"))

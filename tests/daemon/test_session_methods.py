"""Sessions and forks through the daemon: configured roots only, flat trees, refusals with codes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.server.protocol import INVALID_PARAMS, SESSION_REFUSED, RpcError
from remem.daemon.sessions.factory import (
    SessionSpec,
    build_family,
    build_session,
    fork_session,
    write_session,
)

from .helpers import calls

pytestmark = pytest.mark.slow
CWD = "/home/dev/projects/demo"


@pytest.fixture
def root(home: Home, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "dsh-sessions"
    family = build_family(31, cwd=CWD)
    lost = build_session(SessionSpec(seed=40, turns=3, cwd=CWD))
    orphan = fork_session(lost, SessionSpec(seed=41, turns=1, cwd=CWD), after_turn=1)
    for draft in (*family.drafts, orphan):
        os.utime(write_session(folder, draft), (1_600_000_000, 1_600_000_000))
    home.settings_file.write_text(f"daemon:\n  idle_minutes: 2\nsessions:\n  roots: [{str(folder)!r}]\n")
    ids = {"main": family.main.header.id, "fork": family.fork.header.id, "orphan": orphan.header.id}
    return folder, ids


def test_listing_tree_turns_and_transcript(
    home: Home, root: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _, ids = root
    listing, tree, turns, transcript = calls(home, [
        ("sessions/list", {"cwd": CWD}),
        ("sessions/tree", {"cwd": CWD}),
        ("sessions/turns", {"id": ids["main"]}),
        ("sessions/transcript", {"id": ids["main"]}),
    ])  # fmt: skip
    assert len(listing["sessions"]) == 4 and listing["errors"] == []
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert nodes[ids["fork"]]["parent"] == ids["main"] and nodes[ids["fork"]]["depth"] == 1
    assert nodes[ids["orphan"]]["flags"] == ["orphan"] and nodes[ids["orphan"]]["parent"] is None
    assert [t["turn"] for t in turns["turns"]] == [1, 2, 3, 4, 5] and all(
        t["forkable"] for t in turns["turns"]
    )
    assert transcript["markdown"].startswith("# ")


def test_fork_and_metadata_through_the_daemon(home: Home, root: tuple[Path, dict[str, str]]) -> None:
    _, ids = root
    request = {"source": ids["main"], "operationId": "daemon-op", "atSeq": 0}
    made, again, conflict, renamed, stale, archived, missing, bad = calls(home, [
        ("sessions/fork", request),
        ("sessions/fork", request),
        ("sessions/fork", {**request, "atSeq": 5}),
        ("sessions/rename", {"id": ids["fork"], "title": "Plan B"}),
        ("sessions/archive", {"id": ids["fork"], "archived": True, "expectedGeneration": 0}),
        ("sessions/archive", {"id": ids["fork"], "archived": True, "expectedGeneration": 1}),
        ("sessions/turns", {"id": "session-nope"}),
        ("sessions/fork", {"source": ids["main"], "operationId": "x", "path": "/etc"}),
    ])  # fmt: skip
    assert made["created"] and again == {**made, "created": False}
    assert isinstance(conflict, RpcError) and conflict.data == {"code": "OP_CONFLICT"}
    assert renamed["title"] == "Plan B" and renamed["generation"] == 1
    assert (
        isinstance(stale, RpcError)
        and stale.code == SESSION_REFUSED
        and stale.data == {"code": "STALE_GENERATION"}
    )
    assert archived["archived"] is True
    assert isinstance(missing, RpcError) and missing.data == {"code": "NOT_FOUND"}
    assert isinstance(bad, RpcError) and bad.code == INVALID_PARAMS, "no method takes a path"
    [tree] = calls(home, [("sessions/tree", {"cwd": CWD})])
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert nodes[ids["fork"]]["title"] == "Plan B" and nodes[ids["fork"]]["archived"] is True
    assert nodes[made["child"]]["parent"] == ids["main"]


def test_roots_not_configured_are_out_of_reach(
    home: Home, root: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "not-configured"
    stranger = build_session(SessionSpec(seed=50, turns=1, cwd=CWD))
    write_session(elsewhere, stranger)
    listing, turns = calls(home, [("sessions/list", {}), ("sessions/turns", {"id": stranger.header.id})])
    assert stranger.header.id not in {s["id"] for s in listing["sessions"]}
    assert isinstance(turns, RpcError) and turns.data == {"code": "NOT_FOUND"}

"""Sessions and forks through the daemon: configured roots only, flat trees, refusals with codes."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import INVALID_PARAMS, SESSION_REFUSED, RpcError
from remem.daemon.sessions.reader import read_session
from tests.sessions.factory import (
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


def test_ids_shaped_like_paths_reach_nothing(
    home: Home, root: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    folder, _ = root
    stranger = build_session(SessionSpec(seed=51, turns=1, cwd=CWD))
    outside_log = write_session(tmp_path / "outside", stranger)
    hostile = ["../../../etc/passwd", "/etc/passwd", str(outside_log), str(outside_log.parent),
               f"../outside/{outside_log.parent.parent.name}", stranger.header.id]  # fmt: skip
    requests = [(method, {"id": i}) for i in hostile for method in ("sessions/turns", "sessions/transcript")]
    requests += [("sessions/rename", {"id": i, "title": "x"}) for i in hostile]
    requests += [("sessions/fork", {"source": i, "operationId": "op"}) for i in hostile]
    for reply in calls(home, requests):
        assert isinstance(reply, RpcError) and reply.data == {"code": "NOT_FOUND"}, reply
    assert (
        not (home.state / "session-meta.json").exists()
        or "passwd" not in (home.state / "session-meta.json").read_text()
    )
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in folder.iterdir() if p.is_dir())


def test_symlinks_out_of_a_root_are_never_followed(
    home: Home, root: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    folder, ids = root
    outside = tmp_path / "outside"
    linked = {}
    for n, kind in enumerate(("project", "session", "log")):
        draft = build_session(SessionSpec(seed=60 + n, turns=1, cwd=CWD))
        linked[kind] = draft.header.id
        log = write_session(outside / kind, draft)
        project_dir = folder / f"linked-{kind}"
        if kind == "project":
            project_dir.symlink_to(log.parent.parent)
        elif kind == "session":
            project_dir.mkdir()
            (project_dir / "session-dir").symlink_to(log.parent)
        else:
            (project_dir / "session-dir").mkdir(parents=True)
            (project_dir / "session-dir" / log.name).symlink_to(log)
    replies = calls(home, [("sessions/list", {}), *(("sessions/turns", {"id": i}) for i in linked.values())])
    listing, *turns = replies
    assert {s["id"] for s in listing["sessions"]}.isdisjoint(linked.values())
    refused = [e["path"] for e in listing["errors"] if "symbolic link" in e["message"]]
    assert len(refused) == 3, listing["errors"]
    assert all(isinstance(t, RpcError) and t.data == {"code": "NOT_FOUND"} for t in turns)


def test_a_log_swapped_for_a_link_after_indexing_is_not_read(
    home: Home, root: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    folder, ids = root
    [listing] = calls(home, [("sessions/list", {})])  # indexes every log
    log = next(p for p in folder.rglob("session.jsonl*") if read_session(p).header.id == ids["orphan"])
    decoy = tmp_path / "decoy"
    shutil.move(log.parent, decoy)
    log.parent.symlink_to(decoy)  # the same id and bytes, now behind a link
    [turns] = calls(home, [("sessions/turns", {"id": ids["orphan"]})])
    # Said as what it is, whether the daemon heard of the swap yet (its listing's error) or not.
    assert isinstance(turns, RpcError) and turns.data == {"code": "UNREADABLE"}, turns
    assert str(log.parent) in turns.message and "symbolic link" in turns.message, turns.message
    assert ids["orphan"] in {s["id"] for s in listing["sessions"]}


def test_a_cold_listing_tells_every_client_how_far_it_is(
    home: Home, root: tuple[Path, dict[str, str]]
) -> None:
    heard: list[dict[str, Any]] = []

    def listen(method: str, params: dict[str, Any]) -> None:
        if method == "sessions/progress":
            heard.append(params)

    async def run() -> dict[str, Any]:
        client = await AsyncDaemonClient.open(home, listener=listen)
        try:
            return await client.call("sessions/list", {})
        finally:
            await client.close()

    listing = asyncio.run(run())
    total = len(listing["sessions"]) + len(listing["errors"])
    assert heard and heard[-1] == {"cwd": None, "done": total, "total": total}
    assert all(n["total"] == total and 0 < n["done"] <= total for n in heard)

"""A home whose receipts' folder is made unusable under a running daemon is said as what to fix.

`memory/reviews` (or the marks' folder `memory/reviews/committing` in it) replaced by a file, or
made unreadable, while the daemon runs: every request lists the marks first, and the sessions'
list and tree and the receipts list the receipts too. Each met the folder as a bug's
NotADirectoryError or PermissionError: an internal error (-32603) with a traceback in the log.
Each now answers HOME_UNUSABLE naming the folder, in the words remem uses when it cannot make
it, and the daemon serves again once the folder is back; only a receipts' folder closed to its
user is listed past, every review state unknown (decision 0529). The language server, which reads the
receipts for a hover, says the same.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import HOME_UNUSABLE, RpcError
from remem.daemon.server.runtime import DaemonPaths
from tests.lsp.editor import RECORD
from tests.lsp.piped_server import Server, initialize, server  # noqa: F401 - the fixture
from tests.permissions import PAST_MASK, bound_by_permissions, effective

# What a folder of the home its user may neither read nor write in is said as: both refusals.
CLOSED = "cannot be read or written (Permission denied); let your user read and write in it"
READS = [("sessions/list", {}), ("sessions/tree", {"cwd": "/w"}), ("consolidation/receipts", {})]


def _calls(home: Home, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """Each request's result, or its RpcError, on one connection to the running daemon (which
    this client neither starts nor makes the home's folders for)."""

    async def run() -> list[Any]:
        client = await AsyncDaemonClient.open(home, start=False)
        try:
            return [await _answer(client, method, params) for method, params in requests]
        finally:
            await client.close()

    return asyncio.run(run())


async def _answer(client: AsyncDaemonClient, method: str, params: dict[str, Any]) -> Any:
    try:
        return await client.call(method, params)
    except RpcError as exc:
        return exc


def _start(home: Home, preexec: Callable[[], None] | None = None) -> int:
    """`remem daemon start`; the daemon's pid."""
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "start"]
    environment = {k: v for k, v in os.environ.items() if k != NO_DAEMON_ENV}
    started = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=environment, preexec_fn=preexec
    )
    assert started.returncode == 0, started.stderr
    info = DaemonPaths(home, layout=False).read_status()
    assert info is not None
    return info.pid


def _stop(home: Home) -> None:
    info = DaemonPaths(home, layout=False).read_status()
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "daemon", "stop"]
    subprocess.run(command, capture_output=True, timeout=60)
    if info is not None and DaemonPaths(home, layout=False).running():
        os.kill(info.pid, signal.SIGKILL)


@pytest.fixture
def served(home: Home) -> Iterator[Home]:
    home.ensure_layout()
    _start(home)
    try:
        yield home
    finally:
        _stop(home)


@pytest.fixture
def bound(home: Home) -> Iterator[Home]:
    """A running daemon that permissions bind, also when run as root (see test_lspfix_unjudged_cause)."""
    home.ensure_layout()
    privileged = os.geteuid() == 0
    try:
        pid = _start(home, bound_by_permissions if privileged else None)
    except subprocess.SubprocessError as error:
        pytest.skip(f"run as root, which cannot give up its way past permissions here: {error}")
    try:
        if privileged and (held := effective(pid) & PAST_MASK):
            pytest.skip(f"run as root, whose daemon holds its way past permissions still (CapEff {held:#x})")
        yield home
    finally:
        _stop(home)


def _refused(
    answers: list[Any], folder: Path, said: str, asked: list[tuple[str, dict[str, Any]]] = READS
) -> None:
    for (method, _), answer in zip(asked, answers, strict=True):
        assert isinstance(answer, RpcError), (method, answer)
        assert answer.code == HOME_UNUSABLE, (method, answer.code, answer.message)
        assert f"{folder} {said}" in answer.message, (method, answer.message)


def _serves_again(home: Home) -> None:
    listing, tree, receipts = _calls(home, READS)
    assert listing["sessions"] == [] and tree["nodes"] == [] and receipts["receipts"] == []
    assert " failed" not in (home.state / "daemon.log").read_text(), "no request failed as a bug"


@pytest.mark.parametrize("where", ["memory/reviews", "memory/reviews/committing"])
def test_a_file_where_the_receipts_folder_goes_is_said_and_the_daemon_serves_on(
    served: Home, where: str
) -> None:
    folder = served.root / where
    folder.mkdir(parents=True, exist_ok=True)
    folder.rmdir()
    folder.write_text("not a folder\n")
    _refused(_calls(served, READS), folder, "cannot be made a folder (File exists); move what is in the way")
    folder.unlink()
    folder.mkdir()
    _serves_again(served)


def test_an_unreadable_receipts_folder_is_said_and_the_daemon_serves_on(bound: Home) -> None:
    bound.reviews.mkdir(exist_ok=True)
    bound.reviews.chmod(0)
    try:
        answers = _calls(bound, READS)
    finally:
        bound.reviews.chmod(0o700)
    # The sessions are listed, their review states unknown, the folder said once (decision 0529).
    for listed, items in zip(answers[:2], ("sessions", "nodes"), strict=True):
        assert not isinstance(listed, RpcError), listed
        assert [e["kind"] for e in listed["errors"]] == ["reviews"], listed
        assert f"{bound.reviews} cannot be read (Permission denied)" in listed["errors"][0]["message"]
        assert all(item["review"]["state"] == "unknown" for item in listed[items]), listed
    _refused(answers[2:], bound.reviews, CLOSED, READS[2:])
    _serves_again(bound)


def test_a_hover_on_a_home_whose_receipts_folder_is_a_file_says_what_to_fix(
    server: Server,  # noqa: F811
    tmp_path: Path,
) -> None:
    home = Home(tmp_path / "home")
    workspace = home.workspaces / "proj"
    workspace.mkdir(parents=True)
    home.reviews.write_text("not a folder\n")
    text = RECORD.format(name="note-a", description="shown", type="project", body="Body.\n")
    uri = (workspace / "note-a.md").as_uri()
    initialize(server)
    document = {"uri": uri, "languageId": "markdown", "version": 1, "text": text}
    server.send({"method": "textDocument/didOpen", "params": {"textDocument": document}})
    server.send({"id": 1, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri}, "position": {"line": 2, "character": 3}}})  # fmt: skip
    shown = server.answer(1)["result"]["contents"]["value"]
    assert f"{home.reviews} cannot be made a folder (File exists); move what is in the way" in shown, shown


def test_a_receipts_folder_behind_a_folder_that_cannot_be_passed_through_names_that_folder(
    bound: Home,
) -> None:
    # `memory` refused: the receipts cannot be reached, and `memory` is what to fix, not `reviews`.
    bound.memory.chmod(0o600)
    try:
        answers = _calls(bound, READS)
    finally:
        bound.memory.chmod(0o700)
    _refused(answers, bound.memory, CLOSED)
    _serves_again(bound)

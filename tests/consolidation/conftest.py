"""A home whose consolidation route points at a fake model server, and a finished session; a
model reply held until the test lets it go, and reviews run in turn through the home's daemon."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.client import AsyncDaemonClient
from remem.daemon.consolidation.evidence import project_evidence
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import EvidenceRange
from remem.daemon.server.runtime import DaemonPaths
from remem.daemon.sessions.reader import read_session
from tests.daemon.helpers import remem
from tests.fake_openai import Computed, FakeOpenAI, Reply
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.waiting import until

from .folder_hook import daemon_env  # noqa: F401 - a fixture of the tests that move a folder

KEY_ENV = "REMEM_TEST_MODEL_KEY"
OLD = 1_600_000_000  # an mtime long past, so the session is not live
GUARD_SECONDS = 60  # only so that a regression fails instead of hanging; never reached when fixed


@dataclass
class Source:
    id: str
    path: Path
    cwd: str
    ranges: list[EvidenceRange]

    def evidence(self, n: int = 0) -> list[dict[str, int]]:
        return [self.ranges[n].model_dump()]


def configure(
    home: Home, fake: FakeOpenAI, root: Path, *named: tuple[Path, str], **consolidation: Any
) -> None:
    """Settings asking `fake` for consolidation, with the session root `root` (DSH) and the
    `named` roots of the formats they name."""
    lines = [f"  {k}: {v}" for k, v in {"provider": "fake", "model": "fake-model", **consolidation}.items()]
    roots = [f"    - {str(root)!r}\n", *(f"    - path: {str(p)!r}\n      format: {f}\n" for p, f in named)]
    home.ensure_layout()
    home.settings_file.write_text(
        "consolidation:\n" + "\n".join(lines) + "\n"
        f"providers:\n  fake:\n    base_url: {fake.base_url}\n    api_key_env: {KEY_ENV}\n"
        "sessions:\n  roots:\n" + "".join(roots)
    )


def write_source(root: Path, cwd: str, seed: int = 1, turns: int = 3) -> Source:
    draft = build_session(SessionSpec(seed=seed, turns=turns, cwd=cwd))
    path = write_session(root, draft)
    os.utime(path, (OLD, OLD))
    ranges = project_evidence(read_session(path)).ranges()
    return Source(draft.header.id, path, cwd, ranges)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with FakeOpenAI(api_key="sk-test") as server:
        yield server


@pytest.fixture
def source(home: Home, fake: FakeOpenAI, tmp_path: Path) -> Source:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, timeout_seconds=20)
    return write_source(root, str(tmp_path / "project"))


@pytest.fixture
def served(home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The home's requests go through its daemon, stopped after the test whatever it did."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    yield
    if DaemonPaths(home, layout=False).running():
        remem(home, "daemon", "stop")


@asynccontextmanager
async def progress_client(home: Home) -> AsyncIterator[tuple[AsyncDaemonClient, list[str]]]:
    """A client of the home's daemon, and the phases of the consolidation progress it is sent."""
    phases: list[str] = []
    client = await AsyncDaemonClient.open(
        home, listener=lambda m, p: phases.append(p["phase"]) if m == "consolidation/progress" else None
    )
    try:
        yield client, phases
    finally:
        await client.close()


async def run_in_turn(
    client: AsyncDaemonClient,
    fake: FakeOpenAI,
    gate: threading.Event,
    sessions: tuple[str, str],
    waited: Callable[[], object],
    what: str,
) -> list[dict[str, Any]]:
    """The answers to reviews of `sessions` through `client`: the second asked for once the first
    asked the model, `gate` set once `waited()` holds (`what` it waits for)."""
    try:
        first = asyncio.ensure_future(client.call("consolidation/run", {"session": sessions[0]}))
        await until(lambda: fake.count == 1, what="the first run to ask the model")
        second = asyncio.ensure_future(client.call("consolidation/run", {"session": sessions[1]}))
        await until(waited, what=what)
        gate.set()
        return list(await asyncio.wait_for(asyncio.gather(first, second), GUARD_SECONDS))
    finally:
        gate.set()


def gated(gate: threading.Event, then: Reply) -> Computed:
    """A reply given only once `gate` is set: the run asking stays in its review until then."""

    def answer(request: dict[str, Any]) -> Reply:
        gate.wait(GUARD_SECONDS)
        return then

    return Computed(answer)


def put(
    name: str, evidence: list[dict[str, int]], content: str = "Use uv for everything.\n"
) -> dict[str, Any]:
    record = {"name": name, "description": f"About {name}", "type": "feedback", "content": content}
    return {"action": "put", "record": record, "evidence": evidence}


def proposal(*changes: dict[str, Any], final: bool = True) -> dict[str, Any]:
    return {"final": final, "outcome": "changes" if changes else "no-change", "changes": list(changes)}


def both_scopes(source: Source) -> dict[str, Any]:
    """A final proposal that changes Global and the workspace: every commit step runs."""
    glob = {"action": "replace-global", "content": "Prefers terse answers.\n", "evidence": source.evidence(1)}
    return proposal(put("prefer-uv", source.evidence()), glob)

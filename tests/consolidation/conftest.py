"""A home whose consolidation route points at a fake model server, and a finished session."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.consolidation.evidence import project_evidence
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import EvidenceRange
from remem.daemon.sessions.reader import read_session
from tests.fake_openai import FakeOpenAI
from tests.sessions.factory import SessionSpec, build_session, write_session

from .folder_hook import daemon_env  # noqa: F401 - a fixture of the tests that move a folder

KEY_ENV = "REMEM_TEST_MODEL_KEY"
OLD = 1_600_000_000  # an mtime long past, so the session is not live


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

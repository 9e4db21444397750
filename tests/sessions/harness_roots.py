"""Hand-built roots of each format holding one session family, for catalog and daemon tests."""

from __future__ import annotations

import os
from pathlib import Path

from remem.daemon.sessions.paths import Encoding
from tests.sessions.factory import SessionSpec, build_session, write_session

from .claude_lines import CWD, jsonl, prompt, result, say, use
from .codex_lines import meta, rollout, turn

OLD = 1_600_000_000
SID = "0b3c6f0e-1111-4222-8333-944445555666"  # the session id claude_lines writes
FORK = "5f0e0000-0000-4000-8000-00000000f0c0"
COPY = "c0c0c0c0-0000-4000-8000-00000000c0c0"
TID = "019c0000-0000-7000-8000-000000000001"
CHILD = "019c0000-0000-7000-8000-0000000000c1"


def conversation() -> list[dict[str, object]]:
    """Two turns, then a rewind: a second prompt under the first answer (an in-file branch)."""
    return [
        prompt("u1", None, "read the notes"),
        use("a1", "u1", "call-1"),
        result("r1", "a1", "call-1"),
        say("a2", "r1", "notes say alpha"),
        prompt("u2", "a2", "and again"),
        say("a3", "u2", "second answer"),
        prompt("u3", "a2", "instead this", timestamp="2026-01-01T00:01:00Z"),
        say("a4", "u3", "rewound answer", timestamp="2026-01-01T00:01:01Z"),
    ]


def claude_project(root: Path, cwd: str = CWD) -> Path:
    folder = root / cwd.replace("/", "-")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def write(path: Path, data: bytes, *, old: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if old:
        os.utime(path, (OLD, OLD))
    return path


def build_roots(tmp_path: Path) -> dict[str, Path]:
    """A DSH root, a Claude Code projects folder and a Codex sessions folder, one session family each."""
    claude, codex, dsh = tmp_path / "claude" / "projects", tmp_path / "codex" / "sessions", tmp_path / "dsh"
    project = claude_project(claude)
    write(project / f"{SID}.jsonl", jsonl(*conversation()))
    forked = [{**r, "sessionId": FORK, "forkedFrom": {"sessionId": SID}} for r in conversation()[:4]]
    write(project / f"{FORK}.jsonl", jsonl(*forked))
    copy = [{**r, "sessionId": COPY} for r in conversation()[:4]]  # --fork-session: same uuids
    write(project / f"{COPY}.jsonl", jsonl(*copy, prompt("u9", "a2", "copy's own")))
    agent = [{**r, "isSidechain": True, "agentId": "a1b2"} for r in conversation()[:4]]
    write(project / SID / "subagents" / "agent-a1b2.jsonl", jsonl(*agent))
    day = codex / "2026" / "05" / "01"
    write(
        day / f"rollout-2026-05-01T00-00-00-{TID}.jsonl", rollout(meta(cwd=CWD), *turn("t1", "hi", "hello"))
    )
    child = rollout(meta(CHILD, cwd=CWD, forked_from_id=TID), *turn("t1", "hi", "hello"))
    write(day / f"rollout-2026-05-01T00-10-00-{CHILD}.jsonl", child)
    write(day / "rollout-2026-05-01T00-20-00-elsewhere.jsonl", rollout(meta("019c-else", cwd="/else")))
    dsh.mkdir()
    write_session(
        dsh, build_session(SessionSpec(seed=1, cwd=CWD, turns=1), session_id="dsh-1"), encoding=Encoding.RAW
    )
    return {"claude-code": claude, "codex": codex, "dsh": dsh}

"""A session whose cwd is not an absolute path here names no workspace (decision 0495): a Claude
Code transcript or a Codex rollout whose cwd is `"."` lists with that cwd as written, and
consolidation refuses it, and a Windows cwd, as NO_CWD, never resolving it against its own
working folder and learning the session there."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI
from tests.sessions.claude_lines import SID, jsonl, prompt, say
from tests.sessions.codex_lines import TID, meta, rollout, turn
from tests.sessions.harness_roots import write

from .conftest import configure, write_source


def _run(home: Home, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(cli, ["--home", str(home.root), *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_a_relative_cwd_lists_as_written_and_is_never_learned(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    dot = [{**record, "cwd": "."} for record in (prompt("u1", None, "hi"), say("a1", "u1", "hello"))]
    write(claude / "-" / f"{SID}.jsonl", jsonl(*dot))
    write(codex / f"rollout-2026-05-01T00-00-00-{TID}.jsonl", rollout(meta(cwd="."), *turn("t1", "hi", "yo")))
    configure(home, fake, tmp_path / "dsh", (claude, "claude-code"), (codex, "codex"))
    windows = write_source(tmp_path / "dsh", "C:\\Users\\u\\proj")
    code, listing = _run(home, "sessions", "list")
    assert (code, listing["errors"]) == (0, [])
    assert {s["id"]: s["cwd"] for s in listing["sessions"]} == {SID: ".", TID: ".", windows.id: windows.cwd}
    for session, cwd in ((SID, "'.'"), (TID, "'.'"), (windows.id, "'C:\\\\Users\\\\u\\\\proj'")):
        code, refused = _run(home, "consolidate", session)
        assert (code, refused["error"]["code"]) == (1, "NO_CWD"), refused
        assert f"cwd {cwd} is not an absolute path on this machine" in refused["error"]["message"]
    assert fake.count == 0

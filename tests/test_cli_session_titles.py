"""A log's own title is listed cut to a label's length, whatever the log holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from remem.daemon.home import Home
from tests.sessions import claude_lines as cl
from tests.sessions import codex_lines as cx
from tests.test_cli_sessions import run


def test_a_title_longer_than_a_label_is_listed_cut_to_one(home: Home, tmp_path: Path) -> None:
    root = tmp_path / "claude"
    folder = root / "projects" / "-home-u-proj"
    folder.mkdir(parents=True)
    huge = {"type": "custom-title", "customTitle": "T" * 100_000, "sessionId": cl.SID}
    (folder / f"{cl.SID}.jsonl").write_bytes(
        cl.jsonl(cl.prompt("u1", None, "q"), cl.say("a1", "u1", "a"), huge)
    )
    code, out, _ = run(home, "list", "--root", str(root), "--json")
    assert code == 0
    (listed,) = json.loads(out)["sessions"]
    assert listed["title"] == "T" * 199 + "…"
    code, out, _ = run(home, "list", "--root", str(root))
    assert code == 0 and "T" * 199 + "…" in out and "T" * 200 not in out
    code, out, _ = run(home, "tree", "--cwd", cl.CWD, "--root", str(root), "--json")
    assert code == 0 and "T" * 200 not in out and "T" * 199 + "…" in out


def test_a_fork_keeps_its_default_title_when_both_titles_are_cut(home: Home, tmp_path: Path) -> None:
    """A fork titled its parent's title and a counter still reads as untitled by the user, though
    the listing cuts both titles: the log's own titles are compared, not the listed ones."""
    root = tmp_path / "claude"
    folder = root / "projects" / "-home-u-proj"
    folder.mkdir(parents=True)
    long = "T" * 300
    parent = cl.jsonl(
        cl.prompt("u1", None, "q"), cl.say("a1", "u1", "a"), {"type": "custom-title", "customTitle": long}
    )
    child_id = "0b3c6f0e-1111-4222-8333-944445555777"
    copied = {"sessionId": child_id, "forkedFrom": {"sessionId": cl.SID, "messageUuid": "u1"}}
    child = cl.jsonl(
        cl.prompt("c1", None, "q", **copied),
        cl.say("c2", "c1", "a", **{**copied, "forkedFrom": {"sessionId": cl.SID, "messageUuid": "a1"}}),
        {"type": "custom-title", "customTitle": f"{long} (1)", "sessionId": child_id},
    )
    (folder / f"{cl.SID}.jsonl").write_bytes(parent)
    (folder / f"{child_id}.jsonl").write_bytes(child)
    code, out, _ = run(home, "tree", "--cwd", cl.CWD, "--root", str(root), "--json")
    assert code == 0
    nodes = {node["id"]: node for node in _nodes(json.loads(out))}
    assert nodes[child_id]["title"] == "T" * 199 + "…" and nodes[child_id]["defaultTitle"] is True


def _nodes(tree: object) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    if isinstance(tree, dict):
        if "defaultTitle" in tree:
            found.append(tree)
        for value in tree.values():
            found += _nodes(value)
    elif isinstance(tree, list):
        for value in tree:
            found += _nodes(value)
    return found


def _first_prompted(tmp_path: Path, prompt: str) -> tuple[Path, Path]:
    """A Claude Code root and a Codex root under `tmp_path`, each with one session whose first
    prompt is `prompt`."""
    claude = tmp_path / "claude"
    folder = claude / "projects" / "-home-u-proj"
    folder.mkdir(parents=True)
    (folder / f"{cl.SID}.jsonl").write_bytes(cl.jsonl(cl.prompt("u1", None, prompt), cl.say("a1", "u1", "a")))
    codex = tmp_path / "codex"
    day = codex / "sessions" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-05-01T00-00-00-{cx.TID}.jsonl").write_bytes(
        cx.rollout(cx.meta(cwd="/w"), *cx.turn("t1", prompt, "hello"))
    )
    return claude, codex


def test_a_title_cut_from_a_long_first_prompt_ends_in_an_ellipsis(home: Home, tmp_path: Path) -> None:
    """A Claude Code or Codex session is titled by its first prompt's first line, cut to 200
    characters: it was cut bare, and read as the whole prompt."""
    long = "Refactor the parser " * 20  # 400 characters
    claude, codex = _first_prompted(tmp_path, long)
    shown = long[:199] + "…"
    for root in (claude, codex):
        done = subprocess.run(
            [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "sessions", "list", "--json",
             "--root", str(root)],
            capture_output=True, text=True, env=os.environ, timeout=120,
        )  # fmt: skip
        (listed,) = json.loads(done.stdout)["sessions"]
        assert listed["title"] == shown, listed["title"]


def test_a_fork_of_a_session_titled_by_a_long_first_prompt_keeps_its_default_title(
    home: Home, tmp_path: Path
) -> None:
    """The parent's title, cut from its first prompt, ends in `…` itself: the fork's (that cut
    shortened again for its counter) is still the parent's, not a title the user gave."""
    long = "Refactor the parser " * 20
    claude, codex = _first_prompted(tmp_path, long)
    for root, session, cwd in ((claude, cl.SID, cl.CWD), (codex, cx.TID, "/w")):
        code, out, err = run(home, "fork", session, "--op-id", session, "--json", "--root", str(root))
        assert code == 0, err
        child = json.loads(out)["child"]
        code, out, _ = run(home, "tree", "--cwd", cwd, "--root", str(root), "--json")
        assert code == 0
        nodes = {node["id"]: node for node in _nodes(json.loads(out))}
        assert nodes[child]["defaultTitle"] is True, nodes[child]

"""`remem sessions ...` end to end on generated DSH roots."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from tests.sessions import claude_lines
from tests.sessions.factory import (
    SessionSpec,
    build_family,
    build_session,
    fork_session,
    write_session,
)

CWD = "/home/dev/projects/demo"


def run(home: Home, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def seeded_root(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "root"
    family = build_family(21, cwd=CWD)
    lost_parent = build_session(SessionSpec(seed=30, turns=3, cwd=CWD))
    orphan = fork_session(lost_parent, SessionSpec(seed=31, turns=1, cwd=CWD), after_turn=2)
    for draft in (*family.drafts, orphan):
        os.utime(write_session(root, draft), (1_600_000_000, 1_600_000_000))
    ids = {"main": family.main.header.id, "fork": family.fork.header.id,
           "subagent": family.subagent.header.id, "orphan": orphan.header.id}  # fmt: skip
    return root, ids


def test_list_json_shape(home: Home, tmp_path: Path) -> None:
    root, ids = seeded_root(tmp_path)
    code, out, _ = run(home, "list", "--root", str(root), "--json")
    data = json.loads(out)
    assert code == 0 and data["errors"] == []
    assert {s["id"] for s in data["sessions"]} == set(ids.values())
    assert set(data["sessions"][0]) == {
        "id", "title", "cwd", "createdAt", "parent", "kind", "live", "turns", "lastSeq", "revision", "digest",
        "review", "format", "problems",
    }  # fmt: skip
    assert {s["format"] for s in data["sessions"]} == {"dsh"}
    assert {s["review"]["state"] for s in data["sessions"]} == {"never"}


def test_tree_nests_forks_and_subagents_and_flags_orphans(home: Home, tmp_path: Path) -> None:
    root, ids = seeded_root(tmp_path)
    code, out, _ = run(home, "tree", "--cwd", CWD, "--root", str(root), "--json")
    nodes = json.loads(out)["nodes"]
    assert code == 0
    by_id = {node["id"]: node for node in nodes}
    assert [n["id"] for n in nodes if n["parent"] is None] == [ids["main"], ids["orphan"]]
    assert by_id[ids["orphan"]]["flags"] == ["orphan"] and by_id[ids["orphan"]]["forkTurn"] == 2
    children = {n["id"]: n for n in nodes if n["parent"] == ids["main"]}
    assert children[ids["fork"]]["kind"] == "fork" and children[ids["fork"]]["forkTurn"] == 2
    assert children[ids["subagent"]]["kind"] == "subagent" and children[ids["subagent"]]["depth"] == 1
    code, out, _ = run(home, "tree", "--cwd", CWD, "--root", str(root))
    assert code == 0 and "\n  fork:" in out and "[orphan]" in out and "(archived)" not in out
    assert run(home, "archive", ids["fork"], "--root", str(root))[0] == 0
    code, out, _ = run(home, "tree", "--cwd", CWD, "--root", str(root))
    archived = [line for line in out.splitlines() if "(archived)" in line]
    assert code == 0 and len(archived) == 1 and archived[0].endswith(f"(archived)  {ids['fork']}")


def test_list_lines_up_its_columns_and_counts_turns_in_words(home: Home, tmp_path: Path) -> None:
    root, ids = seeded_root(tmp_path)
    one_turn = build_session(SessionSpec(seed=40, turns=1, cwd=CWD), session_id="session-short")
    write_session(root, one_turn)
    code, out, _ = run(home, "list", "--root", str(root))
    lines = out.splitlines()[:-1]
    assert code == 0 and len(lines) == len(ids) + 1
    dates = [re.search(r"  \d{4}-\d\d-\d\d \d\d:\d\d  ", line) for line in lines]
    assert all(dates) and len({date.start() for date in dates if date}) == 1, "ids of any length, one column"
    assert len({line.index(" turn") for line in lines}) == 1, "turn counts line up"
    _, listed, _ = run(home, "list", "--root", str(root), "--json")
    counts = {s["id"]: s["turns"] for s in json.loads(listed)["sessions"]}
    assert counts["session-short"] == 1
    for line in lines:
        count = counts[line.split()[0]]
        assert f" {count} {'turn ' if count == 1 else 'turns'} " in line


def test_an_empty_answer_says_where_remem_looked(home: Home, tmp_path: Path) -> None:
    root, _ = seeded_root(tmp_path)
    code, out, err = run(home, "tree", "--cwd", "/home/dev/elsewhere", "--root", str(root))
    assert code == 0 and out == "", "scripts still read an empty tree"
    assert "No agent sessions of /home/dev/elsewhere were found" in err
    assert "Claude Code, Codex and DSH" in err and str(home.settings_file) in err and "--root" in err
    code, out, err = run(home, "list", "--cwd", "/home/dev/elsewhere", "--root", str(root))
    assert code == 0 and out == "0 session(s), 0 unreadable\n" and "were found" in err
    code, _, err = run(home, "tree", "--cwd", CWD, "--root", str(root))
    assert code == 0 and "were found" not in err
    broken = tmp_path / "broken" / "--home-dev-elsewhere--" / "session-x"
    broken.mkdir(parents=True)
    (broken / "session.jsonl").write_text("not a log\n")
    code, out, err = run(home, "list", "--cwd", "/home/dev/elsewhere", "--root", str(tmp_path / "broken"))
    assert out == "0 session(s), 1 unreadable\n" and "could be read (1 unreadable, above)" in err, err


def test_turns_and_show(home: Home, tmp_path: Path) -> None:
    root, ids = seeded_root(tmp_path)
    code, out, _ = run(home, "turns", ids["main"], "--root", str(root), "--json")
    turns = json.loads(out)["turns"]
    assert code == 0 and [t["turn"] for t in turns] == [1, 2, 3, 4, 5]
    assert set(turns[0]) == {"turn", "startSeq", "endSeq", "status", "user", "forkable"}
    assert all(t["forkable"] for t in turns)
    code, out, _ = run(home, "show", ids["main"], "--root", str(root))
    assert code == 0 and out.startswith("# ")
    code, out, _ = run(home, "show", ids["main"], "--root", str(root), "--json")
    data = json.loads(out)
    assert data["header"]["id"] == ids["main"] and len(data["turns"]) == 5
    assert [e["seq"] for e in data["events"]] == list(range(len(data["events"])))


def test_unknown_session_is_a_clear_error(home: Home, tmp_path: Path) -> None:
    root, _ = seeded_root(tmp_path)
    code, _, err = run(home, "turns", "session-nope", "--root", str(root))
    assert code == 1 and "no session 'session-nope'" in err


def _on_a_terminal(home: Home, *args: str) -> str:
    """What `remem` writes to a terminal (a pseudo-terminal on stdout and stderr)."""
    import pty
    import subprocess
    import sys

    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon", *args]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done writing
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=60) == 0
    return b"".join(chunks).decode()


def test_a_cold_listing_shows_a_progress_bar_only_on_a_terminal(home: Home, tmp_path: Path) -> None:
    root, ids = seeded_root(tmp_path)
    shown = _on_a_terminal(home, "sessions", "list", "--root", str(root))
    assert "Indexing sessions" in shown and f"{len(ids)} session(s)" in shown
    warm = _on_a_terminal(home, "sessions", "list", "--root", str(root))
    assert "Indexing" not in warm, "a warm listing reads nothing: no bar"
    _, out, err = run(Home(tmp_path / "cold-home"), "list", "--root", str(root))
    assert "Indexing" not in out + err and f"{len(ids)} session(s)" in out, "not a terminal: no bar"


def test_text_from_a_session_never_drives_the_terminal(home: Home, tmp_path: Path) -> None:
    hostile = "evil\x1b[31mRED\x1b[0m\nsecond line\r\x07bell\u202e"
    custom = {"type": "custom-title", "customTitle": hostile, "sessionId": claude_lines.SID}
    records = [claude_lines.prompt("u1", None, hostile), claude_lines.say("a1", "u1", "done"), custom]
    project = tmp_path / "projects" / "-home-u-proj"
    project.mkdir(parents=True)
    (project / f"{claude_lines.SID}.jsonl").write_bytes(claude_lines.jsonl(*records))
    root = ["--root", str(tmp_path / "projects")]  # read in-process
    commands = [
        ["list"],
        ["tree", "--cwd", claude_lines.CWD],
        ["turns", claude_lines.SID],
        ["show", claude_lines.SID],
    ]
    done = [run(home, *command, *root) for command in commands]
    assert [code for code, _, _ in done] == [0] * len(commands)
    outputs = [out for _, out, _ in done]
    for out in outputs:
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]", out), out
    rows = [line for line in outputs[0].splitlines() if claude_lines.SID in line]
    assert len(rows) == 1 and rows[0].endswith("evil\\e[31mRED\\e[0m\\nsecond line\\r\\x07bell\\u202e")


def test_an_empty_id_is_a_usage_error_not_a_traceback(home: Home) -> None:
    for args in (("turns", ""), ("show", " "), ("fork", "x", "--op-id", ""), ("rename", "", "t")):
        result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", *args])
        assert result.exit_code == 2 and "must not be empty" in result.stderr, (args, result.output)

"""`remem sessions ...` end to end on generated DSH roots."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Receipt, ScopeRevisions, Source, Status, Target
from remem.daemon.sessions.harness_sources import claude_folders
from tests.sessions import claude_lines, codex_lines
from tests.sessions.claude_lines import CWD as CLAUDE_CWD
from tests.sessions.factory import (
    SessionSpec,
    build_family,
    build_session,
    fork_session,
    write_session,
)
from tests.sessions.harness_roots import SID, TID, build_roots, write

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


def test_an_empty_answer_says_where_remem_looked(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = seeded_root(tmp_path)
    claude, codex = tmp_path / "claude", tmp_path / "codex"
    (claude / "projects").mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    code, out, err = run(home, "tree", "--cwd", "/home/dev/elsewhere", "--root", str(root))
    assert code == 0 and out == "", "scripts still read an empty tree"
    assert "No agent sessions of /home/dev/elsewhere (no folder is there) were found" in err
    assert "Claude Code, Codex and DSH" in err and str(home.settings_file) in err and "--root" in err
    # Each folder it read, then each harness's own folder it passed by, not found.
    dsh = Path(os.environ["DSH_HOME"]) / "sessions"
    assert err.splitlines()[1:7] == [
        f"  {home.sessions}",
        f"  {claude / 'projects'} (Claude Code's folder)",
        f"  {root}",
        f"  {dsh} (DSH's folder, not found)",
        f"  {codex / 'sessions'} (Codex's folder, not found)",
        f"  {codex / 'archived_sessions'} (Codex's folder, not found)",
    ], err
    code, out, err = run(home, "list", "--cwd", "/home/dev/elsewhere", "--root", str(root))
    assert code == 0 and out == "0 session(s), 0 unreadable\n" and "were found" in err
    code, _, err = run(home, "tree", "--cwd", str(claude), "--root", str(root))  # a folder: no remark
    assert code == 0 and f"No agent sessions of {claude} were found" in err
    code, _, err = run(home, "tree", "--cwd", CWD, "--root", str(root))
    assert code == 0 and "were found" not in err
    broken = tmp_path / "broken" / "--home-dev-elsewhere--" / "session-x"
    broken.mkdir(parents=True)
    (broken / "session.jsonl").write_text("not a log\n")
    code, out, err = run(home, "list", "--cwd", "/home/dev/elsewhere", "--root", str(tmp_path / "broken"))
    assert out == "0 session(s), 1 unreadable\n" and "could be read (1 unreadable, above)" in err, err
    (codex / "sessions").parent.mkdir()
    (codex / "sessions").write_text("")  # a file where Codex keeps its folder: no "not found"
    code, out, err = run(home, "tree", "--cwd", "/home/dev/elsewhere", "--root", str(root))
    assert f"  {codex / 'sessions'} (Codex's folder, not a folder)" in err.splitlines(), err


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
    # Both formats asked for: the JSON was printed, the Markdown asked for silently not.
    code, out, err = run(home, "show", ids["main"], "--root", str(root), "--markdown", "--json")
    error = json.loads(out)["error"]  # with --json, a usage error is JSON too
    assert (
        code == 2
        and err == ""
        and error["code"] == "USAGE"
        and "--markdown and --json both" in error["message"]
    )


def test_unknown_session_is_a_clear_error(home: Home, tmp_path: Path) -> None:
    root, _ = seeded_root(tmp_path)
    code, _, err = run(home, "turns", "session-nope", "--root", str(root))
    assert code == 1 and "no session 'session-nope'" in err


def test_a_session_of_a_root_the_listing_refused_is_not_found_saying_why(home: Home, tmp_path: Path) -> None:
    """A project folder given as the root: `list` says to name its parent; `turns` said only
    "no session", the user left to guess why."""
    root, ids = seeded_root(tmp_path)
    (project,) = root.iterdir()
    code, _, err = run(home, "turns", ids["main"], "--root", str(project))
    assert code == 1 and f"no session {ids['main']!r} in " in err and f"{project}; {project}: " in err, err
    _, _, listed = run(home, "list", "--root", str(project))
    assert err.split(f"{project}: ", 1)[1].strip() in listed, "the listing's own words"


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


# What would drive a terminal from a title or a prompt: C1 controls (CSI, OSC), DEL, the line
# separators and the direction overrides and isolates.
DRIVING = "\u009b31m\u009d0;PWNED\u0007\u007f\u2028\u2029\u202a\u202e\u2066\u2069"
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def test_json_escapes_what_would_drive_a_terminal_and_reads_back_the_same(home: Home, tmp_path: Path) -> None:
    hostile = f"evil{DRIVING}end"
    custom = {"type": "custom-title", "customTitle": hostile, "sessionId": claude_lines.SID}
    records = [claude_lines.prompt("u1", None, hostile), claude_lines.say("a1", "u1", "done"), custom]
    project = tmp_path / "projects" / "-home-u-proj"
    project.mkdir(parents=True)
    (project / f"{claude_lines.SID}.jsonl").write_bytes(claude_lines.jsonl(*records))
    root = ["--root", str(tmp_path / "projects")]
    commands = {
        "list": ["list"],
        "tree": ["tree", "--cwd", claude_lines.CWD],
        "turns": ["turns", claude_lines.SID],
        "show": ["show", claude_lines.SID],
    }
    read = {}
    for name, command in commands.items():
        code, out, _ = run(home, *command, *root, "--json")
        assert code == 0 and not RAW_CONTROL.search(out), (name, out)
        assert "evil\\u009b31m\\u009d0;PWNED\\u0007\\u007f" in out, name
        read[name] = json.loads(out)
    escaped = "evil\\u009b31m\\u009d0;PWNED\\u0007\\u007f\\u2028\\u2029\\u202a\\u202e\\u2066\\u2069end"
    assert all(escaped in run(home, *commands[name], *root, "--json")[1] for name in ("list", "tree", "show"))
    assert read["list"]["sessions"][0]["title"] == hostile and read["tree"]["nodes"][0]["title"] == hostile
    assert read["show"]["title"] == hostile and read["show"]["header"]["title"] == hostile
    assert read["turns"]["turns"][0]["user"] == hostile.splitlines()[0]  # a turn shows its first line
    # Only the dangerous characters: the rest of Unicode stays readable in JSON too.
    title = "שלום — 日本語 🎉"
    custom["customTitle"] = title
    (project / f"{claude_lines.SID}.jsonl").write_bytes(claude_lines.jsonl(*records[:2], custom))
    assert f'"title": "{title}"' in run(home, "list", *root, "--json")[1]


def claude_code_root(folder: Path) -> Path:
    """`folder` holding a project folder with a two-turn Claude Code session of `claude_lines.CWD`."""
    records = [
        claude_lines.prompt("u1", None, "first question"),
        claude_lines.say("a1", "u1", "first answer"),
        claude_lines.prompt("u2", "a1", "second question"),
        claude_lines.say("a2", "u2", "second answer"),
    ]
    project = folder / "-home-u-proj"
    project.mkdir(parents=True)
    (project / f"{claude_lines.SID}.jsonl").write_bytes(claude_lines.jsonl(*records))
    return folder


def test_a_harness_fork_says_from_where_and_with_which_home_it_resumes(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    # In Claude Code's default folder (~/.claude/projects): from the session's folder, no variable.
    claude_code_root(tmp_path / "me" / ".claude" / "projects")
    code, out, _ = run(
        home, "fork", claude_lines.SID, "--op-id", "op-1", "--root", str(tmp_path / "me" / ".claude")
    )
    child = out.split()[1]
    assert (
        code == 0
        and out.splitlines()[1] == f"resume it with: cd {claude_lines.CWD} && claude --resume {child}"
    )
    # In another config folder, which Claude Code finds only by CLAUDE_CONFIG_DIR: it is named.
    config = tmp_path / "my configs" / "claude"
    claude_code_root(config / "projects")
    code, out, _ = run(home, "fork", claude_lines.SID, "--op-id", "op-2", "--root", str(config), "--json")
    made = json.loads(out)
    command = f"cd {claude_lines.CWD} && CLAUDE_CONFIG_DIR='{config}' claude --resume {made['child']}"
    assert (
        code == 0 and made["command"] == command and shlex.split(command)[3] == f"CLAUDE_CONFIG_DIR={config}"
    )
    assert (made["cwd"], made["env"]) == (claude_lines.CWD, {"CLAUDE_CONFIG_DIR": str(config)})
    assert made["note"].startswith(f"the session's folder {claude_lines.CWD} is not there")  # not here
    assert made["resume"] == ["claude", "--resume", made["child"]]
    # A copy of a project folder outside any config folder: no home of Claude Code holds the
    # child, so there is no command to give, and it says why.
    copies = claude_code_root(tmp_path / "copies")
    code, out, _ = run(home, "fork", claude_lines.SID, "--op-id", "op-3", "--root", str(copies))
    assert code == 0 and "resume it with" not in out
    assert out.splitlines()[1] == (
        f"Claude Code does not look in {copies / '-home-u-proj'}: it resumes sessions from "
        "$CLAUDE_CONFIG_DIR/projects (by default ~/.claude/projects) only"
    )
    made = json.loads(
        run(home, "fork", claude_lines.SID, "--op-id", "op-3", "--root", str(copies), "--json")[1]
    )
    assert (made["env"], made["command"]) == (None, None) and made["note"].startswith(
        "Claude Code does not look"
    )


def test_a_codex_fork_names_the_codex_home_whose_sessions_hold_it(home: Home, tmp_path: Path) -> None:
    codex_home = tmp_path / "codex"
    day = codex_home / "sessions" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-05-01T00-00-00-{codex_lines.TID}.jsonl").write_bytes(
        codex_lines.rollout(codex_lines.meta(cwd="/w/my app"), *codex_lines.turn("t1", "hi", "hello"))
    )
    code, out, _ = run(home, "fork", codex_lines.TID, "--op-id", "op-1", "--root", str(codex_home))
    child = out.split()[1]
    assert code == 0 and out.splitlines()[1] == (
        f"resume it with: cd '/w/my app' && CODEX_HOME={codex_home} codex resume {child}"
    )


def test_a_fork_whose_session_folder_is_gone_says_why_its_command_fails(home: Home, tmp_path: Path) -> None:
    """The command was printed alone, and failed at its `cd`."""
    project = tmp_path / "my app"
    project.mkdir()
    codex_home = tmp_path / "codex"
    day = codex_home / "sessions" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-05-01T00-00-00-{codex_lines.TID}.jsonl").write_bytes(
        codex_lines.rollout(codex_lines.meta(cwd=str(project)), *codex_lines.turn("t1", "hi", "hello"))
    )
    code, out, _ = run(home, "fork", codex_lines.TID, "--op-id", "op-1", "--root", str(codex_home), "--json")
    assert code == 0 and json.loads(out)["note"] is None
    project.rmdir()
    project.symlink_to(project)  # a loop: cannot be looked at (as a folder one may not enter), not gone
    code, out, _ = run(home, "fork", codex_lines.TID, "--op-id", "op-3", "--root", str(codex_home), "--json")
    assert code == 0 and json.loads(out)["note"] is None
    project.unlink()
    code, out, _ = run(home, "fork", codex_lines.TID, "--op-id", "op-2", "--root", str(codex_home))
    said = out.splitlines()
    assert code == 0 and said[1].startswith(f"resume it with: cd '{project}' && ")
    assert said[2] == (
        f"note: the session's folder {project} is not there any more: the command's `cd` fails until "
        "the folder is made again or the project is moved back"
    )


def test_a_dsh_forks_json_has_no_harness_fields(home: Home, tmp_path: Path) -> None:
    root, ids = seeded_root(tmp_path)
    code, out, _ = run(home, "fork", ids["main"], "--op-id", "op-1", "--root", str(root), "--json")
    assert code == 0 and set(json.loads(out)) == {"child", "seedLength", "forkTurn", "created"}


def receipt_of(home: Home, session: str) -> None:
    """A committed review of `session` at content it no longer has: its state is `changed`."""
    source = Source(session=session, digest="sha256:" + "0" * 64, coveredSeq=1)
    revisions = ScopeRevisions(before="sha256:" + "1" * 64)
    target = Target(workspace="ws", workspaceRevisions=revisions, globalRevisions=revisions)
    receipt = Receipt(
        review="e" * 64, consolidator=1, status=Status.COMMITTED, source=source, target=target,
        createdAt="2026-01-01T00:00:00Z",
    )  # fmt: skip
    ReceiptStore(home.ensure_layout()).write(receipt)


def test_every_harness_has_one_badge_and_titles_start_at_one_column(home: Home, tmp_path: Path) -> None:
    roots = [f"--root={root}" for root in build_roots(tmp_path).values()]
    receipt_of(home, SID)
    listed = json.loads(run(home, "list", *roots, "--json")[1])["sessions"]
    assert {s["format"] for s in listed} == {"dsh", "claude-code", "codex"}
    code, out, _ = run(home, "list", *roots)
    rows = {line.split()[0]: line for line in out.splitlines()[:-1]}
    assert code == 0 and set(rows) == {s["id"] for s in listed}
    titles = {s["id"]: s["title"] or "(untitled)" for s in listed}
    assert all(rows[session].endswith(f"  {title}") for session, title in titles.items()), out
    assert len({len(rows[session]) - len(title) for session, title in titles.items()}) == 1, out
    assert "[Claude Code] [changed]" in rows[SID] and "[Codex]" in rows[TID] and "[" not in rows["dsh-1"]
    code, out, _ = run(home, "tree", "--cwd", CLAUDE_CWD, *roots)
    badges = re.findall(r"[\[(](Claude Code|Codex|DSH)[\])]", out)
    assert code == 0 and "[Claude Code]" in out and "[Codex]" in out, out
    assert "(Claude Code)" not in out and "(Codex)" not in out and "DSH" not in badges
    [reviewed] = [line for line in out.splitlines() if line.endswith(f"  {SID}")]
    assert "[Claude Code] [changed]" in reviewed, out  # the review state, as `list` shows it


def test_a_harness_sessions_show_header_is_its_listing_row(home: Home, tmp_path: Path) -> None:
    roots = [f"--root={root}" for root in build_roots(tmp_path).values()]
    receipt_of(home, SID)
    listed = {s["id"]: s for s in json.loads(run(home, "list", *roots, "--json")[1])["sessions"]}
    for session in (SID, TID):
        code, out, _ = run(home, "show", session, *roots, "--json")
        assert code == 0 and json.loads(out)["header"] == listed[session]
    assert listed[SID]["review"] == {"state": "changed", "status": None} and listed[SID]["digest"] is not None


def test_a_session_without_turns_says_so(home: Home, tmp_path: Path) -> None:
    roots = [f"--root={root}" for root in build_roots(tmp_path).values()]
    code, out, err = run(home, "turns", "019c-else", *roots)
    assert code == 0 and out == "" and err == "019c-else has no turns yet.\n"
    code, out, err = run(home, "turns", "019c-else", *roots, "--json")
    answer = json.loads(out)
    assert code == 0 and err == "" and answer.pop("revision")  # what `fork --expected-revision` takes
    assert answer == {"format": "codex", "turns": [], "kind": "root", "parent": None}


def test_a_tree_says_what_it_could_not_read(home: Home, tmp_path: Path) -> None:
    """The workspace's own Claude Code folder a link: the tree is not an empty workspace's."""
    roots = build_roots(tmp_path)
    project = roots["claude-code"] / CLAUDE_CWD.replace("/", "-")
    project.rename(tmp_path / "elsewhere")
    project.symlink_to(tmp_path / "elsewhere")
    root = f"--root={roots['claude-code']}"
    code, out, err = run(home, "tree", "--cwd", CLAUDE_CWD, root, "--json")
    problem = "a symbolic link; remem reads only real folders and files inside a session root"
    assert code == 0 and json.loads(out) == {
        "nodes": [],
        "errors": [{"path": str(project), "message": problem, "kind": "sessions"}],
    }
    code, out, err = run(home, "tree", "--cwd", CLAUDE_CWD, root)
    assert code == 0 and out == ""
    assert err.startswith(
        f"error: {project}: {problem}\nNo agent sessions of {CLAUDE_CWD} (no folder is there) could be read "
        "(1 unreadable, above)."
    ), err
    listed = json.loads(run(home, "list", "--cwd", CLAUDE_CWD, root, "--json")[1])
    assert json.loads(run(home, "tree", "--cwd", CLAUDE_CWD, root, "--json")[1])["errors"] == listed["errors"]


def test_a_sessions_problems_show_in_the_text_as_in_the_json(home: Home, tmp_path: Path) -> None:
    roots = build_roots(tmp_path)
    transcript = roots["claude-code"] / CLAUDE_CWD.replace("/", "-") / f"{SID}.jsonl"
    transcript.write_bytes(transcript.read_bytes() + b"not json\n" * 3)
    os.utime(transcript, (1_600_000_000, 1_600_000_000))  # not live: every bad line counts
    args = [f"--root={root}" for root in roots.values()]
    listed = {s["id"]: s for s in json.loads(run(home, "list", *args, "--json")[1])["sessions"]}
    assert listed[SID]["problems"] == 3 and listed[TID]["problems"] == 0
    code, out, _ = run(home, "list", *args)
    rows = {line.split()[0]: line for line in out.splitlines()[:-1]}
    assert code == 0 and "[Claude Code] [3 problems]" in rows[SID], out
    assert "problem" not in rows[TID], "a clean file has no mark"
    code, out, _ = run(home, "tree", "--cwd", CLAUDE_CWD, *args)
    [row] = [line for line in out.splitlines() if line.endswith(f"  {SID}")]
    assert code == 0 and "[Claude Code] [3 problems]" in row and out.count("problem") == 1, out


def test_a_fork_after_a_turn_by_its_number(home: Home, tmp_path: Path) -> None:
    root, ids = seeded_root(tmp_path)
    main = ids["main"]

    def fork(*args: str) -> tuple[int, dict[str, Any]]:
        code, out, _ = run(home, "fork", main, "--root", str(root), "--json", *args)
        return code, json.loads(out)

    turns = json.loads(run(home, "turns", main, "--root", str(root), "--json")[1])["turns"]
    code, made = fork("--turn", "2", "--op-id", "by-number")
    assert code == 0 and made["forkTurn"] == 2 and made["created"]
    assert made["seedLength"] == turns[1]["endSeq"] + 1  # the turn's end: all of it, nothing after
    code, again = fork("--turn", "2", "--op-id", "by-number")
    assert code == 0 and again["child"] == made["child"] and not again["created"]
    code, refused = fork("--turn", "99", "--op-id", "too-far")
    assert code == 2 and refused["error"] == {
        "code": "INVALID_ANCHOR",  # as the daemon refuses a turn that is not there
        "message": f"{main} has no turn 99: its turns are 1-{len(turns)} (remem sessions turns)",
    }
    code, out, err = run(home, "fork", main, "--root", str(root), "--turn", "1", "--at", "3", "--op-id", "x")
    assert code == 2 and "--turn and --at both name where to branch" in err


ODD_CWD = "/home/dev/two  spaces\tand a tab\nand a line\u2028and a separator\\n"
SPELLED_CWD = "/home/dev/two  spaces\\tand a tab\\nand a line\\u2028and a separator\\\\n"


def test_a_transcript_names_a_working_directory_as_it_is(home: Home, tmp_path: Path) -> None:
    """Its spaces were collapsed and its tab and line break made spaces: another folder's name."""
    root = tmp_path / "root"
    draft = build_session(SessionSpec(seed=3, turns=1, cwd=ODD_CWD))
    write_session(root, draft)
    project = root / "claude" / "-home-dev-odd"
    project.mkdir(parents=True)
    lines = [claude_lines.prompt("u1", None, "hello"), claude_lines.say("a1", "u1", "hi")]
    (project / f"{claude_lines.SID}.jsonl").write_bytes(
        claude_lines.jsonl(*({**r, "cwd": ODD_CWD} for r in lines))
    )
    for session, where in ((draft.header.id, root), (claude_lines.SID, root / "claude")):
        code, out, err = run(home, "show", session, "--root", str(where))
        assert code == 0, err
        assert f"- Working directory: `{SPELLED_CWD}`\n" in out, out


def test_archive_and_restore_name_a_session_by_the_title_it_is_shown_with(home: Home, tmp_path: Path) -> None:
    """A Claude Code session titled by its file, never renamed in remem, is not "untitled"."""
    roots = [f"--root={root}" for root in build_roots(tmp_path).values()]
    [shown] = [
        s["title"] for s in json.loads(run(home, "list", *roots, "--json")[1])["sessions"] if s["id"] == SID
    ]
    assert shown
    for command, state in (("archive", "archived"), ("restore", "not archived")):
        code, out, _ = run(home, command, SID, *roots)
        assert code == 0 and out.startswith(f'{SID}: "{shown}", {state}; metadata change'), out
    code, out, _ = run(home, "archive", SID, *roots, "--json")
    assert code == 0 and json.loads(out)["title"] is None and json.loads(out)["displayTitle"] == shown
    code, out, _ = run(home, "rename", SID, "Plan B", *roots)
    assert code == 0 and out.startswith(f'{SID}: "Plan B", archived;'), out


def test_a_workspace_reached_through_a_link_lists_what_every_harness_recorded_of_it(
    home: Home, tmp_path: Path
) -> None:
    """Claude Code records the folder a link resolves to (its getcwd), DSH the path its client
    named: a workspace named through a link lists both; a folder below it names the workspace."""
    project = tmp_path / "work" / "proj"
    (project / "src").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(project)
    claude, dsh = tmp_path / "claude" / "projects", tmp_path / "dsh"
    lines = [
        claude_lines.prompt("u1", None, "read the notes", cwd=str(project)),
        claude_lines.say("a1", "u1", "notes read", cwd=str(project)),
    ]
    write(claude / claude_folders(str(project))[0] / f"{SID}.jsonl", claude_lines.jsonl(*lines))
    recorded = build_session(SessionSpec(seed=50, turns=1, cwd=str(link)), session_id="session-linked")
    write_session(dsh, recorded)
    roots = [f"--root={claude}", f"--root={dsh}"]
    both = {SID, "session-linked"}
    code, out, _ = run(home, "tree", "--cwd", str(link), *roots, "--json")
    assert code == 0 and {n["id"] for n in json.loads(out)["nodes"]} == both, out
    code, out, _ = run(home, "tree", "--cwd", str(project), *roots, "--json")  # no link leads back
    assert code == 0 and [n["id"] for n in json.loads(out)["nodes"]] == [SID], out
    code, out, _ = run(home, "list", "--cwd", str(link), *roots, "--json")
    assert code == 0 and {s["id"] for s in json.loads(out)["sessions"]} == both
    code, out, err = run(home, "tree", "--cwd", str(project / "src"), *roots)
    assert code == 0 and out == "", "scripts still read an empty tree"
    assert err.splitlines() == [
        f"No agent sessions of {project / 'src'} were found; a folder above or below it has some:",
        f"  {project} (1 session)",
        f"Give that folder: --cwd {project}",
    ], err
    code, out, err = run(home, "list", "--cwd", str(tmp_path / "work"), *roots)
    assert code == 0 and f"  {project} (1 session)" in err.splitlines() and "sessions.roots" not in err, err


def test_a_missing_folder_is_said_missing_and_a_home_folder_above_is_not_offered(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A typo (`--cwd` naming no folder) is said as one even when a folder above it has sessions;
    an agent run in the user's home folder is no workspace to offer every folder below it."""
    user = tmp_path / "real-user"  # reached through a link, as /home is on some systems: agents
    (user / "proj").mkdir(parents=True)  # record the folder it resolves to
    (tmp_path / "user").symlink_to(user)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    claude = tmp_path / "claude" / "projects"
    for cwd, sid in ((user, SID), (user / "proj", "0b3c4d5e-0000-4000-8000-000000000002")):
        lines = [
            claude_lines.prompt("u1", None, "hi", cwd=str(cwd)),
            claude_lines.say("a1", "u1", "ok", cwd=str(cwd)),
        ]
        write(claude / claude_folders(str(cwd))[0] / f"{sid}.jsonl", claude_lines.jsonl(*lines))
    code, _, err = run(home, "list", "--cwd", str(user / "proj" / "nope"), f"--root={claude}")
    assert code == 0
    assert err.splitlines()[0] == (
        f"No agent sessions of {user / 'proj' / 'nope'} (no folder is there) were found; "
        "a folder above or below it has some:"
    ), err
    assert f"  {user} (1 session)" not in err.splitlines(), "the home folder is never offered from below"
    assert f"Give that folder: --cwd {user / 'proj'}" in err.splitlines(), err
    code, _, err = run(home, "list", "--cwd", str(user / "other"), f"--root={claude}")
    assert code == 0 and "above or below" not in err and "sessions.roots" in err, err

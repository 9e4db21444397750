"""A session named by its id alone (`remem sessions turns|show|fork ID`): taken only when exactly
one log of the roots has the id, and when none does, the refusal says what the id is (decision
0361)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home
from remem.daemon.limits import SESSION_EVENTS_MAX
from remem.daemon.sessions.catalog import SessionCatalog, SessionNotFound
from remem.daemon.sessions.memo import ListingMemo
from remem.daemon.sessions.paths import Encoding
from remem.daemon.sessions.roots import LINK_REASON
from tests.sessions import codex_lines
from tests.sessions.claude_lines import inline_subagents, jsonl
from tests.sessions.codex_lines import rollout, turn
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.sessions.harness_roots import SID, TID, build_roots, claude_project, write

CWD = "/home/dev/projects/demo"
INLINE = "1e000000-0000-4000-8000-0000000001e0"


def sessions(home: Home, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    """`remem sessions ARGS --json`: its exit code and what it printed."""
    result = CliRunner().invoke(cli, ["--home", str(home.root), "sessions", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def copies(tmp_path: Path) -> tuple[str, Path, Path]:
    """One DSH session in two roots (a raw copy in `a`, a compressed one in `b`), as a user who
    copied a root gets: its id, and the two logs."""
    draft = build_session(SessionSpec(seed=1, turns=2, cwd=CWD))
    first = write_session(tmp_path / "a", draft, encoding=Encoding.RAW)
    second = write_session(tmp_path / "b", draft, encoding=Encoding.ZSTD)
    return draft.header.id, first, second


def test_a_root_never_listed_may_hold_another_copy(home: Home, tmp_path: Path) -> None:
    """The index knows only the copy of the root it listed; the other root was never listed, so
    "one row" says nothing about it: the lookup lists, and finds two."""
    session, first, second = copies(tmp_path)
    SessionCatalog.open(home, [tmp_path / "a"]).listing()
    with pytest.raises(SessionNotFound) as caught:
        SessionCatalog.open(home, [tmp_path / "a", tmp_path / "b"]).find(session)
    assert caught.value.code == "AMBIGUOUS"
    assert str(caught.value) == (
        f"session id {session!r} exists at more than one path: {first}, {second}; "
        "remem cannot tell which one is meant: keep one of them in the session roots"
    )


def test_an_ambiguous_id_is_neither_read_nor_forked(home: Home, tmp_path: Path) -> None:
    session, first, second = copies(tmp_path)
    both = ["--root", str(tmp_path / "a"), "--root", str(tmp_path / "b")]
    assert sessions(home, "list", "--root", str(tmp_path / "a"))[0] == 0
    before = {p: p.read_bytes() for p in (first, second)}
    for command in (["turns", session], ["show", session], ["fork", session, "--op-id", "op-1"]):
        code, answer = sessions(home, *command, *both)
        assert code == 1, command
        assert answer["error"]["code"] == "AMBIGUOUS" and str(first) in answer["error"]["message"]
        assert str(second) in answer["error"]["message"]
    assert not home.sessions.exists() or not any(home.sessions.rglob("session.jsonl*")), "no child"
    assert {p: p.read_bytes() for p in (first, second)} == before


def test_a_lookup_skips_the_listing_once_every_root_was_listed(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shortcut stays for what it is for: a fork need not wait for every other log to be
    indexed. A root added since is listed first, once."""
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    mine = build_session(SessionSpec(seed=1, turns=1, cwd=CWD))
    write_session(a, mine)
    write_session(b, build_session(SessionSpec(seed=2, turns=1, cwd=CWD)))
    write_session(c, build_session(SessionSpec(seed=3, turns=1, cwd=CWD)))
    SessionCatalog.open(home, [a, b]).listing()
    listings: list[str | None] = []
    entries = SessionCatalog.entries

    def counted(catalog: SessionCatalog, cwd: str | None = None, progress: object = None) -> object:
        listings.append(cwd)
        return entries(catalog, cwd)

    monkeypatch.setattr(SessionCatalog, "entries", counted)
    assert SessionCatalog.open(home, [a, b]).find(mine.header.id).summary.id == mine.header.id
    assert listings == []
    for _ in range(2):
        assert SessionCatalog.open(home, [a, b, c]).find(mine.header.id).summary.id == mine.header.id
    assert listings == [None], "the new root is listed once, by the first lookup"


def test_a_tree_node_inside_a_file_is_told_apart_from_a_session(home: Home, tmp_path: Path) -> None:
    """`sessions tree` shows a Claude Code in-file branch as `<session>@<leaf>` and an inline
    subagent as `<session>@<root>`: neither is a session of its own, and the refusal says what
    it is and what to run."""
    roots = build_roots(tmp_path)
    write(claude_project(roots["claude-code"]) / f"{INLINE}.jsonl", jsonl(*inline(INLINE)))
    where = [f"--root={roots['claude-code']}"]
    branch = f"{SID}@a3"  # the rewind left `and again` (u2, answered by a3) after turn 1
    nodes = {n["id"] for n in sessions(home, "tree", "--cwd", "/home/u/proj", *where)[1]["nodes"]}
    assert {branch, f"{INLINE}@s1"} <= nodes
    for command in (["turns", branch], ["show", branch], ["fork", branch, "--op-id", "b"]):
        code, answer = sessions(home, *command, *where)
        assert (code, answer["error"]["code"]) == (1, "NOT_FOUND"), command
        message = answer["error"]["message"]
        assert message.startswith(f"{branch!r} is an in-file branch of session {SID!r}"), message
        assert f"`remem sessions show {SID}`" in message and f"`remem sessions turns {SID}`" in message
    code, answer = sessions(home, "turns", f"{INLINE}@s1", *where)
    assert answer["error"]["message"].startswith(
        f"'{INLINE}@s1' is a subagent Claude Code wrote inside session {INLINE!r}'s file, not a session"
    )
    code, answer = sessions(home, "turns", f"{SID}@nothing", *where)
    assert answer["error"]["message"] == (
        f"no session '{SID}@nothing': session {SID!r} has no in-file branch or inline subagent 'nothing'"
    )


def test_the_beginning_of_an_id_asks_for_the_whole_id(home: Home, tmp_path: Path) -> None:
    roots = build_roots(tmp_path)
    code, answer = sessions(home, "turns", SID[:8], f"--root={roots['claude-code']}")
    assert (code, answer["error"]["code"]) == (1, "NOT_FOUND")
    assert (
        answer["error"]["message"]
        == f"no session {SID[:8]!r}: give a session's full id ({SID} begins with it)"
    )


def inline(session: str) -> list[dict[str, object]]:
    return [{**record, "sessionId": session} for record in inline_subagents()]


# The session of each format in `build_roots`, and its file.
def session_file(roots: dict[str, Path], fmt: str) -> tuple[str, Path]:
    if fmt == "claude-code":
        return SID, claude_project(roots[fmt]) / f"{SID}.jsonl"
    if fmt == "codex":
        return TID, next(roots[fmt].rglob(f"rollout-*-{TID}.jsonl"))
    return "dsh-1", next(roots[fmt].rglob("session.jsonl"))


def damage(fmt: str, log: Path) -> None:
    """What makes the file no session its listing can read: an empty Claude Code transcript, a
    Codex rollout whose first line is not its `session_meta`, a DSH log that is no JSON."""
    if fmt == "claude-code":
        write(log, b"")
    elif fmt == "codex":
        write(log, rollout(*turn("t1", "hi", "hello")))
    else:
        write(log, b"not a session log\n")


COMMANDS = (["turns"], ["show"], ["fork", "--op-id", "op-1"])


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "dsh"])
def test_a_session_whose_file_cannot_be_read_is_said_so(home: Home, tmp_path: Path, fmt: str) -> None:
    """The listing reports the file it cannot read; `turns`, `show` and `fork` of its session say
    the same, naming the file and why (`UNREADABLE`, exit 1), as `consolidate` does: not that
    there is no such session."""
    roots = build_roots(tmp_path)
    session, log = session_file(roots, fmt)
    damage(fmt, log)
    where = [f"--root={roots[fmt]}"]
    [error] = [e for e in sessions(home, "list", *where)[1]["errors"] if e["path"] == str(log)]
    for command, *rest in COMMANDS:
        code, answer = sessions(home, command, session, *rest, *where)
        assert (code, answer["error"]["code"]) == (1, "UNREADABLE"), (command, answer)
        said = f"session {session} cannot be read: {log}: {error['message']}"
        assert answer["error"]["message"] == said, command
    assert not home.sessions.exists() or not any(home.sessions.rglob("session.jsonl*")), "no child"


@pytest.mark.parametrize("fmt", ["claude-code", "codex", "dsh"])
def test_a_file_made_a_link_after_it_was_listed_is_said_to_be_one(
    home: Home, tmp_path: Path, fmt: str
) -> None:
    roots = build_roots(tmp_path)
    session, log = session_file(roots, fmt)
    where = [f"--root={roots[fmt]}"]
    assert sessions(home, "turns", session, *where)[0] == 0, "listed and indexed"
    log.symlink_to(log.rename(tmp_path / "elsewhere.jsonl"))
    for command, *rest in COMMANDS:
        code, answer = sessions(home, command, session, *rest, *where)
        assert (code, answer["error"]["code"]) == (1, "UNREADABLE"), (command, answer)
        assert answer["error"]["message"] == f"session {session} cannot be read: {log}: {LINK_REASON}"


def test_a_link_the_remembered_listing_has_not_seen_yet_is_said_to_be_one(home: Home, tmp_path: Path) -> None:
    """The daemon's listing is remembered until the watcher tells of a change: a file swapped for a
    link just before the lookup is still in it, and is said to be a link all the same."""
    roots = build_roots(tmp_path)
    memo = ListingMemo(lambda: True)  # no news from a watcher comes
    log = claude_project(roots["claude-code"]) / f"{SID}.jsonl"
    assert SessionCatalog(home, [roots["claude-code"]], 60, memo).find(SID).path == log
    folder = log.parent.rename(tmp_path / "elsewhere")
    log.parent.symlink_to(folder)
    with pytest.raises(SessionNotFound) as caught:
        SessionCatalog(home, [roots["claude-code"]], 60, memo).find(SID)
    assert caught.value.code == "UNREADABLE"
    assert str(caught.value).startswith(
        f"session {SID} cannot be read: {log}: {log.parent} is a symbolic link"
    )


def test_a_codex_thread_beside_an_unreadable_rollout_of_its_own_is_found_in_the_index(
    home: Home, tmp_path: Path
) -> None:
    """A file named as a rollout of the thread that no listing can read (a broken one) counted
    as news at every lookup: each lookup by id walked the root and listed every session."""
    day = tmp_path / "codex" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-05-01T00-00-00-{TID}.jsonl").write_bytes(
        rollout(codex_lines.meta(), *turn("t1", "hi", "hello"))
    )
    (day / f"rollout-2026-05-01T00-00-09-{TID}_019c0000-0000-7000-8000-00000000beef.jsonl").write_text(
        "not json\n"
    )
    catalog = SessionCatalog(home, [tmp_path / "codex"], idle_seconds=0)
    catalog.listing()
    found = catalog._find_indexed(TID)
    assert found is not None and found.summary.turns == 1


def test_a_log_listed_but_too_long_to_read_whole_is_unreadable_not_missing(
    home: Home, tmp_path: Path
) -> None:
    """The listing reads a log batch by batch, `show` whole, up to SESSION_EVENTS_MAX events: a
    longer log was listed and then said to be no session (`NOT_FOUND`)."""
    draft = build_session(SessionSpec(seed=1, target_events=SESSION_EVENTS_MAX + 10, cwd=CWD))
    write_session(tmp_path / "a", draft, encoding=Encoding.RAW)
    root = ["--root", str(tmp_path / "a")]
    code, listed = sessions(home, "list", *root)
    assert code == 0 and [s["id"] for s in listed["sessions"]] == [draft.header.id], listed["errors"]
    code, answer = sessions(home, "show", draft.header.id, *root)
    assert (code, answer["error"]["code"]) == (1, "UNREADABLE"), answer
    assert f"remem reads logs of up to {SESSION_EVENTS_MAX} events" in answer["error"]["message"]

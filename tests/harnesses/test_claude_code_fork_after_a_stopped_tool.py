"""A remem fork of a Claude Code session after a turn that stopped once a tool had run
(`--max-turns`, Ctrl-C), continued by the real CLI (decision 0535).

`claude -p --max-turns 1` stops after the model's first response: its text, then a `Read`
call, whose result Claude Code writes before it stops. The model is asked nothing more in that
turn, and the next prompt is sent after the call and its result. The fork after that turn,
resumed with a new prompt, must send the model exactly what the parent sent with its next
prompt (that prompt swapped for the child's), and leave the parent's file as it was; the
lines of the call and its result belong to the turn, so `--at` either of them forks there too.
So must a fork made before the parent goes on, when Claude Code's note is the file's last line,
and the default fork of a session whose Claude Code was killed once the tool had run, when no
harness writes it any more.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.consolidation.harness_evidence import project_harness
from remem.daemon.home import Home
from tests.waiting import wait_until

from ..sessions.claude_processes import a_process, pid_record, write_pid_file
from .claude import ClaudeCode
from .fake_anthropic import FakeAnthropic, hang, text, tool_uses
from .requests import comparable
from .toolchain import RUN_TIMEOUT, interrupt

pytestmark = pytest.mark.slow


def remem(home: Path, root: Path, *args: str) -> dict:  # type: ignore[type-arg]
    done = CliRunner().invoke(cli, ["--home", str(home), "sessions", *args, "--root", str(root), "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _lines(transcript: Path, kind: str) -> list[int]:
    """The lines of `transcript` whose message holds a `kind` content block, or whose attachment
    is of that kind."""
    found = []
    for number, line in enumerate(transcript.read_text().splitlines(), start=1):
        record = json.loads(line)
        content = (record.get("message") or {}).get("content")
        kinds = [part.get("type") for part in content] if isinstance(content, list) else []
        if kind in (*kinds, (record.get("attachment") or {}).get("type")):
            found.append(number)
    return found


# Before the parent goes on, Claude Code's note is the file's last line, on no path: nothing
# hangs off it yet. With no text before the call the turn has no answer: the note ends it too.
@pytest.mark.parametrize(
    ("said", "went_on_first"),
    [("let me read", True), ("let me read", False), (None, False)],
    ids=["after-the-parent-went-on", "before-the-parent-went-on", "no-text-before-the-parent-went-on"],
)
def test_a_fork_after_a_turn_stopped_past_its_tool_call_keeps_the_call_and_its_result(
    tmp_path: Path, said: str | None, went_on_first: bool
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "cc", fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(tool_uses(("Read", {"file_path": str(cc.cwd / "notes.txt")}), text=said))
        parent = cc.run("first question", options=("--max-turns", "1"), check=False)
        assert parent.result["subtype"] == "error_max_turns", parent.result

        def go_on() -> list[dict]:  # type: ignore[type-arg]
            fake.reply(text("second answer"))
            cc.run("second question", resume=parent.session_id)
            return fake.requests[-1]["messages"]  # type: ignore[no-any-return]

        next_sent = go_on() if went_on_first else None
        before = parent.transcript.read_bytes()
        (call,), (result,) = _lines(parent.transcript, "tool_use"), _lines(parent.transcript, "tool_result")
        (note,) = _lines(parent.transcript, "max_turns_reached")

        home, root = tmp_path / "home", cc.projects
        turns = remem(home, root, "turns", parent.session_id)["turns"]
        assert [(t["user"], t["status"]) for t in turns] == [
            ("first question", "completed"),
            *([("second question", "completed")] if went_on_first else []),
        ]
        # It ends at Claude Code's note that it stopped, which the child needs to resume as the
        # parent did: without it, Claude Code closes the turn with "No response requested.".
        assert call < result < note == turns[0]["endSeq"]
        made = {
            anchor: remem(home, root, "fork", parent.session_id, "--op-id", f"op-{anchor}", *anchor.split())
            for anchor in ("--turn 1", f"--at {call}", f"--at {result}")
        }
        fake.reply(text("child answer"))
        child = cc.run("child question", resume=made["--turn 1"]["child"])
        sent = fake.requests[-1]["messages"]
        assert parent.transcript.read_bytes() == before
        next_sent = next_sent or go_on()

    assert child.result["result"] == "child answer"
    assert comparable(sent, "child question") == comparable(next_sent, "second question")
    assert "alpha" in json.dumps(sent)  # what the Read returned, which the model saw
    # Anchored on the call or on its result, the fork is the same cut, after the same turn.
    ((turn, _),) = {(done["forkTurn"], done["seedLength"]) for done in made.values()}
    assert turn == 1


def test_a_fork_after_a_turn_stopped_with_ctrl_c_past_its_tool_call_resumes_as_the_parent_went_on(
    tmp_path: Path,
) -> None:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "cc", fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(text("first answer"))
        parent = cc.run("first question")
        fake.reply(tool_uses(("Read", {"file_path": str(cc.cwd / "notes.txt")}), text="let me read"), hang())
        asked = fake.count
        # Ctrl-C once the model was asked again, after the Read ran.
        stopped = cc.command("stopped question", resume=parent.session_id)
        interrupt(stopped, cc.cwd, cc.env(), lambda: fake.count >= asked + 2)
        fake.reply(text("third answer"))
        cc.run("third question", resume=parent.session_id)
        next_sent = fake.requests[-1]["messages"]
        before = parent.transcript.read_bytes()
        (result,) = _lines(parent.transcript, "tool_result")

        home, root = tmp_path / "home", cc.projects
        turns = remem(home, root, "turns", parent.session_id)["turns"]
        assert [t["user"] for t in turns] == ["first question", "stopped question", "third question"]
        assert turns[1]["startSeq"] < result <= turns[1]["endSeq"] < turns[2]["startSeq"]
        made = remem(home, root, "fork", parent.session_id, "--op-id", "op-stopped", "--at", str(result))
        fake.reply(text("child answer"))
        child = cc.run("child question", resume=made["child"])
        sent = fake.requests[-1]["messages"]

    assert made["forkTurn"] == 2 and child.result["result"] == "child answer"
    assert comparable(sent, "child question") == comparable(next_sent, "third question")
    assert "alpha" in json.dumps(sent)
    assert parent.transcript.read_bytes() == before


@contextmanager
def _running(cc: ClaudeCode, session: str) -> Iterator[None]:
    """A Claude Code process runs `session` (as its pid file says) while the block runs."""
    with a_process() as process:
        pid_file = write_pid_file(cc.config_dir, process.pid, pid_record(process.pid, session))
        try:
            yield
        finally:
            pid_file.unlink()


def _killed(cc: ClaudeCode, command: list[str], asked: int, transcript: Path) -> None:
    """Run `command` and kill it (SIGKILL) once the model was asked again and the `Read`'s result
    is in `transcript`: no interruption marker, no note, only the call and its result after the
    turn's text."""
    process = subprocess.Popen(
        command, cwd=cc.cwd, env=cc.env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(
            lambda: cc.fake.count >= asked + 2 and _lines(transcript, "tool_result"),
            what="the model asked after the Read, its result written",
        )
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=RUN_TIMEOUT)


# Live (its file written within `sessions.idle_seconds`, here a long one), the turn may still be
# going on: it ends at its text, as before. Quiet (its file older than that, and its process
# gone), it ended where it stands, past its call and the call's result.
@pytest.mark.parametrize("live", [False, True], ids=["quiet", "live"])
def test_the_default_fork_of_a_quiet_session_killed_past_its_tool_call_keeps_the_call_and_its_result(
    tmp_path: Path, live: bool
) -> None:
    home, old = tmp_path / "home", 1_600_000_000
    Home(home).settings_file.parent.mkdir(parents=True, exist_ok=True)
    Home(home).settings_file.write_text(f"sessions:\n  idle_seconds: {10**9 if live else 120}\n")
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "cc", fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(text("first answer"))
        parent = cc.run("first question")
        fake.reply(tool_uses(("Read", {"file_path": str(cc.cwd / "notes.txt")}), text="let me read"), hang())
        _killed(cc, cc.command("killed question", resume=parent.session_id), fake.count, parent.transcript)
        os.utime(parent.transcript, (old, old))
        (call,), (result,) = _lines(parent.transcript, "tool_use"), _lines(parent.transcript, "tool_result")
        said = max(n for n in _lines(parent.transcript, "text") if n < call)  # "let me read"
        assert said < call < result

        evidence = project_harness("claude-code", parent.transcript.name, parent.transcript.read_bytes())
        assert [t.stopped for t in evidence.turns] == [False, True]  # its "let me read" no answer

        root = cc.projects
        turns = remem(home, root, "turns", parent.session_id)["turns"]
        assert [(t["user"], t["status"]) for t in turns] == [
            ("first question", "completed"),
            ("killed question", "completed"),
        ]
        assert turns[1]["endSeq"] == (said if live else result)
        if not live:  # unchanged, but a Claude Code process runs it again: its turn may go on
            with _running(cc, parent.session_id):
                again = remem(home, root, "turns", parent.session_id)["turns"]
            assert again[1]["endSeq"] == said
        made = remem(home, root, "fork", parent.session_id, "--op-id", "op-default")
        if live:
            return
        fake.reply(text("child answer"))
        child = cc.run("child question", resume=made["child"])
        sent = fake.requests[-1]["messages"]
        fake.reply(text("second answer"))
        cc.run("second question", resume=parent.session_id)
        next_sent = fake.requests[-1]["messages"]

    # Resumed (Claude Code closes the killed turn with "No response requested." first, under
    # the next prompt): that turn is still said stopped.
    evidence = project_harness("claude-code", parent.transcript.name, parent.transcript.read_bytes())
    assert [(t.assistant, t.stopped) for t in evidence.turns] == [
        ("first answer", False),
        ("let me read", True),
        ("second answer", False),
    ]
    assert made["forkTurn"] == 2 and child.result["result"] == "child answer"
    assert comparable(sent, "child question") == comparable(next_sent, "second question")
    assert "alpha" in json.dumps(sent)


def _fork(home: Path, root: Path, session: str, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    """`remem sessions fork SESSION ARGS --json`, in this process: its exit code and output."""
    done = CliRunner().invoke(
        cli, ["--home", str(home), "sessions", "fork", session, *args, "--root", str(root), "--json"]
    )
    return done.exit_code, json.loads(done.stdout)


# Read live, a killed turn ends at its text; read quiet, past its call and its result (decision
# 0535). A fork asked at the revision of turns read at one liveness and made at the other would
# cut other lines than the turns showed after that turn, so it is refused as stale (decision
# 0544); one after an earlier turn, or of turns that end at the same lines either way, is made,
# with a listing's revision too. The session is quiet (its file older than
# `sessions.idle_seconds`) unless a Claude Code process runs it.
@pytest.mark.parametrize("read_live", [True, False], ids=["read-live-forked-quiet", "read-quiet-forked-live"])
def test_a_fork_at_turns_read_at_another_liveness_is_stale_when_that_moved_the_cut(
    tmp_path: Path, read_live: bool
) -> None:
    home, old = tmp_path / "home", 1_600_000_000
    Home(home).settings_file.parent.mkdir(parents=True, exist_ok=True)
    Home(home).settings_file.write_text("sessions:\n  idle_seconds: 120\n")
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "cc", fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(text("first answer"))
        parent = cc.run("first question")
        session, root = parent.session_id, cc.projects
        live, quiet = partial(_running, cc, session), nullcontext
        read_at, fork_at = (live, quiet) if read_live else (quiet, live)

        os.utime(parent.transcript, (old, old))
        with read_at():
            answered = remem(home, root, "turns", session)
        with fork_at():  # its last turn answered, nothing after: it ends there either way
            code, alike = _fork(
                home, root, session, "--expected-revision", answered["revision"], "--op-id", "a"
            )
        assert code == 0, alike

        fake.reply(tool_uses(("Read", {"file_path": str(cc.cwd / "notes.txt")}), text="let me read"), hang())
        _killed(cc, cc.command("killed question", resume=session), fake.count, parent.transcript)
        os.utime(parent.transcript, (old, old))
        with read_at():
            shown = remem(home, root, "turns", session)
        with fork_at():
            now = remem(home, root, "turns", session)
            ends = [str(shown["turns"][1]["endSeq"])]
            refusals = [
                _fork(
                    home, root, session, "--expected-revision", shown["revision"], "--op-id", f"r{n}", *anchor
                )
                for n, anchor in enumerate((["--turn", "2"], ["--at", *ends], []))
            ]
            listed = {s["id"]: s for s in remem(home, root, "list")["sessions"]}[session]
            earlier = [
                _fork(home, root, session, "--expected-revision", revision, "--op-id", f"e{n}", "--turn", "1")
                for n, revision in enumerate((shown["revision"], listed["revision"]))
            ]
            code, made = _fork(home, root, session, "--expected-revision", now["revision"], "--op-id", "now")

    assert shown["turns"][1]["endSeq"] != now["turns"][1]["endSeq"]
    assert now["revision"] == listed["revision"] + (":live" if not read_live else "")
    assert [(c, e.get("forkTurn")) for c, e in earlier] == [(0, 1), (0, 1)], earlier
    moved = "no harness writes it any more" if read_live else "a harness may write it now"
    for refused_code, refused in refusals:
        assert (refused_code, refused.get("error", {}).get("code")) == (3, "STALE_SOURCE"), refused
        message = refused["error"]["message"]
        assert moved in message and "changed since" not in message, refused
        assert f"remem sessions turns {session} --json" in message, refused
    assert shown["revision"].endswith(":live") is read_live and code == 0 and made["forkTurn"] == 2


# `sessions show` gives a harness session's turns under its listing row: the row's revision is
# that of the turns shown, so a fork with it once the session is quiet is refused as stale where
# it would be cut past the calls the turns did not show (decision 0544).
def test_a_fork_at_the_revision_sessions_show_gave_is_cut_where_its_turns_ended(tmp_path: Path) -> None:
    home, old = tmp_path / "home", 1_600_000_000
    Home(home).settings_file.parent.mkdir(parents=True, exist_ok=True)
    Home(home).settings_file.write_text("sessions:\n  idle_seconds: 120\n")
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path / "cc", fake)
        (cc.cwd / "notes.txt").write_text("alpha\n")
        fake.reply(text("first answer"))
        parent = cc.run("first question")
        session, root = parent.session_id, cc.projects
        fake.reply(tool_uses(("Read", {"file_path": str(cc.cwd / "notes.txt")}), text="let me read"), hang())
        _killed(cc, cc.command("killed question", resume=session), fake.count, parent.transcript)
        os.utime(parent.transcript, (old, old))
        with _running(cc, session):
            shown = remem(home, root, "show", session)
        now = remem(home, root, "turns", session)
        at = str(shown["turns"][1]["endSeq"])
        code, refused = _fork(
            home, root, session, "--expected-revision", shown["header"]["revision"], "--at", at
        )

    assert shown["turns"][1]["endSeq"] < now["turns"][1]["endSeq"]
    assert (code, refused.get("error", {}).get("code")) == (3, "STALE_SOURCE"), refused
    assert shown["header"]["revision"] == f"{now['revision']}:live"

"""A run its receipt answers projects no evidence (decision 0469).

Projection (a Claude Code file's turns as the model is shown them) costs several times the read
and hash each run makes. It was done in the freeze of every run, so consolidating a session
already reviewed again, and every request queued behind a running review of it, projected the
whole session for nothing. A run now projects in its freeze only when its review surely asks
the model (none yet, or a failed one); any other waits holding the digest alone and, should it
have to review after all, reads the session again under the review's lock.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.consolidation import runner
from remem.daemon.consolidation.evidence import project_evidence
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator, Refused
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import ConsolidationResult, Status
from remem.daemon.sessions.reader import read_session
from tests.daemon.helpers import crash_at
from tests.fake_openai import FakeOpenAI, Reply, status, tool_call
from tests.sessions import claude_lines as cl
from tests.sessions.factory import SessionSpec, build_session, write_session
from tests.sessions.harness_roots import claude_project, write
from tests.sessions.holders import holding

from .conftest import OLD, Source, configure, proposal, put


@pytest.fixture
def projections(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sessions each projection in this process was of (the real projection runs)."""
    made: list[str] = []
    project: Callable[..., Any] = runner._evidence

    def counted(catalog: Any, entry: Any, log: Any) -> Any:
        made.append(entry.summary.id)
        return project(catalog, entry, log)

    monkeypatch.setattr(runner, "_evidence", counted)
    return made


def _consolidated(home: Home, session: str) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(session, lambda phase, data: None))


def test_a_session_consolidated_again_is_answered_from_its_receipt_without_projecting(
    home: Home, fake: FakeOpenAI, source: Source, projections: list[str]
) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    first = _consolidated(home, source.id)
    assert first.status is Status.COMMITTED and projections == [source.id]

    again = _consolidated(home, source.id)
    assert (again.review, again.status, again.recovered) == (first.review, Status.COMMITTED, False)
    assert projections == [source.id], "the receipt answered it: nothing projected"
    assert fake.count == 1


def test_a_run_frozen_while_its_receipt_is_under_way_reads_the_session_again_to_review_it(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
    projections: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    crash_at("consolidation.after-attempt-receipt", home, monkeypatch, "consolidate", source.id)
    [left] = ReceiptStore(home).all()
    assert left.status is Status.RUNNING and fake.count == 0  # killed before the model was asked

    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    done = _consolidated(home, source.id)
    assert (done.review, done.status) == (left.review, Status.COMMITTED)
    assert projections == [source.id], "projected once, under the review's lock"
    [request] = fake.requests
    shown = project_evidence(read_session(source.path)).render()
    assert any(shown in str(m["content"]) for m in request["messages"]), "the session's evidence"
    assert ReceiptStore(home).read(left.review).attempts[-1].number == 2  # type: ignore[union-attr]


def test_a_request_queued_behind_a_running_review_of_its_session_projects_nothing(
    home: Home, fake: FakeOpenAI, source: Source, projections: list[str]
) -> None:
    asked, answer = threading.Event(), threading.Event()

    def held(request: dict[str, Any]) -> Reply:
        asked.set()
        assert answer.wait(60), "the queued request never waited"
        return tool_call(proposal(put("prefer-uv", source.evidence())))

    fake.reply_with(held)

    async def both() -> tuple[ConsolidationResult, ConsolidationResult]:
        consolidator, queued = Consolidator(home), asyncio.Event()
        first = asyncio.create_task(consolidator.consolidate(source.id, lambda phase, data: None))
        assert await asyncio.to_thread(asked.wait, 60)  # the first run's review is under way

        def progress(phase: str, data: dict[str, Any]) -> None:
            if phase == "waiting":
                queued.set()

        second = asyncio.create_task(consolidator.consolidate(source.id, progress))
        await queued.wait()
        answer.set()
        return await first, await second

    first, second = asyncio.run(both())
    assert (first.status, second.status) == (Status.COMMITTED, Status.COMMITTED)
    assert second.review == first.review and fake.count == 1
    assert projections == [source.id], "the queued request was answered by the receipt: nothing projected"


def _queued_behind_a_failing_run(
    home: Home, fake: FakeOpenAI, session: str, meanwhile: Callable[[], None], *replies: Reply
) -> ConsolidationResult:
    """A request queued behind a run of the same review (so frozen holding the digest alone):
    `meanwhile` runs while it waits, then that run fails, and the queued one must review the
    session itself, reading it again under the review's lock; the model answers it `replies`."""
    asked, answer = threading.Event(), threading.Event()

    def held(request: dict[str, Any]) -> Reply:
        asked.set()
        assert answer.wait(60), "the queued request never waited"
        return status(401, "bad key")

    fake.reply_with(held)
    fake.reply(*replies)

    async def both() -> ConsolidationResult:
        consolidator, queued = Consolidator(home), asyncio.Event()
        first = asyncio.create_task(consolidator.consolidate(session, lambda phase, data: None))
        assert await asyncio.to_thread(asked.wait, 60)  # the first run's review is under way

        def progress(phase: str, data: dict[str, Any]) -> None:
            if phase == "waiting":
                queued.set()

        second = asyncio.create_task(consolidator.consolidate(session, progress))
        await queued.wait()
        meanwhile()
        answer.set()
        assert (await first).status not in (Status.COMMITTED, Status.NO_CHANGE)
        return await second

    return asyncio.run(both())


def test_a_session_touched_while_a_request_waited_is_reviewed_by_its_content(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    # Only the file's times move (a backup tool, a `touch`): the content the review id was made of is there.
    touch = partial(os.utime, source.path, (OLD + 60, OLD + 60))
    done = _queued_behind_a_failing_run(
        home, fake, source.id, touch, tool_call(proposal(put("prefer-uv", source.evidence())))
    )
    assert done.status is Status.COMMITTED and fake.count == 2
    assert ReceiptStore(home).read(done.review).attempts[-1].number == 2  # type: ignore[union-attr]


def test_a_session_whose_content_changed_while_a_request_waited_is_refused(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path
) -> None:
    other = build_session(SessionSpec(seed=2, turns=4, cwd=source.cwd), session_id=source.id)
    rewritten = write_session(tmp_path / "other", other).read_bytes()

    def rewrite() -> None:
        source.path.write_bytes(rewritten)
        os.utime(source.path, (OLD, OLD))

    with pytest.raises(Refused) as refused:
        _queued_behind_a_failing_run(home, fake, source.id, rewrite)
    assert refused.value.code == "SOURCE_CHANGED"
    assert refused.value.message == (
        f"session {source.id}'s content changed while this request waited, so it is no longer what "
        f"this review was started for; run `remem consolidate {source.id}` again to review the new content"
    )
    assert fake.count == 1, "the changed session was not shown to the model"


def test_a_claude_code_session_appended_while_a_request_waited_is_refused_live(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    # As a new request would be told: a harness file changed within sessions.idle_seconds is live.
    claude = tmp_path / "claude"
    configure(home, fake, tmp_path / "dsh", (claude, "claude-code"), timeout_seconds=20)
    talk = [cl.prompt("u1", None, "always run the tests with uv"), cl.say("a1", "u1", "noted")]
    path = write(claude_project(claude) / f"{cl.SID}.jsonl", cl.jsonl(*talk))
    appended = cl.jsonl(*talk, cl.prompt("u2", "a1", "and lint with ruff"))

    with pytest.raises(Refused) as refused:
        _queued_behind_a_failing_run(home, fake, cl.SID, partial(write, path, appended, old=False))
    assert refused.value.code == "LIVE"
    assert refused.value.message.startswith(f"session {cl.SID} is still live: its file last changed ")
    assert fake.count == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc tells on Linux only")
def test_a_session_its_harness_opened_for_writing_while_a_request_waited_is_refused_live(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    # The same judgement as the freeze's (decision 0487): quiet, unchanged, yet held for writing.
    with ExitStack() as held:
        harness: list[subprocess.Popen[str]] = []
        take_up = lambda: harness.append(held.enter_context(holding(source.path, "a")))  # noqa: E731
        with pytest.raises(Refused) as refused:
            _queued_behind_a_failing_run(home, fake, source.id, take_up)
        assert refused.value.code == "LIVE"
        assert f"a process (pid {harness[0].pid}) still has its file open" in refused.value.message
    assert fake.count == 1, "the session taken up again was not shown to the model"


def test_a_session_removed_while_a_request_waited_is_refused_as_gone(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    with pytest.raises(Refused) as refused:
        _queued_behind_a_failing_run(home, fake, source.id, source.path.unlink)
    assert refused.value.code == "NOT_FOUND"
    assert refused.value.message.startswith(
        f"session {source.id} was removed while this request waited: its file {source.path} is no "
        "longer in the session roots, so there is nothing to review"
    )
    assert fake.count == 1

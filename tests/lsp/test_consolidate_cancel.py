"""A cancelled consolidation is answered with what happened (decision 0352): a cancel once
committing has begun stops nothing, so the request gets the committed outcome, never "cancelled";
and a cancel of the progress the client gave, sent before the server began it, still stops the
run. The real server, the daemon it starts and the fake model server, as in test_consolidate."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from tests.consolidation.conftest import Source, proposal, put
from tests.fake_openai import FakeOpenAI, tool_call
from tests.lsp.consolidating import consolidating, source
from tests.lsp.editor import until
from tests.lsp.live import Editor, remem

pytestmark = pytest.mark.asyncio(loop_scope="module")
REQUEST_CANCELLED = -32800
COMMITTING = "Committing to memory"
fake, home, editor = consolidating("lsp-consolidate-cancel")


def record(home: Home, reviewed: Source, name: str) -> bool:
    return (home.workspaces / WorkspaceId.from_cwd(reviewed.cwd).key / f"{name}.md").is_file()


async def consolidation(
    editor: Editor, msg_id: str, argument: dict[str, Any], token: str | None
) -> asyncio.Future[Any]:
    if token is not None:
        editor.client.progress_reports[token] = []  # the client made this token itself
    params = types.ExecuteCommandParams(
        command="remem.lsp.consolidate", arguments=[argument], work_done_token=token
    )
    sent = asyncio.ensure_future(
        editor.client.protocol.send_request_async("workspace/executeCommand", params, msg_id=msg_id)
    )
    await asyncio.sleep(0)  # pytest-lsp sends it from a task: out before what the test sends next
    return sent


def committing(editor: Editor, token: str) -> bool:
    return any(getattr(r, "message", None) == COMMITTING for r in editor.client.progress_reports[token])


async def test_a_request_cancelled_while_committing_is_answered_committed(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    reviewed = source(home, seed=21)
    fake.reply(tool_call(proposal(put("prefer-uv", reviewed.evidence()))))
    sent = await consolidation(
        editor, "late-cancel", {"session": reviewed.id, "announce": False}, "ext-token"
    )
    await until(lambda: committing(editor, "ext-token"))
    editor.client.cancel_request(types.CancelParams(id="late-cancel"))
    outcome = await sent
    assert (outcome["status"], outcome["changes"]) == ("committed", 1)
    assert outcome["message"].startswith("Consolidated ") and record(home, reviewed, "prefer-uv")


async def test_a_generic_client_that_cancelled_too_late_is_told_the_outcome(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    reviewed = source(home, seed=22)
    fake.reply(tool_call(proposal(put("run-ci-first", reviewed.evidence()))))
    known, asked = set(editor.client.progress_reports), len(editor.asked)
    sent = await consolidation(editor, "late-generic", {"session": reviewed.id}, None)

    def created() -> list[Any]:
        return [t for t in editor.client.progress_reports if t not in known]

    await until(lambda: bool(created()) and committing(editor, created()[0]))
    editor.client.cancel_request(types.CancelParams(id="late-generic"))
    outcome = await sent
    assert outcome["status"] == "committed" and record(home, reviewed, "run-ci-first")
    await until(lambda: len(editor.asked) > asked)  # it may drop the answer: the user still hears
    assert editor.asked[-1].message == outcome["message"]


async def test_a_progress_cancelled_before_it_began_stops_the_run(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    reviewed = source(home, seed=23)
    fake.reply(tool_call(proposal(put("never-written", reviewed.evidence()))))
    before = fake.count
    assert remem(home, "daemon", "stop").returncode == 0
    await until(lambda: editor.states()[-1:] == ["unavailable"])
    # The command starts the daemon before it begins its progress: the cancel comes first.
    sent = await consolidation(editor, "early-cancel", {"session": reviewed.id, "announce": False}, "early")
    editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token="early"))
    with pytest.raises(JsonRpcException) as raised:
        await sent
    assert raised.value.code == REQUEST_CANCELLED and "before it began" in raised.value.message
    assert fake.count == before and not record(home, reviewed, "never-written")
    fake.drop_script()

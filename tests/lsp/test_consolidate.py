"""Consolidation from the editor end to end: the real server, the daemon it starts, and the local
fake model server: progress with the daemon's phases, both ways to cancel, the outcome message
with its "Open Receipt" action, and the latest finished session of a workspace."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from remem.daemon.client import AsyncDaemonClient
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.sessions.scripted import Timeline
from tests import waiting
from tests.consolidation.conftest import OLD, Source, proposal, put
from tests.fake_openai import FakeOpenAI, hang, status, tool_call
from tests.lsp.consolidating import consolidating, source
from tests.lsp.editor import until
from tests.lsp.live import Editor, session_root
from tests.sessions.factory import SessionSpec, build_session, write_session

pytestmark = pytest.mark.asyncio(loop_scope="module")
REQUEST_CANCELLED = -32800
fake, home, editor = consolidating("lsp-consolidate")


def progress(editor: Editor, known: set[str]) -> tuple[str, list[Any]]:
    """The one progress the server created since `known` tokens, and its reports."""
    [token] = [t for t in editor.client.progress_reports if t not in known]
    assert isinstance(token, str) and token.startswith("remem-consolidate-")
    return token, editor.client.progress_reports[token]


async def named(editor: Editor, reviewed: Source) -> str:
    """How the server names the session: its title (as the tree has it) in quotes. The daemon
    answers a tree from its kept listing until its watcher reports the new log (debounced), which
    a fast consolidation can outrun: ask until the tree has it."""
    deadline = time.monotonic() + waiting.SECONDS
    while True:
        nodes = (await editor.request("remem/sessionTree", {"cwd": reviewed.cwd}))["nodes"]
        title = next((n["title"] for n in nodes if n["id"] == reviewed.id), False)
        if title is not False:
            break
        assert time.monotonic() < deadline, f"the tree never showed {reviewed.id}"
        await asyncio.sleep(waiting.POLL_SECONDS)
    assert title, "the factory's sessions have titles"
    return f"“{title}”"


def running(editor: Editor) -> list[str | None]:
    return [status["consolidating"] for status in editor.notes("remem/status")]


async def test_progress_the_outcome_and_its_receipt(editor: Editor, fake: FakeOpenAI, home: Home) -> None:
    reviewed = source(home, seed=1)
    fake.reply(tool_call(proposal(put("prefer-uv", reviewed.evidence()))))
    editor.answers.append("Open Receipt")
    known = set(editor.client.progress_reports)
    result = await editor.command("remem.lsp.consolidate", {"session": reviewed.id})
    receipt = home.reviews / f"{result['review']}.md"
    label = await named(editor, reviewed)
    record = home.workspaces / WorkspaceId.from_cwd(reviewed.cwd).key / "prefer-uv.md"
    history = result.pop("history")
    assert result == {
        "review": result["review"],
        "status": "committed",
        "attempt": 1,
        "changes": 1,
        "recovered": False,
        "repeats": None,
        "reason": None,
        "receipt": str(receipt),
        "title": label.strip("“”"),
        "message": f"Consolidated {label}: 1 change to memory — added prefer-uv (feedback).",
        "alreadyReviewed": False,
        "changed": [{"verb": "Added", "name": "prefer-uv", "type": "feedback", "path": str(record)}],
    }
    assert history["added"] == ["prefer-uv"] and history["workspaceEntry"]
    assert receipt.is_file() and record.is_file()
    _, (begin, *reports, end) = progress(editor, known)
    assert begin.kind == "begin" and begin.cancellable and begin.title == f"Remem: consolidating {label}"
    assert [r.message for r in reports] == [
        "Reading the session and the memory it is reviewed against",
        "Preparing the request to the model (attempt 1)",
        "Waiting for the model (step 1)…",
        "Checking the proposal of step 1",
        "Committing to memory",
    ]
    # The session by its title and each change by name; the record and the receipt can be opened.
    assert end.message == result["message"]
    await until(lambda: bool(editor.client.shown_documents))
    [question] = editor.asked
    actions = [a.title for a in question.actions or []]
    assert question.message == end.message and actions == ["Open Record", "Open Receipt"]
    assert editor.client.shown_documents[0].uri == receipt.as_uri()
    assert reviewed.id in running(editor) and running(editor)[-1] is None


async def test_a_given_token_gets_the_progress_and_a_rerun_asks_no_model(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    reviewed = source(home, seed=2)
    fake.reply(tool_call(proposal()))
    first = await editor.command("remem.lsp.consolidate", {"session": reviewed.id})
    asked = fake.count
    params = types.ExecuteCommandParams(
        command="remem.lsp.consolidate", arguments=[{"session": reviewed.id}], work_done_token="given"
    )
    editor.client.progress_reports["given"] = []  # the client made this token itself
    again = await editor.client.workspace_execute_command_async(params)
    assert again["review"] == first["review"] and again["status"] == "no-change" and fake.count == asked
    assert again["alreadyReviewed"] and not first["alreadyReviewed"]
    begin, freezing, end = editor.client.progress_reports["given"]
    assert freezing.message == "Reading the session and the memory it is reviewed against"  # no model
    assert first["status"] == "no-change" and begin.kind == "begin"
    label = await named(editor, reviewed)
    assert end.message == f"{label} was already reviewed: nothing new to remember. No model was asked again."


async def test_a_rerun_of_a_committed_review_says_it_was_already_reviewed_and_can_stay_quiet(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    reviewed = source(home, seed=5)
    fake.reply(tool_call(proposal(put("run-ci-before-push", reviewed.evidence()))))
    first = await editor.command("remem.lsp.consolidate", {"session": reviewed.id, "announce": False})
    asked, questions = fake.count, len(editor.asked)
    again = await editor.command("remem.lsp.consolidate", {"session": reviewed.id, "announce": False})
    label = await named(editor, reviewed)
    assert first["status"] == again["status"] == "committed" and fake.count == asked
    assert again["alreadyReviewed"] and again["changed"] == first["changed"]
    assert again["message"] == (
        f"{label} was already reviewed: 1 change to memory then — added run-ci-before-push (feedback). "
        "No model was asked again."
    )
    await asyncio.sleep(0.2)  # an announcement would have been sent by now
    assert len(editor.asked) == questions, "the caller said it shows the outcome itself"


async def test_a_failure_says_why_and_the_url_it_tried(editor: Editor, fake: FakeOpenAI, home: Home) -> None:
    reviewed = source(home, seed=8)
    fake.reply(status(400, "The model `fake-model` does not exist"))
    result = await editor.command("remem.lsp.consolidate", {"session": reviewed.id, "announce": False})
    label = await named(editor, reviewed)
    assert result["status"] == "provider-failed" and result["changes"] == 0
    assert result["message"].startswith(f"Consolidation of {label} ended provider-failed (")
    assert "does not exist" in result["message"] and f"asked {fake.base_url}" in result["message"]
    assert result["message"].endswith("): 0 changes to memory; the receipt says more.")


async def test_a_run_another_client_ended_without_memory_redraws_the_tree_and_the_receipts(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    reviewed = source(home, seed=9)
    fake.reply(status(400, "The model `fake-model` does not exist"))
    other = await AsyncDaemonClient.open(home)  # the CLI, or another window
    try:
        result = await other.call("consolidation/run", {"session": reviewed.id})
    finally:
        await other.close()
    assert result["status"] == "provider-failed"
    ended = {"session": reviewed.id, "outcome": "provider-failed"}
    await until(lambda: ended in editor.notes("remem/treeChanged"))
    # The Memory view's recent receipts, which the editor reads again on `memoryChanged`.
    await until(lambda: ended in editor.notes("remem/memoryChanged"))


async def test_cancelling_the_progress_cancels_the_attempt(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    reviewed = source(home, seed=3)
    fake.reply(hang())
    before, known = fake.count, set(editor.client.progress_reports)
    command = asyncio.ensure_future(editor.command("remem.lsp.consolidate", {"session": reviewed.id}))
    await until(lambda: fake.count > before)  # the model is being asked
    token, _ = progress(editor, known)
    editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    result = await command
    assert (result["status"], result["changes"], result["attempt"]) == ("cancelled", 0, 1)
    receipt = await editor.request("remem/receipt", {"review": result["review"]})
    assert receipt["status"] == "cancelled" and "status: cancelled" in receipt["text"]
    assert (
        progress(editor, known)[1][-1].message
        == f"Consolidation of {await named(editor, reviewed)} cancelled: 0 changes to memory."
    )


async def test_cancelling_the_request_cancels_the_attempt(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    reviewed = source(home, seed=4)
    fake.reply(hang())
    before, asked = fake.count, len(editor.asked)
    params = types.ExecuteCommandParams(command="remem.lsp.consolidate", arguments=[{"session": reviewed.id}])
    sent = editor.client.protocol.send_request_async("workspace/executeCommand", params, msg_id="to-cancel")
    command = asyncio.ensure_future(sent)
    await until(lambda: fake.count > before)
    editor.client.cancel_request(types.CancelParams(id="to-cancel"))
    with pytest.raises(JsonRpcException) as raised:
        await command
    assert raised.value.code == REQUEST_CANCELLED
    await until(lambda: running(editor)[-1] is None)  # the attempt has ended
    overview = await editor.request("remem/memoryOverview", {"cwd": reviewed.cwd})
    [receipt] = [r for r in overview["receipts"] if r["session"] == reviewed.id]
    assert receipt["status"] == "cancelled" and receipt["changes"] == 0
    assert len(editor.asked) == asked  # the client was answered "cancelled": it tells its user itself


async def test_a_workspace_consolidates_its_latest_finished_session(
    editor: Editor, fake: FakeOpenAI, home: Home, tmp_path: Path
) -> None:
    cwd = str(tmp_path / "elsewhere")
    (older, _), (newer, _), (_, live) = (_session(home, cwd, seed) for seed in (5, 6, 7))
    os.utime(live, None)  # written just now: still live, so not the one to consolidate
    fake.reply(tool_call(proposal()))
    result = await editor.command("remem.lsp.consolidate", {"cwd": cwd})
    receipt = await editor.request("remem/receipt", {"review": result["review"]})
    assert receipt["session"] == newer and result["status"] == "no-change"
    with pytest.raises(JsonRpcException) as raised:
        await editor.command("remem.lsp.consolidate", {"cwd": str(tmp_path / "empty")})
    assert f"no finished session of {tmp_path / 'empty'} to consolidate" in raised.value.message
    assert older != newer


def _session(home: Home, cwd: str, seed: int) -> tuple[str, Path]:
    """A finished session of `cwd`, created later the higher its seed."""
    draft = build_session(SessionSpec(seed=seed, turns=2, cwd=cwd, created_at=1_785_000_000_000 + seed))
    path = write_session(session_root(home), draft)
    os.utime(path, (OLD, OLD))
    return draft.header.id, path


async def test_a_providers_models_are_listed_where_its_api_lists_them(
    editor: Editor, fake: FakeOpenAI
) -> None:
    fake.list_models(["fake-small", "fake-model"])
    listed = await editor.request("remem/models", {"provider": "fake"})
    assert listed == {"provider": "fake", "keyReady": True, "keyProblem": None,
                      "models": ["fake-model", "fake-small"], "note": None}  # fmt: skip
    fake.list_models([])
    empty = await editor.request("remem/models", {"provider": "fake"})
    assert empty["models"] == [] and empty["note"] == f"fake lists no models at {fake.base_url}"


async def test_without_a_list_or_a_key_the_model_is_typed_and_the_note_says_why(
    editor: Editor, fake: FakeOpenAI
) -> None:
    fake.list_models(None)  # a provider without `GET /models`: 404
    unlisted = await editor.request("remem/models", {"provider": "fake"})
    assert unlisted["keyReady"] and unlisted["models"] == []
    assert unlisted["note"] == f"fake did not list its models at {fake.base_url} (HTTP 404)"
    keyless = await editor.request("remem/models", {"provider": "openai"})
    assert not keyless["keyReady"] and "OPENAI_API_KEY" in keyless["keyProblem"]
    assert keyless["models"] == []
    assert keyless["note"] == "without its key the provider cannot list its models"


async def test_a_session_titled_anew_since_its_review_asks_no_model(
    editor: Editor, fake: FakeOpenAI, home: Home, tmp_path: Path
) -> None:
    reviewed = source(home, seed=10)
    fake.reply(tool_call(proposal(put("prefer-small-commits", reviewed.evidence()))))
    first = await editor.command("remem.lsp.consolidate", {"session": reviewed.id, "announce": False})
    asked = fake.count
    # DSH titles the session anew: one `session/title` event after its turns, a new digest.
    draft = build_session(SessionSpec(seed=10, turns=3, cwd=reviewed.cwd))  # as `source` wrote it
    timeline = Timeline(random.Random(10), draft.events[-1].time, draft.events)
    draft.batches.append(
        [timeline.add("session/title", {"title": "Renamed", "messageSeqs": [], "source": {"kind": "user"}})]
    )
    reviewed.path.write_bytes(write_session(tmp_path, draft).read_bytes())
    os.utime(reviewed.path, (OLD, OLD))
    # The daemon answers from its kept listing until its watcher reports the rewrite (the
    # message names the session as that listing does): the user sees the new title first.
    deadline = time.monotonic() + waiting.SECONDS
    while await named(editor, reviewed) != "“Renamed”":
        assert time.monotonic() < deadline, "the tree never showed the new title"
        await asyncio.sleep(waiting.POLL_SECONDS)
    again = await editor.command("remem.lsp.consolidate", {"session": reviewed.id, "announce": False})
    assert again["review"] != first["review"] and again["repeats"] == first["review"]
    assert again["status"] == "no-change" and again["alreadyReviewed"] and fake.count == asked
    assert again["message"] == (
        f"{await named(editor, reviewed)} was already reviewed: only its title or other metadata changed "
        "since. No model was asked again."
    )


async def test_a_run_waiting_for_another_clients_run_is_cancelled_alone(
    editor: Editor, fake: FakeOpenAI, home: Home
) -> None:
    """Its progress says it waits; its Cancel ends the wait at once, and only this run: the other
    client's run of the session, which it waited for, goes on (its cancel stopped that one too)."""
    reviewed = source(home, seed=11)
    fake.reply(hang())  # the other client's run holds the review, asking the model
    asked = fake.count
    other = await AsyncDaemonClient.open(home)  # the CLI, or another window
    theirs = {"session": reviewed.id, "run": "the-other-run"}
    running = asyncio.ensure_future(other.call("consolidation/run", theirs))
    try:
        await until(lambda: fake.count > asked)
        known = set(editor.client.progress_reports)
        command = asyncio.ensure_future(
            editor.command("remem.lsp.consolidate", {"session": reviewed.id, "announce": False})
        )
        await until(lambda: any(t not in known for t in editor.client.progress_reports))
        token, reports = progress(editor, known)
        await until(lambda: len(reports) >= 3)
        assert [r.message for r in reports[1:3]] == [
            "Reading the session and the memory it is reviewed against",
            "Waiting for another consolidation of this session or its workspace to end",
        ]
        editor.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
        with pytest.raises(JsonRpcException) as raised:
            await command
        # As a run stopped before its attempt began: the extension says memory is unchanged.
        assert raised.value.code == REQUEST_CANCELLED and fake.count == asked + 1
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(running), 2)
        assert not running.done(), "the other client's run was cancelled with this one"
        assert (await other.call("consolidation/cancel", theirs))["cancelled"]
        assert (await running)["status"] == "cancelled"
    finally:
        running.cancel()
        await other.close()

"""The write path: memory_update commits against the session's observation, and is audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import types

from remem.agents.link import InProcessLink
from remem.agents.session import HOME_IN_THE_WAY, AgentSession, Refusal
from remem.daemon.agent_updates.audit import AuditStatus, AuditTrail
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.daemon.helpers import remem
from tests.memory.factory import put as put_change

from .conftest import EMPTY, agent, put, text_of

pytestmark = pytest.mark.asyncio


def names(store: MemoryStore, workspace: WorkspaceId) -> set[str]:
    return {record.name for record in store.read_workspace(workspace).records}


async def test_the_count_of_changes_is_of_those_that_changed_memory(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """Three puts, two of them of what the records already held, said "Committed 3 change(s)"
    while the history showed one record changed."""
    async with agent(home, project) as session:
        await session.context()
        assert outcome(await session.update(put("kept-a"), put("kept-b"))) == ("workspace", 2)
        result = await session.update(put("kept-a"), put("kept-b"), put("new-c"))
        history = text_of(await session.call("memory_history"))
    assert result.structured_content is not None
    assert result.structured_content["changes"] == 1, result.structured_content
    assert text_of(result) == "Committed 1 change(s) to this project's memory."
    assert history.splitlines()[1].endswith("this project: added `new-c`"), history


def outcome(result: types.CallToolResult) -> tuple[str, int]:
    """The scope and count of changes an update's structured content reports."""
    assert result.structured_content is not None
    return result.structured_content["scope"], result.structured_content["changes"]


async def test_update_commits_and_advances_the_observation(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    async with agent(home, project) as session:
        await session.context()
        first = await session.update(put("prefer-uv", "Use uv, never pip.\n"))
        assert not first.is_error, text_of(first)
        assert first.structured_content == {
            "scope": "workspace",
            "changes": 1,
            "message": "Committed 1 change(s) to this project's memory.",
            "warnings": [],
        }
        # No new read in between: the observation moved to the revision this session wrote.
        second = await session.update(put("release-steps"), {"action": "delete", "name": "prefer-uv"})
        assert outcome(second) == ("workspace", 2), text_of(second)
        globally = await session.update({"action": "replace-global", "content": "Answer tersely.\n"})
        assert outcome(globally) == ("global", 1), text_of(globally)
        again = await session.update(put("after-global"))  # one scope's commit leaves the other's observation
        assert not again.is_error, text_of(again)
        same = await session.update(put("after-global"))
        assert text_of(same).startswith("No change") and same.structured_content == {
            "scope": "workspace",
            "changes": 0,
            "message": text_of(same),
            "warnings": [],
        }
        for result in (first, second, globally, again):
            assert "sha256:" not in text_of(result) and str(home.root) not in text_of(result)
    assert names(store, workspace) == {"release-steps", "after-global"}
    assert store.read_global().content == "Answer tersely.\n"

    entries = AuditTrail(home).all()
    assert [e.status for e in entries] == [AuditStatus.COMMITTED] * 4
    assert {e.kind for e in entries} == {"agent-update"} and len({e.agent.session for e in entries}) == 1
    assert entries[0].agent.client is not None and entries[0].agent.client.startswith("mcp/")
    assert [(c.action, c.name) for c in entries[1].changes] == [
        ("put", "release-steps"),
        ("delete", "prefer-uv"),
    ]
    assert entries[2].scope == "global" and entries[2].workspace is None
    assert entries[0].workspace == workspace.key
    # One history entry per committed update, naming the agent's session and client.
    history = store.history.log(workspace.key)
    assert [e.after for e in history] == [
        e.revisions.after for e in reversed(entries) if e.scope == "workspace"
    ]
    [global_entry] = store.history.log(None)
    for entry in [*history, global_entry]:
        assert entry.actor.kind == "agent" and entry.actor.session == entries[0].agent.session
        assert entry.actor.client == entries[0].agent.client
    assert entries[0].revisions.after == entries[0].revisions.planned != entries[0].revisions.before
    for path in (home.memory / "audit").iterdir():
        assert "Use uv, never pip." not in path.read_text() and "Answer tersely." not in path.read_text()


async def test_an_update_before_any_read_is_refused(home: Home, store: MemoryStore, project: Path) -> None:
    async with agent(home, project) as session:
        result = await session.update(put("eager"))
    assert result.is_error and "memory_context" in text_of(result)
    assert list(store.home.workspaces.iterdir()) == []
    assert AuditTrail(home).all() == []


async def test_a_stale_observation_is_refused_after_another_process_changed_memory(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId, tmp_path: Path
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("base")])
    async with agent(home, project) as session:
        await session.context()
        # Another process (the CLI, without the daemon) changes this workspace and Global.
        revision = store.read_workspace(workspace).revision
        changes = tmp_path / "changes.json"
        changes.write_text(json.dumps([put_change("by-hand").model_dump()]))
        cli = ["--no-daemon", "memory", "apply", "--cwd", str(project), "--expected-revision", revision]
        done = remem(home, *cli, "--changes", str(changes))
        assert done.returncode == 0, done.stderr + done.stdout
        store.replace_global(store.read_global().revision, "Changed elsewhere.\n")

        stale = await session.update(put("from-agent"))
        stale_global = await session.update({"action": "replace-global", "content": "Agent text.\n"})
        assert stale.is_error and stale_global.is_error
        for result in (stale, stale_global):
            assert "memory_context" in text_of(result) and "Nothing was written" in text_of(result)
        assert names(store, workspace) == {"base", "by-hand"}
        assert store.read_global().content == "Changed elsewhere.\n"

        await session.context()  # read again, then the same change lands
        retried = await session.update(put("from-agent"))
        assert not retried.is_error, text_of(retried)
    assert names(store, workspace) == {"base", "by-hand", "from-agent"}
    assert [e.status for e in AuditTrail(home).all()] == [AuditStatus.COMMITTED]


async def test_an_invalid_record_is_refused_with_every_problem(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    store.commit_workspace(workspace, EMPTY, [put_change("kept")])
    async with agent(home, project) as session:
        await session.context()
        bad = {
            "action": "put",
            "record": {"name": "Bad Name", "description": " ", "type": "nope", "content": ""},
        }
        result = await session.update(put("fine"), bad, {"action": "delete", "name": "never-was"})
    message = text_of(result)
    assert result.is_error and "nothing was written" in message
    for code in ("name-invalid", "description-empty", "type-invalid", "body-empty", "delete-missing"):
        assert f"remem/{code}" in message, message
    assert "changes[1] (put `Bad Name`)" in message and "changes[2] (delete `never-was`)" in message
    assert names(store, workspace) == {"kept"}
    assert AuditTrail(home).all() == []


async def test_arguments_are_a_closed_schema(home: Home, store: MemoryStore, project: Path) -> None:
    async with agent(home, project) as session:
        await session.context()
        results = [
            await session.call("memory_update", {"changes": [put("a")], "cwd": "/"}),
            await session.call("memory_update", {"changes": [put("a")], "expectedRevision": EMPTY}),
            await session.call("memory_update", {"changes": [{**put("a"), "path": "/tmp/x.md"}]}),
            await session.call("memory_update", {"changes": []}),
            await session.update({"action": "replace-global", "content": "G\n"}, put("a")),
            await session.call("memory_read", {"name": "a", "workspace": "other"}),
            await session.update(*[{"action": "replace-global", "content": "G\n"}] * 2),
            await session.call("memory_context", {"cwd": "/"}),
        ]
    for result in results:
        assert result.is_error, text_of(result)
    assert "no path, cwd or revision" in text_of(results[0])
    assert "never both" in text_of(results[4])
    assert "at most once, and this one has 2 replace-global changes" in text_of(results[6])
    assert AuditTrail(home).all() == [] and store.read_global().content == ""


async def test_an_update_holding_a_likely_credential_is_committed_with_a_warning(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    async with agent(home, project) as session:
        await session.context()
        plain = await session.update(put("prefer-uv", "Use uv, never pip.\n"))
        assert "Warning" not in text_of(plain)
        leaky = await session.update(put("deploy", "How to deploy.\n\nexport API_KEY=abc123def456\n"))
        assert not leaky.is_error and outcome(leaky) == ("workspace", 1)
        [said, warning] = text_of(leaky).split("\n")
        # Claude Code and Codex show the model the structured content alone: the warning is in it.
        assert leaky.structured_content["message"] == said  # type: ignore[index]
        assert leaky.structured_content["warnings"] == [warning.removeprefix("Warning: ")]  # type: ignore[index]
        assert warning.startswith("Warning: deploy.md line 8: this looks like a credential (secret)")
        assert "abc123def456" not in warning
    assert names(store, workspace) == {"prefer-uv", "deploy"}


async def test_an_audit_folder_linked_out_of_the_home_is_refused_untouched(
    home: Home,
    store: MemoryStore,
    project: Path,
    workspace: WorkspaceId,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = AgentSession(InProcessLink(home))
    await session.context(str(project))
    outside, audit = tmp_path / "outside", home.memory / "audit"
    outside.mkdir()
    audit.symlink_to(outside)
    try:
        with pytest.raises(Refusal) as refused:
            await session.update(str(project), {"changes": [put("one")]})
    finally:
        audit.unlink()  # so the fixture can look for a daemon to stop
    assert refused.value.message == HOME_IN_THE_WAY, "as the daemon's HOME_UNUSABLE is said"
    assert (
        f"remem's home {home.root} cannot be used: {audit} is a symbolic link, and remem reads and "
        "writes only inside its home; move the folder it points to into the home"
    ) in caplog.text, "the user's log names the link and the fix"
    assert list(outside.iterdir()) == [] and names(store, workspace) == set(), "nothing written"


async def test_a_second_write_from_one_read_overwrites_the_first_as_the_tool_tells_the_model(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """Two updates after one memory_context both commit: the second is checked against memory as
    the first left it, so a replace-global (or a put of the same record) written from that
    context replaces what the first wrote. The model was not told, and lost its own change."""
    async with agent(home, project) as session:
        await session.context()
        for change in (
            {"action": "replace-global", "content": "Answer tersely.\n"},
            {"action": "replace-global", "content": "Use uv.\n"},
            put("prefer-uv", "First.\n"),
            put("prefer-uv", "Second.\n"),
        ):
            committed = await session.update(change)
            assert outcome(committed)[1] == 1, text_of(committed)
        tools = {tool.name: tool for tool in (await session.client.list_tools()).tools}
    assert store.read_global().content == "Use uv.\n"
    assert [r.content for r in store.read_workspace(workspace).records] == ["Second.\n"]
    said = tools["memory_update"].description or ""
    assert "a later memory_update of yours overwrites an earlier one without a word" in said, said
    assert "a `replace-global` replaces all of Global, the text your earlier `replace-global` wrote" in said
    assert "a `put` replaces the whole record, your earlier `put` of that name included" in said

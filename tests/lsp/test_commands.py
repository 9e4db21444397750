"""The server commands end to end: branching (with its confirmation), titles, archiving, the index
and the model route, against the real daemon the server starts."""

from __future__ import annotations

import stat
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.lsp.editor import until
from tests.lsp.live import Editor
from tests.lsp.receipted import NAME, Receipted

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def tree(editor: Editor, reviewed: Receipted) -> dict[str, dict[str, Any]]:
    nodes = (await editor.request("remem/sessionTree", {"cwd": reviewed.cwd}))["nodes"]
    return {node["id"]: node for node in nodes}


async def test_branching_asks_first_and_the_child_joins_the_tree(editor: Editor, reviewed: Receipted) -> None:
    await until(lambda: "connected" in editor.states())
    editor.heard.clear()
    editor.answers.append("Branch")
    answer = await editor.command("remem.lsp.fork", {"session": reviewed.session, "turn": 2})
    [question] = editor.asked
    assert "copies the conversation only" in question.message and "not rolled back" in question.message
    assert [action.title for action in question.actions or []] == ["Branch", "Cancel"]
    child = (await tree(editor, reviewed))[answer["id"]]
    assert (child["parent"], child["kind"], child["forkTurn"], child["depth"]) == (
        reviewed.session,
        "fork",
        2,
        1,
    )
    assert child["title"] == f"{reviewed.title} (1)"
    assert child["ownPrompt"] is None  # nothing asked in the branch yet
    assert child["live"] is False, "remem just wrote the branch: nobody is writing it"
    await until(lambda: bool(editor.notes("remem/treeChanged")))
    assert editor.notes("remem/treeChanged")[0]["root"] == str(reviewed.root)


async def test_a_declined_branch_creates_nothing(editor: Editor, reviewed: Receipted) -> None:
    before = await tree(editor, reviewed)
    editor.asked.clear()
    editor.answers.append("Cancel")
    assert await editor.command("remem.lsp.fork", {"session": reviewed.session, "turn": 1}) == {"id": None}
    assert len(editor.asked) == 1 and await tree(editor, reviewed) == before


async def test_a_confirmed_branch_is_not_asked_about(editor: Editor, reviewed: Receipted) -> None:
    editor.asked.clear()
    arguments = {"session": reviewed.session, "turn": 3, "title": "Try the other way", "confirmed": True}
    answer = await editor.command("remem.lsp.fork", arguments)
    assert editor.asked == []
    child = (await tree(editor, reviewed))[answer["id"]]
    assert (child["title"], child["forkTurn"]) == ("Try the other way", 3)


async def test_rename_archive_and_restore(editor: Editor, reviewed: Receipted) -> None:
    renamed = await editor.command(
        "remem.lsp.rename", {"session": reviewed.session, "title": "The first try"}
    )
    assert (renamed["id"], renamed["title"]) == (reviewed.session, "The first try")
    assert (await tree(editor, reviewed))[reviewed.session]["title"] == "The first try"
    transcript = await editor.request("remem/transcript", {"id": reviewed.session})
    assert transcript["markdown"].startswith("# The first try\n")  # the rename reaches the heading
    archived = await editor.command("remem.lsp.archive", {"session": reviewed.session})
    assert archived["archived"] is True and (await tree(editor, reviewed))[reviewed.session]["archived"]
    restored = await editor.command("remem.lsp.restore", {"session": reviewed.session})
    assert restored["archived"] is False and not (await tree(editor, reviewed))[reviewed.session]["archived"]
    assert restored["generation"] > archived["generation"] > renamed["generation"]


async def test_the_index_is_regenerated_from_a_memory_file_or_a_project(
    editor: Editor, reviewed: Receipted
) -> None:
    index = reviewed.folder / "MEMORY.md"
    # The daemon's watcher regenerates a deleted index too, 0.15 s later: on a loaded machine it
    # can answer first, and the command then rightly finds nothing to write. One try of a few
    # must be the command's own.
    answers = []
    for _ in range(5):
        index.unlink()
        answers.append(await editor.command("remem.lsp.regenerateIndex", {"uri": reviewed.record.as_uri()}))
        assert f"[{NAME}]({NAME}.md)" in index.read_text()
        if answers[-1] == {"written": True}:
            break
    assert answers[-1] == {"written": True}, answers
    assert await editor.command("remem.lsp.regenerateIndex", {"cwd": reviewed.cwd}) == {"written": False}


async def test_selecting_a_model_changes_the_route(editor: Editor) -> None:
    chosen = await editor.command("remem.lsp.selectModel", {"provider": "openai", "model": "gpt-test"})
    assert (chosen["provider"], chosen["model"], chosen["apiKeyEnv"]) == (
        "openai",
        "gpt-test",
        "OPENAI_API_KEY",
    )
    assert await editor.request("remem/settings", {}) == chosen
    assert (chosen["keyReady"], "OPENAI_API_KEY" in chosen["keyProblem"]) == (False, True)
    stored = await editor.command("remem.lsp.setApiKey", {"provider": "openai", "apiKey": "sk-typed"})
    assert (stored["provider"], stored["keyReady"], stored["keyProblem"]) == ("openai", True, None)
    credentials = editor.home.credentials_file
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600 and "sk-typed" in credentials.read_text()
    with pytest.raises(JsonRpcException) as local:
        await editor.command("remem.lsp.setApiKey", {"provider": "ollama", "apiKey": "k"})
    assert "`ollama` is not a provider that takes an API key" in local.value.message
    with pytest.raises(JsonRpcException) as raised:
        await editor.command("remem.lsp.selectModel", {"provider": "nobody", "model": "m"})
    assert "`nobody` is not a provider; use one of" in raised.value.message


@pytest.mark.parametrize(
    ("command", "arguments", "says"),
    [
        (
            "remem.lsp.fork",
            [],
            "exactly one argument, an object {session, turn, title?, confirmed?, expectedRevision?}; got 0",
        ),
        ("remem.lsp.fork", [{"session": "s"}, {}], "got 2"),
        ("remem.lsp.fork", [{"session": "s", "turn": "two"}], "`turn`: Input should be a valid integer"),
        (
            "remem.lsp.fork",
            [{"session": "s", "turn": 0}],
            "`turn`: Input should be greater than or equal to 1",
        ),
        ("remem.lsp.fork", [["s", 2]], "Input should be a valid dictionary"),
        # Wrong JSON types are refused, never coerced: `"yes"` would branch without asking.
        ("remem.lsp.fork", [{"session": "s", "turn": 1, "confirmed": "yes"}], "`confirmed`: Input should be"),
        ("remem.lsp.fork", [{"session": "s", "turn": "2"}], "`turn`: Input should be a valid integer"),
        ("remem.lsp.fork", [{"session": "s", "turn": 2.0}], "`turn`: Input should be a valid integer"),
        (
            "remem.lsp.regenerateIndex",
            [{"cwd": "/p", "announce": False}],
            "`announce`: unknown key; expected {uri?, cwd?}",
        ),
        ("remem.lsp.consolidate", [{}], "give either `session` (an id) or `cwd`"),
        ("remem.lsp.consolidate", [{"cwd": "here"}], "`cwd`: Value error, must be an absolute path"),
        (
            "remem.lsp.regenerateIndex",
            [{"uri": "file:///etc/passwd"}],
            "is not a file of a workspace's memory",
        ),
        ("remem.lsp.rename", [{"session": "s"}], "`title`: Field required"),
        ("remem.lsp.archive", [{"session": "s", "archived": True}], "`archived`: unknown key"),
    ],
)
async def test_bad_arguments_get_a_specific_error(
    editor: Editor, command: str, arguments: list[Any], says: str
) -> None:
    with pytest.raises(JsonRpcException) as raised:
        await editor.command(command, *arguments)
    assert says in raised.value.message
    assert command in raised.value.message


async def test_branching_from_a_turn_that_is_not_there_is_refused(
    editor: Editor, reviewed: Receipted
) -> None:
    with pytest.raises(JsonRpcException) as raised:
        await editor.command("remem.lsp.fork", {"session": reviewed.session, "turn": 9})
    assert f"session {reviewed.session} has no turn 9 (it has 3)" in raised.value.message

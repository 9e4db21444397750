"""The language server on sessions the real Claude Code and Codex CLIs wrote.

A branch from a transcript is cut from the conversation the transcript showed, or refused when
the session changed since (a rewind by `--resume-session-at` renumbers its turns); a subagent's
turn is refused for what it is, and its transcript offers to consolidate the session that ran
it; a fork's `ownPrompt` is its own first prompt, whether its turns go on from its parent's
numbers (a `--fork-session` copy) or start again from 1 (`codex exec fork`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from remem.daemon.home import Home
from tests.lsp.editor import own_home
from tests.lsp.live import Editor, start_editor, stop_editor

from .claude import ClaudeCode
from .conftest import Scenario, _assistant_uuid
from .fake_anthropic import FakeAnthropic
from .fake_responses import text as say

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]


@dataclass(frozen=True)
class Own:
    """Claude Code sessions of this module's own: `rewound` is rewound by a test, `parent` has a
    `--fork-session` copy, `copy`; the fake model stays up for the rewind."""

    cc: ClaudeCode
    fake: FakeAnthropic
    rewound: str
    parent: str
    copy: str


@pytest.fixture(scope="module")
def own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Own]:
    with FakeAnthropic() as fake:
        cc = ClaudeCode(tmp_path_factory.mktemp("editor-claude"), fake)
        fake.reply(say("first answer"))
        rewound = cc.run("first question").session_id
        fake.reply(say("second answer"))
        cc.run("second question", resume=rewound)
        fake.reply(say("parent answer"))
        parent = cc.run("the parent's question").session_id
        fake.reply(say("copy answer"))
        copy = cc.run("the copy's own question", resume=parent, fork=True).session_id
        yield Own(cc, fake, rewound, parent, copy)


@pytest.fixture(scope="module")
def home(
    own: Own,
    claude_agent_scenario: Scenario,
    codex_scenario: Scenario,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Home]:
    home = own_home("remem-editor-harness-")
    agent = claude_agent_scenario.runs["first"].transcript.parent.parent
    codex = codex_scenario.runs["first"].rollout.parents[3]
    roots = [(own.cc.projects, "claude-code"), (agent, "claude-code"), (codex, "codex")]
    listed = "".join(f"    - {{path: '{path}', format: {format}}}\n" for path, format in roots)
    with home.settings_file.open("a") as settings:
        settings.write(f"sessions:\n  roots:\n{listed}")
    nowhere = tmp_path_factory.mktemp("no-harness-home")
    with pytest.MonkeyPatch.context() as env:  # never the harness sessions of whoever runs this
        env.setenv("CLAUDE_CONFIG_DIR", str(nowhere / "claude"))
        env.setenv("CODEX_HOME", str(nowhere / "codex"))
        yield home


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(home: Home) -> AsyncIterator[Editor]:
    editor = await start_editor(home)
    yield editor
    await stop_editor(editor)


def transcript_uri(session: str) -> str:
    return f"remem-session:/{session}/transcript.md"


async def lenses(editor: Editor, uri: str) -> list[tuple[int, str, str, Any]]:
    params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    found = await editor.client.text_document_code_lens_async(params) or []
    commands = [(lens.range.start.line, lens.command) for lens in found if lens.command is not None]
    return [
        (line, command.title, command.command, (command.arguments or [None])[0]) for line, command in commands
    ]


def show(editor: Editor, uri: str, text: str, version: int) -> None:
    """The editor shows `text` at `uri`: opened first, changed after."""
    if version == 1:
        item = types.TextDocumentItem(uri=uri, language_id="markdown", version=1, text=text)
        editor.client.text_document_did_open(types.DidOpenTextDocumentParams(item))
        return
    document = types.VersionedTextDocumentIdentifier(uri=uri, version=version)
    change = types.TextDocumentContentChangeWholeDocument(text=text)
    editor.client.text_document_did_change(types.DidChangeTextDocumentParams(document, [change]))


def branch_lens(found: list[tuple[int, str, str, Any]], turn: int) -> dict[str, Any]:
    [argument] = [argument for _, title, _, argument in found if title == f"Branch after turn {turn}"]
    return dict(argument)


def said(markdown: str) -> list[str]:
    """What a transcript quotes: each prompt and answer."""
    return [line.removeprefix("> ") for line in markdown.splitlines() if line.startswith("> ")]


async def test_a_branch_from_a_transcript_the_session_outgrew_is_refused_not_cut_elsewhere(
    editor: Editor, own: Own
) -> None:
    session = own.rewound
    shown = await editor.request("remem/transcript", {"id": session})
    uri = transcript_uri(session)
    show(editor, uri, shown["markdown"], 1)
    lens = branch_lens(await lenses(editor, uri), 2)
    assert lens == {"session": session, "turn": 2, "expectedRevision": shown["revision"]}

    # The user rewinds in Claude Code to the first answer and asks something else: turn 2 is
    # another turn now, and the transcript on screen still shows the old one.
    answer = _assistant_uuid(own.cc.transcript(session), "first answer")
    own.fake.reply(say("rewritten answer"))
    await asyncio.to_thread(own.cc.run, "a different second question", resume=session, resume_at=answer)
    turns = await editor.request("remem/sessionTurns", {"id": session})
    assert [t["user"] for t in turns["turns"]] == ["first question", "a different second question"]

    with pytest.raises(JsonRpcException) as refused:
        await editor.command("remem.lsp.fork", {**lens, "confirmed": True})
    assert refused.value.data == {"code": "STALE_SOURCE"}, refused.value.message
    tree = await editor.request("remem/sessionTree", {"cwd": str(own.cc.cwd)})
    assert not [n for n in tree["nodes"] if n["parent"] == session and n["kind"] == "fork"]

    # Shown again (as the extension does on the refusal), its lens cuts the turn it shows now.
    again = await editor.request("remem/transcript", {"id": session})
    assert again["revision"] != shown["revision"]
    show(editor, uri, again["markdown"], 2)
    lens = branch_lens(await lenses(editor, uri), 2)
    assert lens["expectedRevision"] == again["revision"]
    made = await editor.command("remem.lsp.fork", {**lens, "confirmed": True})
    child = await editor.request("remem/transcript", {"id": made["id"]})
    conversation = ["first question", "first answer", "a different second question", "rewritten answer"]
    assert said(child["markdown"]) == conversation


async def test_a_turn_picked_from_turns_read_before_a_change_is_refused_as_stale(
    editor: Editor, own: Own
) -> None:
    # The tree's "Branch": turns read for the picker, the session grows before the confirmation.
    turns = await editor.request("remem/sessionTurns", {"id": own.parent})
    assert turns["revision"] and (turns["kind"], turns["parent"]) == ("root", None)
    own.fake.reply(say("more"))
    await asyncio.to_thread(own.cc.run, "one more question", resume=own.parent)
    chosen = {"session": own.parent, "turn": 1, "expectedRevision": turns["revision"], "confirmed": True}
    with pytest.raises(JsonRpcException) as refused:
        await editor.command("remem.lsp.fork", chosen)
    assert refused.value.data == {"code": "STALE_SOURCE"}
    # A turn the session no longer has is stale too, not "no such turn": it had one when chosen.
    with pytest.raises(JsonRpcException) as refused:
        await editor.command("remem.lsp.fork", {**chosen, "turn": 7})
    assert refused.value.data == {"code": "STALE_SOURCE"} and "no turn 7 any more" in refused.value.message


async def subagent_of(editor: Editor, scenario: Scenario) -> tuple[str, str]:
    parent = scenario.runs["first"].session_id
    tree = await editor.request("remem/sessionTree", {"cwd": str(scenario.cwd)})
    [agent] = [n["id"] for n in tree["nodes"] if n["kind"] == "subagent" and n["parent"] == parent]
    return agent, parent


async def test_a_subagents_turn_is_refused_for_what_it_is(
    editor: Editor, claude_agent_scenario: Scenario
) -> None:
    agent, _ = await subagent_of(editor, claude_agent_scenario)
    turns = (await editor.request("remem/sessionTurns", {"id": agent}))["turns"]
    assert [(t["turn"], t["forkable"]) for t in turns] == [(1, False)]
    editor.asked.clear()
    for asked in ({}, {"confirmed": True}):
        with pytest.raises(JsonRpcException) as refused:
            await editor.command("remem.lsp.fork", {"session": agent, "turn": 1, **asked})
        message = refused.value.message
        assert "a subagent's transcript: Claude Code resumes sessions, not subagents" in message, message
        assert "has not finished" not in message
    assert editor.asked == []  # a refusal is not asked about first


async def test_a_subagents_transcript_offers_to_consolidate_the_session_that_ran_it(
    editor: Editor, claude_agent_scenario: Scenario
) -> None:
    agent, parent = await subagent_of(editor, claude_agent_scenario)
    shown = await editor.request("remem/transcript", {"id": agent})
    show(editor, transcript_uri(agent), shown["markdown"], 1)
    assert await lenses(editor, transcript_uri(agent)) == [
        (0, "Consolidate the session that ran this subagent", "remem.consolidateSession", {"session": parent})
    ]
    shown = await editor.request("remem/transcript", {"id": parent})
    show(editor, transcript_uri(parent), shown["markdown"], 1)
    found = await lenses(editor, transcript_uri(parent))
    assert found[0] == (0, "Consolidate this session", "remem.consolidateSession", {"session": parent})


async def test_a_forks_own_prompt_is_its_own_whatever_its_turns_are_numbered(
    editor: Editor, own: Own, codex_scenario: Scenario
) -> None:
    # Codex's own fork holds only its own turns, numbered from 1, though it branched after turn 2.
    fork = codex_scenario.runs["fork"].session_id
    tree = await editor.request("remem/sessionTree", {"cwd": str(codex_scenario.cwd)})
    node = next(n for n in tree["nodes"] if n["id"] == fork)
    assert (node["kind"], node["forkTurn"], node["ownPrompt"]) == ("fork", 2, "forked prompt")
    # A `--fork-session` copy holds its parent's turns first, marked by nothing but their records.
    tree = await editor.request("remem/sessionTree", {"cwd": str(own.cc.cwd)})
    node = next(n for n in tree["nodes"] if n["id"] == own.copy)
    assert (node["kind"], node["forkTurn"], node["ownPrompt"]) == ("fork", 1, "the copy's own question")

"""Branching a Codex session from the editor: a rolled-back turn is refused for what it is, before
any confirmation is asked, and a completed one forks with the command that resumes it."""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Iterator

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException

from remem.daemon.home import Home
from tests.lsp.editor import own_home
from tests.lsp.live import Editor, start_editor, stop_editor
from tests.sessions.codex_lines import TID, event, meta, rollout, turn

pytestmark = pytest.mark.asyncio(loop_scope="module")
ROLLED_BACK_SECOND = [
    meta(),
    *turn("t1", "one", "1"),
    *turn("t2", "two", "2"),
    event("thread_rolled_back", num_turns=1),
    *turn("t3", "three", "3"),
]


@pytest.fixture(scope="module")
def home() -> Iterator[Home]:
    home = own_home("remem-lsp-codex-fork-")
    codex = home.root.parent / "codex"
    day = codex / "sessions" / "2026" / "05" / "01"
    day.mkdir(parents=True)
    (day / f"rollout-2026-05-01T00-00-00-{TID}.jsonl").write_bytes(rollout(*ROLLED_BACK_SECOND))
    with pytest.MonkeyPatch.context() as env:  # what the server, and the daemon it starts, run with
        env.setenv("CODEX_HOME", str(codex))
        yield home


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def editor(home: Home) -> AsyncIterator[Editor]:
    editor = await start_editor(home)
    yield editor
    await stop_editor(editor)


async def test_a_rolled_back_turn_is_refused_as_rolled_back(editor: Editor, home: Home) -> None:
    turns = (await editor.request("remem/sessionTurns", {"id": TID}))["turns"]
    assert [(t["turn"], t["status"], t["forkable"]) for t in turns] == [
        (1, "completed", True),
        (2, "rolled-back", False),
        (3, "completed", True),
    ]
    with pytest.raises(JsonRpcException) as refused:
        await editor.command("remem.lsp.fork", {"session": TID, "turn": 2})
    assert refused.value.message == (
        f"remem.lsp.fork: turn 2 of {TID} was rolled back (Codex dropped it from the conversation); "
        "branch from a completed turn"
    )
    made = await editor.command("remem.lsp.fork", {"session": TID, "turn": 3, "confirmed": True})
    # The whole command, as the CLI prints it: from the session's folder, with its Codex home.
    codex_home = shlex.quote(str(home.root.parent / "codex"))
    assert made == {
        "id": made["id"],
        "command": f"cd /w && CODEX_HOME={codex_home} codex resume {made['id']}",
        "note": made["note"],
    }
    assert made["note"].startswith("the session's folder /w is not there any more")  # nor on this machine

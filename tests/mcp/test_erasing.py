"""What an agent may erase over MCP (decision 0455): never all of Global; all of its project's
records, one named delete each, yes."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.agent_updates.audit import AuditTrail
from remem.daemon.home import Home
from remem.daemon.memory.canonical import canonicalize
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.daemon.helpers import remem

from .conftest import EMPTY, agent, put, text_of

pytestmark = pytest.mark.asyncio
KEPT = "Answer tersely.\nPrefer uv over pip.\n"


# A BOM is no text either, nor a zero-width space, an empty HTML comment or Global's title.
@pytest.mark.parametrize("blank", ["", "  \n\n\t\n", "\ufeff", "\u200b\n", "# Global\n<!-- -->\n"])
async def test_an_agent_never_erases_all_of_global(
    home: Home, store: MemoryStore, project: Path, tmp_path: Path, blank: str
) -> None:
    store.replace_global(EMPTY, KEPT)
    async with agent(home, project) as session:
        await session.context()
        erased = await session.update({"action": "replace-global", "content": blank})
        assert erased.is_error
        said = text_of(erased)
        assert said.startswith(
            "The changes are invalid; nothing was written:\n- changes[0] (replace-global): "
        )
        assert "would erase all of Global memory" in said and "`remem memory replace-global`" in said, said
        assert said.endswith("[remem/agent-erases-global]"), said
        assert store.read_global().content == KEPT
        assert AuditTrail(home).all() == []  # refused before any commit
        # Shortening it is the agent's call; so is an empty Global left empty.
        shortened = await session.update({"action": "replace-global", "content": "Answer tersely.\n"})
        assert not shortened.is_error, text_of(shortened)
    # What the agent is told to ask of the user works: the user may empty Global.
    empty = tmp_path / "empty.md"
    empty.write_text(blank, encoding="utf-8")
    emptied = remem(
        home,
        "memory",
        "replace-global",
        "--expected-revision",
        store.read_global().revision,
        "--file",
        str(empty),
    )
    assert emptied.returncode == 0, emptied.stderr
    assert store.read_global().content == canonicalize(blank)
    async with agent(home, project) as session:
        await session.context()
        again = await session.update({"action": "replace-global", "content": blank})
        assert not again.is_error and text_of(again).startswith("No change"), text_of(again)


@pytest.mark.parametrize(
    "told",
    ["# Always answer in French\n## Never push to main\n", "<!-- always run make check -->\n"],
    ids=["headings", "comment"],
)
async def test_headings_and_comments_are_text_an_agent_writes_and_never_erases(
    home: Home, store: MemoryStore, project: Path, told: str
) -> None:
    """Agents read Global raw: a heading's or a comment's words are text to them. Such a Global
    was refused as no text, and once written by hand, left for an agent to erase."""
    store.replace_global(EMPTY, KEPT)
    async with agent(home, project) as session:
        await session.context()
        written = await session.update({"action": "replace-global", "content": told})
        assert not written.is_error, text_of(written)
        erased = await session.update({"action": "replace-global", "content": ""})
        assert erased.is_error and text_of(erased).endswith("[remem/agent-erases-global]"), text_of(erased)
    assert store.read_global().content == told


@pytest.mark.parametrize(
    ("held", "sent"),
    [(b"\xef\xbb\xbf", ""), ("\u3000\n".encode(), "\u3000\n"), (b"\n\n", "\ufeff")],
    ids=["bom-only-file", "ideographic-space", "bom-sent"],
)
async def test_global_with_no_text_sent_again_is_no_change(
    home: Home, store: MemoryStore, project: Path, held: bytes, sent: str
) -> None:
    """Global the user left without text (a hand edit may leave a BOM or a Unicode space), sent
    again as it is: nothing changes, so nothing is erased (decision 0455)."""
    home.global_file.parent.mkdir(parents=True, exist_ok=True)
    home.global_file.write_bytes(held)
    async with agent(home, project) as session:
        await session.context()
        again = await session.update({"action": "replace-global", "content": sent})
    assert not again.is_error and text_of(again).startswith("No change"), text_of(again)
    assert home.global_file.read_bytes() == held


async def test_an_agent_may_delete_every_record_of_its_project(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    async with agent(home, project) as session:
        await session.context()
        assert not (await session.update(put("old-a"), put("old-b"))).is_error
        emptied = await session.update(
            {"action": "delete", "name": "old-a"}, {"action": "delete", "name": "old-b"}
        )
        assert not emptied.is_error, text_of(emptied)
        history = text_of(await session.call("memory_history"))
    assert store.read_workspace(workspace).records == []
    assert "removed `old-a`, `old-b`" in history, history  # what the user reverts from

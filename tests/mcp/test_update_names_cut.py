"""A record name a memory_update sent is quoted back cut short and on one line, and one longer
than any file name is refused with the arguments: a 400 000-character name to delete came back
twice in the refusal, 800 KB of text into the agent's context."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore

from .conftest import agent, put, text_of

pytestmark = pytest.mark.asyncio
LONGEST = 255 - len(".md")  # a record file's name fills a file name at most


def _delete(name: str) -> dict[str, Any]:
    return {"action": "delete", "name": name}


async def test_a_name_longer_than_a_file_name_is_refused_without_quoting_it(
    home: Home, project: Path
) -> None:
    async with agent(home, project) as session:
        await session.context()
        deleted = await session.update(_delete("z" * 400_000))
        kept = await session.update(put("y" * (LONGEST + 1)))
    for result, letter in ((deleted, "z"), (kept, "y")):
        said = text_of(result)
        assert result.is_error and len(said) < 2000, said[:300]
        assert said.startswith("memory_update's arguments are invalid; nothing was done:"), said[:300]
        assert f"at most {LONGEST} characters" in said and letter * 61 not in said, said


async def test_a_name_sent_is_quoted_back_cut_after_60_characters_and_on_one_line(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    longest, forged = "z" * LONGEST, "a\n- changes[1]: fine"
    async with agent(home, project) as session:
        await session.context()
        missing = await session.update(_delete(longest))
        twice = await session.update(_delete("w" * 100), _delete("w" * 100))
        invalid = await session.update(put("x" * 200))
        lines = await session.update(_delete(forged))
    said = text_of(missing)
    assert missing.is_error and len(said) < 1000, said[:300]
    cut = "z" * 60 + "…"
    assert f"- changes[0] (delete `{cut}`): deletes `{cut}`, which does not exist" in said, said
    assert "z" * 61 not in said, said
    assert "changes 0 and 1 both touch `" + "w" * 60 + "…`" in text_of(twice), text_of(twice)
    assert "w" * 61 not in text_of(twice), text_of(twice)
    assert "- changes[0] (put `" + "x" * 60 + "…`): the name is 200 characters long; at most 64" in text_of(
        invalid
    ), text_of(invalid)
    assert "x" * 61 not in text_of(invalid), text_of(invalid)
    head, *problems = text_of(lines).splitlines()
    shown = "a\\n- changes[1]: fine"
    assert problems == [
        f"- changes[0] (delete `{shown}`): deletes `{shown}`, which does not exist; re-read the workspace "
        "and drop this change [remem/delete-missing]"
    ], text_of(lines)
    assert store.read_workspace(workspace).records == [], "nothing was written"

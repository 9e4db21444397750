"""A full memory reaches the model: 200 records and a Global of 24 KB, all valid, made a context
of 62 KB, which Claude Code keeps out of the conversation past 50 000 characters (the model saw a
2 KB preview: part of Global, none of the index). The index is cut instead, the records left out
are named, and the write that fills the index says so (decision 0533)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.context import AGENT_CONTEXT_MAX_BYTES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.memory import PutChange
from tests.cli_process import remem

from .conftest import EMPTY, agent, put, text_of

pytestmark = pytest.mark.asyncio
CLAUDE_CODE_RESULT_CHARS = 50_000  # its default result-size limit (2.1.337), in UTF-16 units
RECORDS = 200
GLOBAL = ("The user prefers short answers and uv. " * 700)[:24_000] + "\n"


def _note(number: int, padding: str = "") -> dict[str, Any]:
    about = f"How the build handles case {number} when the cache is stale and the whole suite must rerun"
    return put(f"note-{number:03d}", "x\n", description=(about + padding)[:100])


async def test_a_full_memory_is_shown_whole_with_its_index_cut_and_what_is_cut_named(
    home: Home, project: Path
) -> None:
    async with agent(home, project) as session:
        await session.context()
        assert not (
            await session.call(
                "memory_update", {"changes": [{"action": "replace-global", "content": GLOBAL}]}
            )
        ).is_error
        answers = [
            await session.update(*(_note(n) for n in range(start, start + 50)))
            for start in range(0, RECORDS, 50)
        ]
        context = await session.context()
        read = await session.call("memory_read", {"name": f"note-{RECORDS - 1:03d}"})
    assert not any(answer.is_error for answer in answers), [text_of(a) for a in answers]
    assert "[remem/index-budget]" not in text_of(answers[0]), "50 records fit"
    filled = text_of(answers[-1])
    assert "\nWarning: this project's memory index is now past what memory_context shows" in filled, filled
    assert "[remem/index-budget]" in filled, filled
    assert len(context.encode("utf-16-le")) // 2 < CLAUDE_CODE_RESULT_CHARS, len(context)
    assert GLOBAL.rstrip("\n") in context, "Global is never cut"
    assert all(f"`note-{n:03d}`" in context or f"[note-{n:03d}]" in context for n in range(RECORDS))
    assert f"`note-{RECORDS - 1:03d}`" in context.split("This index leaves out ", 1)[1], context[-600:]
    assert not read.is_error and "name: note-199" in text_of(read), text_of(read)


async def test_a_write_warns_only_when_it_leaves_more_records_out_saying_when_global_is_why(
    home: Home, project: Path
) -> None:
    """190 records fit the index's own budget. A Global of 24 KB pushed 4 of them out of
    memory_context without a word, while the writes after it that shrank the index were told
    it was past its budget [remem/index-budget], which `remem memory validate` never said."""
    replace_global = [{"action": "replace-global", "content": GLOBAL}]
    async with agent(home, project) as session:
        await session.context()
        filling = [
            await session.update(*(_note(n, "." * 10) for n in range(start, min(start + 50, 190))))
            for start in range(0, 190, 50)
        ]
        crowding = await session.call("memory_update", {"changes": replace_global})
        context = await session.context()
        shrinking = [
            await session.update(put("note-005", "x\n", description="shorter")),
            await session.update({"action": "delete", "name": "note-189"}),
            await session.call(
                "memory_update", {"changes": [{"action": "replace-global", "content": "short\n"}]}
            ),
        ]
    assert [text_of(a) for a in filling if "Warning" in text_of(a)] == [], "all of them fit"
    warned = text_of(crowding)
    assert not crowding.is_error and "memory_context now leaves 4 record(s)" in warned, warned
    assert "Global memory is 23 KiB" in warned and "[remem/index-budget]" not in warned, warned
    assert "This index leaves out 4 record(s)" in context, context[-600:]
    assert [text_of(a) for a in shrinking if a.is_error or "Warning" in text_of(a)] == []


async def test_remem_memory_context_is_held_to_the_agents_budget(
    home: Home, store: MemoryStore, project: Path, workspace: WorkspaceId
) -> None:
    """`remem memory context` prints what an agent should load (a harness's hook runs it), and
    printed a full memory whole: 62 KB, past what a harness shows (decision 0538)."""
    store.replace_global(EMPTY, GLOBAL)
    store.commit_workspace(
        workspace, EMPTY, [PutChange.model_validate(_note(n, "." * 20)) for n in range(RECORDS)]
    )
    printed = remem(home, "memory", "context", "--cwd", str(project))
    assert printed.returncode == 0, printed.stderr
    context = printed.stdout
    assert len(context.encode("utf-8")) <= AGENT_CONTEXT_MAX_BYTES, len(context)
    assert GLOBAL.rstrip("\n") in context, "Global is never cut"
    left_out = context.split("This index leaves out ", 1)[1]
    assert f"`note-{RECORDS - 1:03d}`" in left_out and "<name>.md" in left_out, left_out[-600:]
    assert context.endswith(
        f"Each record is the file {store.folder(workspace)}/<name>.md; read it when "
        "its description is relevant to the task.\n"
    ), context[-600:]

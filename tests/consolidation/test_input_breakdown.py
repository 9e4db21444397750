"""A review input over `consolidation.max_input_bytes` says what it is made of: the session's
evidence, Global memory and the workspace's records are counted together, and a workspace
whose records the store accepts can pass the default limit on its own; the user is told which
part is large and which limit to raise."""

from __future__ import annotations

import asyncio
from pathlib import Path

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.memory.batch import CHANGES
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import FakeOpenAI

from .conftest import configure, write_source

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # no workspace yet


def test_records_past_the_default_input_limit_are_said_with_the_limit_to_raise(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root)  # the default max_input_bytes, 128 KiB
    source = write_source(root, str(tmp_path / "project"))
    body = "Line of a long but valid record body.\n" * 180  # 7 KiB, under a record's 8 KiB
    puts = [
        {"action": "put", "record": {"name": f"note-{n:02}", "description": f"Note {n}", "type": "project",
                                     "content": body}}
        for n in range(30)
    ]  # fmt: skip
    MemoryStore(home).commit_workspace(WorkspaceId.from_cwd(source.cwd), EMPTY, CHANGES.validate_python(puts))

    result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    assert result.status is Status.EVIDENCE_TOO_LARGE and fake.count == 0
    receipt = ReceiptStore(home).read(result.review)
    error = (receipt.attempts[-1].error if receipt is not None else None) or ""
    assert error.startswith("the review input is ")
    assert ", Global memory 0, the workspace's 30 records 2" in error  # over 200 000 bytes
    assert "the session's evidence " in error
    assert error.endswith(
        "consolidation.max_input_bytes is 131072: raise it in settings.yml (at most 8 MiB), "
        "or make the memory the session is reviewed against smaller"
    )


def _error(home: Home, source_id: str) -> str:
    result = asyncio.run(Consolidator(home).consolidate(source_id, lambda phase, data: None))
    assert result.status is Status.EVIDENCE_TOO_LARGE
    receipt = ReceiptStore(home).read(result.review)
    return (receipt.attempts[-1].error if receipt is not None else None) or ""


def test_an_input_over_the_limit_without_memory_never_says_to_make_the_memory_smaller(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    """It said so always, even when memory counted 0 bytes: only raising the limit helps."""
    root = tmp_path / "dsh-sessions"
    configure(home, fake, root, max_input_bytes=2048)
    source = write_source(root, str(tmp_path / "project"), turns=20)
    error = _error(home, source.id)
    assert ", Global memory 0, the workspace's 0 records 0)" in error and fake.count == 0
    assert error.endswith("consolidation.max_input_bytes is 2048: raise it in settings.yml (at most 8 MiB)")
    assert "memory" not in error.split(";")[-1]


def test_memory_that_is_a_small_share_of_the_input_is_not_advised_smaller_unless_it_tips_it(
    home: Home, fake: FakeOpenAI, tmp_path: Path
) -> None:
    root = tmp_path / "dsh-sessions"
    source = write_source(root, str(tmp_path / "project"), turns=20)
    tiny = {"name": "tiny", "description": "Tiny", "type": "project", "content": "One line.\n"}
    put = CHANGES.validate_python([{"action": "put", "record": tiny}])
    MemoryStore(home).commit_workspace(WorkspaceId.from_cwd(source.cwd), EMPTY, put)
    configure(home, fake, root, max_input_bytes=2048)
    error = _error(home, source.id)
    size = int(error.removeprefix("the review input is ").split(" ")[0])
    assert size > 2 * 2048 and not error.endswith("smaller")  # a few bytes of a large input
    configure(home, fake, root, max_input_bytes=size - 20)  # memory alone tips it over
    assert _error(home, source.id).endswith("or make the memory the session is reviewed against smaller")

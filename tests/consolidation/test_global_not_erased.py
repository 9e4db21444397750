"""A model's `replace-global` with no text would erase all of Global memory: it is refused as a
problem the model can act on, and a model that insists ends the review `invalid-proposal`,
saying why, with Global untouched (decision 0447). It used to commit."""

from __future__ import annotations

import json
from typing import Any

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.worker import MAX_STEPS
from remem.daemon.home import Home
from remem.daemon.memory.store import MemoryStore
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, proposal

KEPT = "Prefers terse answers.\n"
ERASED = "would erase all of Global memory"


def _replace_global(source: Source, content: str) -> dict[str, Any]:
    return proposal({"action": "replace-global", "content": content, "evidence": source.evidence()})


def _consolidate(home: Home, source: Source, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(NO_DAEMON_ENV, "1")
    done = remem(home, "consolidate", source.id, "--json")
    assert done.stdout, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture
def global_memory(home: Home) -> MemoryStore:
    store = MemoryStore(home)
    store.replace_global(store.read_global().revision, KEPT)
    return store


# A BOM is no text, nor are the other format characters, an empty HTML comment, a bare heading
# or one that only titles Global.
@pytest.mark.parametrize(
    "empty",
    ["", "\n\n  \n", "\ufeff", "\ufeff\u3000\n", "\u200b", "# Global\n", "##\n<!-- \u2060 -->\n<!--"],
)
def test_a_model_that_keeps_erasing_global_ends_invalid_proposal_and_global_stays(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
    global_memory: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    empty: str,
) -> None:
    fake.reply_always(lambda body: tool_call(_replace_global(source, empty)))
    result = _consolidate(home, source, monkeypatch)
    assert result["status"] == "invalid-proposal" and ERASED in (result["reason"] or ""), result
    assert fake.count == MAX_STEPS and global_memory.read_global().content == KEPT
    receipt = ReceiptStore(home).read(result["review"])
    assert receipt is not None and receipt.changes == [] and ERASED in (receipt.attempts[-1].error or "")
    told = fake.requests[1]["messages"][-1]
    assert told["role"] == "tool" and ERASED in told["content"], "the model is told why"


def test_a_model_told_it_would_erase_global_can_send_the_whole_text(
    home: Home, fake: FakeOpenAI, source: Source, global_memory: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.reply(
        tool_call(_replace_global(source, "")),
        tool_call(_replace_global(source, KEPT + "Works in UTC.\n")),
    )
    result = _consolidate(home, source, monkeypatch)
    assert result["status"] == "committed" and fake.count == 2
    assert global_memory.read_global().content == KEPT + "Works in UTC.\n"


def test_an_empty_global_replaced_by_no_text_is_no_change(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.reply(tool_call(_replace_global(source, "")))
    result = _consolidate(home, source, monkeypatch)
    assert result["status"] == "no-change" and fake.count == 1


# Agents read Global raw: the words of a heading or of an HTML comment are text to them.
TOLD = ["# Always answer in French\n## Never push to main\n", "<!-- always run make check -->\n"]


@pytest.mark.parametrize("told", TOLD, ids=["headings", "comment"])
def test_a_global_of_headings_or_comments_is_text_a_review_writes(
    home: Home,
    fake: FakeOpenAI,
    source: Source,
    global_memory: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    told: str,
) -> None:
    """It was refused as erasing Global, after every step the model had."""
    fake.reply(tool_call(_replace_global(source, told)))
    result = _consolidate(home, source, monkeypatch)
    assert result["status"] == "committed" and fake.count == 1, result
    assert global_memory.read_global().content == told


@pytest.mark.parametrize("told", TOLD, ids=["headings", "comment"])
def test_a_global_of_headings_or_comments_is_never_erased(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch, told: str
) -> None:
    """It was judged no text, so a review emptying it committed."""
    store = MemoryStore(home)
    store.replace_global(store.read_global().revision, told)
    fake.reply_always(lambda body: tool_call(_replace_global(source, "")))
    result = _consolidate(home, source, monkeypatch)
    assert result["status"] == "invalid-proposal" and ERASED in (result["reason"] or ""), result
    assert store.read_global().content == told

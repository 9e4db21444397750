"""A receipt's next write removes the temp a writer killed before its rename left beside it, and
no other receipt's (decision 0411)."""

from __future__ import annotations

import asyncio

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.fsutil import locked_temp_path_for
from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, proposal, put


def test_a_receipts_next_write_removes_its_own_stale_temps(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    review = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None)).review
    store = ReceiptStore(home)
    receipt = store.read(review)
    assert receipt is not None
    path = store.path(review)
    left = locked_temp_path_for(path)
    left.write_text("status: running\n")  # a write killed before its rename
    in_flight = locked_temp_path_for(path.with_name(f"another-{path.name}"))
    in_flight.write_text("status: running\n")
    store.write(receipt)
    assert store.read(review) == receipt
    assert not left.exists() and in_flight.exists()

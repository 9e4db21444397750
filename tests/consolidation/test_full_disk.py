"""A consolidation whose writes the disk refuses (a full disk) ends with what to do, exit 1, never
"a bug in remem" (exit 4) with its attempt left `running`; the retry once there is room commits.

The refusal is real, as in tests/daemon/test_memory_full_disk.py: the command runs under a
file-size limit (`RLIMIT_FSIZE`), so the write of any file past that size fails with EFBIG as it
would with ENOSPC. Which write meets it is chosen by sizes: a receipt (~1 KiB), the worker
session's first lines (the evidence shown to the model), the model's answer appended to it (its
text random, as the log is compressed).
"""

from __future__ import annotations

import json
import random
import resource
import subprocess
import sys

import pytest

from remem.daemon.cli.backend import NO_DAEMON_ENV
from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import Status
from remem.daemon.protocol.memory import PutChange, Record
from remem.daemon.protocol.rpc import UNWRITABLE, RpcError
from tests.daemon.helpers import calls
from tests.fake_openai import FakeOpenAI, tool_call
from tests.unwritable import unwritable

from .conftest import Source, proposal, put

pytestmark = pytest.mark.slow


def remem(home: Home, *args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    """`remem ARGS`, its writes limited to `limit` bytes a file when given."""

    def limited() -> None:
        assert limit is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))  # Python ignores SIGXFSZ: EFBIG

    return subprocess.run(
        [sys.executable, "-m", "remem.daemon", f"--home={home.root}", *args],
        capture_output=True, text=True, timeout=120, preexec_fn=None if limit is None else limited,
    )  # fmt: skip


def consolidate(home: Home, session: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    return remem(home, "--no-daemon", "consolidate", session, limit=limit)


def answer(source: Source, said: str | None = None) -> object:
    """The model's proposal, with `said` as its text beside the call."""
    return tool_call(proposal(put("prefer-uv", source.evidence())), content=said)


WORKER_REFUSED = "the worker session could not be written (File too large); to go on, raise"


@pytest.mark.parametrize(
    ("limit", "text", "said"),
    [
        (256, None, "memory/reviews refused a write (File too large), so nothing was changed there"),
        (2048, None, WORKER_REFUSED),  # its first lines
        (16384, random.Random(7).randbytes(40_000).hex(), WORKER_REFUSED),
    ],
    ids=["receipt", "worker-session", "model-answer"],
)
def test_a_refused_write_ends_the_review_with_what_to_do_and_the_retry_commits(
    home: Home, fake: FakeOpenAI, source: Source, limit: int, text: str | None, said: str
) -> None:
    fake.reply(answer(source, text))
    refused = consolidate(home, source.id, limit)
    assert refused.returncode == 1, refused.stderr
    assert said in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert "a bug in remem" not in refused.stderr
    fake.reply(answer(source))
    retried = consolidate(home, source.id)
    assert retried.returncode == 0 and retried.stdout.startswith("committed, 1 change(s)"), retried.stderr
    [receipt] = ReceiptStore(home).all()
    assert receipt.status is Status.COMMITTED


def test_through_the_daemon_a_refused_write_is_said_as_without_it(
    home: Home, fake: FakeOpenAI, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's UNWRITABLE reached `consolidate` and `settings model` as an RpcError they did
    not expect: "a bug in remem", exit 4; and storing an API key was the daemon's internal error.
    The daemon runs under the limit, the commands not."""
    monkeypatch.delenv(NO_DAEMON_ENV)
    assert remem(home, "daemon", "start", limit=700).returncode == 0
    try:
        fake.reply(answer(source))
        plain = remem(home, "consolidate", source.id)
        as_json = remem(home, "consolidate", source.id, "--json")
        chosen = remem(home, "settings", "model", f"--model={'m' * 800}", "--json")  # past the limit
        [key] = calls(home, [("consolidation/credentials/set", {"provider": "fake", "apiKey": "k" * 800})])
    finally:
        remem(home, "daemon", "stop")
    assert plain.returncode == 1 and "memory/reviews refused a write (File too large)" in plain.stderr, (
        plain.stderr
    )
    for done in (as_json, chosen):
        assert done.returncode == 1, done.stderr
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "UNWRITABLE" and error["errno"] == "EFBIG", error
    assert isinstance(key, RpcError) and key.code == UNWRITABLE, key  # it was -32603, "internal error"
    assert not home.credentials_file.exists()
    fake.reply(answer(source))
    assert remem(home, "--no-daemon", "consolidate", source.id).stdout.startswith("committed, 1 change(s)")


def test_a_review_whose_workspace_the_disk_refuses_after_global_says_so_and_finishes_later(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    """It said the workspace "refused a write, so nothing was changed there", with Global
    committed."""
    store = MemoryStore(home)
    workspace = WorkspaceId.from_cwd(source.cwd)
    mine = Record(name="mine", description="Mine", type="project", content="Mine.\n")
    store.commit_workspace(
        workspace, store.read_workspace(workspace).revision, [PutChange(action="put", record=mine)]
    )
    terse = "Prefers terse answers.\n"
    glob = {"action": "replace-global", "content": terse, "evidence": source.evidence(1)}
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()), glob)))
    with unwritable(store.folder(workspace)):  # its write refused, as on a full disk
        refused = consolidate(home, source.id)
    assert refused.returncode == 1, refused.stderr
    said = refused.stderr.splitlines()[-1]
    assert (
        said.startswith("remem: Global was committed, but ") and "the next request then finishes it" in said
    )
    assert store.read_global().content == terse
    finished = consolidate(home, source.id)
    assert finished.returncode == 0 and finished.stdout.startswith("committed, 2 change(s)"), finished
    [receipt] = ReceiptStore(home).all()
    assert receipt.status is Status.COMMITTED and fake.count == 1  # finished without the model
    assert [r.name for r in store.read_workspace(workspace).records] == ["mine", "prefer-uv"]


def test_a_review_whose_worker_session_the_disk_refused_from_its_start_is_said_failed_and_why(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    """A refused first write of the worker session ends its attempt `internal-error` in the
    receipt, saying the refusal and what to do, as a later append's does. It was left `running`,
    which readers said interrupted ("its process was killed or could not record its end"),
    naming no cause, though its run had said it and the receipt could still be written."""
    fake.reply(answer(source))
    refused = consolidate(home, source.id, limit=2048)
    assert refused.returncode == 1 and WORKER_REFUSED in refused.stdout, refused
    listed = remem(home, "--no-daemon", "sessions", "list", "--cwd", source.cwd)
    receipts = remem(home, "--no-daemon", "receipts")
    assert "[internal-error]" in listed.stdout, listed.stdout
    [line, why, _] = receipts.stdout.splitlines()
    assert "internal-error" in line and why.strip().startswith(WORKER_REFUSED), receipts.stdout
    for said in (listed.stdout, receipts.stdout):
        assert "interrupted" not in said, said
    [receipt] = ReceiptStore(home).all()
    [attempt] = receipt.attempts
    assert receipt.status is attempt.status is Status.INTERNAL_ERROR and attempt.endedAt, receipt

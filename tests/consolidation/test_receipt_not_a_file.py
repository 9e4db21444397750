"""A receipt path holding no regular file (a FIFO, a socket, a link) is a receipt that cannot be
read, named with what it is: never opened in a way that waits (a FIFO read the plain way held
`remem receipts`, `remem sessions list` and the daemon's threads for good), never followed out
of the home, and every other receipt reads on. A write replaces it, never writes through it."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.cli.backend import Backend
from remem.daemon.consolidation.receipts import ReceiptError, ReceiptStore
from remem.daemon.home import Home
from remem.daemon.protocol.rpc import ReviewParams, RpcError
from tests.fake_openai import FakeOpenAI, tool_call
from tests.fifo import released

from .conftest import Source, proposal, put

TIMEOUT = 30  # seconds: the suite's bound, should a reader still wait on a FIFO

WHAT = {
    "fifo": "a FIFO, not a regular file",
    "socket": "a socket, not a regular file",
    "link": "a symbolic link, never followed",
}


def run(home: Home, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), *args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def make(shape: str, path: Path, outside: Path) -> None:
    """`shape` at `path`, in place of what is there; a link leads to `outside`, out of the home."""
    path.unlink(missing_ok=True)
    if shape == "link":
        path.symlink_to(outside)
    else:  # a socket's file as a listening one leaves it (bind's paths are too short for tmp_path)
        os.mknod(path, 0o600 | (stat.S_IFIFO if shape == "fifo" else stat.S_IFSOCK))


def made_odd(shape: str, path: Path, receipt: Path, tmp_path: Path) -> None:
    """`shape` at `path`; a link leads to a copy of `receipt` out of the home (valid, not remem's)."""
    outside = tmp_path / "outside.md"
    shutil.copyfile(receipt, outside)
    make(shape, path, outside)


def committed(home: Home, fake: FakeOpenAI, source: Source) -> Path:
    """The receipt file of a committed review of `source`."""
    fake.reply(tool_call(proposal(put("prefer-uv", source.evidence()))))
    code, out, _ = run(home, "consolidate", source.id, "--json")
    assert code == 0, out
    return ReceiptStore(home).path(json.loads(out)["review"])


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("shape", sorted(WHAT))
def test_a_receipt_path_that_is_no_file_is_listed_unreadable_and_the_others_list(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path, shape: str
) -> None:
    real = committed(home, fake, source)
    odd = real.with_name(f"{'b' * 64}.md")
    made_odd(shape, odd, real, tmp_path)
    with released(odd) as fifo:
        receipts, errors = ReceiptStore(home).listing()
        code, out, err = run(home, "receipts")
        sessions = run(home, "sessions", "list", "--json")
    assert not fifo.waited, "it opened the FIFO and waited on it for a writer"
    assert [r.review for r in receipts] == [real.stem]
    assert [(e.path, e.message) for e in errors] == [(str(odd), WHAT[shape])]
    assert code == 0 and real.stem[:12] in out and out.endswith("\n1 receipt(s), 1 unreadable\n"), out
    assert f"error: {odd}: {WHAT[shape]}\n" in err and "Traceback" not in err, err
    assert sessions[0] == 0 and source.id in sessions[1], sessions


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("shape", sorted(WHAT))
def test_a_review_whose_receipt_is_no_file_is_refused_unreadable(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path, shape: str
) -> None:
    path = committed(home, fake, source)
    made_odd(shape, path, path, tmp_path)
    with released(path) as fifo:
        with pytest.raises(ReceiptError) as raised:
            ReceiptStore(home).read_as_written(path.stem)
        with pytest.raises(RpcError) as refused:
            Backend(home, use_daemon=False).api().receipt(ReviewParams(review=path.stem))
        code, _, err = run(home, "consolidate", source.id)
    assert not fifo.waited, "it opened the FIFO and waited on it for a writer"
    assert str(raised.value) == f"{path}: {WHAT[shape]}"
    assert refused.value.data == {"code": "UNREADABLE"}
    assert refused.value.message == f"{path}: {WHAT[shape]}"
    assert code == 1 and f"remem: UNREADABLE: {path}: {WHAT[shape]}; fix or remove it" in err, err
    assert fake.count == 1, "nothing is redone while what the receipt recorded cannot be known"


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("shape", sorted(WHAT))
def test_a_receipt_written_over_what_is_no_file_replaces_it(
    home: Home, fake: FakeOpenAI, source: Source, tmp_path: Path, shape: str
) -> None:
    path = committed(home, fake, source)
    store = ReceiptStore(home)
    receipt = store.read(path.stem)
    assert receipt is not None
    outside = tmp_path / "outside.md"
    outside.write_text("the user's own file\n")
    make(shape, path, outside)
    with released(path) as fifo:
        store.write(receipt)
    assert not fifo.waited, "it opened the FIFO and waited on it for a writer"
    assert not path.is_symlink() and path.is_file() and store.read(path.stem) == receipt
    assert outside.read_text() == "the user's own file\n", "never written through the link"

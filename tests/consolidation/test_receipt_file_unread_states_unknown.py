"""A receipt file a listing cannot read leaves every review state unknown (decision 0529)."""

from __future__ import annotations

import json

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.home import Home
from tests.cli_process import remem
from tests.fake_openai import FakeOpenAI, tool_call
from tests.permissions import modes, remem_bound

from .conftest import Source, both_scopes
from .test_receiptsfix_unreadable_memory import unreadable_to_user


def _listed(home: Home, daemon: bool, bound: bool = False) -> tuple[dict[str, object], str]:
    run = remem_bound if bound else remem
    answer = json.loads(run(home, "sessions", "list", "--json", daemon=daemon).stdout)
    text = run(home, "sessions", "list", daemon=daemon)
    return answer, text.stdout.splitlines()[-1]


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_a_receipt_file_that_cannot_be_read_leaves_review_states_unknown_and_says_why(
    home: Home, fake: FakeOpenAI, source: Source, daemon: bool
) -> None:
    """One damaged or closed receipt file was skipped, its session listed `never` with no error,
    and the editor offered a Consolidate that was then refused: whose receipt a file is that
    cannot be read is unknown, so every state is, and the file is the listing's error."""
    fake.reply(tool_call(both_scopes(source)))
    assert remem(home, "consolidate", source.id).returncode == 0
    [receipt] = ReceiptStore(home).all()
    path = ReceiptStore(home).path(receipt.review)
    try:
        good = path.read_text()
        path.write_text("---\nnot: [valid\n")
        damaged, damaged_footer = _listed(home, daemon)
        path.write_text(good)
        opened, _ = _listed(home, daemon)
    finally:
        if daemon:
            remem(home, "daemon", "stop")
    with modes((path, 0)):  # a daemon started as root would read it still
        unreadable_to_user(path)
        closed, closed_footer = _listed(home, False, bound=True)

    for answer, footer in ((damaged, damaged_footer), (closed, closed_footer)):
        assert [row["review"]["state"] for row in answer["sessions"]] == ["unknown"], answer  # type: ignore[index]
        [error] = answer["errors"]  # type: ignore[misc]
        assert (error["path"], error["kind"]) == (str(path), "reviews"), error
        assert footer == "1 session(s), 0 unreadable, review states unknown", footer
    assert damaged["errors"][0]["message"].startswith("not a valid receipt ("), damaged  # type: ignore[index]
    assert "Permission denied" in closed["errors"][0]["message"], closed  # type: ignore[index]
    assert [row["review"]["state"] for row in opened["sessions"]] == ["consolidated"], opened  # type: ignore[index]
    assert opened["errors"] == [], opened


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_a_file_not_named_as_a_receipt_is_no_receipt_and_leaves_review_states_known(
    home: Home, fake: FakeOpenAI, source: Source, daemon: bool
) -> None:
    """An editor's lock link (`.#a.md`, Emacs's, leading nowhere) or a README beside the receipts
    was read as a receipt that could not be read, and every session's state was `unknown`:
    remem names a receipt by its review id only, so nothing else there is one. `remem receipts`
    says the README, a file a receipt could be taken for, as the folder's one error; the lock,
    a dotfile, it passes over."""
    fake.reply(tool_call(both_scopes(source)))
    assert remem(home, "consolidate", source.id).returncode == 0
    folder = ReceiptStore(home).folder
    (folder / ".#notes.md").symlink_to("user@host.1234:1700000000")
    (folder / "README.md").write_text("# Notes on these receipts\n")
    try:
        answer, footer = _listed(home, daemon)
        receipts = json.loads(remem(home, "receipts", "--json", daemon=daemon).stdout)
    finally:
        if daemon:
            remem(home, "daemon", "stop")
    assert [row["review"]["state"] for row in answer["sessions"]] == ["consolidated"], answer  # type: ignore[index]
    assert answer["errors"] == [], answer
    assert footer == "1 session(s), 0 unreadable", footer
    [error] = receipts["errors"]
    assert len(receipts["receipts"]) == 1 and error["path"] == str(folder), receipts
    assert error["message"].startswith("1 file(s) not named as remem names a receipt (README.md) "), error


@pytest.mark.parametrize("daemon", [False, True], ids=["no-daemon", "daemon"])
def test_several_damaged_receipt_files_are_one_error_naming_how_many_and_the_first(
    home: Home, source: Source, daemon: bool
) -> None:
    """Each damaged receipt was an error of its own, a row each in the editor's tree, all saying
    the same: review states unknown. Several are one error of the receipts' folder; `remem
    receipts` still names each."""
    store = ReceiptStore(home)
    home.ensure_layout()
    damaged = [store.path(f"{n:064x}") for n in range(1, 6)]
    for path in damaged:
        path.write_text("---\nnot: [valid\n")
    try:
        answer, _ = _listed(home, daemon)
        receipts = json.loads(remem(home, "receipts", "--json", daemon=daemon).stdout)
    finally:
        if daemon:
            remem(home, "daemon", "stop")
    [error] = answer["errors"]  # type: ignore[misc]
    assert (error["path"], error["kind"]) == (str(store.folder), "reviews"), error
    assert error["message"].startswith(
        "5 receipt files cannot be read, so no session's review state is shown"
    )
    assert [p.name in error["message"] for p in damaged] == [True] * 3 + [False] * 2
    assert "; and 2 more); `remem receipts` names each" in error["message"]
    assert [e["path"] for e in receipts["errors"]] == [str(p) for p in damaged]

"""A garbage fork-journal entry or session-meta.json is named with its fix, and confined."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.forks.child import child_id
from remem.daemon.forks.journal import ForkJournal, operation_key
from remem.daemon.forks.service import ForkService
from remem.daemon.home import Home, HomeUnusable
from remem.daemon.protocol.forks import ForkRequest
from remem.daemon.sessions.catalog import SessionCatalog
from remem.daemon.sessions.errors import OperationError
from tests.sessions.factory import SessionSpec, build_session, write_session

CWD = "/home/dev/projects/demo"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    write_session(root, build_session(SessionSpec(seed=7, turns=3, cwd=CWD)))
    return root


def sessions(home: Home, root: Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    result = CliRunner().invoke(
        cli, ["--home", str(home.root), "sessions", *args, "--root", str(root), "--json"]
    )
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, json.loads(result.stdout or result.stderr)


def test_garbage_session_metadata_still_lists_and_refuses_changes(home: Home, root: Path) -> None:
    meta = home.ensure_layout().state / "session-meta.json"
    meta.write_text("{garbage")
    code, listing = sessions(home, root, "list")
    assert code == 0 and len(listing["sessions"]) == 1
    [error] = [e for e in listing["errors"] if e["path"] == str(meta)]
    assert "cannot be read" in error["message"] and "deleting it" in error["message"]
    session_id = listing["sessions"][0]["id"]
    code, refused = sessions(home, root, "rename", session_id, "New title")
    assert code != 0 and "cannot be read" in json.dumps(refused)
    assert meta.read_text() == "{garbage", "the titles it may still hold are never overwritten"


def test_a_garbage_fork_journal_entry_stops_only_its_operation(home: Home, root: Path) -> None:
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    source = catalog.listing().sessions[0].id
    entry = ForkJournal(home).folder / f"{operation_key('broken')}.json"
    entry.write_text("{garbage")
    ForkJournal(home).recover()  # what the daemon runs at start: the others still settle
    with pytest.raises(OperationError) as refused:
        ForkService(catalog).fork(ForkRequest(source=source, operationId="broken", atSeq=0))
    assert refused.value.code == "INVALID" and str(entry) in refused.value.message
    assert "delete the entry" in refused.value.message
    assert ForkService(catalog).fork(ForkRequest(source=source, operationId="fine", atSeq=0)).created


@pytest.mark.parametrize(
    ("lock", "command"),
    [
        (f"fork-{operation_key('op')}.lock", ("fork", "--op-id", "op", "--at", "0")),
        ("session-meta.lock", ("rename", "New title")),
    ],
)
def test_a_folder_where_a_lock_file_goes_is_named_with_its_fix(
    home: Home, root: Path, lock: str, command: tuple[str, ...]
) -> None:
    code, listing = sessions(home, root, "list")
    source = listing["sessions"][0]["id"]
    (home.locks / lock).mkdir(parents=True)
    code, refused = sessions(home, root, command[0], source, *command[1:])
    error = refused["error"]
    assert code != 0 and error["code"] == "INVALID"
    assert str(home.locks / lock) in error["message"] and "remove it" in error["message"]


def test_an_interrupted_operation_whose_lock_is_unusable_stops_only_itself(home: Home, root: Path) -> None:
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    source = catalog.listing().sessions[0].id
    journal = ForkJournal(home)
    journal.mark("interrupted")
    (home.locks / f"fork-{operation_key('interrupted')}.lock").mkdir(parents=True)
    journal.recover()  # what the daemon runs at start, and each fork before its own
    result = ForkService(catalog).fork(ForkRequest(source=source, operationId="another", atSeq=0))
    assert result.created


@pytest.mark.parametrize("found", [b"not a session log\n", b""], ids=["garbage", "empty"])
def test_a_child_place_holding_no_readable_session_is_a_conflict(
    home: Home, root: Path, found: bytes
) -> None:
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    source = catalog.listing().sessions[0].id
    first = ForkService(catalog).fork(ForkRequest(source=source, operationId="first", atSeq=0))
    made = catalog.find(first.child).path
    taken = made.parent.with_name(child_id("second")) / made.name
    taken.parent.mkdir()
    taken.write_bytes(found)
    with pytest.raises(OperationError) as refused:
        ForkService(catalog).fork(ForkRequest(source=source, operationId="second", atSeq=0))
    assert refused.value.code == "OP_CONFLICT" and str(taken) in refused.value.message
    assert taken.read_bytes() == found


@pytest.mark.parametrize("linked", ["state/forks", "state/forks/pending", "state/published"])
def test_a_journal_folder_linked_out_of_the_home_is_refused_untouched(
    home: Home, root: Path, tmp_path: Path, linked: str
) -> None:
    catalog = SessionCatalog(home, [root], idle_seconds=120)
    source = catalog.listing().sessions[0].id
    assert ForkService(catalog).fork(ForkRequest(source=source, operationId="first", atSeq=0)).created
    folder, outside = home.root / linked, tmp_path / "outside"
    shutil.move(folder, outside)  # what the folder held, now behind a link
    folder.symlink_to(outside)
    held = {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()}
    children = sorted(root.rglob("session.jsonl*"))
    with pytest.raises(HomeUnusable) as refused:  # the catalog was made before the link
        ForkService(catalog).fork(ForkRequest(source=source, operationId="second", atSeq=0))
    assert str(refused.value) == (
        f"remem's home {home.root} cannot be used: {folder} is a symbolic link, and remem reads and "
        "writes only inside its home; move the folder it points to into the home, or choose a home "
        "that holds it with --home or $REMEM_HOME"
    )
    assert {p: p.read_bytes() for p in outside.rglob("*") if p.is_file()} == held, (
        "nothing written through it"
    )
    assert sorted(root.rglob("session.jsonl*")) == children, "no child published"

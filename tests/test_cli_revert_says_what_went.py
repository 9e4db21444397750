"""What `remem memory revert` says, run as a user runs it: the later changes a revert takes back
with the entry named, a take-back it can offer, and a conflict's hint in the entry's own
workspace (decision 0510)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from tests.cli_process import remem
from tests.memory.factory import put

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def project_with_two_changes(home: Home, tmp_path: Path) -> tuple[MemoryStore, WorkspaceId, str, str]:
    """A workspace where one change added rec-a, rec-b and rec-c, and a later one user-note;
    (its store, the workspace, the first entry, the later one)."""
    (tmp_path / "project").mkdir()
    workspace = WorkspaceId.from_cwd(tmp_path / "project")
    store = MemoryStore(home)
    first = store.commit_workspace(workspace, EMPTY, [put("rec-a"), put("rec-b"), put("rec-c")])
    later = store.commit_workspace(workspace, first.revision, [put("user-note")])
    assert first.history is not None and later.history is not None
    return store, workspace, first.history, later.history


def test_an_undo_names_the_later_changes_it_took_back_too(home: Home, tmp_path: Path) -> None:
    """`--before ENTRY` took back the user's later record with ENTRY's, said as one change, as
    if ENTRY had made it; exit 0 and nothing named it."""
    store, workspace, first, later = project_with_two_changes(home, tmp_path)

    done = remem(home, "memory", "revert", "--before", first)

    assert done.returncode == 0, done.stderr
    assert store.read_workspace(workspace).records == []
    lines = done.stdout.splitlines()
    assert lines[:3] == [
        f"committed: {EMPTY}",
        "this revert: removed rec-a, rec-b, rec-c, user-note (+0 -24)",
        f"it took back {first[:12]} and 1 later change with it:",
    ], done.stdout
    assert re.fullmatch(rf"  {later[:12]}  \S+  cli  added user-note \(\+6 -0\)", lines[3]), lines[3]
    assert lines[4:] == [f"to take it back: remem memory revert {later[:12]}"]

    # Undoing the newest change alone takes back nothing later.
    redone = remem(home, "memory", "revert", later)
    assert redone.returncode == 0 and [r.name for r in store.read_workspace(workspace).records] == [
        "rec-a", "rec-b", "rec-c", "user-note",
    ]  # fmt: skip
    undo_newest = remem(home, "memory", "revert", "--before", store.history.log(workspace.key)[0].id)
    assert "took back" not in undo_newest.stdout, undo_newest.stdout


def test_a_revert_away_from_an_invalid_hand_edit_offers_no_take_back_that_fails(
    home: Home, tmp_path: Path
) -> None:
    """The printed `to take it back: remem memory revert ENTRY` named an entry holding an invalid
    record, which a revert refuses (exit 2, remem/revert-invalid)."""
    store, workspace, first, later = project_with_two_changes(home, tmp_path)
    (home.workspaces / workspace.key / "rec-a.md").write_text("---\nname: rec-a\n---\nbroken\n")
    assert remem(home, "memory", "log", "--cwd", workspace.cwd).returncode == 0  # records the edit
    edited = store.history.log(workspace.key)[0].id

    done = remem(home, "memory", "revert", later)

    assert done.returncode == 0, done.stderr
    assert "to take it back" not in done.stdout, done.stdout
    assert done.stdout.splitlines()[-1] == (
        f"it cannot be taken back by a revert: rec-a.md was invalid at {edited[:12]}, the entry before "
        "it, and a revert never writes invalid files back; "
        f"`remem memory show --at {edited[:12]}` shows it, to copy back by hand and fix"
    )
    refused = remem(home, "memory", "revert", edited)  # what the line used to offer
    assert refused.returncode == 2 and "[remem/revert-invalid]" in refused.stderr, refused.stderr


def test_a_revert_away_from_an_invalid_hand_edit_offers_no_take_back_in_json_either(
    home: Home, tmp_path: Path
) -> None:
    """The text said the revert cannot be taken back, while `--json` still gave `takeBack`: an
    entry a script's revert to then fails (exit 2, remem/revert-invalid)."""
    store, workspace, _, later = project_with_two_changes(home, tmp_path)
    (home.workspaces / workspace.key / "rec-a.md").write_text("---\nname: rec-a\n---\nbroken\n")
    assert remem(home, "memory", "log", "--cwd", workspace.cwd).returncode == 0  # records the edit

    done = remem(home, "memory", "revert", later, "--json")

    assert done.returncode == 0, done.stderr
    change = json.loads(done.stdout)["change"]
    assert (change["takeBack"], change["unrestorable"]) == (None, ["rec-a.md"]), change


def test_a_file_name_holding_a_newline_stays_on_the_line_that_names_it(home: Home, tmp_path: Path) -> None:
    """`log` escapes such a name; a revert's take-back line and its refusal printed it raw, so
    one line became two, the second looking like a line of its own."""
    store, workspace, _, later = project_with_two_changes(home, tmp_path)
    (home.workspaces / workspace.key / "a\nfake.md").write_text("junk\n")
    assert remem(home, "memory", "log", "--cwd", workspace.cwd).returncode == 0  # records the edit
    edited = store.history.log(workspace.key)[0].id

    done = remem(home, "memory", "revert", later)
    refused = remem(home, "memory", "revert", edited)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith(
        "it cannot be taken back by a revert: a\\nfake.md was invalid at "
    ), done.stdout
    assert refused.returncode == 2, refused.stderr
    assert all(line.startswith("invalid: a\\nfake.md: ") for line in refused.stderr.splitlines()), (
        refused.stderr
    )


def test_a_revert_conflict_hints_in_the_entrys_workspace_and_names_globals_revision(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run from another folder, the hint was a bare `remem memory show` (that folder's memory),
    and a Global revision given for a workspace entry got no word that it is Global's."""
    store, workspace, first, _ = project_with_two_changes(home, tmp_path)
    store.replace_global(EMPTY, "Answer briefly.\n")
    global_revision = store.read_global().revision
    now = store.read_workspace(workspace).revision
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    copied = remem(home, "memory", "revert", first, "--expected-revision", global_revision)
    stale = remem(home, "memory", "revert", first, "--expected-revision", EMPTY)

    assert (copied.returncode, copied.stdout) == (3, "")
    assert copied.stderr == (
        f"conflict: the memory of workspace {workspace.key} is at {now}, not {global_revision}; "
        f"{global_revision} is Global memory's revision; a revert of a workspace's entry takes the "
        f"workspace's (see `remem memory show --cwd {workspace.cwd}`)\n"
    )
    assert (stale.returncode, stale.stderr) == (
        3,
        f"conflict: the memory of workspace {workspace.key} is at {now}, not {EMPTY}; "
        f"re-read it (`remem memory show --cwd {workspace.cwd}`) and retry\n",
    )

    # A Global entry, its revert given the revision of the workspace it runs in.
    monkeypatch.chdir(workspace.cwd)
    global_entry = store.history.log(None)[0].id
    copied = remem(home, "memory", "revert", global_entry, "--expected-revision", now)
    assert (copied.returncode, copied.stderr) == (
        3,
        f"conflict: Global memory is at {global_revision}, not {now}; {now} is the revision of this "
        f"workspace's memory ({workspace.key}); a revert of a Global entry takes Global memory's "
        "(see `remem memory show`)\n",
    )


def test_a_take_back_is_offered_for_a_valid_record_that_holds_the_replacement_character(
    home: Home, tmp_path: Path
) -> None:
    """A valid record whose text holds U+FFFD was taken for a file that was no UTF-8, and every
    file of the entry before the revert was judged, those the revert never touched too: the
    take-back, which a revert makes, was said to be impossible."""
    (tmp_path / "project").mkdir()
    workspace = WorkspaceId.from_cwd(tmp_path / "project")
    store = MemoryStore(home)
    mojibake = store.commit_workspace(workspace, EMPTY, [put("mojibake", "Caf\ufffd was mis-saved.\n")])
    other = store.commit_workspace(workspace, mojibake.revision, [put("other")])
    assert mojibake.history is not None and other.history is not None

    done = remem(home, "memory", "revert", "--before", other.history)  # `mojibake` untouched

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == f"to take it back: remem memory revert {other.history[:12]}"
    taken_back = remem(home, "memory", "revert", other.history)
    assert taken_back.returncode == 0, taken_back.stderr

    undone = remem(home, "memory", "revert", "--before", mojibake.history)  # `mojibake` removed
    assert undone.returncode == 0, undone.stderr
    take_back = undone.stdout.splitlines()[-1]
    assert re.fullmatch(r"to take it back: remem memory revert [0-9a-f]{12}", take_back), undone.stdout
    redone = remem(home, "memory", "revert", take_back.rsplit(" ", 1)[1])
    assert redone.returncode == 0, redone.stderr
    assert [r.name for r in store.read_workspace(workspace).records] == ["mojibake", "other"]
    assert "Caf\ufffd" in store.read_workspace(workspace).records[0].content


def test_a_revert_away_from_a_record_saved_in_another_encoding_names_it_alone(
    home: Home, tmp_path: Path
) -> None:
    """A record hand-saved as Latin-1 reads as valid once its bytes are decoded with U+FFFD, and
    a revert refuses to put it back: it is named, and a record the revert never touched, whose
    text holds U+FFFD, is not."""
    store, workspace, _, later = project_with_two_changes(home, tmp_path)
    now = store.read_workspace(workspace).revision
    store.commit_workspace(workspace, now, [put("mojibake", "Caf\ufffd was mis-saved.\n")])
    latin1 = "---\nname: rec-a\ndescription: About rec-a\ntype: project\n---\nCaf\xe9.\n".encode("latin-1")
    (home.workspaces / workspace.key / "rec-a.md").write_bytes(latin1)
    assert remem(home, "memory", "log", "--cwd", workspace.cwd).returncode == 0  # records the edit
    edited = store.history.log(workspace.key)[0].id

    done = remem(home, "memory", "revert", "--before", edited)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].startswith(
        f"it cannot be taken back by a revert: rec-a.md was invalid at {edited[:12]}, "
    ), done.stdout
    refused = remem(home, "memory", "revert", edited)
    assert refused.returncode == 2 and "rec-a.md was not valid UTF-8" in refused.stderr, refused.stderr


def test_a_revert_away_from_a_workspace_file_named_global_md_offers_no_take_back_that_fails(
    home: Home, tmp_path: Path
) -> None:
    """A file named GLOBAL.md hand-made in a workspace is no valid record (its name is not one),
    and the stat names it by its file name: the take-back judged the files the revert changed by
    their record names, missed it, and offered `remem memory revert ENTRY`, which is refused."""
    store, workspace, _, _ = project_with_two_changes(home, tmp_path)
    made = "---\nname: GLOBAL\ndescription: About Global\ntype: project\n---\nBy hand.\n"
    (home.workspaces / workspace.key / "GLOBAL.md").write_text(made)
    assert remem(home, "memory", "log", "--cwd", workspace.cwd).returncode == 0  # records the edit
    edited = store.history.log(workspace.key)[0].id

    done = remem(home, "memory", "revert", "--before", edited)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "this revert: removed GLOBAL.md (+0 -6)",
        f"it cannot be taken back by a revert: GLOBAL.md was invalid at {edited[:12]}, the entry before "
        "it, and a revert never writes invalid files back; "
        f"`remem memory show --at {edited[:12]}` shows it, to copy back by hand and fix",
    ], done.stdout
    refused = remem(home, "memory", "revert", edited)  # what the line used to offer
    assert refused.returncode == 2 and "[remem/revert-invalid]" in refused.stderr, refused.stderr


def test_a_record_holding_the_replacement_character_is_not_named_beside_one_that_was_no_utf8(
    home: Home, tmp_path: Path
) -> None:
    """Both records went with the revert: the one saved as Latin-1 cannot be put back, the one
    whose own text holds U+FFFD can. Both were named invalid: the entry's files, sent decoded,
    did not hash to its revision, and every file holding U+FFFD was taken for the one."""
    store, workspace, _, _ = project_with_two_changes(home, tmp_path)
    folder = home.workspaces / workspace.key
    (folder / "mojibake.md").write_text(
        "---\nname: mojibake\ndescription: About mojibake\ntype: project\n---\nCaf\ufffd was mis-saved.\n"
    )
    latin1 = "---\nname: latin\ndescription: About latin\ntype: project\n---\nCaf\xe9.\n".encode("latin-1")
    (folder / "latin.md").write_bytes(latin1)
    assert remem(home, "memory", "log", "--cwd", workspace.cwd).returncode == 0  # records the edit
    edited = store.history.log(workspace.key)[0].id

    done = remem(home, "memory", "revert", "--before", edited)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == [
        "this revert: removed latin, mojibake (+0 -12)",
        f"it cannot be taken back by a revert: latin.md was invalid at {edited[:12]}, the entry before "
        "it, and a revert never writes invalid files back; "
        f"`remem memory show --at {edited[:12]}` shows it, to copy back by hand and fix",
    ], done.stdout
    shown = json.loads(remem(home, "memory", "show", "--at", edited, "--json").stdout)
    assert shown["undecoded"] == ["latin.md"] and "\ufffd" in shown["files"]["mojibake.md"], shown

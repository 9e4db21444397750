"""A folder of the home that remem's user may neither read nor write (mode 000) is said as both,
with and without a daemon, by the commands that only read: `sessions list` and `memory show`
said "cannot be written … let your user write in it", and a user who did met the read next;
`remem --no-daemon memory show` under an unsearchable `memory` folder was a bug's (exit 4).

Permissions bind root too here: run as root, each command's process (and the daemon's) is
started without the capabilities that let root past them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.permissions import as_user, daemon_bound, modes, remem_bound
from tests.sessions.claude_lines import jsonl, prompt, say
from tests.sessions.factory import SessionSpec, build_session, write_session


@pytest.fixture(params=[False, True], ids=["no-daemon", "daemon"])
def daemon(request: pytest.FixtureRequest, home: Home) -> Iterator[bool]:
    """Whether the command goes through a daemon, started as it, bound by permissions too."""
    home.ensure_layout()
    if not request.param:
        yield False
        return
    with daemon_bound(home):
        yield True


def refused(home: Home, folder: Path) -> str:
    return (
        f"remem: remem's home {home.root} cannot be used: {folder} cannot be read or written "
        "(Permission denied); let your user read and write in it, or choose another home with "
        "--home or $REMEM_HOME"
    )


@pytest.mark.parametrize(
    ("command", "folder"),
    [
        (("sessions", "list"), "memory"),
        (("memory", "show"), "memory"),
        (("memory", "show"), "memory/reviews"),
    ],
    ids=["sessions list-memory", "memory show-memory", "memory show-memory/reviews"],
)
def test_a_folder_of_the_home_closed_to_its_user_is_said_neither_readable_nor_writable(
    home: Home, daemon: bool, command: tuple[str, ...], folder: str
) -> None:
    closed = home.root / folder
    with modes((closed, 0)):
        listing = [sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])", str(closed)]
        if as_user(listing, {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read past permissions still")
        said = remem_bound(home, *command, daemon=daemon)

    assert (said.returncode, said.stderr.splitlines()[-1]) == (2, refused(home, closed)), said


def test_a_session_listing_with_the_review_receipts_closed_lists_every_session_and_says_why_once(
    home: Home, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, daemon: bool
) -> None:
    """The whole listing was refused, exit 2, for a folder only the review states come from: the
    sessions are listed, their review state `unknown` (it was `never`, said as fact), and the
    receipts' folder is said once, as the listing's one error, of kind `reviews`, counted apart
    from unreadable sessions; an empty workspace is one whose sessions were not found, not one
    none of whose sessions could be read (decision 0529)."""
    root = tmp_path / "dsh-sessions"
    home.settings_file.write_text(f"sessions:\n  roots:\n    - {str(root)!r}\n")
    draft = build_session(SessionSpec(seed=1, turns=2, cwd=str(tmp_path)))
    write_session(root, draft)
    empty = tmp_path_factory.mktemp("empty")  # no folder above it has sessions either
    reviews = home.root / "memory" / "reviews"
    with modes((reviews, 0)):
        listing = [sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])", str(reviews)]
        if as_user(listing, {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read past permissions still")
        listed = remem_bound(home, "sessions", "list", "--json", daemon=daemon)
        said = remem_bound(home, "sessions", "list", daemon=daemon)
        tree = remem_bound(home, "sessions", "tree", "--cwd", str(tmp_path), "--json", daemon=daemon)
        none = remem_bound(home, "sessions", "tree", "--cwd", str(empty), daemon=daemon)

    assert listed.returncode == 0, listed
    answer = json.loads(listed.stdout)
    assert [(row["id"], row["review"]["state"]) for row in answer["sessions"]] == [
        (draft.header.id, "unknown")
    ]
    unknown = (
        "the review receipts cannot be read, so no session's review state is shown: remem's home "
        f"{home.root} cannot be used: {reviews} cannot be read (Permission denied); let your user "
        "read it, or choose another home with --home or $REMEM_HOME"
    )
    error = {"path": str(reviews), "message": unknown, "kind": "reviews"}
    assert answer["errors"] == [error]
    assert (said.returncode, said.stderr) == (0, f"error: {reviews}: {unknown}\n"), said
    [row, footer] = said.stdout.splitlines()
    assert "[review unknown]" in row, row
    assert footer == "1 session(s), 0 unreadable, review states unknown", footer
    nodes = json.loads(tree.stdout)
    assert [(n["id"], n["review"]["state"]) for n in nodes["nodes"]] == [(draft.header.id, "unknown")]
    assert nodes["errors"] == [error], nodes
    assert none.returncode == 0 and f"No agent sessions of {empty} were found." in none.stderr, none


def test_a_harness_session_shown_with_the_review_receipts_closed_is_shown_its_review_unknown(
    home: Home, tmp_path: Path, daemon: bool
) -> None:
    """`sessions show ID --json` of a Claude Code session was refused (exit 2) for the folder its
    header's review state alone comes from, which a listing says `unknown` (decision 0529)."""
    session = "0b3c6f0e-1111-4222-8333-944445555666"
    projects = tmp_path / "claude" / "projects"
    (projects / "-proj").mkdir(parents=True)
    lines = (prompt("u1", None, "hi"), say("a1", "u1", "ok"))
    (projects / "-proj" / f"{session}.jsonl").write_bytes(
        jsonl(*({**line, "sessionId": session, "cwd": str(tmp_path)} for line in lines))
    )
    home.settings_file.write_text(
        f"sessions:\n  roots:\n    - path: {str(projects)!r}\n      format: claude-code\n"
    )
    reviews = home.root / "memory" / "reviews"
    with modes((reviews, 0)):
        listing = [sys.executable, "-c", "import os, sys; os.listdir(sys.argv[1])", str(reviews)]
        if as_user(listing, {**os.environ}).returncode == 0:
            pytest.skip("run as root, whose processes read past permissions still")
        shown = remem_bound(home, "sessions", "show", session, "--json", daemon=daemon)

    assert shown.returncode == 0, shown
    answer = json.loads(shown.stdout)
    assert (answer["header"]["id"], answer["header"]["review"]["state"]) == (session, "unknown"), answer
    assert [turn["turn"] for turn in answer["turns"]] == [1], answer

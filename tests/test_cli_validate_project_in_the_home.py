"""`remem memory validate` of a project kept inside remem's home (`$REMEM_HOME/code/app/`)
judges its files as anywhere, through a real `remem` process: only the entries remem lays out
in the home besides `memory/` (`state/`, `sessions/`, `history`) hold no memory. A bad record
there was refused when named ("not a memory file") and passed over when its folder was named
("0 file(s) checked", exit 0): a false pass."""

from __future__ import annotations

import json
import os
import sys

import pytest

from remem.daemon.home import Home
from tests.cli_process import remem
from tests.permissions import as_user, modes

BAD = "---\nname: a\ndescription: d\ntype: nope\n---\nbody\n"


def test_a_bad_record_of_a_project_in_the_home_is_judged_named_or_searched(home: Home) -> None:
    home.workspaces.mkdir(parents=True)
    home.global_file.write_text("Be brief.\n")
    notes = home.root / "code" / "app" / "notes"
    notes.mkdir(parents=True)
    (notes / "a.md").write_text(BAD)
    (home.root / "a.md").write_text(BAD)  # beside memory/, the user's too
    for path, judged in [
        (notes / "a.md", [notes / "a.md"]),
        (notes, [notes / "a.md"]),
        (home.root, [home.root / "a.md", notes / "a.md", home.global_file]),
    ]:
        done = remem(home, "memory", "validate", str(path), "--json")
        files = {f["path"]: [d["code"] for d in f["diagnostics"]] for f in json.loads(done.stdout)["files"]}
        bad = ["remem/type-invalid"]
        wanted = {str(p): [] if p == home.global_file else bad for p in judged}
        assert (done.returncode, files) == (1, wanted), done


def test_a_folder_of_a_project_in_the_home_that_cannot_be_listed_is_said(home: Home) -> None:
    """It was passed over, as `state/` is, and the files it may hold never checked."""
    home.workspaces.mkdir(parents=True)
    home.global_file.write_text("Be brief.\n")
    closed = home.root / "code" / "app"
    closed.mkdir(parents=True)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon"]
    with modes((closed, 0)):
        if (
            as_user(
                [sys.executable, "-c", f"import os; os.listdir({str(closed)!r})"], {**os.environ}
            ).returncode
            == 0
        ):
            pytest.skip("run as root, whose processes read any folder still")
        validated = as_user([*command, "memory", "validate", str(home.root), "--json"], {**os.environ})
    assert [u["path"] for u in json.loads(validated.stdout)["unread"]] == [str(closed)], validated

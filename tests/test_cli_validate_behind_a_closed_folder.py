"""`remem memory validate` of a path behind a folder that does not let its user in says so,
naming the path and that folder, exit 2, as it says of a file it may not read: through a real
`remem` process bound by file modes (root gives up its ways past them, or the test is skipped,
saying why).

It ended "internal error, a bug in remem (PermissionError …)", exit 4: the validator asked
whether the path was a folder, and the OS refused to look. A file or folder it may not read
inside a folder searched is said alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.permissions import as_user, modes, remem_bound

RECORD = "---\nname: alpha\ndescription: A record.\ntype: feedback\n---\nBody.\n"


def _skip_where_root_may(code: str, what: str) -> None:
    """Skip, saying why, where a process bound as the user's still runs `code`: run as root,
    whose processes `what` still."""
    if as_user([sys.executable, "-c", code], {**os.environ}).returncode == 0:
        pytest.skip(f"run as root, whose processes {what} still")


def test_a_folder_and_a_file_behind_a_closed_folder_are_said_naming_it_with_exit_2(
    home: Home, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "sub" / "alpha.md").write_text(RECORD)
    folder, file = project / "sub", project / "sub" / "alpha.md"
    with modes((project, 0o700 & ~0o111)):  # its owner may not pass through it either
        _skip_where_root_may(f"import os; os.stat({str(folder)!r})", "pass through any folder")
        validated = remem_bound(home, "memory", "validate", str(folder), str(file))

    closed = (
        f"the folder {project} does not let your user in (Permission denied); "
        "let your user into it, or validate a copy elsewhere"
    )
    assert (validated.returncode, validated.stderr.splitlines()) == (
        2,
        [f"remem: {folder}: cannot be read: {closed}", f"remem: {file}: cannot be read: {closed}"],
    ), validated


def test_a_name_too_long_is_said_with_exit_2(home: Home, tmp_path: Path) -> None:
    """It ended "internal error, a bug in remem (OSError: File name too long)", exit 4."""
    name = tmp_path / ("a" * 300)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home.root), "--no-daemon"]
    validated = subprocess.run([*command, "memory", "validate", str(name)], capture_output=True, text=True)
    assert (validated.returncode, validated.stdout) == (2, ""), validated
    assert validated.stderr == f"remem: {name}: cannot be read (File name too long)\n", validated.stderr


@pytest.mark.parametrize(
    ("closed", "unchecked"),
    [
        ("sub", ", so the memory files in it went unchecked"),
        ("secret.md", ", so the checks across its folder's files (duplicate names, the index) were skipped"),
    ],
)
@pytest.mark.parametrize("where", [["--no-daemon"], []], ids=["in-process", "through-the-daemon"])
def test_a_folder_or_file_inside_that_cannot_be_read_is_said_with_exit_2(
    home: Home, tmp_path: Path, where: list[str], closed: str, unchecked: str
) -> None:
    """A folder it could not list was passed over without a word (0 problems, exit 0, its
    memory unchecked), and a file it could not read ended in a bug's PermissionError, exit 4.
    What it could read is checked all the same."""
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    for path in (project / "alpha.md", project / "sub" / "beta.md", project / "secret.md"):
        path.write_text(RECORD.replace("alpha", path.stem))
    with modes((project / closed, 0)):
        read = f"import os; p = {str(project / closed)!r}; os.listdir(p) if os.path.isdir(p) else open(p)"
        _skip_where_root_may(read, "read any file")
        validated = remem_bound(home, *where, "memory", "validate", str(project))
    said = (
        f"cannot be read (Permission denied){unchecked}; let your user read it, or validate a copy elsewhere"
    )
    assert (validated.returncode, validated.stdout, validated.stderr) == (
        2,
        "2 file(s) checked, 0 problem(s), 1 not read\n",
        f"remem: {project / closed}: {said}\n",
    ), validated


def test_in_the_homes_memory_only_a_folder_holding_memory_is_said(home: Home) -> None:
    """A workspace folder it cannot list is said; `reviews/`, which holds no memory, is not."""
    closed, receipts = home.root / "memory" / "workspaces" / "abc", home.root / "memory" / "reviews"
    for folder in (closed, receipts):
        folder.mkdir(parents=True)
    (closed / "alpha.md").write_text(RECORD)
    with modes((closed, 0), (receipts, 0)):
        _skip_where_root_may(f"import os; os.listdir({str(closed)!r})", "read any folder")
        validated = remem_bound(home, "--no-daemon", "memory", "validate", str(home.root / "memory"))
    said = "cannot be read (Permission denied), so the memory files in it went unchecked"
    assert (validated.returncode, validated.stderr) == (
        2,
        f"remem: {closed}: {said}; let your user read it, or validate a copy elsewhere\n",
    ), validated


def test_a_folder_that_cannot_be_read_hides_no_error_found_elsewhere(home: Home, tmp_path: Path) -> None:
    """A project's Docker volume (another owner's, mode 0700) ended the run, exit 2, naming only
    it: the record's error beside it went unsaid, and `--json` answered an error with no files."""
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "pgdata").mkdir()
    (project / "docs" / "a.md").write_text("---\nname: a\ndescription: A record.\n---\nBody.\n")
    validate = ("--no-daemon", "memory", "validate")
    with modes((project / "pgdata", 0)):
        _skip_where_root_may(f"import os; os.listdir({str(project / 'pgdata')!r})", "read any folder")
        said = remem_bound(home, *validate, str(project))
        answered = remem_bound(home, *validate, "--json", str(project))
    unread = (
        "cannot be read (Permission denied), so the memory files in it went unchecked; "
        "let your user read it, or validate a copy elsewhere"
    )
    assert (said.returncode, said.stderr) == (1, f"remem: {project / 'pgdata'}: {unread}\n"), said
    assert "docs/a.md:" in said.stdout and "the front matter has no `type`" in said.stdout, said
    assert said.stdout.endswith("1 file(s) checked, 1 problem(s), 1 not read, not valid\n"), said
    answer = json.loads(answered.stdout)
    assert (answered.returncode, answered.stderr, answer["ok"]) == (1, "", False), answered
    assert [f["path"] for f in answer["files"]] == [str(project / "docs" / "a.md")]
    assert answer["unread"] == [{"path": str(project / "pgdata"), "message": unread}]


def test_a_file_named_in_a_folder_its_user_may_enter_but_not_list_is_checked(
    home: Home, tmp_path: Path
) -> None:
    """`dir/b.md`, `dir` mode 0711: it was said that the folder's memory files went unchecked."""
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "b.md").write_text("---\nname: b\ndescription: A record.\n---\nBody.\n")
    with modes((folder, 0o311)):  # to its owner what 0711 is to another user
        _skip_where_root_may(f"import os; os.listdir({str(folder)!r})", "read any folder")
        validated = remem_bound(home, "--no-daemon", "memory", "validate", str(folder / "b.md"))
    skipped = (
        "cannot be listed (Permission denied), so the checks across its files (duplicate names, the "
        "index) were skipped; let your user read it, or validate a copy elsewhere"
    )
    assert (validated.returncode, validated.stderr) == (1, f"remem: {folder}: {skipped}\n"), validated
    assert "the front matter has no `type`" in validated.stdout, validated


@pytest.mark.parametrize("folder_mode", [0o755, 0o311], ids=["listed", "entered-not-listed"])
def test_a_sibling_that_cannot_be_read_hides_neither_the_file_named_nor_the_others(
    home: Home, tmp_path: Path, folder_mode: int
) -> None:
    """`mem/c.md` mode 0: validating `mem/a.md` said only c.md, `0 file(s) checked`, exit 2, and
    `--json` `"files": []`, a.md's error unsaid. The readable files are judged alone, c.md said
    with the checks across the folder's files that were skipped."""
    folder = tmp_path / "mem"
    folder.mkdir()
    for name, kind in (("a", "nope"), ("b", "feedback"), ("c", "feedback")):
        (folder / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: {name}.\ntype: {kind}\n---\nB.\n"
        )
    with modes((folder / "c.md", 0), (folder, folder_mode)):
        _skip_where_root_may(f"open({str(folder / 'c.md')!r})", "read any file")
        named = remem_bound(
            home, "--no-daemon", "memory", "validate", "--json", str(folder / "a.md"), str(folder / "b.md")
        )
    answer = json.loads(named.stdout)
    assert (named.returncode, named.stderr) == (1, ""), named
    assert [(f["path"], [d["code"] for d in f["diagnostics"]]) for f in answer["files"]] == [
        (str(folder / "a.md"), ["remem/type-invalid"]),
        (str(folder / "b.md"), []),
    ]
    said = {
        0o755: (
            folder / "c.md",
            "cannot be read (Permission denied), so the checks across its folder's files "
            "(duplicate names, the index) were skipped",
        ),
        0o311: (
            folder,
            "cannot be listed (Permission denied), so the checks across its files "
            "(duplicate names, the index) were skipped",
        ),
    }[folder_mode]
    advice = "; let your user read it, or validate a copy elsewhere"
    assert answer["unread"] == [{"path": str(said[0]), "message": said[1] + advice}]


def test_in_the_home_a_folder_outside_memory_is_never_said(home: Home) -> None:
    """`remem memory validate $REMEM_HOME` said `state/`, mode 0, which holds no memory, and
    hid every result behind it."""
    home.state.mkdir(parents=True, exist_ok=True)
    home.memory.mkdir(parents=True, exist_ok=True)
    (home.memory / "GLOBAL.md").write_text("Prefer uv.\n")
    with modes((home.state, 0)):
        _skip_where_root_may(f"import os; os.listdir({str(home.state)!r})", "read any folder")
        validated = remem_bound(home, "--no-daemon", "memory", "validate", str(home.root))
    assert (validated.returncode, validated.stdout, validated.stderr) == (
        0,
        "1 file(s) checked, 0 problem(s)\n",
        "",
    ), validated


def test_a_folder_named_under_several_spellings_that_cannot_be_listed_is_said_once(
    home: Home, tmp_path: Path
) -> None:
    """`w/d/a.md w/x/../d/b.md wl/b.md` (`wl` a link to `w/d`, mode 0311) said `w/d` three
    times, once per spelling, and counted it "3 not read"."""
    folder, linked = tmp_path / "w" / "d", tmp_path / "wl"
    folder.mkdir(parents=True)
    (tmp_path / "w" / "x").mkdir()
    linked.symlink_to(folder, target_is_directory=True)
    for name in ("a", "b"):
        (folder / f"{name}.md").write_text(f"---\nname: {name}\ndescription: {name}.\ntype: nope\n---\nB.\n")
    spellings = [folder / "a.md", tmp_path / "w" / "x" / ".." / "d" / "b.md", linked / "b.md"]
    with modes((folder, 0o311)):  # to its owner what 0711 is to another user
        _skip_where_root_may(f"import os; os.listdir({str(folder)!r})", "read any folder")
        validated = remem_bound(home, "--no-daemon", "memory", "validate", *map(str, spellings))
    skipped = (
        "cannot be listed (Permission denied), so the checks across its files (duplicate names, the "
        "index) were skipped; let your user read it, or validate a copy elsewhere"
    )
    assert (validated.returncode, validated.stderr) == (1, f"remem: {folder}: {skipped}\n"), validated
    assert validated.stdout.endswith("3 file(s) checked, 3 problem(s), 1 not read, not valid\n"), validated


def test_every_sibling_that_cannot_be_read_is_said_up_to_a_bound_then_counted(
    home: Home, tmp_path: Path
) -> None:
    """`mem/a.md` named, c.md and d.md mode 0: only c.md was said, `1 not read`, so the user let
    it be read and met d.md on the next run. Each is named, up to `UNREAD_SHOWN`, the rest
    counted, on stderr and in `--json`."""
    from remem.daemon.cli.memory import UNREAD_SHOWN

    folder = tmp_path / "mem"
    folder.mkdir()
    (folder / "a.md").write_text(RECORD.replace("alpha", "a"))
    closed = [folder / f"s{n:02}.md" for n in range(UNREAD_SHOWN + 2)]
    for path in closed:
        path.write_text(RECORD.replace("alpha", path.stem))
    validate = ("--no-daemon", "memory", "validate")
    with modes(*[(path, 0) for path in closed]):
        _skip_where_root_may(f"open({str(closed[0])!r})", "read any file")
        said = remem_bound(home, *validate, str(folder / "a.md"))
        answered = remem_bound(home, *validate, "--json", str(folder / "a.md"))
    advice = "; let your user read it, or validate a copy elsewhere"
    skipped = ", so the checks across its folder's files (duplicate names, the index) were skipped"
    lines = [f"remem: {closed[0]}: cannot be read (Permission denied){skipped}{advice}"] + [
        f"remem: {path}: cannot be read (Permission denied){advice}" for path in closed[1:UNREAD_SHOWN]
    ]
    more = "remem: and 2 more file(s) or folder(s) that cannot be read"
    assert (said.returncode, said.stderr.splitlines()) == (2, [*lines, more]), said
    assert said.stdout == f"1 file(s) checked, 0 problem(s), {UNREAD_SHOWN + 2} not read\n", said
    answer = json.loads(answered.stdout)
    assert [u["path"] for u in answer["unread"]] == [str(path) for path in closed[:UNREAD_SHOWN]]
    assert (answered.returncode, answer["unreadMore"], answer["ok"]) == (2, 2, False), answered

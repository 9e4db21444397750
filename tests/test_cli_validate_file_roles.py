"""`remem memory validate` judges a file as what the store reads it as, which its place in the
home decides, not its name alone: through the real `remem` process."""

from __future__ import annotations

import json
from pathlib import Path

from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from tests.cli_process import remem

NOT_A_RECORD = "Be brief.\n"  # free Markdown: a valid Global file, no record


def validated(home: Home, path: Path) -> tuple[int, dict[str, list[str]]]:
    done = remem(home, "memory", "validate", str(path), "--json")
    files = json.loads(done.stdout)["files"]
    return done.returncode, {f["path"]: [d["code"] for d in f["diagnostics"]] for f in files}


def test_a_global_md_in_a_workspace_folder_is_judged_as_the_record_the_store_refuses(
    home: Home, tmp_path: Path
) -> None:
    """It was judged as the Global file by its name: `0 problem(s)`, while `memory show` refused
    the workspace for it and sent the user to `memory validate`."""
    project = tmp_path / "project"
    project.mkdir()
    folder = home.workspaces / WorkspaceId.from_cwd(project).key
    folder.mkdir(parents=True)
    (folder / "GLOBAL.md").write_text(NOT_A_RECORD)
    home.global_file.write_text(NOT_A_RECORD)  # the home's own: still the Global file
    shown = remem(home, "memory", "show", "--cwd", str(project), "--json")
    assert shown.returncode == 1 and "remem/front-matter-missing" in shown.stdout, shown
    wanted = {str(folder / "GLOBAL.md"): ["remem/front-matter-missing"]}
    for path in (folder / "GLOBAL.md", folder):
        assert validated(home, path) == (1, wanted), path
    assert validated(home, home.memory) == (1, {**wanted, str(home.global_file): []})


def test_a_global_md_in_a_linked_workspace_folder_is_not_read(home: Home, tmp_path: Path) -> None:
    """It was read through the link as the Global file, its text judged."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "GLOBAL.md").write_text("\x01\n")  # a control character: an error, were it read
    folder = home.workspaces / "linked-0000000000000000"
    folder.parent.mkdir(parents=True)
    folder.symlink_to(outside, target_is_directory=True)
    assert validated(home, folder / "GLOBAL.md") == (
        1,
        {str(folder / "GLOBAL.md"): ["remem/linked-workspace"]},
    )


def test_a_file_the_store_never_reads_in_the_homes_memory_folder_is_no_memory_file(
    home: Home, tmp_path: Path
) -> None:
    """A `MEMORY.md` beside `GLOBAL.md` was judged as the index of a folder whose records were
    `GLOBAL.md` and any `<name>.md` there, and passed; nothing reads or writes it."""
    home.workspaces.mkdir(parents=True)
    home.global_file.write_text(NOT_A_RECORD)
    strays = [home.memory / "MEMORY.md", home.memory / "notes.md", home.workspaces / "MEMORY.md"]
    for stray in strays:
        stray.write_text("---\nname: notes\ndescription: d\ntype: nope\n---\nbody\n")
    for stray in strays:
        done = remem(home, "memory", "validate", str(stray))
        assert (done.returncode, done.stdout) == (2, ""), done
        assert done.stderr == (
            f"remem: {stray}: not a memory file: in remem's home only memory/GLOBAL.md and the files "
            "of each memory/workspaces/<key>/ folder are memory; move what it holds into one of them\n"
        )
    assert validated(home, home.memory) == (0, {str(home.global_file): []})  # not walked into


def test_a_file_in_remems_own_folders_beside_memory_is_no_memory_file(home: Home) -> None:
    """`remem memory validate $REMEM_HOME` judged `state/a.md` while it never said `state/`
    when it could not read it: remem's own folders hold no memory, as the store reads (a
    project kept elsewhere in the home is the user's: test_cli_validate_project_in_the_home)."""
    home.workspaces.mkdir(parents=True)
    home.global_file.write_text(NOT_A_RECORD)
    strays = [home.state / "a.md", home.sessions / "notes" / "a.md", home.root / "history" / "a.md"]
    for stray in strays:
        stray.parent.mkdir(parents=True, exist_ok=True)
        stray.write_text("---\nname: a\ndescription: d\ntype: nope\n---\nbody\n")
    assert validated(home, home.root) == (0, {str(home.global_file): []})  # not walked into
    for stray in strays:
        done = remem(home, "memory", "validate", str(stray))
        assert (done.returncode, done.stdout) == (2, ""), done
        assert done.stderr.startswith(f"remem: {stray}: not a memory file: in remem's home only "), done


def test_a_review_receipt_named_to_validate_is_said_to_be_one(home: Home) -> None:
    """It was told to move what it holds into memory: the advice for a stray file of the user's."""
    home.workspaces.mkdir(parents=True)
    home.reviews.mkdir()
    receipt = home.reviews / f"{'a1' * 32}.md"
    receipt.write_text("---\nreview_id: r\n---\nA review.\n")
    done = remem(home, "memory", "validate", str(receipt))
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr == (
        f"remem: {receipt}: not a memory file but one of remem's review receipts (memory/reviews/); "
        "there is nothing to validate\n"
    )
    (home.reviews / "drafts").mkdir()
    for mine in (home.reviews / "my-note.md", home.reviews / "drafts" / "my-note.md"):
        mine.write_text("---\nname: my-note\n---\n")  # the user's own, no review id's name
        done = remem(home, "memory", "validate", str(mine))
        assert done.returncode == 2 and "move what it holds into one of them" in done.stderr, done

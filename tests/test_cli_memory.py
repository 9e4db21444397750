"""`remem memory ...` end to end: output shapes, exit codes, and what lands on disk."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home, HomeUnusable

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
RECORD = {
    "name": "prefer-uv",
    "description": "Use uv, not pip",
    "type": "feedback",
    "content": "It is faster.\n",
}


def run(home: Home, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home.root), *args], input=stdin)
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def show(home: Home, cwd: Path) -> dict:  # type: ignore[type-arg]
    code, out, _ = run(home, "memory", "show", "--cwd", str(cwd), "--json")
    assert code == 0
    return json.loads(out)


def test_entry_points_print_help() -> None:
    script = Path(sys.executable).with_name("remem")  # installed beside the interpreter
    for command in ([str(script)], [sys.executable, "-m", "remem.daemon"]):
        out = subprocess.run([*command, "--help"], capture_output=True, text=True, check=True).stdout
        assert "memory" in out and "--home" in out


@pytest.mark.parametrize("daemon", [True, False], ids=["daemon", "no-daemon"])
def test_a_home_that_cannot_be_made_is_named_not_a_traceback(tmp_path: Path, daemon: bool) -> None:
    (tmp_path / "memory").write_text("a file where remem's memory folder goes")
    command = [
        sys.executable,
        "-m",
        "remem.daemon",
        "--home",
        str(tmp_path),
        *([] if daemon else ["--no-daemon"]),
    ]
    done = subprocess.run([*command, "memory", "show"], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"remem: remem's home {tmp_path} cannot be used: {tmp_path / 'memory'} cannot be made a folder "
        "(File exists); move what is in the way, or choose another home with --home or $REMEM_HOME\n"
    )


def test_a_home_folder_linked_out_of_the_home_is_refused_untouched(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "synced"
    (elsewhere / "workspaces").mkdir(parents=True)
    home.mkdir()
    (home / "memory").symlink_to(elsewhere)
    command = [sys.executable, "-m", "remem.daemon", "--home", str(home), "--no-daemon", "memory", "apply"]
    changes = json.dumps([{"action": "put", "record": RECORD}])
    args = ["--cwd", str(tmp_path), "--expected-revision", EMPTY, "--changes", "-"]
    done = subprocess.run([*command, *args], input=changes, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (2, "")
    assert (
        f"{home / 'memory'} is a symbolic link, and remem reads and writes only inside its home"
        in done.stderr
    )
    assert sorted(p.name for p in elsewhere.rglob("*")) == ["workspaces"], "nothing written through it"


# What remem makes in its home's fixed folders by name: a folder or a file each.
FOLDERS = ["history", "memory/audit", "memory/debug", "memory/reviews/committing", "state/forks",
           "state/forks/pending", "state/published"]  # fmt: skip
FILES = ["state/index.sqlite", "state/index.sqlite-wal", "state/index.sqlite-shm", "state/daemon.json",
         "state/daemon.log", "state/history-started", "state/last-error.log", "state/session-meta.json",
         "state/settings.valid.json"]  # fmt: skip


@pytest.mark.parametrize("entry", FOLDERS + FILES)
def test_what_remem_makes_in_its_home_linked_out_of_it_is_refused_untouched(
    home: Home, tmp_path: Path, entry: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    linked = home.ensure_layout().root / entry
    linked.parent.mkdir(parents=True, exist_ok=True)
    linked.symlink_to(outside if entry in FOLDERS else outside / linked.name)
    result = CliRunner().invoke(cli, ["--home", str(home.root), "memory", "show", "--cwd", str(tmp_path)])
    assert isinstance(result.exception, HomeUnusable), result.output
    kind = "folder" if entry in FOLDERS else "file"
    assert str(result.exception) == (
        f"remem's home {home.root} cannot be used: {linked} is a symbolic link, and remem reads and "
        f"writes only inside its home; move the {kind} it points to into the home, or choose a home "
        "that holds it with --home or $REMEM_HOME"
    )
    assert list(outside.iterdir()) == [], "nothing written through it"


def test_a_settings_file_linked_out_of_the_home_is_not_tightened_through_the_link(
    home: Home, tmp_path: Path
) -> None:
    outside = tmp_path / "dotfiles" / "remem.yml"
    outside.parent.mkdir()
    outside.write_text("daemon:\n  idle_minutes: 2\n")
    outside.chmod(0o644)
    home.root.mkdir()
    home.settings_file.symlink_to(outside)
    home.ensure_layout()
    assert outside.stat().st_mode & 0o777 == 0o644, "a chmod by name would change the file it points to"


def test_show_empty_home(home: Home, tmp_path: Path) -> None:
    data = show(home, tmp_path)
    assert data["global"] == {"revision": EMPTY, "content": ""}
    assert data["workspace"]["revision"] == EMPTY and data["workspace"]["records"] == []
    assert data["workspace"]["key"].endswith(tuple("0123456789abcdef"))


def test_apply_commit_then_conflict_then_no_change(home: Home, tmp_path: Path) -> None:
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps([{"action": "put", "record": RECORD}]))
    args = ["memory", "apply", "--cwd", str(tmp_path), "--changes", str(changes), "--json"]
    code, out, _ = run(home, *args, "--expected-revision", EMPTY)
    assert code == 0 and json.loads(out)["status"] == "committed"
    revision = json.loads(out)["revision"]
    assert show(home, tmp_path)["workspace"] == {
        "key": show(home, tmp_path)["workspace"]["key"],
        "revision": revision,
        "records": [RECORD],
    }
    code, out, _ = run(home, *args, "--expected-revision", EMPTY)
    assert code == 3 and json.loads(out) == {"status": "conflict", "revision": revision, "history": None}
    code, out, _ = run(home, *args, "--expected-revision", revision)
    assert code == 0 and json.loads(out) == {"status": "no-change", "revision": revision, "history": None}


def test_apply_reads_changes_from_stdin_and_reports_every_problem(home: Home, tmp_path: Path) -> None:
    bad = [
        {"action": "put", "record": {**RECORD, "type": "Feedback", "name": "x_y"}},
        {"action": "delete", "name": "ghost"},
        {"action": "rename"},
    ]
    args = ["memory", "apply", "--cwd", str(tmp_path), "--expected-revision", EMPTY, "--changes", "-"]
    code, out, _ = run(home, *args, "--json", stdin=json.dumps(bad))
    assert code == 2
    assert json.loads(out)["status"] == "invalid"
    assert json.loads(out)["problems"][0]["change"] == 2, "schema problems name the change"
    code, out, _ = run(home, *args, "--json", stdin=json.dumps(bad[:2]))
    problems = json.loads(out)["problems"]
    assert code == 2 and {(p["change"], p["code"]) for p in problems} == {
        (0, "remem/name-invalid"),
        (0, "remem/type-invalid"),
        (1, "remem/delete-missing"),
    }
    code, _, err = run(home, *args, stdin="not json")
    assert code == 2 and "invalid" in err


def test_replace_global_and_context(home: Home, tmp_path: Path) -> None:
    text = tmp_path / "global.md"
    text.write_text("Answer briefly.\n")
    code, out, _ = run(
        home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text), "--json"
    )
    assert code == 0 and json.loads(out)["status"] == "committed"
    code, out, _ = run(home, "memory", "replace-global", "--expected-revision", EMPTY, "--file", str(text))
    assert code == 3
    code, out, _ = run(home, "memory", "context", "--cwd", str(tmp_path))
    assert code == 0 and "Answer briefly." in out and "# Workspace memory" in out


def test_validate_reports_json_and_human_forms(home: Home, tmp_path: Path) -> None:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "good.md").write_text("---\nname: good\ndescription: d\ntype: project\n---\nbody\n")
    (folder / "bad.md").write_text("---\nname: bad\ndescription: d\ntype: nope\n---\nbody\n")
    code, out, _ = run(home, "memory", "validate", str(folder), "--json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False
    by_name = {Path(f["path"]).name: f["diagnostics"] for f in data["files"]}
    assert by_name["good.md"] == []
    assert by_name["bad.md"] == [
        {
            "code": "remem/type-invalid",
            "severity": "error",
            "message": by_name["bad.md"][0]["message"],
            "range": {"start": {"line": 3, "character": 6}, "end": {"line": 3, "character": 10}},
        }
    ]
    code, out, _ = run(home, "memory", "validate", str(folder / "good.md"))
    assert code == 0 and "1 file(s) checked, 0 problem(s)" in out
    code, out, _ = run(home, "memory", "validate", str(folder / "bad.md"))
    assert code == 1 and f"{folder / 'bad.md'}:4:7: error:" in out


def test_validate_refuses_what_the_store_refuses_and_never_reads_through_a_link(
    home: Home, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("---\nname: evil\ndescription: d\ntype: nope\n---\nbody\n")
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "good.md").write_text("---\nname: good\ndescription: d\ntype: project\n---\nbody\n")
    (folder / "evil.md").symlink_to(outside)
    os.mkfifo(folder / "pipe.md")  # opened for reading, it would block
    (folder / "MEMORY.md").symlink_to(outside)
    (tmp_path / "GLOBAL.md").symlink_to(outside)
    code, out, _ = run(home, "memory", "validate", str(folder), str(tmp_path / "GLOBAL.md"), "--json")
    found = {Path(f["path"]).name: [d["code"] for d in f["diagnostics"]] for f in json.loads(out)["files"]}
    assert code == 1 and found == {
        "GLOBAL.md": ["remem/not-a-regular-file"],
        "MEMORY.md": ["remem/not-a-regular-file"],
        "evil.md": ["remem/not-a-regular-file"],  # not `type-invalid`: the link's target is not read
        "good.md": [],
        "pipe.md": ["remem/not-a-regular-file"],
    }
    code, out, _ = run(home, "memory", "validate", str(folder / "pipe.md"))
    assert code == 1 and f"{folder / 'pipe.md'}:1:1: error: a record must be a regular file" in out


def test_validate_reads_nothing_through_a_linked_workspace_folder(home: Home, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.md").write_text("---\nname: evil\ndescription: d\ntype: nope\n---\nbody\n")
    folder = home.workspaces / "linked-0000000000000000"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.symlink_to(outside, target_is_directory=True)
    code, out, _ = run(home, "memory", "validate", str(folder / "evil.md"), "--json")
    found = [[d["code"] for d in f["diagnostics"]] for f in json.loads(out)["files"]]
    assert code == 1 and found == [["remem/linked-workspace"]]  # not `type-invalid`: never read
    code, out, _ = run(home, "memory", "validate", str(home.root / "memory"), "--json")
    found = {f["path"]: [d["code"] for d in f["diagnostics"]] for f in json.loads(out)["files"]}
    assert code == 1 and found == {str(folder): ["remem/linked-workspace"]}  # not passed over, not walked
    (tmp_path / "home-link").symlink_to(home.root, target_is_directory=True)  # the home spelled otherwise
    through_link = tmp_path / "home-link" / folder.relative_to(home.root)
    for spelled in (folder.parent / ".." / "workspaces" / folder.name, through_link):
        code, out, _ = run(home, "memory", "validate", str(spelled / "evil.md"), "--json")
        found_there = [[d["code"] for d in f["diagnostics"]] for f in json.loads(out)["files"]]
        assert code == 1 and found_there == [["remem/linked-workspace"]], spelled


def test_validate_reads_a_record_through_a_linked_folder_elsewhere(home: Home, tmp_path: Path) -> None:
    """Only the home's workspace folders must be real folders: `/tmp` is a link on macOS."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "draft.md").write_text("---\nname: draft\ndescription: d\ntype: nope\n---\nbody\n")
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    code, out, _ = run(home, "memory", "validate", str(tmp_path / "linked" / "draft.md"), "--json")
    found = [[d["code"] for d in f["diagnostics"]] for f in json.loads(out)["files"]]
    assert code == 1 and found == [["remem/type-invalid"]]


def test_validate_refuses_missing_and_non_memory_paths(home: Home, tmp_path: Path) -> None:
    code, _, err = run(home, "memory", "validate", str(tmp_path / "nope.md"))
    assert code == 2 and "no such file" in err
    (tmp_path / "notes.txt").write_text("x")
    code, _, err = run(home, "memory", "validate", str(tmp_path / "notes.txt"))
    assert code == 2 and "not a memory file" in err
    code, _, err = run(home, "memory", "validate", str(tmp_path / "nope.md"), str(tmp_path / "notes.txt"))
    assert code == 2 and err.splitlines() == [  # every one, not only the first
        f"remem: {tmp_path / 'nope.md'}: no such file or folder",
        f"remem: {tmp_path / 'notes.txt'}: not a memory file (GLOBAL.md, MEMORY.md or a <name>.md record)",
    ]


def test_invalid_memory_makes_show_report_problems_and_revision(home: Home, tmp_path: Path) -> None:
    changes = json.dumps([{"action": "put", "record": RECORD}])
    run(
        home,
        "memory",
        "apply",
        "--cwd",
        str(tmp_path),
        "--expected-revision",
        EMPTY,
        "--changes",
        "-",
        stdin=changes,
    )
    key = show(home, tmp_path)["workspace"]["key"]
    record = home.workspaces / key / "prefer-uv.md"
    record.write_text(record.read_text().replace("feedback", "Feedback"))
    code, out, _ = run(home, "memory", "show", "--cwd", str(tmp_path), "--json")
    error = json.loads(out)["error"]
    assert code == 1 and error["code"] == "MEMORY_INVALID" and error["revision"].startswith("sha256:")
    assert error["files"][0]["diagnostics"][0]["code"] == "remem/type-invalid"
    code, _, err = run(home, "memory", "context", "--cwd", str(tmp_path))
    assert code == 1 and "types are lowercase" in err
    code, _, _ = run(home, "memory", "reindex", "--cwd", str(tmp_path))
    assert code == 1


@pytest.mark.parametrize("revision", ["latest", "sha256:xyz"])
def test_malformed_revision_is_invalid_input(home: Home, tmp_path: Path, revision: str) -> None:
    code, out, _ = run(
        home,
        "memory",
        "apply",
        "--cwd",
        str(tmp_path),
        "--expected-revision",
        revision,
        "--changes",
        "-",
        "--json",
        stdin="[]",
    )
    assert code == 2 and json.loads(out)["problems"][0]["code"] == "remem/bad-revision"


def test_a_file_name_holding_a_newline_cannot_forge_a_history_row(home: Home, tmp_path: Path) -> None:
    """A hand-made file's name is shown as one field of its row (escaped), in `memory log`,
    `memory diff` and `memory show --at`: never as a line that reads as another entry."""
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps([{"action": "put", "record": RECORD}]))
    args = [
        "memory",
        "apply",
        "--cwd",
        str(tmp_path),
        "--changes",
        str(changes),
        "--expected-revision",
        EMPTY,
    ]
    assert run(home, *args)[0] == 0
    (folder,) = home.workspaces.iterdir()
    forged = "z (+0 -0)\nabcdef123456  2026-01-01T00:00:00.000Z  agent  removed prefer-uv"
    (folder / f"{forged}.md").write_text("---\nname: x\ndescription: d\ntype: project\n---\nx\n")
    code, out, _ = run(home, "memory", "log", "--cwd", str(tmp_path))
    rows = out.splitlines()
    assert code == 0 and len(rows) == 2 and not any(row.startswith("abcdef123456") for row in rows)
    assert "added z (+0 -0)\\nabcdef123456" in rows[0]
    entry = rows[0].split()[0]
    code, out, _ = run(home, "memory", "diff", entry)
    assert code == 0 and "\\nabcdef123456" in out.splitlines()[-1]
    assert f'+++ "{entry}/z (+0 -0)\\nabcdef123456' in out  # quoted as git quotes such a path
    assert not any(line.startswith("abcdef123456") for line in out.splitlines())
    code, out, _ = run(home, "memory", "show", "--at", entry)
    assert code == 0 and "==> z (+0 -0)\\nabcdef123456" in out
    assert not any(line.startswith("abcdef123456") for line in out.splitlines())


def test_a_history_missing_an_entrys_objects_is_said_damaged_not_a_bug(home: Home, tmp_path: Path) -> None:
    """A pack file of the history removed (a cleanup, a partial copy): the log says the history
    is damaged and what to do, exit 1, where it was an internal error."""
    changes = tmp_path / "changes.json"
    revision = EMPTY
    packs: list[set[Path]] = []
    for n in range(3):
        changes.write_text(json.dumps([{"action": "put", "record": {**RECORD, "name": f"r{n}"}}]))
        args = ["memory", "apply", "--cwd", str(tmp_path), "--changes", str(changes), "--json"]
        code, out, _ = run(home, *args, "--expected-revision", revision)
        assert code == 0, out
        revision = json.loads(out)["revision"]
        packs.append(set((home.root / "history" / "objects" / "pack").glob("pack-*")))
    present = set((home.root / "history" / "objects" / "pack").glob("pack-*"))
    # The first entry's objects: its own pack, or the merged one holding them (a merge follows
    # one entry in PACK_EVERY, chosen by its commit id, so now and then one of these three).
    for gone in packs[0] & present or present:
        gone.unlink()
    code, out, err = run(home, "memory", "log", "--cwd", str(tmp_path), "--limit", "10", "--json")
    said = json.loads(out)["error"]
    assert code == 1 and said["code"] == "HISTORY_REFUSED" and "is damaged" in said["message"]
    assert "move history aside" in said["message"] and "internal error" not in err


def test_a_reverts_log_row_says_which_entry_it_went_back_to(home: Home, tmp_path: Path) -> None:
    """`memory revert ENTRY` brings memory back to what ENTRY left; its row said "reverts
    ENTRY", which reads, as `git revert` does, as ENTRY's change undone."""
    cwd = str(tmp_path)
    changes = json.dumps([{"action": "put", "record": RECORD}])
    assert run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", EMPTY, "--changes", "-",
               stdin=changes)[0] == 0  # fmt: skip
    _, out, _ = run(home, "memory", "log", "--cwd", cwd, "--json", "--no-stat")
    [first] = json.loads(out)["entries"]
    other = json.dumps([{"action": "put", "record": {**RECORD, "content": "Much faster.\n"}}])
    revision = show(home, tmp_path)["workspace"]["revision"]
    assert run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", revision, "--changes", "-",
               stdin=other)[0] == 0  # fmt: skip
    assert run(home, "memory", "revert", first["id"])[0] == 0
    _, out, _ = run(home, "memory", "log", "--cwd", cwd, "--no-stat")
    assert f"  revert (back to {first['id'][:12]})" in out.splitlines()[0], out
    # Undoing the first change: no entry before it to name, the empty state brought back.
    assert run(home, "memory", "revert", "--before", first["id"])[0] == 0
    _, out, _ = run(home, "memory", "log", "--cwd", cwd, "--no-stat")
    assert "  revert (back to before the first entry)" in out.splitlines()[0], out
    assert show(home, tmp_path)["workspace"]["records"] == []


def test_new_memory_is_started_only_in_a_folder_that_exists(home: Home, tmp_path: Path) -> None:
    """`apply --cwd /typo` started the memory of a folder that is not there, which no project
    would ever read; a project that has memory is changed from its revision, folder or not."""
    project = tmp_path / "project"
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps([{"action": "put", "record": RECORD}]))
    args = ["memory", "apply", "--cwd", str(project), "--changes", str(changes), "--json"]
    code, out, err = run(home, *args, "--expected-revision", EMPTY)
    [problem] = json.loads(out)["problems"]  # as every other refusal of the batch, with --json
    assert (
        code == 2
        and problem["code"] == "remem/no-folder"
        and f"no folder is at {project};" in problem["message"]
    )
    code, out, err = run(home, *args[:-1], "--expected-revision", EMPTY)
    assert (code, out) == (2, "") and f"invalid: no folder is at {project}; check --cwd" in err
    assert not (home.root / "memory" / "workspaces").exists() or not any(
        (home.root / "memory" / "workspaces").iterdir()
    )
    project.mkdir()
    code, out, _ = run(home, *args, "--expected-revision", EMPTY)
    assert code == 0, out
    project.rmdir()  # the project is deleted or moved: its memory stays changeable
    changes.write_text(json.dumps([{"action": "delete", "name": RECORD["name"]}]))
    code, out, _ = run(home, *args, "--expected-revision", json.loads(out)["revision"])
    assert code == 0 and json.loads(out)["status"] == "committed"


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_the_diff_of_a_first_entry_that_found_memory_compares_with_what_was_there(
    home: Home, tmp_path: Path, as_json: bool
) -> None:
    """Memory made while there was no history: its first entry records it as found. Its diff
    showed every line added, as if from an empty scope; nothing earlier is recorded."""
    cwd = str(tmp_path)
    changes = json.dumps([{"action": "put", "record": RECORD}])
    assert run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", EMPTY, "--changes", "-",
               stdin=changes)[0] == 0  # fmt: skip
    shutil.rmtree(home.root / "history")
    for made in [home.state / "history-started", *home.state.glob("history-intent-*")]:
        made.unlink()  # as a home whose history was never made
    _, out, _ = run(home, "memory", "log", "--cwd", cwd, "--json")
    [found] = json.loads(out)["entries"]
    assert (found["actor"]["kind"], found["before"]) == ("recovered", found["after"])

    code, out, _ = run(home, "memory", "diff", found["id"], *(["--json"] if as_json else []))

    assert code == 0
    if as_json:
        result = json.loads(out)
        assert (result["fromEntry"], result["patch"]) == (None, "")
        assert result["stat"] == {"added": [], "changed": [], "removed": [], "insertions": 0, "deletions": 0}
    else:
        assert out == (
            f"{found['id'][:12]} is the first entry of this history and found memory already there: "
            f"nothing earlier is recorded to compare it with (`remem memory show --at {found['id'][:12]}` "
            "shows what it found)\n"
        )
    _, out, _ = run(home, "memory", "log", "--cwd", cwd)
    assert out.splitlines()[0].endswith("recovered  (no file changed)"), out


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_revert_says_what_it_changed_and_how_to_take_it_back(
    home: Home, tmp_path: Path, as_json: bool
) -> None:
    """`revert --before` undoes ENTRY and every later change of its scope; it said only its new
    revision, where the editor's dialog names what goes (decision 0443)."""
    cwd = str(tmp_path)
    changes = json.dumps([{"action": "put", "record": RECORD}])
    assert run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", EMPTY, "--changes", "-",
               stdin=changes)[0] == 0  # fmt: skip
    later = json.dumps([{"action": "put", "record": {**RECORD, "name": "beta", "content": "Later.\n"}}])
    revision = show(home, tmp_path)["workspace"]["revision"]
    assert run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", revision, "--changes", "-",
               stdin=later)[0] == 0  # fmt: skip
    _, out, _ = run(home, "memory", "log", "--cwd", cwd, "--json", "--no-stat")
    newest, first = json.loads(out)["entries"]

    code, out, _ = run(home, "memory", "revert", "--before", first["id"], *(["--json"] if as_json else []))

    assert code == 0 and show(home, tmp_path)["workspace"]["records"] == []
    if as_json:
        change = json.loads(out)["change"]
        assert change["takeBack"] == newest["id"] and "undone" not in json.loads(out)
        assert (change["stat"]["removed"], change["stat"]["deletions"]) == (["beta", "prefer-uv"], 12)
    else:
        lines = out.splitlines()
        assert lines[1:3] == [
            "this revert: removed beta, prefer-uv (+0 -12)",
            f"it took back {first['id'][:12]} and 1 later change with it:",
        ]
        assert lines[3].startswith(f"  {newest['id'][:12]}  ") and lines[3].endswith(
            "cli  added beta (+6 -0)"
        )
        assert lines[4:] == [f"to take it back: remem memory revert {newest['id'][:12]}"]
    assert run(home, "memory", "revert", newest["id"])[0] == 0
    assert [r["name"] for r in show(home, tmp_path)["workspace"]["records"]] == ["beta", "prefer-uv"]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_limited_log_says_how_many_older_entries_it_left_out(
    home: Home, tmp_path: Path, as_json: bool
) -> None:
    """`memory log` lists the newest 50 by default: on a long history it said nothing of the rest."""
    cwd, revision = str(tmp_path), EMPTY
    for n in range(4):
        changes = json.dumps([{"action": "put", "record": {**RECORD, "content": f"Take {n}.\n"}}])
        assert run(home, "memory", "apply", "--cwd", cwd, "--expected-revision", revision, "--changes", "-",
                   stdin=changes)[0] == 0  # fmt: skip
        revision = show(home, tmp_path)["workspace"]["revision"]

    code, out, _ = run(home, "memory", "log", "--cwd", cwd, "--limit", "3", *(["--json"] if as_json else []))

    assert code == 0
    if as_json:
        logged = json.loads(out)
        assert (len(logged["entries"]), logged["more"]) == (3, 1)
    else:
        lines = out.splitlines()
        assert len(lines) == 4 and lines[-1] == "... and 1 older entry (--limit 0 lists all)", out
    _, out, _ = run(home, "memory", "log", "--cwd", cwd, "--limit", "4", "--json")
    assert json.loads(out)["more"] == 0

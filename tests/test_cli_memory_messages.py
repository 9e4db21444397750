"""`remem memory ...` says what is wrong with a `--changes` input in the user's words, naming it,
and its help names nothing a newcomer cannot look up."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from click.testing import CliRunner

from remem.daemon.cli import cli
from remem.daemon.home import Home

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def apply(home: Home, cwd: Path, changes: str, stdin: str | None = None, *flags: str) -> tuple[int, str, str]:
    args = ["--home", str(home.root), "memory", "apply", "--cwd", str(cwd), "--expected-revision", EMPTY]
    result = CliRunner().invoke(cli, [*args, "--changes", changes, *flags], input=stdin)
    assert not result.exception or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_changes_file_holding_an_object_is_said_to_need_a_list(home: Home, tmp_path: Path) -> None:
    changes = tmp_path / "good.json"
    changes.write_text(json.dumps({"action": "put", "record": {"name": "x"}}))
    assert apply(home, tmp_path, str(changes)) == (
        2,
        "",
        f"invalid: --changes {changes} must hold a JSON list of changes; {changes} holds an object "
        "[remem/bad-change]\n",
    )
    code, out, _ = apply(home, tmp_path, str(changes), None, "--json")
    assert code == 2 and json.loads(out)["problems"] == [
        {
            "code": "remem/bad-change",
            "message": f"--changes {changes} must hold a JSON list of changes; {changes} holds an object",
            "change": None,
            "file": None,
        }
    ]


def test_standard_input_is_named_as_such(home: Home, tmp_path: Path) -> None:
    assert apply(home, tmp_path, "-", '"put"') == (
        2,
        "",
        "invalid: --changes must hold a JSON list of changes; standard input holds a string "
        "[remem/bad-change]\n",
    )
    assert apply(home, tmp_path, "-", "")[2] == (
        "invalid: standard input is empty; --changes takes a JSON list of changes [remem/bad-change]\n"
    )


def test_malformed_json_names_the_file_its_line_and_column(home: Home, tmp_path: Path) -> None:
    changes = tmp_path / "changes.json"
    changes.write_text('[{"action": "delete", "name": "x"}\n{"action": "delete"}]\n')
    assert apply(home, tmp_path, str(changes)) == (
        2,
        "",
        f"invalid: {changes} is not valid JSON: Expecting ',' delimiter at line 2, column 1 "
        "[remem/bad-change]\n",
    )
    changes.write_bytes(b'[{"action": "delete", "name": "caf\xe9"}]')
    assert apply(home, tmp_path, str(changes))[2] == (
        f"invalid: {changes} is not UTF-8 text; --changes takes a JSON list of changes [remem/bad-change]\n"
    )


def test_a_list_is_still_checked_change_by_change(home: Home, tmp_path: Path) -> None:
    code, out, _ = apply(home, tmp_path, "-", '[{"action": "rename"}]', "--json")
    assert code == 2 and [p["change"] for p in json.loads(out)["problems"]] == [0]


def test_no_help_names_a_decision_number() -> None:
    """Decisions are the project's notes: a newcomer reading `--help` cannot follow one."""

    def helps(command: click.Command, path: list[str]) -> list[tuple[str, str]]:
        ctx = click.Context(command, info_name=" ".join(path))
        found = [(" ".join(path), command.get_help(ctx))]
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                found += helps(sub, [*path, name])
        return found

    every = helps(cli, ["remem"])
    assert len(every) > 30, "every subcommand is walked"
    assert [name for name, text in every if re.search(r"decision\s+\d", text, re.IGNORECASE)] == []


def test_json_too_deep_or_with_too_long_a_number_is_refused_as_not_valid_json(
    home: Home, tmp_path: Path
) -> None:
    # Python's json raises RecursionError and ValueError for these, no JSONDecodeError: they
    # were reported as a bug in remem (exit 4) where any other malformed input exits 2.
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000)
    big = tmp_path / "big.json"
    big.write_text("[" + "1" * 5000 + "]")
    for changes, why in [
        (deep, "its lists or objects nest too deeply"),
        (big, "a number in it has more than 4300 digits"),
    ]:
        said = f"{changes} is not valid JSON: {why}"
        assert apply(home, tmp_path, str(changes)) == (2, "", f"invalid: {said} [remem/bad-change]\n")
        code, out, _ = apply(home, tmp_path, str(changes), None, "--json")
        assert (code, json.loads(out)) == (
            2,
            {
                "status": "invalid",
                "problems": [{"code": "remem/bad-change", "message": said, "change": None, "file": None}],
            },
        )


def test_a_byte_order_mark_is_said_in_words(home: Home, tmp_path: Path) -> None:
    # json.loads(bytes) guesses UTF-16 and skips a BOM; the schema's decoder then refused the
    # same bytes in its own words, naming neither the file nor the mark.
    changes = tmp_path / "changes.json"
    for raw in ["[]".encode("utf-16"), b"\xef\xbb\xbf[]"]:
        changes.write_bytes(raw)
        assert apply(home, tmp_path, str(changes)) == (
            2,
            "",
            f"invalid: {changes} starts with a byte-order mark; --changes takes UTF-8 text without one "
            "[remem/bad-change]\n",
        )

"""Text a hand edit puts after ` #` in an unquoted description is a YAML comment, which no
reader of the record sees: it is said, where it is, with the quoting that keeps it (decision
0504). And a value holding `: ` gets the quotes it needs, not advice to write the `key: value`
lines it already is."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from remem.daemon.memory.diagnostics import Diagnostic, Severity
from remem.daemon.memory.lint import lint_paths
from remem.daemon.memory.validation import parse_record, validate_record


def front(*lines: str) -> str:
    return "---\n" + "".join(f"{line}\n" for line in lines) + "---\nbody\n"


def comments(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return [d for d in diagnostics if d.code == "remem/front-matter-comment"]


def span(d: Diagnostic) -> tuple[int, int, int, int]:
    r = d.range
    return (r.start.line, r.start.character, r.end.line, r.end.character)


HASH = front("name: hash", "description: Run #tests before commit", "type: feedback")


def test_a_comment_after_a_plain_value_is_a_warning_on_the_comment_naming_what_is_dropped() -> None:
    parsed = parse_record(HASH, "hash.md")
    [warning] = parsed.diagnostics
    assert warning.code == "remem/front-matter-comment" and warning.severity == Severity.WARNING
    assert span(warning) == (2, 17, 2, 37)
    assert warning.message == (
        "`#tests before commit` is a YAML comment, dropped from the description, which reads `Run`; "
        'quote the value to keep the text after `#`: `description: "Run #tests before commit"`'
    )
    # A warning: the record stays readable as YAML reads it, as it was before the rule.
    assert parsed.record is not None and parsed.record.description == "Run"


def test_the_quoting_offered_keeps_the_whole_text() -> None:
    [warning] = validate_record(HASH, "hash.md")
    offered = warning.message.rsplit("`description: ", 1)[1].removesuffix("`")
    fixed = parse_record(front("name: hash", f"description: {offered}", "type: feedback"), "hash.md")
    assert fixed.diagnostics == []
    assert fixed.record is not None and fixed.record.description == "Run #tests before commit"


@pytest.mark.parametrize(
    "lines",
    [
        ("# why: see the body", "name: hash", "description: x", "type: feedback"),
        ("name: hash", 'description: "Run" # a note', "type: feedback"),
        ("name: hash  # the file is hash.md", "description: x", "type: feedback  # rules, not facts"),
    ],
    ids=["own-line", "after-quotes", "after-name-and-type"],
)
def test_a_note_written_as_a_comment_is_left_alone(lines: tuple[str, ...]) -> None:
    assert validate_record(front(*lines), "hash.md") == []


@pytest.mark.parametrize(
    "description",
    ['"Run #tests before commit"', "'Run #tests'", "C#-style names", "issue#12 first", "|\n  Run #tests"],
)
def test_a_hash_that_is_part_of_a_value_is_no_comment(description: str) -> None:
    text = front("name: hash", f"description: {description}", "type: feedback")
    assert comments(validate_record(text, "hash.md")) == []


def test_memory_validate_reports_it_for_the_file(tmp_path: Path) -> None:
    path = tmp_path / "hash.md"
    path.write_text(HASH)
    [report] = lint_paths([path])
    assert [d.code for d in report.diagnostics] == ["remem/front-matter-comment"]


def test_a_value_holding_a_colon_is_told_to_be_quoted_at_the_colon() -> None:
    text = front("name: uv", "description: Use uv: not pip", "type: feedback")
    [error] = validate_record(text, "uv.md")
    assert error.code == "remem/front-matter-syntax" and span(error) == (2, 19, 2, 20)
    assert error.message.endswith('a value holding `: ` must be quoted: `description: "Use uv: not pip"`')
    assert "write `key: value` lines" not in error.message


def test_other_syntax_errors_keep_their_advice() -> None:
    [error] = validate_record(front("name: a", "b"), "a.md")  # a line with no colon
    assert error.message.endswith("; write `key: value` lines")


@pytest.mark.parametrize(
    ("value", "column"),
    [
        ("'tis the season", 13),  # YAML notices only at the end: told at the quote that opens it
        ("[draft] notes", 21),
        ("@mention the team", 13),
        ("*important* rule", 13),
        ("- a list", 13),
        ("'tis a C:\\dir", 13),  # quoted, `\` is escaped
    ],
)
def test_a_value_starting_with_a_yaml_indicator_is_told_on_its_line_to_be_quoted(
    value: str, column: int
) -> None:
    [error] = validate_record(front("name: q", f"description: {value}", "type: feedback"), "q.md")
    assert error.code == "remem/front-matter-syntax" and span(error) == (2, column, 2, column + 1)
    advice, quoted = error.message.split("; ")[-1].split(": `", 1)
    assert advice == f"a value starting with `{value[0]}` must be quoted"
    fixed = parse_record(front("name: q", quoted.removesuffix("`"), "type: feedback"), "q.md")
    assert fixed.record is not None and fixed.record.description == value


@pytest.mark.parametrize(
    ("lines", "meant"),
    [
        # An escape YAML does not know in a value quoted whole: each `\` doubled, or single quotes.
        (('description: "Builds live in C:\\projects\\qa"',), ["Builds live in C:\\projects\\qa"] * 2),
        # Text after the closing quote: put inside the quotes, or the quote marks kept as text.
        (("description: 'ok' junk: y",), ["ok junk: y", "'ok' junk: y"]),
        (('description: "Quoted" then more',), ["Quoted then more", '"Quoted" then more']),
        (('description: "C:\\dir" is home',), ["C:\\dir is home", '"C:\\dir" is home']),
        # A quote never closed: its lines joined, not the first alone.
        (("description: 'it", "  goes on"), ["'it goes on"]),
        # A `"` never closed is shown closed: kept, it was text (`"\"Use uv`).
        (('description: "Use uv',), ["Use uv"]),
    ],
)
def test_a_quoted_value_is_told_what_its_quotes_need_each_line_shown_reading_back_as_meant(
    lines: tuple[str, ...], meant: list[str]
) -> None:
    """A value quoted already was told to be quoted, the quotes then read back as text."""
    [error] = validate_record(front("name: q", *lines, "type: feedback"), "q.md")
    assert error.code == "remem/front-matter-syntax"
    shown = re.findall(r"`(description: [^`]*)`", error.message)
    read_back = [parse_record(front("name: q", line, "type: feedback"), "q.md").record for line in shown]
    assert [r.description if r is not None else None for r in read_back] == meant


def test_a_description_yaml_reads_all_as_a_comment_is_empty_and_told_to_be_quoted() -> None:
    [error] = validate_record(front("name: hash", "description: #tests first", "type: feedback"), "hash.md")
    assert error.code == "remem/description-empty" and span(error) == (2, 13, 2, 25)
    assert error.message == (
        "`#tests first` is a YAML comment, so the description is empty; quote the value to keep "
        'the text after `#`: `description: "#tests first"`'
    )


# A hand-written line far longer than the description's limit, cut by YAML at its ` #`.
LONG_BEFORE = " ".join(f"step{n}" for n in range(40))  # 269 characters
LONG_COMMENT = "#" + " ".join(f"why{n}" for n in range(150))  # 940 characters
LONG = front("name: long", f"description: {LONG_BEFORE} {LONG_COMMENT}", "type: feedback")


def test_a_long_line_is_quoted_cut_around_the_hash_where_its_text_is_lost() -> None:
    """What is lost and what is read are cut; the quoted value to copy, within the limit, is
    whole (cut, a copy dropped its start and kept a `…`)."""
    text = front("name: mid", f"description: {LONG_BEFORE[:120]} #{'x' * 70}", "type: feedback")
    [warning] = validate_record(text, "mid.md")
    reads = "…" + LONG_BEFORE[61:120]
    assert warning.message == (
        f"`#{'x' * 58}…` is a YAML comment, dropped from the description, which reads `{reads}`; "
        f'quote the value to keep the text after `#`: `description: "{LONG_BEFORE[:120]} #{"x" * 70}"`'
    )


def test_quoting_that_would_be_over_the_limit_is_said_with_its_length() -> None:
    parsed = parse_record(LONG, "long.md")
    [too_long, warning] = parsed.diagnostics  # what YAML reads is over the limit already
    assert too_long.code == "remem/description-too-long"
    reads, quoted = "…" + LONG_BEFORE[-59:], "…" + LONG_BEFORE[-58:] + " "
    shown = LONG_COMMENT[:59] + "…"
    assert warning.message == (
        f"`{shown}` is a YAML comment, dropped from the description, which reads `{reads}`; quoted "
        "with the text after `#`, the description would be 1210 characters, over the 200 allowed "
        f'(`description: "{quoted}{shown}"`): shorten it to at most 200 characters, moving the rest '
        "to the body, then quote it"
    )


def validated_in_its_own_process(tmp_path: Path, path: Path) -> dict[str, Any]:
    """The file's report from `remem memory validate --json`, which finds an error in it."""
    done = subprocess.run(
        [sys.executable, "-m", "remem.daemon", "--home", str(tmp_path / "home"), "--no-daemon"]
        + ["memory", "validate", "--json", str(path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    [file] = json.loads(done.stdout)["files"]
    return cast(dict[str, Any], file)


def test_memory_validate_in_its_own_process_says_it_briefly(tmp_path: Path) -> None:
    path = tmp_path / "long.md"
    path.write_text(LONG)
    file = validated_in_its_own_process(tmp_path, path)  # the description-too-long error
    [warning] = [d for d in file["diagnostics"] if d["code"] == "remem/front-matter-comment"]
    assert warning["message"] == parse_record(LONG, "long.md").diagnostics[1].message
    assert len(warning["message"]) < 600 and "over the 200 allowed" in warning["message"]


def test_memory_validate_tells_a_windows_path_in_double_quotes_to_double_its_backslashes(
    tmp_path: Path,
) -> None:
    """It said to quote the value, quoted already: `"\\"Builds …\\""`, read back quotes and all."""
    path = tmp_path / "win.md"
    path.write_text(front("name: win", r'description: "Builds live in C:\projects\qa"', "type: project"))
    [error] = validated_in_its_own_process(tmp_path, path)["diagnostics"]
    assert error["message"] == (
        "the front matter is not valid YAML: found unknown escape character; in double quotes a `\\` "
        r'begins an escape: write each `\` as `\\`, `description: "Builds live in C:\\projects\\qa"`, '
        r"or quote with `'`, in which `\` is itself: `description: 'Builds live in C:\projects\qa'`"
    )

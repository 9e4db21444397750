"""`remem memory validate` of a record whose name YAML reads as no string advises what the
editor's fix writes, through a real `remem` process: in `3.md`, `name: 3` was told to "set the
name to `3` (the file name)", which it already is to the eye."""

from __future__ import annotations

from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.cli_process import remem

RECORD = "---\nname: {name}\ndescription: A fact.\ntype: project\n---\nBody.\n"


@pytest.mark.parametrize(
    ("stem", "written", "kind", "advice"),
    [
        ("3", "3", "a number", "set `name: '3'` (the file name, in quotes so that it reads as text)"),
        (
            "true",
            "true",
            "a boolean",
            "set `name: 'true'` (the file name, in quotes so that it reads as text)",
        ),
        (
            "0x1f",
            "0x1f",
            "a number",
            "set `name: '0x1f'` (the file name, in quotes so that it reads as text)",
        ),
        (
            "2024-01-01",
            "2024-01-01",
            "a date",
            "set `name: '2024-01-01'` (the file name, in quotes so that it reads as text)",
        ),
        ("n3", "3", "a number", "set the name to `n3` (the file name)"),
    ],
)
def test_the_advice_for_a_name_that_is_no_string_makes_the_record_valid(
    home: Home, tmp_path: Path, stem: str, written: str, kind: str, advice: str
) -> None:
    path = tmp_path / f"{stem}.md"
    path.write_text(RECORD.format(name=written))
    said = remem(home, "memory", "validate", str(path))
    assert (said.returncode, said.stdout.splitlines()[0]) == (
        1,
        f"{path}:2:7: error: `name` must be a string, not {kind}; {advice} [remem/non-string-value]",
    ), said
    followed = advice.split("`")[1]  # the line, or the name, the advice gives
    _valid_with(home, path, followed.removeprefix("name: "))


@pytest.mark.parametrize("stem", ["3", "true", "null"])
@pytest.mark.parametrize(
    ("written", "code", "problem"),
    [
        (
            "abc",
            "name-mismatch",
            "the name `abc` differs from the file name `{file}`; rename the file to `abc.md` or",
        ),
        (
            "ABC",
            "name-invalid",
            "names are lowercase; use `abc`, and rename the file `{file}` to `abc.md` (or",
        ),
    ],
)
def test_the_file_name_offered_for_another_name_is_the_line_that_makes_the_record_valid(
    home: Home, tmp_path: Path, stem: str, written: str, code: str, problem: str
) -> None:
    """`name: abc` in `3.md` was told to "set `name: 3`", which is a number, not the file's name."""
    path = tmp_path / f"{stem}.md"
    path.write_text(RECORD.format(name=written))
    said = remem(home, "memory", "validate", str(path))
    closing = ")" if code == "name-invalid" else ""
    assert (said.returncode, said.stdout.splitlines()[0]) == (
        1,
        f"{path}:2:7: error: {problem.format(file=path.name)} set `name: '{stem}'`{closing} [remem/{code}]",
    ), said
    _valid_with(home, path, f"'{stem}'")


def _valid_with(home: Home, path: Path, name: str) -> None:
    """The record at `path` passes once its name line is `name`, as the advice wrote it."""
    path.write_text(RECORD.format(name=name))
    again = remem(home, "memory", "validate", str(path))
    assert (again.returncode, again.stdout) == (0, "1 file(s) checked, 0 problem(s)\n"), again

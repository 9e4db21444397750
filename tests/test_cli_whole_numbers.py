"""A number option given what is no whole number (`1.5`, `NaN`) or one below what it takes: the
usage error says what was given and what the option takes, through the real `remem` process.
Click said `'1.5' is not a valid integer range` of `--turn`, and `-1` got past `--at` and
`--expected-generation` to the session it was meant for."""

from __future__ import annotations

import pytest

from remem.daemon.home import Home
from tests.cli_process import remem

TURN = "a turn number, 1 or more, as `remem sessions turns ID` numbers them"
AT = (
    "an event number, 0 or more, as `remem sessions turns ID` shows them (a line number for Claude "
    "Code and Codex sessions)"
)
GENERATION = "a generation, 0 or more, as the last rename, archive or restore printed it"
LIMIT = "how many of the newest entries to show, or 0 for all"


@pytest.mark.parametrize(
    ("args", "option", "said"),
    [
        (
            ["sessions", "fork", "s", "--turn", "1.5"],
            "--turn",
            f"'1.5' is not a whole number; it takes {TURN}",
        ),
        (
            ["sessions", "fork", "s", "--turn", "NaN"],
            "--turn",
            f"'NaN' is not a whole number; it takes {TURN}",
        ),
        (["sessions", "fork", "s", "--turn", "0"], "--turn", f"0 is less than 1; it takes {TURN}"),
        (["sessions", "fork", "s", "--at", "1.5"], "--at", f"'1.5' is not a whole number; it takes {AT}"),
        (["sessions", "fork", "s", "--at", "-1"], "--at", f"-1 is less than 0; it takes {AT}"),
        (
            ["sessions", "archive", "s", "--expected-generation", "NaN"],
            "--expected-generation",
            f"'NaN' is not a whole number; it takes {GENERATION}",
        ),
        (
            ["sessions", "rename", "s", "t", "--expected-generation", "-1"],
            "--expected-generation",
            f"-1 is less than 0; it takes {GENERATION}",
        ),
        (["memory", "log", "--limit", "1e3"], "--limit", f"'1e3' is not a whole number; it takes {LIMIT}"),
        (["memory", "log", "--limit", "-1"], "--limit", f"-1 is less than 0; it takes {LIMIT}"),
    ],
)
def test_a_number_option_says_what_was_given_and_what_it_takes(
    home: Home, args: list[str], option: str, said: str
) -> None:
    done = remem(home, *args)
    assert (done.returncode, done.stdout) == (2, ""), done
    assert done.stderr.splitlines()[-1] == f"Error: Invalid value for '{option}': {said}", done.stderr

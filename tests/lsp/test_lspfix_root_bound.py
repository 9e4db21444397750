"""The tests that need permissions to bind root hold where the runner's capabilities would let
the server past them.

They dropped root's ways past permissions (`CAP_DAC_OVERRIDE`, `CAP_DAC_READ_SEARCH`) from the
server's bounding set only. Root's program is permitted what its inheritable and ambient sets
hold too, so where a runner holds them there (older Docker, some CI) the server kept them, read
what the tests had locked, and the tests failed with `ValueError: not enough values to unpack`
instead of testing anything. They are run here under such a runner, played by raising both sets
before pytest starts.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.permissions import PAST_MASK, PAST_PERMISSIONS, effective, raise_ambient, set_inheritable

from . import test_lspfix_hover_unread, test_lspfix_unjudged_cause

BOUND_TESTS = [  # each test that `bound_server` starts the server of
    test_lspfix_unjudged_cause.__file__,
    f"{test_lspfix_hover_unread.__file__}::{test_lspfix_hover_unread.test_a_record_file_that_cannot_be_read_says_the_error.__name__}",
]
_CAP_SETPCAP = 8


def _runner_holding_past_permissions() -> None:
    """In pytest's process before it starts: root's ways past permissions held in the sets that
    reach the programs it runs besides the bounding set."""
    set_inheritable(lambda held: held | PAST_MASK)
    for capability in PAST_PERMISSIONS:
        raise_ambient(capability)


@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or not effective(os.getpid()) & 1 << _CAP_SETPCAP,
    reason="only a root that may drop capabilities starts its server without its ways past permissions",
)
def test_the_server_is_bound_by_permissions_whatever_sets_of_the_runner_hold_the_way_past() -> None:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        *BOUND_TESTS,
    ]
    try:
        ran = subprocess.run(
            command,
            cwd=Path(__file__).resolve().parents[2],  # the repository's, for its pytest settings
            capture_output=True,
            text=True,
            preexec_fn=_runner_holding_past_permissions,
        )
    except subprocess.SubprocessError as error:  # a root that may not raise them is no such runner
        pytest.skip(
            f"root cannot hold its ways past permissions in its inheritable and ambient sets here: {error}"
        )
    assert ran.stdout.strip(), f"pytest said nothing (status {ran.returncode}); its stderr:\n{ran.stderr}"
    summary = ran.stdout.strip().splitlines()[-1]
    # Two tests of the first, one of the second; a warning of pytest's is no failure.
    assert re.match(r"3 passed(, \d+ warnings?)? in ", summary), ran.stdout

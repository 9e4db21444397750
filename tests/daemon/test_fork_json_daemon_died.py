"""A fork given `--json` and no `--op-id` whose daemon died while answering: its one JSON error
carries the operation id remem chose, and nothing is said on stderr. The id was said only on
stderr, beside the JSON, where a script does not look."""

from __future__ import annotations

import json

import pytest

from remem.daemon.forks.child import child_id
from remem.daemon.home import Home
from tests.consolidation.conftest import Source

from .helpers import remem


def test_a_fork_whose_daemon_died_says_its_operation_id_in_its_json_error(
    home: Home, source: Source, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMEM_FAULTPOINT", "fork.after-prepare")  # the daemon started inherits it
    died = remem(home, "sessions", "fork", source.id, "--json")
    monkeypatch.delenv("REMEM_FAULTPOINT")

    assert (died.returncode, died.stderr) == (1, ""), (died.returncode, died.stderr)
    error = json.loads(died.stdout)["error"]
    assert error["code"] == "DAEMON_UNAVAILABLE" and "died" in error["message"], error
    retried = remem(home, "sessions", "fork", source.id, "--op-id", error["operationId"], "--json")
    assert retried.returncode == 0, retried.stderr
    assert json.loads(retried.stdout)["child"] == child_id(error["operationId"])


def test_a_fork_refused_says_no_operation_id(home: Home, source: Source) -> None:
    """A refusal is an answer: nothing was made, there is no child to find again."""
    refused = remem(home, "sessions", "fork", "no-such-session", "--json")
    assert refused.returncode == 1 and refused.stderr == "", refused.stderr
    assert "operationId" not in json.loads(refused.stdout)["error"]

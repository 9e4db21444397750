"""A name in capitals whose lowercase form is reserved: the advice never proposes a name the
next check refuses, through the real `remem` process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from tests.cli_process import remem

EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _problems(home: Home, tmp_path: Path, name: str) -> list[dict[str, object]]:
    record = {
        "name": name,
        "description": "Use uv, not pip",
        "type": "feedback",
        "content": "It is faster.\n",
    }
    changes = tmp_path / "changes.json"
    changes.write_text(json.dumps([{"action": "put", "record": record}]))
    args = ["--cwd", str(tmp_path), "--expected-revision", EMPTY, "--changes", str(changes), "--json"]
    done = remem(home, "memory", "apply", *args)
    assert done.returncode == 2 and done.stderr == "", done
    answer = json.loads(done.stdout)
    assert answer["status"] == "invalid", answer
    return list(answer["problems"])


@pytest.mark.parametrize("name", ["MEMORY", "Memory"])
def test_a_capitalised_reserved_name_is_not_told_to_become_the_reserved_one(
    home: Home, tmp_path: Path, name: str
) -> None:
    """`MEMORY` was told "use `memory`", which was then refused as reserved: an agent following
    the advice was refused twice."""
    [problem] = _problems(home, tmp_path, name)
    assert problem["code"] == "remem/name-invalid"
    assert problem["message"] == (
        "names are lowercase, and `memory` is reserved (memory.md would clash with MEMORY.md on "
        "case-insensitive disks); choose another name"
    )

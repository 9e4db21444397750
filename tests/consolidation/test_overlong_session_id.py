"""A session id longer than any folder name is no session's: `consolidate` says it is not found,
where the daemon failed on the worker log's name (ENAMETOOLONG) as a bug in remem."""

from __future__ import annotations

import json
from pathlib import Path

from remem.daemon.home import Home
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI

from .conftest import configure


def test_an_id_too_long_for_a_folder_name_is_not_found(home: Home, fake: FakeOpenAI, tmp_path: Path) -> None:
    configure(home, fake, tmp_path / "dsh")
    asked = remem(home, "consolidate", "a" * 5000, "--json")
    assert asked.returncode == 1, asked.stderr
    assert json.loads(asked.stdout)["error"]["code"] == "NOT_FOUND", asked.stdout[:300]
    assert fake.count == 0
    remem(home, "daemon", "stop")

"""A model id is one line of printable characters: one with a line break or a control character
(a paste gone wrong) is refused where it is given, the settings file unchanged; the daemon's
choice of it was a bug in remem (INTERNAL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remem.daemon.home import Home
from remem.daemon.settings import SettingsError, parse_settings
from tests.daemon.helpers import remem
from tests.fake_openai import FakeOpenAI

from .conftest import configure

NOT_AN_ID = ["m\nproviders: x", "m\tx"]  # a blank one is the CLI's usage error


@pytest.mark.parametrize("model", NOT_AN_ID, ids=["line-break", "tab"])
def test_choosing_a_model_id_of_more_than_one_line_is_refused(
    home: Home, fake: FakeOpenAI, tmp_path: Path, model: str
) -> None:
    configure(home, fake, tmp_path / "dsh")
    before = home.settings_file.read_bytes()
    chosen = remem(home, "settings", "model", "--model", model, "--json")
    assert chosen.returncode == 2, chosen.stdout
    error = json.loads(chosen.stdout)["error"]
    assert error["code"] == "INVALID" and "is no model id: write it on one line" in error["message"]
    assert home.settings_file.read_bytes() == before
    remem(home, "daemon", "stop")


def test_a_settings_file_holding_such_an_id_names_its_line() -> None:
    with pytest.raises(SettingsError) as raised:
        parse_settings(b'consolidation:\n  provider: openai\n  model: "gpt-4o\\r"\n')
    assert raised.value.problems == [
        "settings.yml:3: consolidation.model: 'gpt-4o\\r' is no model id: write it on one line, as the "
        "provider names it (such as gpt-4o), without invisible or control characters"
    ]


def test_an_invisible_character_in_it_is_shown_escaped() -> None:
    with pytest.raises(SettingsError) as raised:
        parse_settings("consolidation:\n  model: deepseek\u200bchat\n".encode())
    assert "'deepseek\\u200bchat' is no model id" in raised.value.problems[0]

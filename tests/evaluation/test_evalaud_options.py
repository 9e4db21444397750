"""`remem eval`'s options refused as options: the settings it writes from them are no file of the user's."""

from __future__ import annotations

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI

from .eval_command import remem

pytestmark = pytest.mark.slow  # the real CLI in its own process


@pytest.mark.parametrize(("model", "shown"), [("gpt\n4o", "'gpt\\n4o'"), ("gpt\x014o", "'gpt\\x014o'")])
def test_a_model_id_with_a_control_character_names_the_option(
    user_home: Home, fake: FakeOpenAI, model: str, shown: str
) -> None:
    """The error named line 2 of "the evaluated settings", which remem wrote and the user never saw."""
    done = remem(user_home, "--model", model, "--cases", "dsh/decision")
    assert done.returncode == 2 and done.stdout == "" and fake.count == 0
    assert f"Error: --model: {shown} is no model id: write it on one line" in done.stderr
    assert "evaluated settings" not in done.stderr

"""`remem eval` without `--provider` measures the configured route as it is: a route to a
provider whose default model remem does not know, with no model chosen, is refused before any
case (decision 0500, amended), never sent deepseek's default. What is sent is read from the
requests the real `openai` client made."""

from __future__ import annotations

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI
from tests.scripted_model import serve

from .conftest import KEY_ENV
from .eval_command import remem

pytestmark = pytest.mark.slow  # each run is the real CLI in its own process
CASE = "dsh/decision"  # one case that asks the model


@pytest.mark.parametrize("provider", ["openai", "mine"])
def test_the_configured_route_without_a_model_is_refused(
    user_home: Home, fake: FakeOpenAI, provider: str
) -> None:
    user_home.settings_file.write_text(
        f"consolidation:\n  provider: {provider}\n"
        f"providers:\n  {provider}:\n    base_url: {fake.base_url}\n    api_key_env: {KEY_ENV}\n"
    )
    serve(fake, "good")
    refused = remem(user_home, "--cases", CASE)
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert f"remem knows no default model of {provider}: choose one with" in refused.stderr, refused.stderr
    assert fake.count == 0, f"sent {[r['model'] for r in fake.requests]}"

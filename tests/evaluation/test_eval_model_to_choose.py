"""`remem eval --provider P` for a provider without a default model (decision 0493): the model of
another provider, or the settings' default, is never measured as P's."""

from __future__ import annotations

import subprocess

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI

from .eval_command import eval_command, eval_env

EMPTY = "dsh/empty"  # ends before anything is said: no model is asked


def _eval(home: Home, *args: str) -> subprocess.CompletedProcess[str]:
    env = eval_env(ANTHROPIC_API_KEY="sk-ant-test")
    return subprocess.run(eval_command(home, *args), env=env, capture_output=True, text=True, timeout=120)


def test_a_provider_without_a_default_model_is_measured_only_with_a_chosen_one(
    user_home: Home, fake: FakeOpenAI
) -> None:
    configured = user_home.settings_file.read_text()  # fake/scripted: a model chosen for another provider
    refused = _eval(user_home, "--provider", "anthropic", "--cases", EMPTY)
    given = _eval(user_home, "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--cases", EMPTY)
    user_home.settings_file.write_text(configured.replace("provider: fake", "provider: anthropic"))
    kept = _eval(user_home, "--provider", "anthropic", "--cases", EMPTY)
    user_home.settings_file.write_text(
        configured.replace("provider: fake\n  model: scripted", "provider: anthropic")
    )
    unchosen = _eval(user_home, "--provider", "anthropic", "--cases", EMPTY)
    for refusal in (refused, unchosen):
        assert refusal.returncode == 2, refusal.stderr
        assert "anthropic has no default model" in refusal.stderr
        assert "give --model" in refusal.stderr and "remem settings model" not in refusal.stderr
    assert given.returncode == 0 and "Measured anthropic/claude-sonnet-4-5" in given.stdout, given.stderr
    assert kept.returncode == 0 and "Measured anthropic/scripted" in kept.stdout, kept.stderr
    assert fake.count == 0

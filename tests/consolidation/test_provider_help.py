"""`remem settings model --help` names every predefined provider, as settings.py defines them."""

from __future__ import annotations

from remem.daemon.home import Home
from remem.daemon.settings import PREDEFINED_PROVIDERS
from tests.daemon.helpers import remem


def test_the_provider_option_names_each_predefined_provider(home: Home) -> None:
    shown = remem(home, "settings", "model", "--help")
    assert shown.returncode == 0, shown.stderr
    words = " ".join(shown.stdout.split())  # as click wraps it
    assert f"A provider ({', '.join(PREDEFINED_PROVIDERS)}, or your own)." in words, words

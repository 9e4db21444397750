"""The note of anthropic's empty model list (decision 0493) says why the compatibility layer lists
none only when that is why: the predefined URL answered with an HTTP error other than a refused
key, or listed nothing. The layer is the local fake, standing at the predefined URL; the real
`openai` client asks it."""

from __future__ import annotations

import asyncio
import socket

import pytest

from remem.daemon.consolidation.models import list_models
from remem.daemon.consolidation.route import Route
from remem.daemon.settings import PREDEFINED_PROVIDERS
from tests.fake_openai import FakeOpenAI

KEY = "sk-ant-test"
WHY = "Anthropic's OpenAI compatibility layer documents chat completions only"


def _note(base_url: str, *, predefined: str, key: str = KEY) -> str:
    anthropic = PREDEFINED_PROVIDERS["anthropic"].model_copy(update={"base_url": predefined})
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(PREDEFINED_PROVIDERS, "anthropic", anthropic)
        route = Route(
            provider="anthropic", model="m", base_url=base_url, api_key=key, max_tokens=10,
            max_tokens_setting="consolidation.max_tokens", timeout_seconds=5, max_input_bytes=1000,
            debug=False,
        )  # fmt: skip
        models, note = asyncio.run(list_models(route))
    assert models == [] and note is not None
    return note


@pytest.mark.parametrize("listed", [None, []], ids=["no-list-404", "empty-list"])
def test_the_predefined_url_listing_none_says_why(listed: list[str] | None) -> None:
    with FakeOpenAI(api_key=KEY) as layer:
        layer.list_models(listed)
        note = _note(layer.base_url, predefined=layer.base_url)
    assert WHY in note and "remem settings model --provider anthropic --model" in note, note


def test_a_refused_key_is_not_explained_as_the_layer() -> None:
    with FakeOpenAI(api_key=KEY) as layer:
        layer.list_models(["claude-sonnet-4-5"])
        note = _note(layer.base_url, predefined=layer.base_url, key="sk-wrong")
    assert note.endswith("(HTTP 401)"), note


def test_nothing_answering_is_not_explained_as_the_layer() -> None:
    with socket.socket() as probe:  # a port nothing listens on once it is closed
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    note = _note(url, predefined=url)
    assert note.endswith("(APIConnectionError)"), note


def test_a_base_url_of_ones_own_is_not_explained_as_the_layer() -> None:
    with FakeOpenAI(api_key=KEY) as proxy:  # providers.anthropic.base_url set to a proxy
        note = _note(proxy.base_url, predefined="https://api.anthropic.com/v1")
    assert note.endswith("(HTTP 404)"), note

"""A provider's model list, as its OpenAI-compatible API gives it (`GET /models`), for the editor's
model picker. Bounded (a few seconds, no retries, at most `MAX_MODELS` ids); a provider without
the endpoint, or one that cannot be reached, gives no list and a note saying why."""

from __future__ import annotations

import logging

from ..settings import at_predefined_url
from .route import InvalidBaseUrl, Route, open_client

log = logging.getLogger("remem.daemon")
MAX_MODELS = 500
_TIMEOUT_SECONDS = 5.0
# Why a predefined provider, at its own URL, lists none through the OpenAI client, and what to
# do instead (`_why_none`).
_WHY = {
    "anthropic": (
        ": Anthropic's OpenAI compatibility layer documents chat completions only, and its own "
        "model list asks for the x-api-key and anthropic-version headers, which the OpenAI client "
        "does not send; choose a model id from Anthropic's models overview with `remem settings "
        "model --provider anthropic --model …`"
    ),
}


async def list_models(route: Route) -> tuple[list[str], str | None]:
    """The model ids `route`'s provider lists, sorted; or none, and why."""
    from openai import APIError, APIStatusError  # imported when asked: the SDK is slow to import

    try:
        client = open_client(route, max_retries=0, timeout=_TIMEOUT_SECONDS)
    except InvalidBaseUrl:
        return [], f"{route.provider}'s base_url {route.shown_url} is not a valid URL; fix it in settings.yml"
    try:
        ids: list[str] = []
        async for model in client.models.list():
            ids.append(model.id)
            if len(ids) == MAX_MODELS:
                break
    except APIError as exc:
        status = exc.status_code if isinstance(exc, APIStatusError) else None
        reason = type(exc).__name__ if status is None else f"HTTP {status}"
        log.info("%s lists no models at %s (%s)", route.provider, route.shown_url, reason)
        said = f"{route.provider} did not list its models at {route.shown_url} ({reason})"
        # Not for a refused key (401/403) nor an unreachable server: those say what to fix.
        return [], said + (_why_none(route) if status not in (None, 401, 403) else "")
    finally:
        await client.close()
    if not ids:
        return [], f"{route.provider} lists no models at {route.shown_url}" + _why_none(route)
    return sorted(set(ids)), None


def _why_none(route: Route) -> str:
    """`_WHY` of `route`'s provider at its predefined URL; nothing at a base_url the user set (a
    proxy, which may list models the layer does not)."""
    return _WHY.get(route.provider, "") if at_predefined_url(route.provider, route.base_url) else ""

"""What an HTTP error the provider answered means for the user, and what to do about it: the
refused key and where it came from, the model or base_url not found, a rate limit or a spent
quota and when to retry, a refused request, the provider's own trouble (decision 0505).

Only remem's words, the status and the route's own names (the model, the masked base_url, the
variable holding the key, never the key): the provider's message, which may quote the request,
is the caller's to add for the user alone (decision 0373).
"""

from __future__ import annotations

import os
from http import HTTPStatus

from .route import Route


def status_said(status: int, retry_after: str | None, code: str | None, route: Route, remote: bool) -> str:
    """What the provider's `status` means and what to do: `retry_after` is its `Retry-After`,
    `code` its error `code` (an identifier), `remote` whether the route asks a predefined
    provider's own server, whose base_url the user did not write."""
    wait = seconds(retry_after)
    retry = f"retry in {wait:g} s, as it asks" if wait is not None else "retry later"
    what, todo = _meaning(status, code, route, remote, retry)
    return f"{what} (HTTP {status} {status_name(status)}, asked {route.shown_url}): {todo}"


def _meaning(status: int, code: str | None, route: Route, remote: bool, retry: str) -> tuple[str, str]:
    model = f"`{route.model}`"
    variable = _key_variable(route)
    stored = f"providers.{route.provider}.api_key in credentials.yml"
    if status == HTTPStatus.UNAUTHORIZED:
        # No variable holds it: credentials.yml does, or none was sent, when no api_key_env is set.
        named = f"providers.{route.provider}.api_key_env"
        todo = (
            f"check the key in {variable}"
            if variable
            else f"check {stored}, or name the variable holding it in {named}"
        )
        return "the provider refused the API key", todo
    if status == HTTPStatus.FORBIDDEN:
        return (
            "the provider refused access with this API key",
            f"check that the account of the key in {variable or stored} may use model {model}",
        )
    if status == HTTPStatus.PAYMENT_REQUIRED or code == "insufficient_quota":
        return (
            "the provider's account has no balance or quota left",
            "top it up at the provider, or choose another model (remem settings model)",
        )
    if status == HTTPStatus.NOT_FOUND:
        where = "" if remote else " and that base_url is the API's (most end in /v1)"
        return (
            f"the provider has no model {model}, or no chat completions API there",
            f"check the model id (remem settings model){where}",
        )
    if status == HTTPStatus.TOO_MANY_REQUESTS:
        return "the provider is rate limiting this key", f"{retry}, or raise the account's limits"
    if status >= 500:
        log = "" if remote else ", or see that server's log"
        return "the provider failed on its side", f"{retry}{log}"
    return (
        "the provider refused the request",
        f"check that model {model} takes max_tokens {route.max_tokens} ({route.max_tokens_setting}) "
        "and an input this long, or choose another model (remem settings model)",
    )


def _key_variable(route: Route) -> str | None:
    """`$NAME` of the variable the route's key came from: the route takes a provider's variable
    before credentials.yml, and the key is said by where it is, never itself."""
    return next(
        (
            f"${name}"
            for name, value in sorted(os.environ.items())
            if route.api_key and value.strip() == route.api_key
        ),
        None,
    )


def status_name(status: int) -> str:
    if status == HTTPStatus.TOO_MANY_REQUESTS:
        return "rate limited"
    try:
        return HTTPStatus(status).phrase.lower()
    except ValueError:
        return "an HTTP error"


def seconds(retry_after: str | None) -> float | None:
    """`Retry-After` in seconds; None for a date, or what is no number (never quoted: the
    provider's text)."""
    try:
        value = float(retry_after or "")
    except ValueError:
        return None
    return value if 0 < value < float("inf") else None

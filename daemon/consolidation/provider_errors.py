"""What an HTTP error the provider answered means for the user, and what to do about it: the
refused key and where it came from, the model or base_url not found, a rate limit or a spent
quota and when to retry, a refused request, the provider's own trouble (decision 0505); and a
TLS handshake that failed, by what OpenSSL said of it (decision 0515).

Only remem's words, the status and the route's own names (the model, the masked base_url, the
variable holding the key, never the key): the provider's message, which may quote the request,
is the caller's to add for the user alone (decision 0373).
"""

from __future__ import annotations

import ssl
from http import HTTPStatus

from .route import Route

# How Anthropic says an account's prepaid credit is spent: a 400 `invalid_request_error` like any
# refused parameter, with no `code`; only its message tells it.
_NO_CREDIT = "credit balance is too low to access the anthropic api"


def status_said(
    status: int, retry_after: str | None, code: str | None, words: str, route: Route, remote: bool
) -> str:
    """What the provider's `status` means and what to do: `retry_after` is its `Retry-After`,
    `code` its error `code` (an identifier), `words` its message, only matched, never repeated
    here, `remote` whether the route asks a predefined provider's own server, whose base_url
    the user did not write."""
    wait = seconds(retry_after)
    retry = f"retry in {wait:g} s, as it asks" if wait is not None else "retry later"
    what, todo = _meaning(status, code, words, route, remote, retry)
    return f"{what} (HTTP {status} {status_name(status)}, asked {route.shown_url}): {todo}"


def _meaning(
    status: int, code: str | None, words: str, route: Route, remote: bool, retry: str
) -> tuple[str, str]:
    model = f"`{route.model}`"
    if status == HTTPStatus.BAD_REQUEST and _NO_CREDIT in words.lower():
        return "the Anthropic account has no credit left", _buy_credits(route)
    if status in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN) and route.key_env is None:
        return "the provider wants an API key", _no_key(route.provider)
    if status == HTTPStatus.UNAUTHORIZED:
        return "the provider refused the API key", f"check {_key_place(route)}{_when_read(route)}"
    if status == HTTPStatus.FORBIDDEN:
        return (
            "the provider refused access with this API key",
            f"check that the account of {_key_place(route)} may use model {model}{_when_read(route)}",
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
    if code == "context_length_exceeded":
        # max_input_bytes does not cut an input: one over it ends evidence-too-large, unsent.
        return (
            f"the input is longer than model {model} takes",
            "choose a model with a longer context (remem settings model), or lower max_tokens "
            f"{route.max_tokens} ({route.max_tokens_setting}); consolidation.max_input_bytes "
            f"({route.max_input_bytes}), set under what the model takes, ends a longer input "
            "evidence-too-large before it is sent",
        )
    return (
        "the provider refused the request",
        f"check that model {model} takes max_tokens {route.max_tokens} ({route.max_tokens_setting}) "
        "and an input this long, or choose another model (remem settings model)",
    )


def _buy_credits(route: Route) -> str:
    """Where Anthropic's credit is bought: per organization, so credit bought for another one than
    the key's (a second workspace, a personal account) changes nothing."""
    whose = "" if route.key_env is None else f" of {_key_place(route)}"
    return (
        f"buy credits for the organization{whose} in the Anthropic Console, under Plans & Billing "
        "(another organization's credit does not count), or choose another model (remem settings model)"
    )


def _no_key(provider: str) -> str:
    """What to do when the provider wants a key and the route sends none of the user's: its
    provider names no variable, and credentials.yml is read only for one that does."""
    return (
        f"remem sends none, as providers.{provider}.api_key_env is not set; set it to the variable "
        "holding the key (credentials.yml is read only for a provider that names one)"
    )


def _key_place(route: Route) -> str:
    """Where the key the route sent is, by the variable or the setting, never the key."""
    if route.key_stored:
        return f"the key at providers.{route.provider}.api_key in credentials.yml"
    return f"the key in ${route.key_env}"


def _when_read(route: Route) -> str:
    """When remem read the key, as a user who has changed it must know: a variable when the
    process running the review started (a daemon keeps that environment; `--no-daemon` and
    `remem eval` read their own), credentials.yml at each consolidation, and only while that
    variable is unset."""
    if route.key_stored:
        return f" (read as remem's environment has no ${route.key_env})"
    return (
        f" (remem read ${route.key_env} when it started, and a running daemon keeps that value: "
        "after changing it, run `remem daemon stop`)"
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


# OpenSSL's verify codes (X509_V_ERR_*) of a certificate for another name than the one asked, and
# of one whose chain ends at no CA the client trusts: self-signed, or a private CA's.
_OTHER_NAME = frozenset({62, 64})
_UNKNOWN_ISSUER = frozenset({2, 18, 19, 20, 21})

# OpenSSL's reasons for a first answer that is no TLS record, as plain HTTP is ("HTTP/1.1 …" read as
# a record header): a wrong version number (OpenSSL 3.0, 3.1), a record layer failure (3.2 on), an
# HTTP request (a server's side). Any other reason (an alert, the connection closed mid-handshake)
# came from something that does speak TLS, or from nothing that said what it speaks.
_PLAIN_HTTP = frozenset({"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "HTTP_REQUEST"})


def plain_http(error: ssl.SSLError) -> bool:
    """Whether the handshake that failed with `error` was answered in plain HTTP."""
    return error.reason in _PLAIN_HTTP


def signer_unknown(error: ssl.SSLCertVerificationError) -> bool:
    """Whether the certificate was refused for its signer alone, as one a proxy re-signs is."""
    return error.verify_code in _UNKNOWN_ISSUER


def openssl_reason(error: ssl.SSLError) -> str:
    """Why a TLS handshake failed otherwise than on plain HTTP or a certificate, in OpenSSL's
    words for its reason (an identifier of OpenSSL's, never the server's text)."""
    reason = error.reason.lower().replace("_", " ") if error.reason else "none given"
    return f"OpenSSL's reason: {reason}"


def tls_said(error: ssl.SSLError, remote: bool, host: str) -> str:
    """What a TLS handshake with `host`, base_url's, that failed with `error` means, and what to
    do; `remote` as `status_said` has it. On the predefined provider's own server, a certificate
    refused is something on the network intercepting TLS, not the server's."""
    network = "check the network"
    if not isinstance(error, ssl.SSLCertVerificationError):
        if not plain_http(error):
            check = network if remote else "check the host and port in base_url, and see that server's log"
            return f"the TLS handshake failed ({openssl_reason(error)}): {check}"
        if remote:
            return (
                "a server answered there, but not in TLS, as when something on the network intercepts "
                f"it: {network}"
            )
        return (
            "a server answered there, but not in TLS: if it serves plain HTTP (local servers mostly do), "
            "begin base_url with http://, not https://"
        )
    if remote:
        return (
            "its TLS certificate was refused, as when something on the network intercepts TLS (a company's "
            f"filter, an antivirus): {trust_ca('that interceptor')}; else {network}"
        )
    if signer_unknown(error):
        return (
            "its TLS certificate is signed by no CA this machine trusts (a self-signed certificate, its own "
            f"CA, or a private CA's): {trust_ca('that server')}"
        )
    return certificate_said(error, "its TLS certificate", host)


def certificate_said(error: ssl.SSLCertVerificationError, certificate: str, host: str) -> str:
    """What `certificate`, checked for `host` and refused with `error` for another fault than its
    signer, means and what to do."""
    if error.verify_code in _OTHER_NAME:
        return (
            f"{certificate} is made out to another host than {host}, which base_url names: write in base_url "
            "the host name the certificate names"
        )
    # OpenSSL's own words for the rest (expired, revoked, …): they name the certificate's fault.
    return (
        f"{certificate} was refused ({error.verify_message}): check the server's certificate, and "
        "this machine's date"
    )


def trust_ca(whose: str) -> str:
    """What to do when `whose` certificate is signed by a CA the client does not trust. The HTTP
    client trusts SSL_CERT_FILE in place of the system's certificates when it is set, and the
    daemon reads it when it starts."""
    return (
        f"trust {whose}'s CA certificate (add it to the system's, or set SSL_CERT_FILE to a PEM file "
        "holding it and the usual roots), then run `remem daemon stop`"
    )

"""One worker attempt: the model loop around `memory_review_propose`, recorded step by step.

Drafts (`final: false`) are checked and answered; the first valid final proposal ends the
attempt. Each raw assistant message goes back into the history unchanged, since providers
such as DeepSeek refuse tool-call history without its `reasoning_content`. The attempt has a
step budget and one timeout for all of it; cancelling the task aborts the HTTP call, though a
step being written to the worker session is finished first.

A failed attempt is said twice (decision 0373): `Outcome.error`, for the receipt and the user,
may quote what the provider said, redacted and cut short; `Outcome.cause`, for the debug log
and the daemon's log, only identifies the failure (the exception's class, the HTTP status, the
provider's error `type` and `code`, the URL asked), since a provider's message may quote the
request, and so the session.
"""

from __future__ import annotations

import asyncio
import importlib
import ipaddress
import logging
import os
import re
import socket
import ssl
import traceback
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from pydantic import BaseModel

from ..credentials import redact
from ..fsutil import is_refused_write
from ..limits import MIB, SESSION_LINE_MAX_BYTES, size_text
from ..protocol.consolidation import EvidenceRange
from ..sessions.errors import SessionLogError
from ..sessions.writer import json_line
from ..settings import at_predefined_url
from .prompt import SYSTEM_RULES, TOOL
from .proposal import TOOL_NAME, Frozen, Plan, ProposalRejected, parse_arguments, plan_proposal
from .provider_errors import (
    certificate_said,
    openssl_reason,
    plain_http,
    seconds,
    signer_unknown,
    status_name,
    status_said,
    tls_said,
    trust_ca,
)
from .route import InvalidBaseUrl, Route
from .worker_log import ACCEPTED, ToolExchange, Usage, WorkerLog, unwritten

if TYPE_CHECKING:  # openai takes most of a second to import: only an attempt pays for it
    import httpx2
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion, ChatCompletionMessage

MAX_STEPS = 6
# The most tool calls one answer may hold. A proposal is one call (a model may send a draft and
# the final one together, or repeat itself a few times); each call is parsed and planned against
# the frozen memory, so an answer of thousands of calls is refused whole, never checked.
MAX_TOOL_CALLS = 16
# Far past any valid proposal (RECORDS_MAX records of BODY_MAX_BYTES, Global's cap): an answer
# over it is no proposal, and is refused before it is parsed.
ANSWER_MAX_BYTES = 3 * MIB
# The most of an HTTP answer's body read, and decoded: JSON writes a byte of text as at most
# six (a control character as \u0001), so a body past this holds more than ANSWER_MAX_BYTES of
# text and tool arguments whatever its escapes, with room for the rest of the completion. It is
# refused as it comes in: read whole to be measured, a broken proxy's endless answer would take
# the daemon's memory first.
_BODY_MAX_BYTES = 8 * ANSWER_MAX_BYTES
# What a worker-log line holds besides the values `logged_bytes` measures: the event's type,
# seq, time, message id, the keys around the values and the token counts (each below
# `_TOKENS_MAX`). ASCII of a fixed shape, a few hundred bytes: this bounds it with room to spare.
_LINE_FRAME_BYTES = 4096
# The most the values one worker-log line records may take, encoded: the rest of the line is
# its frame, and the session reader refuses a longer line (the whole log, for good). The log is
# read back to settle a crash, so a line past it would leave a Global commit unrecorded.
LINE_ROOM_BYTES = SESSION_LINE_MAX_BYTES - _LINE_FRAME_BYTES
# A token count at or past this is no count: 2**53 is where JavaScript's numbers, which DSH's
# readers of the log use, stop being exact, and no request comes near it.
_TOKENS_MAX = 2**53
_log = logging.getLogger("remem.daemon")
Progress = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended: a plan, or the failure status, a redacted reason (`error`, which
    may quote the provider) and what identifies the failure without any text it quoted
    (`cause`, the only one a log may hold)."""

    status: str  # proposed | invalid-proposal | provider-failed | internal-error
    plan: Plan | None = None
    error: str | None = None
    cause: str | None = None


@dataclass
class _Heard:
    """The provider's last HTTP answer in an attempt: its status and its `Retry-After`; and how
    many answers it gave the attempt (a timeout after one is no network's fault)."""

    status: int | None = None
    retry_after: str | None = None
    answers: int = 0


# The attempt under way, seen from the HTTP client the routes share: set around the attempt's
# task, which copies it, and filled by `_hear` inside that task.
_HEARD: ContextVar[_Heard | None] = ContextVar("remem_consolidation_heard", default=None)


def http_client() -> httpx2.AsyncClient:
    """The SDK's default HTTP client, noting each status the provider answers for the attempt
    under way. The SDK retries a 429 or a 5xx inside the attempt's timeout, sleeping what
    `Retry-After` asks: when the timeout lands in that sleep, the error is lost with it, and
    the user would read a slow model where the provider refused."""
    from openai import DefaultAsyncHttpxClient

    return DefaultAsyncHttpxClient(event_hooks={"request": [_asking], "response": [_hear, _bound]})


async def _asking(request: httpx2.Request) -> None:
    """A request sent: what is awaited now is its answer, not the one before (a retry of a 503
    that then hangs is a timeout like any other)."""
    if (heard := _HEARD.get()) is not None:
        heard.status = heard.retry_after = None


async def _hear(response: httpx2.Response) -> None:
    if (heard := _HEARD.get()) is not None:
        heard.status, heard.retry_after = response.status_code, response.headers.get("retry-after")
        heard.answers += 1


async def _bound(response: httpx2.Response) -> None:
    """Refuse a body past `_BODY_MAX_BYTES`, sent or decoded: at once when its Content-Length
    says so, else as soon as that much of it has come, before the rest is read (the SDK reads
    it whole)."""
    from .answer_body import cap

    length = response.headers.get("content-length", "")
    if length.isdigit() and int(length) > _BODY_MAX_BYTES:
        raise _too_large(f"{int(length)} bytes")
    cap(response, _BODY_MAX_BYTES, lambda: _too_large(f"over {_BODY_MAX_BYTES} bytes"))


def _too_large(size: str) -> BadAnswer:
    return BadAnswer(
        f"the answer is {size}; a consolidation step may be at most {size_text(ANSWER_MAX_BYTES)} of "
        "text and tool arguments, far more than any valid proposal holds"
    )


async def run_attempt(
    connect: Callable[[], AsyncOpenAI], route: Route, log: WorkerLog, context: str,
    ranges: list[EvidenceRange], frozen: Frozen, progress: Progress,
) -> Outcome:  # fmt: skip
    """Run the loop under the route's timeout on a started log, which is ended whatever happens;
    `connect` gives the route's client (the route's base_url is checked only then).

    The log's appends fsync: they run in a worker thread, like every durable write here."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_RULES},
        {"role": "user", "content": context},
    ]
    # The SDK takes most of a second to import, the first time: in a thread, not on the event
    # loop every client of the daemon waits on (its client is made, and answers parsed, there).
    await asyncio.to_thread(importlib.import_module, "openai.types.chat")
    heard = _Heard()
    listening = _HEARD.set(heard)  # before `wait_for`, whose task copies the context
    try:
        outcome = await asyncio.wait_for(
            _loop(_connect(connect), route, log, messages, ranges, frozen, progress), route.timeout_seconds
        )
    except asyncio.TimeoutError:  # not the builtin before Python 3.11
        await asyncio.to_thread(log.end, "aborted")
        error = _timed_out(route, heard)
        return Outcome("provider-failed", error=error, cause=error)
    except asyncio.CancelledError:
        await asyncio.to_thread(log.end, "aborted")
        raise
    except BadAnswer as exc:
        await asyncio.to_thread(log.end, "error")
        asked = f"(asked {route.shown_url})"
        return Outcome("provider-failed", error=f"{exc} {asked}", cause=f"{exc.cause} {asked}")
    except Exception as exc:
        return await _failed(exc, route, log)
    finally:
        _HEARD.reset(listening)
    await asyncio.to_thread(log.end, "completed" if outcome.plan is not None else "error")
    return outcome


def _timed_out(route: Route, heard: _Heard) -> str:
    """The timeout, and the HTTP error the provider last answered, if it did: then the SDK was
    waiting to retry, not the model answering. Only a status and a number: no provider text.
    Without such an error, what to do depends on whether the provider answered anything."""
    timeout = f"no final proposal within {route.timeout_seconds:g} s from {route.shown_url}"
    if heard.answers and (heard.status is None or heard.status < 400):
        answered = "the provider answered before, not this step in time"
        return f"{timeout}: {answered}; raise consolidation.timeout_seconds"
    if heard.status is None:
        check = "the network" if _predefined_remote(route) else "the network and base_url"
        return (
            f"{timeout}: no answer came; raise consolidation.timeout_seconds if the model is that slow, "
            f"or check {check}"
        )
    wait = seconds(heard.retry_after)
    asked = f" and asked to wait {wait:g} s" if wait is not None else ""
    return (
        f"{timeout}: the provider answered {heard.status} ({status_name(heard.status)}){asked}; "
        "raise consolidation.timeout_seconds or try later"
    )


async def _failed(exc: Exception, route: Route, log: WorkerLog) -> Outcome:
    """A provider's error ends the attempt `provider-failed`. Anything else went wrong in remem
    and ends it `internal-error`, rather than failing the request and leaving the attempt
    `running` for the next request to close as `interrupted`, which names no cause."""
    from openai import APIConnectionError, APIError, APIStatusError

    if isinstance(exc, APIError):
        await asyncio.to_thread(log.end, "error")
        asked = f"(asked {route.shown_url})"
        if isinstance(exc, APIStatusError):  # remem's words and a next step, then the provider's
            words = _said(exc)
            said = status_said(
                exc.status_code, exc.response.headers.get("retry-after"), _identifier(exc.code), words,
                route, _predefined_remote(route),
            )  # fmt: skip
            return Outcome(
                "provider-failed",
                error=said + (f" — {words}" if words else ""),
                cause=f"{_identify(exc)} {asked}",
            )
        hint = None
        if isinstance(exc, APIConnectionError):
            hint = _through_proxy(exc, route) or _unanswered(exc, route)
        if hint is None:
            return Outcome(
                "provider-failed", error=f"{_describe(exc)} {asked}", cause=f"{_identify(exc)} {asked}"
            )
        # Said in words, the exception chain for the log: its texts are the HTTP client's and the
        # system's, never the provider's, so they may be logged.
        return Outcome(
            "provider-failed",
            error=f"no whole answer from {route.shown_url}: {hint}",
            cause=f"{_describe(exc)} {asked}; {hint}",
        )
    if isinstance(exc, OSError) and is_refused_write(exc):  # a full disk: no bug, and no frames
        log.close()  # the log is what failed; the receipt, smaller, may still be written
        error = unwritten(exc)
        _log.info("a consolidation attempt ended: %s", error)
        return Outcome("internal-error", error=error, cause=error)
    # The class and the frames, never the message: it may quote the model's answer.
    frames = "".join(traceback.format_tb(exc.__traceback__))
    _log.error("a consolidation attempt failed with %s:\n%s", type(exc).__name__, frames)
    try:
        await asyncio.to_thread(log.end, "error")
    except (SessionLogError, OSError):  # the log itself may be what failed
        log.close()
    error = f"the attempt failed inside remem ({type(exc).__name__}; its log says where)"
    return Outcome("internal-error", error=error, cause=error)


async def _loop(
    client: AsyncOpenAI, route: Route, log: WorkerLog, messages: list[dict[str, Any]],
    ranges: list[EvidenceRange], frozen: Frozen, progress: Progress,
) -> Outcome:  # fmt: skip
    last: tuple[str, str] = ("", "")
    checked: dict[tuple[str, str], tuple[Plan | None, str]] = {}  # the attempt's calls, by name and arguments
    for step in range(1, MAX_STEPS + 1):
        progress("model-step", {"step": step})
        response = _completion(await _ask(client, route, messages))
        choice = response.choices[0]
        message = choice.message
        raw = _as_sent_back(message)
        messages.append(raw)
        calls = list(message.tool_calls or [])  # each a function call (`_check_message`)
        refusal = getattr(message, "refusal", None)
        blocks = _blocks(raw, calls, refusal)
        # Its `tool/call` lines (a call's id, name and arguments) hold less: they fit when it does.
        _recordable("the answer", blocks, route.provider, route.model)
        finish = _identifier(choice.finish_reason)  # the SDK does not check it: the provider's word
        progress("model-answer", {"step": step, "toolCalls": len(calls), "finish": finish})
        # Parsing and planning a call reads the whole frozen workspace: off the event loop, which
        # serves every other client of the daemon meanwhile.
        exchanges, accepted = await asyncio.to_thread(_answer, calls, ranges, frozen, checked)
        for x in exchanges:  # a call's `tool/result` line names the call twice
            _recordable(
                "the tool's answer to one of its calls (its problems)", x.call_id, x.call_id, x.result
            )
            progress(
                "tool-result", {"step": step, "accepted": not x.error, "problems": x.result.count("\n- ")}
            )
            messages.append({"role": "tool", "tool_call_id": x.call_id, "content": x.result})
        usage = _usage(response.usage)
        await _written(log.step, blocks, route.provider, route.model, exchanges, usage)
        if accepted is not None:
            return Outcome("proposed", plan=accepted)
        if isinstance(refusal, str) and refusal.strip() and not calls:
            # The provider's safety refusal: asking again gets the same answer, each one billed.
            said = _bounded(redact(" ".join(refusal[:_REDACTED_CHARS].split())), _SAID_CHARS)
            why = f"the model refused to review the session (asked {route.shown_url})"
            return Outcome("invalid-proposal", error=f"{why}: {said}", cause=f"{why} (its message.refusal)")
        last = _wrong(finish, exchanges, route)
        if not calls:
            nudge = f"Answer by calling `{TOOL_NAME}` (with `final: true` when done)."
            await _written(log.nudge, nudge)
            messages.append({"role": "user", "content": nudge})
    said, kind = last
    error = f"no valid final proposal within {MAX_STEPS} model steps; the last answer"
    return Outcome("invalid-proposal", error=error + said, cause=error + kind)


def _wrong(finish: str | None, exchanges: list[ToolExchange], route: Route) -> tuple[str, str]:
    """What was wrong with a step's answer, to end "the last answer" with: for the user, the
    tool's answer to it, redacted (a rejection may quote the model's arguments, and so the
    session), then the kind of fault alone, for the logs."""
    if finish == "length":  # cut off, its arguments are rejected as broken JSON: not the cause
        cut = f" was cut off at max_tokens {route.max_tokens} (finish_reason length)"
        return f"{cut}: raise {route.max_tokens_setting}", cut
    if not exchanges:
        return " called no tool", " called no tool"
    result = exchanges[-1].result
    if result == _DRAFT:
        draft = " was a valid draft, never sent with `final: true`"
        return draft, draft
    return f": {_bounded(redact(' '.join(result[:_REDACTED_CHARS].split())), _SAID_CHARS)}", " was rejected"


async def _written(write: Callable[..., None], *args: Any) -> None:
    """`write(*args)` in a thread, awaited to its end through any cancel, which is raised after:
    the thread cannot be stopped, and the log's end, written next, must not interleave with it."""
    running = asyncio.ensure_future(asyncio.to_thread(write, *args))
    cancelled = False
    while not running.done():
        try:
            await asyncio.shield(running)
        except asyncio.CancelledError:
            cancelled = True
    running.result()
    if cancelled:
        raise asyncio.CancelledError


class BadAnswer(Exception):
    """The provider could not be asked, or answered what is not a chat completion; says which,
    maybe quoting the answer, and `cause` says it without quoting anything."""

    def __init__(self, message: str, cause: str | None = None) -> None:
        super().__init__(message)
        self.cause = message if cause is None else cause


def _connect(connect: Callable[[], AsyncOpenAI]) -> AsyncOpenAI:
    why = "the provider's base_url is not a valid URL"
    try:
        client = connect()
    except InvalidBaseUrl as exc:
        raise BadAnswer(f"{why} ({exc})", why) from None
    if not client.base_url.host:  # `http:///v1`: the SDK would look the empty name up, and fail there
        raise BadAnswer(f"{why} (it names no host, as http://127.0.0.1:8000/v1 does)", why)
    return client


def _predefined_remote(route: Route) -> bool:
    """Whether `route` asks a predefined provider's own server at the URL remem gives it (the
    user set no base_url of their own), away from this machine: what fails there is the
    network, never a base_url the user wrote, nor a server the user is to start."""
    if not at_predefined_url(route.provider, route.base_url):
        return False
    host = urlsplit(route.base_url).hostname or ""
    try:
        return not ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host != "localhost"


def _through_proxy(exc: BaseException, route: Route) -> str | None:
    """What happened to a request the HTTP client sent through a proxy, when it never reached
    the server: that proxy is to be checked, not base_url nor a server to start; or whose TLS
    handshake failed there. None when no proxy applies to base_url, or the request failed past
    it (its answer)."""
    from httpx2 import ConnectError, ConnectTimeout, ProxyError

    causes = list(_causes(exc))
    if not any(isinstance(e, (socket.gaierror, ConnectError, ConnectTimeout, ProxyError)) for e in causes):
        return None
    proxy = _proxy_of(route.base_url)
    if proxy is None:
        return None
    via = f"it was sent through the proxy {proxy.shown} of {proxy.variable or 'the system proxy settings'}"
    if (tls := next((e for e in causes if isinstance(e, ssl.SSLError)), None)) is not None:
        return f"{via}, {_tls_through(tls, proxy, route)}"
    if any(isinstance(e, socket.gaierror) for e in causes):
        what = "whose host name was not found"
    elif any(isinstance(e, ProxyError) for e in causes):
        what = "which answered, but did not connect it to the server"
    elif any(isinstance(e, ConnectTimeout) for e in causes):
        what = "which did not take the connection in time"
    else:
        what = "where nothing answered"
    return f"{via}, {what}: {_proxy_check(proxy, route)}"


def _tls_through(error: ssl.SSLError, proxy: _Proxy, route: Route) -> str:
    """What a TLS handshake that failed through `proxy` with `error` means, after "it was sent
    through the proxy …,". Plain HTTP came from the proxy itself when its URL is https://, which
    the client speaks TLS to first; else from within the tunnel, where it may be the proxy's own
    block page: base_url is told to begin with http:// only when the user wrote it, since the key
    would go in clear. A certificate refused for its signer is the one a proxy re-signing TLS
    gives; one refused for another fault is told as without a proxy."""
    remote = _predefined_remote(route)
    host = urlsplit(route.base_url).hostname or ""
    if isinstance(error, ssl.SSLCertVerificationError):
        if remote or signer_unknown(error):
            return (
                "and the TLS certificate that came back through it was refused, as when a proxy re-signs "
                f"TLS: {trust_ca('that proxy')}"
            )
        return f"and {certificate_said(error, 'the TLS certificate that came back through it', host)}"
    if not plain_http(error):
        return (
            f"and the TLS handshake through it failed ({openssl_reason(error)}): {_proxy_check(proxy, route)}"
        )
    if proxy.shown.startswith("https://"):
        where = "that variable's URL" if proxy.variable is not None else "the proxy's URL"
        return f"which did not answer in TLS: if it serves plain HTTP (most proxies do), begin {where} with http://"
    blocked = f"{_proxy_check(proxy, route)}, or ask the proxy's admin to let {host} through"
    if remote:
        return f"and what came back through it was plain HTTP, not TLS, as a proxy's block page is: {blocked}"
    return (
        "and what came back through it was plain HTTP, not TLS: a proxy's block page (then "
        f"{blocked}), or a server past it serving plain HTTP (then begin base_url with http://, not https://)"
    )


def _proxy_check(proxy: _Proxy, route: Route) -> str:
    """What to check of a proxy that failed a request: its variable, or a way round it."""
    check = "that variable" if proxy.variable is not None else "them"
    return f"check {check}, or add {urlsplit(route.base_url).hostname} to NO_PROXY"


@dataclass(frozen=True)
class _Proxy:
    shown: str  # its URL as scheme://host:port, and "(its login not shown)" when it holds one
    variable: str | None  # `$HTTPS_PROXY`, …; None when the system's settings name it


def _proxy_of(base_url: str) -> _Proxy | None:
    """The proxy the HTTP client sends a request to `base_url` through; None when it goes
    straight to the server. The client's own lookup, made from the environment the daemon was
    started in: its proxies (a lowercase variable before an uppercase one, ALL_PROXY for any
    scheme), less NO_PROXY's hosts, the most specific pattern first."""
    from httpx2 import URL

    try:  # the client's own lookup lives in a private module: a client that moved it loses the hint
        from httpx2._utils import URLPattern, get_environment_proxies
    except ImportError:
        return None

    url = URL(base_url)
    proxies = {URLPattern(key): proxy for key, proxy in get_environment_proxies().items()}
    # Sorted as the client sorts its mounts, the first that matches is the one it uses.
    pattern = next((pattern for pattern in sorted(proxies) if pattern.matches(url)), None)
    proxy = proxies[pattern] if pattern is not None else None
    if pattern is None or proxy is None:
        return None
    parsed = URL(proxy)
    scheme = pattern.scheme or "all"
    # `getproxies`, which the client asks, reads the lowercase variable first.
    names = (f"{scheme}_proxy", f"{scheme.upper()}_PROXY")
    variable = next((f"${name}" for name in names if os.environ.get(name)), None)
    login = " (its login not shown)" if parsed.userinfo else ""
    return _Proxy(f"{parsed.scheme}://{parsed.netloc.decode('ascii')}{login}", variable)


def _unanswered(exc: BaseException, route: Route) -> str | None:
    """What happened to a request that brought no whole answer, and what to do, by the error the
    SDK's `APIConnectionError` ("Connection error.", or its `APITimeoutError`'s "Request timed
    out.") was raised from: a server that did answer is not to be started, and a user who set no
    base_url is not told to check it (`_predefined_remote`). None for what is none of these (the
    SDK wraps any error of the request so): its own words say it."""
    from httpx2 import ConnectError, ConnectTimeout, ReadError, RemoteProtocolError, TimeoutException

    predefined_remote = _predefined_remote(route)
    causes = list(_causes(exc))
    if (tls := next((e for e in causes if isinstance(e, ssl.SSLError)), None)) is not None:
        return tls_said(tls, predefined_remote, urlsplit(route.base_url).hostname or "")
    network = "check the network"
    hints: list[tuple[tuple[type[BaseException], ...], str]] = [
        (
            (socket.gaierror,),
            f"its host name was not found: {network}"
            if predefined_remote
            else "its host name was not found: check the host in base_url, and the network",
        ),
        (
            (RemoteProtocolError, ReadError),
            "a server answered there, but broke its answer off (it closed the connection before "
            "the answer was whole, or sent what is not HTTP): try again, or see that server's log",
        ),
        (
            (ConnectError,),
            f"nothing answered there: {network}, or choose another model (remem settings model)"
            if predefined_remote
            else "nothing answered there: start the provider's server, or choose another model "
            "(remem settings model)",
        ),
        (
            (ConnectTimeout,),  # what drops the connection unanswered: a firewall, a host that is off
            f"nothing took the connection in time: {network}"
            if predefined_remote
            else "nothing took the connection in time: check the host and port in base_url, and the network",
        ),
        (
            (TimeoutException,),
            "it did not answer one request within the HTTP client's own wait: try again later, or choose "
            "another model (remem settings model)",
        ),
    ]
    return next((hint for kinds, hint in hints if any(isinstance(e, kinds) for e in causes)), None)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then what it was raised from or while handling, to the first: httpcore raises its
    error while handling the socket's (an `ssl.SSLError`, a `socket.gaierror`), not from it."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


async def _ask(client: AsyncOpenAI, route: Route, messages: list[dict[str, Any]]) -> object:
    """The provider's answer, as the SDK parsed it: not checked, since the SDK does not check it."""
    try:
        return await client.chat.completions.create(
            # The SDK types messages as TypedDicts; raw dicts keep provider fields it does not know.
            model=route.model,
            messages=cast(Any, messages),
            tools=cast(Any, [TOOL]),
            max_tokens=route.max_tokens,
        )
    except ValueError as exc:  # a 200 whose JSON body does not parse: the SDK lets json's error out
        why = "the answer is not valid JSON"
        raise BadAnswer(f"{why} ({_bounded(redact(str(exc)), 200)})", why) from None


def _completion(response: object) -> ChatCompletion:
    """The answer, once it is a chat completion with a first message; else `BadAnswer` saying
    what it is instead."""
    from openai.types.chat import ChatCompletion, ChatCompletionMessage

    if isinstance(response, str):  # the SDK hands back a body that is not JSON as text
        start = _bounded(redact(" ".join(response[:_REDACTED_CHARS].split())), 80)
        why = "the answer is text, not a chat completion"
        raise BadAnswer(f"{why} (it begins {start!r})", why)
    if not isinstance(response, ChatCompletion):
        raise BadAnswer(f"the answer is a JSON {type(response).__name__}, not a chat completion object")
    if not isinstance(response.choices, list) or not response.choices:
        raise BadAnswer("the answer holds no choices")
    message = getattr(response.choices[0], "message", None)
    if not isinstance(message, ChatCompletionMessage):
        raise BadAnswer("the answer's first choice holds no message")
    _check_message(message)
    return response


def _check_message(message: ChatCompletionMessage) -> None:
    """`BadAnswer` unless the fields the loop reads are as the API defines them: the SDK builds
    its models from any JSON without checking it."""
    for field in ("content", "reasoning_content", "refusal"):  # DeepSeek's reasoning kept as extra
        if not isinstance(getattr(message, field, None), (str, type(None))):
            raise BadAnswer(f"the answer's {field} is not text")
    calls = message.tool_calls
    if calls is not None and not isinstance(calls, list):
        raise BadAnswer("the answer's tool_calls is not a list")
    if calls is not None and len(calls) > MAX_TOOL_CALLS:
        raise BadAnswer(
            f"the answer holds {len(calls)} tool calls; a consolidation step may hold at most "
            f"{MAX_TOOL_CALLS}, and a proposal is one call"
        )
    for call in calls or []:
        if not isinstance(call, BaseModel):
            raise BadAnswer("a tool call in the answer is not an object")
        # A call without a `type` is taken as a function call, as some servers send them; one of
        # another type would be left unanswered in the history, which the API refuses.
        kind = getattr(call, "type", None)
        if kind is not None and kind != "function":
            named = _identifier(kind)
            raise BadAnswer(
                f"a tool call in the answer is of type {named or 'other'!r}; the one tool is a function"
            )
        if not _is_function_call(call):
            raise BadAnswer("a function tool call in the answer has no string id, name or arguments")
    if (size := _answer_bytes(message)) > ANSWER_MAX_BYTES:
        raise BadAnswer(
            f"the answer is {size} bytes of text and tool arguments; a consolidation step may be at "
            f"most {size_text(ANSWER_MAX_BYTES)}, far more than any valid proposal holds"
        )


def _answer_bytes(message: ChatCompletionMessage) -> int:
    """The bytes of an answer's texts and tool arguments, in UTF-8."""
    texts = [message.content, getattr(message, "reasoning_content", None)]
    texts += [getattr(getattr(c, "function", None), "arguments", None) for c in message.tool_calls or []]
    return sum(len(t.encode("utf-8", "surrogatepass")) for t in texts if isinstance(t, str))


def logged_bytes(*values: object) -> int:
    """The bytes `values` take in a worker-log line, encoded as the log's writer encodes a line
    (`json_line`), a few bytes more: a control character takes 6 bytes there, a quote or a line
    break 2, and once a lone surrogate is in the line, each character past ASCII 6 or 12."""
    return len(json_line({"values": values}))


def _recordable(what: str, *values: object) -> None:
    """`BadAnswer` unless the worker-log line recording `values` can be read back (a log with a
    longer line is unreadable as a whole: listed as an error, and settling no crash)."""
    size = logged_bytes(*values)
    if size > LINE_ROOM_BYTES:
        raise BadAnswer(
            f"{what} would take {size} bytes in one line of the worker session, escaped as JSON "
            "(a control character takes 6 bytes); remem reads session log lines back only up to "
            f"{size_text(SESSION_LINE_MAX_BYTES)}, and a step it cannot read back settles no crash"
        )


def _is_function_call(call: BaseModel) -> bool:
    function = getattr(call, "function", None)
    fields = (
        getattr(call, "id", None),
        getattr(function, "name", None),
        getattr(function, "arguments", None),
    )
    return all(isinstance(f, str) for f in fields)


def _usage(usage: object) -> Usage | None:
    """The tokens a step counted, when the answer counts them as the API defines: only the
    worker session records them, so counts of another shape are unknown, not a failure."""
    prompt, completion = (
        _count(getattr(usage, "prompt_tokens", None)),
        _count(getattr(usage, "completion_tokens", None)),
    )
    return Usage(prompt, completion) if prompt is not None and completion is not None else None


def _count(value: object) -> int | None:
    """`value` if it can count tokens: an int (not a bool, which Python counts as one), from 0
    to below `_TOKENS_MAX`; the SDK passes on whatever number the provider sent."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < _TOKENS_MAX:
        return value
    return None


def _answer(
    calls: list[Any], ranges: list[EvidenceRange], frozen: Frozen,
    checked: dict[tuple[str, str], tuple[Plan | None, str]],
) -> tuple[list[ToolExchange], Plan | None]:  # fmt: skip
    """The tool's answers to one step's calls, up to an accepted final proposal, if any. A call
    the attempt checked already (a model repeating itself) is answered as it was, not planned
    again against the whole frozen memory: `checked` holds the attempt's answers."""
    exchanges = []
    for call in calls:
        key = (call.function.name, call.function.arguments)
        if key not in checked:
            checked[key] = _check(*key, ranges, frozen)
        plan, result = checked[key]
        exchanges.append(
            ToolExchange(call.id, call.function.name, call.function.arguments, result, plan is None)
        )
        if plan is not None and result == ACCEPTED:
            return exchanges, plan
    return exchanges, None


def _check(name: str, arguments: str, ranges: list[EvidenceRange], frozen: Frozen) -> tuple[Plan | None, str]:
    """The tool's answer to one call, and the plan when the proposal is valid."""
    if name != TOOL_NAME:
        return None, f"rejected: there is no tool `{name}`; use `{TOOL_NAME}`"
    try:
        proposal = parse_arguments(arguments)
        plan = plan_proposal(proposal, ranges, frozen)
    except ProposalRejected as exc:
        return None, "rejected:\n" + "\n".join(f"- {p}" for p in exc.problems)
    return plan, ACCEPTED if proposal.final else _DRAFT


_DRAFT = "valid draft; send it again with `final: true` when it is complete"


def _as_sent_back(message: ChatCompletionMessage) -> dict[str, Any]:
    """The answer as it goes back into the history: raw, but each tool call typed `function`
    (`_check_message` took one without a type as one), since the API refuses a call without it."""
    raw = message.model_dump(exclude_none=True)
    for call in raw.get("tool_calls") or []:
        if isinstance(call, dict):
            call.setdefault("type", "function")
    return raw


def _blocks(raw: dict[str, Any], calls: list[Any], refusal: object = None) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reasoning := raw.get("reasoning_content"):
        blocks.append({"type": "reasoning", "text": reasoning})
    if text := raw.get("content"):
        blocks.append({"type": "text", "text": text})
    if isinstance(refusal, str) and refusal:  # what the model said instead of answering
        blocks.append({"type": "text", "text": refusal})
    blocks += [
        {"type": "tool-call", "id": c.id, "name": c.function.name, "arguments": c.function.arguments}
        for c in calls
    ]
    return blocks or [{"type": "text", "text": ""}]


# A provider's error `type` or `code`, or a finish reason, as an identifier; other text is not
# one, and is left out (it could quote anything).
_IDENTIFIER = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
_CHAIN = 3  # the exceptions of an error's chain said, the error's own first
_SAID_CHARS = 300  # what the user is told of each exception's message
# What of a message is redacted before it is cut to `_SAID_CHARS`: a provider may quote a whole
# request, and a cut before redaction could leave part of a credential it would have masked.
_REDACTED_CHARS = 4000


def _identifier(value: object) -> str | None:
    return value if isinstance(value, str) and _IDENTIFIER.fullmatch(value) else None


def _chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < _CHAIN:
        chain.append(current)
        current = current.__cause__
    return chain


def _identify(exc: BaseException) -> str:
    """A provider's error without any of its text, for the logs: the class of each exception of
    its chain, the HTTP status, and the error's `type` and `code` as the provider named them."""
    parts = [" <- ".join(_once(type(e).__name__ for e in _chain(exc)))]
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        parts.append(f"HTTP {status}")
    for field in ("type", "code"):
        if (value := _identifier(getattr(exc, field, None))) is not None:
            parts.append(f"{field} {value}")
    return redact(", ".join(parts))


def _describe(exc: BaseException) -> str:
    """A provider's error for the receipt and the user: what `_identify` says, then what each
    exception of its chain said (the provider's own `message` when its error body has one),
    redacted, then cut to `_SAID_CHARS`."""
    said = _once(text for text in map(_said, _chain(exc)) if text)
    # Not a colon: `code invalid_api_key: …` would read as an assignment, and be masked as one.
    return _identify(exc) + (" — " + " <- ".join(said) if said else "")


def _once(items: Iterable[str]) -> list[str]:
    """`items` without a repeat of the one before: httpx wraps an error in one of the same name
    and words, which said twice reads as two failures."""
    kept: list[str] = []
    for item in items:
        if not kept or kept[-1] != item:
            kept.append(item)
    return kept


def _said(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    text = (
        message if isinstance(message, str) and message.strip() else str(getattr(exc, "message", "") or exc)
    )
    return _bounded(redact(" ".join(text[:_REDACTED_CHARS].split())), _SAID_CHARS)


def _bounded(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"

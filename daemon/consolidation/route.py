"""The model route of a consolidation: provider, model, limits and the API key to use.

The key comes from the provider's environment variable, else from `credentials.yml` (which must
be private to the user); a provider that names no variable is sent no key of the user's, and
`credentials.yml` is not read for it. The route records which it was. A missing key is reported,
naming the variable, before any session is read or frozen. `store_api_key` writes a key into
`credentials.yml` (mode 0600, replaced atomically under a lock), for the editor's "Enter API
Key…"; a `credentials.yml` linked into the home is read through its link (the mode checked is
its target's) but never written (decision 0375). A key goes in an HTTP header, which holds
printable ASCII only: one with any other character (a line break pasted with it, a typographic
dash) is refused when stored, and said wherever it was found when a route would use it, by the
character and its position, never the key.
"""

from __future__ import annotations

import base64
import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from .. import credentials, safe_yaml
from ..faults import faultpoint
from ..fsutil import refused_as_unwritable, remove_stale_temps_of, replace_durably, write_temp
from ..home import Home, HomeUnusable
from ..locks import file_lock
from ..protocol.rpc import NO_API_KEY
from ..safe_open import open_linked, read_capped, refused, standing_at
from ..settings import Settings, choose_with_settings, model_to_choose
from ..swap import discard

if TYPE_CHECKING:
    from openai import AsyncOpenAI


_SHAPE = "providers: {name: {api_key: ...}}"  # what credentials.yml holds, said in errors
# The variable scripts/demo gives its scripted model's per-run key in (scripts/demo_model.py): a
# route whose key it is, unset, is a demo home's after the demo, whose model no key brings back.
DEMO_KEY_ENV = "REMEM_DEMO_MODEL_KEY"


class RouteError(Exception):
    """The configured route cannot be used; the message says what to set."""


class _ProviderCredentials(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    api_key: str


class Credentials(BaseModel):
    """`credentials.yml`: `providers: {<name>: {api_key: ...}}`."""

    model_config = ConfigDict(extra="forbid", strict=True)
    providers: dict[str, _ProviderCredentials] = {}


@dataclass(frozen=True)
class Route:
    provider: str
    model: str
    base_url: str
    api_key: str
    max_tokens: int
    # The setting `max_tokens` came from: the provider's output limit when it is the lower, so
    # an answer cut off there is not said to need a larger `consolidation.max_tokens`.
    max_tokens_setting: str
    timeout_seconds: float
    max_input_bytes: int
    debug: bool
    # Where `api_key` came from, for what to check when the provider refuses it (never the key):
    # the variable `key_env` names, else credentials.yml (`key_stored`). With no `key_env` the
    # provider names no api_key_env, and no key of the user's is sent: credentials.yml is unread.
    key_env: str | None = None
    key_stored: bool = False

    @property
    def shown_url(self) -> str:
        """The base_url as remem reports it (receipts, notes, logs): without a login it may hold."""
        return credentials.mask_userinfo(self.base_url)

    def __repr__(self) -> str:  # the key must never reach a log or a traceback
        return f"Route(provider={self.provider!r}, model={self.model!r}, base_url={self.shown_url!r})"


class InvalidBaseUrl(ValueError):
    """The route's base_url does not parse as a URL; the message says why (redacted)."""


def open_client(route: Route, **options: Any) -> AsyncOpenAI:
    """The SDK's client for `route`, with `options`; `InvalidBaseUrl` when its base_url does not
    parse (the SDK's HTTP client parses it here, not when it is first asked) or names no
    http(s) scheme (that the client finds only when it asks, and says as nothing answering)."""
    from httpx2 import InvalidURL
    from openai import AsyncOpenAI  # imported when asked: the SDK is slow to import

    scheme, separator, _ = route.base_url.partition("://")
    scheme = scheme if separator else ""
    if scheme.lower() not in ("http", "https"):
        raise InvalidBaseUrl(
            "it must begin with http:// or https://" + (f", not {scheme}://" if scheme else "")
        )
    try:
        return AsyncOpenAI(base_url=route.base_url, api_key=route.api_key, **options)
    except InvalidURL as exc:
        raise InvalidBaseUrl(credentials.redact(str(exc))) from None


def resolve_route(home: Home, settings: Settings, *, listing: bool = False) -> Route:
    """The route `settings` choose; RouteError saying what to set when there is none. `listing`:
    the route only lists the provider's models, so the model need not be chosen yet."""
    config = settings.consolidation
    provider = settings.all_providers()[config.provider]  # parse_settings checked that it exists
    limit = provider.max_output_tokens
    capped = limit is not None and limit < config.max_tokens
    _remember_login(provider.base_url)
    # A missing model is said before a missing key: the editor offers what fixes the problem
    # said, and choosing the model then says the key is missing (decision 0493).
    if not listing and settings.unchosen is not None:
        raise RouteError(
            model_to_choose(config.provider, choose_with_settings(config.provider), settings.unchosen)
        )
    env = provider.api_key_env
    api_key, stored = _api_key(home, config.provider, env)
    return Route(
        provider=config.provider,
        model=config.model,
        base_url=provider.base_url,
        api_key=api_key,
        max_tokens=limit if capped and limit is not None else config.max_tokens,
        max_tokens_setting=f"providers.{config.provider}.max_output_tokens"
        if capped
        else "consolidation.max_tokens",
        timeout_seconds=config.timeout_seconds,
        max_input_bytes=config.max_input_bytes,
        debug=config.debug,
        key_env=env,
        key_stored=stored,
    )


# The name of a query parameter a credential is given in: it holds one of these words (`key`,
# `api-key`, `subscription-key`, `access_token`, `client_secret`, `auth`, Azure's SAS `sig`, AWS's
# `X-Amz-Signature`) or is Azure Functions' `code` (decision 0413).
_CREDENTIAL_PARAMETER = re.compile(r"(?i)key|token|secret|pass|pwd|auth|sig|credential|\Acode\Z")


def _remember_login(base_url: str) -> None:
    """A login in the base_url is sent as HTTP Basic auth (the HTTP client's rule, in place of
    the key); a server's error may echo its password, or the header's base64 of `user:password`,
    which no pattern knows: redaction must know both exactly. So must it a key in the query (a
    gateway's): a server's error may echo the path the SDK built (decision 0413). Only the value
    of a parameter named as a credential's, or without a name (`?<key>`), is remembered: until
    the process ends, as a key is, and `?api-version=2024-02-01` would mask the date meanwhile."""
    try:
        parts = urlsplit(base_url)
        user, password = parts.username, parts.password
    except ValueError:  # no URL: `open_client` says so
        return
    for name, _, value in credentials.query_parameters(parts.query):
        if value and (not name or _CREDENTIAL_PARAMETER.search(unquote(name))):
            for said in {value, unquote(value)}:
                credentials.remember(said)  # too short a value is not remembered: it would mask words
    if password is not None:
        user, password = unquote(user or ""), unquote(password)
        credentials.remember(password)
        credentials.remember(base64.b64encode(f"{user}:{password}".encode()).decode("ascii"))


def _api_key(home: Home, provider: str, env: str | None) -> tuple[str, bool]:
    """The key to send, and whether it is credentials.yml's."""
    key, stored = _configured_key(home, provider, env)
    credentials.remember(key)  # a provider's error may echo it: redaction must know it exactly
    return key, stored


def _configured_key(home: Home, provider: str, env: str | None) -> tuple[str, bool]:
    if env is None:
        return "unused", False  # a local server (ollama) takes any key, but the client needs one
    given = os.environ.get(env)
    if key := (given or "").strip():
        return _sendable(
            key, f"the API key in ${env}", f"set {env} to the key as the provider shows it"
        ), False
    stored = read_credentials(home).providers.get(provider)
    if stored is not None and (key := stored.api_key.strip()):
        where = f"the API key at providers.{provider}.api_key in {home.credentials_file}"
        return _sendable(key, where, "correct it there, or enter the key again"), True
    if env == DEMO_KEY_ENV:  # set while the demo runs; asked for after it, it cannot help
        raise RouteError(
            f"`{provider}` is remem's scripted demo model, which serves only while scripts/demo runs: "
            "choose a model of yours with `remem settings model --provider P --model M`, "
            "or run scripts/demo again"
        )
    # A variable exported empty (`export KEY=`) is no unset one: "set it" would read as done.
    fix = (
        f"{env} is set but empty; set it to the key"
        if given is not None
        else f"set the environment variable {env}"
    )
    raise RouteError(
        f"{NO_API_KEY} `{provider}`: {fix}, or add "
        f"`providers: {{{provider}: {{api_key: ...}}}}` to {home.credentials_file} (mode 0600)"
    )


def _sendable(key: str, where: str, fix: str) -> str:
    """`key`, or RouteError when it cannot be sent: the HTTP client would fail on it only when
    asked, as an answer that is not JSON or as a server that does not answer (said as down)."""
    problem = _unsendable(key)
    if problem is not None:
        raise RouteError(f"{where} cannot be sent: {problem}; {fix}")
    return key


def _unsendable(key: str) -> str | None:
    """Why `key` cannot go in a request header, None when it can. The character is named by its
    code point and its position (from 1): the key itself must never reach a message or a log."""
    for position, char in enumerate(key, 1):
        if not " " <= char <= "~":
            said = _described(char)
            return f"character {position} of it is {said}, and an API key is printable ASCII only"
    return None


def _described(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # how Python reads a byte of the environment that is not UTF-8
        return f"the byte 0x{code - 0xDC00:02X}, not UTF-8"
    name = "a control character" if char.isascii() else unicodedata.name(char, "not ASCII")
    return f"U+{code:04X} ({name})"  # its name, not the glyph: a zero-width space shows nothing


def read_credentials(home: Home) -> Credentials:
    """The keys in `credentials.yml`, none when there is no file. Opened as
    `safe_open.open_linked` opens it: through the user's link (decision 0375), never waiting on
    a FIFO, which would hold the consolidation (and a daemon thread) for good. Anything but a
    regular file there is a RouteError naming it; the mode checked is that of what was opened."""
    path = home.credentials_file
    try:
        fd = open_linked(path)
    except FileNotFoundError:
        return Credentials()
    except OSError as exc:
        if not refused(exc):
            raise
        raise RouteError(
            f"{path} is {standing_at(path, through_link=True)}: replace it with a regular file holding "
            f"{_SHAPE} (mode 0600), or remove it"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o077:
            raise RouteError(f"{path} is readable by other users; run `chmod 600 {path}` first")
        raw = read_capped(handle, safe_yaml.MAX_BYTES)
    if raw is None:  # never a few keys: not read whole, nor parsed
        raise RouteError(f"{path} is over {safe_yaml.MAX_BYTES // 1024} KiB; expected {_SHAPE}")
    try:
        return Credentials.model_validate(safe_yaml.load(raw) or {})
    except (yaml.YAMLError, ValidationError) as exc:
        # The problem's location only: echoing the file could print a key.
        where = (
            ", ".join(".".join(map(str, e["loc"])) for e in exc.errors())
            if isinstance(exc, ValidationError)
            else "YAML syntax"
        )
        raise RouteError(f"{path} is not valid (at {where}); expected {_SHAPE}") from None


def store_api_key(home: Home, provider: str, api_key: str) -> None:
    """Set `provider`'s key in `credentials.yml`, keeping the other providers' keys.

    A `credentials.yml` that is a symbolic link is read through it, but never written: the
    replace would put a regular file in place of the user's link, and writing through it would
    write outside the home. HomeUnusable names the link, its target and the key to set there."""
    change = f"set providers.{provider}.api_key"  # the key's name, never its value
    api_key = api_key.strip()
    problem = "it is blank" if not api_key else _unsendable(api_key)
    if problem is not None:  # refused now: once stored, every consolidation would fail on it
        raise RouteError(f"the API key given for `{provider}` was not stored: {problem}; enter it again")
    with file_lock(home.locks / "credentials.lock"):
        remove_stale_temps_of(home.credentials_file)  # never settings.yml's, in flight
        home.refuse_linked_write(home.credentials_file, change)
        current = read_credentials(home)  # refuses a file other users can read
        providers = {name: {"api_key": c.api_key} for name, c in current.providers.items()}
        providers[provider] = {"api_key": api_key}
        data = yaml.safe_dump({"providers": providers}, sort_keys=True).encode("utf-8")
        with refused_as_unwritable(home.root):  # a full disk: no temp is left, the file as it was
            temp = write_temp(home.credentials_file, data)  # created 0600
        faultpoint("credentials.after-temp-write")
        try:  # again, as late as can be: a link made meanwhile would be replaced
            home.refuse_linked_write(home.credentials_file, change)
        except HomeUnusable:
            discard(temp)
            raise
        replace_durably(temp, home.credentials_file)

"""`settings.yml`: the user's settings, parsed strictly and updated only by compare-and-swap.

Errors name the key and the line, because a settings file is edited by hand and "invalid
settings" alone leaves the user guessing. An update sets its keys in the user's own text,
comments and layout kept (`settings_edit`), or where it cannot, rewrites only the keys the user
set (plus the changed ones). A settings.yml linked into the home is read through its link, but
an update of it is refused (decision 0375). Anything there but a regular file (a folder, a
FIFO) is one more problem of the file, never waited on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError

from . import safe_yaml, settings_edit
from .fsutil import remove_stale_temps_of
from .home import Home
from .limits import SESSION_LINE_MAX_BYTES
from .locks import file_lock
from .memory.diagnostics import TextPositions
from .protocol.rpc import MAX_ANSWER_BYTES
from .protocol.sessions import SessionFormat
from .safe_open import open_linked, read_capped, refused
from .swap import ABSENT, Displaced, digest, publish
from .validation import escaped, one_line

log = logging.getLogger("remem.settings")


class _Strict(BaseModel):
    # Frozen: one parsed snapshot is shared by every reader of the same bytes (parse_settings).
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _absolute_root(path: str) -> str:
    """A root must name one folder whoever reads it: the daemon runs from another folder than
    the command that started it, so a relative path would be read from there (decision 0362);
    a NUL cannot be in a file's name, so a root holding one names none."""
    shown = one_line(path)  # a line break in it would forge a line of the daemon's log
    if "\0" in path:
        raise ValueError(
            f"'{shown}' holds a NUL character, which no file name can; write the folder's path without it"
        )
    if not (path.startswith("~") or os.path.isabs(path)):
        raise ValueError(
            f"'{shown}' is a relative path, which the daemon would look for from its own working "
            f"folder, not this file's; write the absolute path (/…/{shown}) or one starting with ~"
        )
    return path


RootPath = Annotated[str, Field(min_length=1), AfterValidator(_absolute_root)]


class SessionRootSetting(_Strict):
    """A `sessions.roots` entry that names its format (a plain string is auto-detected)."""

    path: RootPath
    format: SessionFormat | None = None


def _root_kind(value: Any) -> str | None:
    if isinstance(value, str):
        return _AS_PATH
    return _AS_MAPPING if isinstance(value, (dict, SessionRootSetting)) else None


# Tagged, so a wrong entry is told what a root is once, not how each alternative type failed;
# the tags are not keys a file can hold, and `_describe` leaves them out of the key it names.
_AS_PATH, _AS_MAPPING = "<a path>", "<a mapping>"
RootEntry = Annotated[
    Annotated[RootPath, Tag(_AS_PATH)] | Annotated[SessionRootSetting, Tag(_AS_MAPPING)],
    Discriminator(
        _root_kind,
        custom_error_type="root_entry",
        custom_error_message="a root is a folder path, or a mapping of path (and format)",
    ),
]


class SessionsSettings(_Strict):
    roots: list[RootEntry] = Field(default_factory=list)
    idle_seconds: int = Field(default=120, gt=0)


class DaemonSettings(_Strict):
    idle_minutes: float = Field(default=60, gt=0)
    # polling: for network file systems, where inotify sees no changes made by other machines
    watch: Literal["auto", "polling"] = "auto"
    # The largest answer sent to a client, which buffers it whole; a larger one is refused.
    max_answer_bytes: int = Field(default=MAX_ANSWER_BYTES, ge=1 << 20, le=MAX_ANSWER_BYTES)


class ProviderSettings(_Strict):
    base_url: str
    api_key_env: str | None = None
    # The models' own output limit when you know it; requests ask for no more than this.
    max_output_tokens: int | None = Field(default=None, gt=0)


def check_model_id(model: str) -> str:
    """A model id is sent as the provider names it: a line break or control character in it is a
    paste gone wrong, which the provider would only refuse later, after the review had begun."""
    if not model.strip() or not model.isprintable():
        shown = _ANY_CHAR.sub(lambda m: m.group() if m.group().isprintable() else escaped(m), model)
        raise ValueError(
            f"'{shown}' is no model id: write it on one line, as the provider names it "
            "(such as gpt-4o), without invisible or control characters"
        )
    return model


_ANY_CHAR = re.compile(".", re.DOTALL)


class ConsolidationSettings(_Strict):
    provider: str = "deepseek"
    model: Annotated[str, AfterValidator(check_model_id)] = "deepseek-v4-flash"
    max_tokens: int = Field(default=8192, gt=0)
    timeout_seconds: float = Field(default=120.0, gt=0)
    # The review input is recorded whole in one line of its worker session, which is read back
    # to settle a crash: one larger than the reader's line cap could never be recorded.
    max_input_bytes: int = Field(default=131072, gt=0, le=SESSION_LINE_MAX_BYTES)
    debug: bool = False


DEFAULT_PROVIDER: str = ConsolidationSettings.model_fields["provider"].default


def default_model(provider: str) -> str | None:
    """`provider`'s default model: `consolidation.model`'s default for the provider it is a model
    of (deepseek); remem knows no other provider's."""
    fields = ConsolidationSettings.model_fields
    return fields["model"].default if provider == DEFAULT_PROVIDER else None


def no_default_model(provider: str, kept: str | None = None, kept_from: str | None = None) -> str:
    """That a route to `provider` has no model unless one is chosen for it; `kept`: the model
    chosen for another provider, `kept_from`, which a command without `--model` would send."""
    said = (
        f"{provider} has no default model"
        if provider in MODEL_TO_CHOOSE
        else f"remem knows no default model of {provider}"
    )
    return said + (f", and `{kept}` is the one chosen for {kept_from}" if kept is not None else "")


def unserved_model(provider: str, base_url: str, model: str, where: str | None = None) -> str | None:
    """Why `provider` at `base_url` cannot be sent `model`, None when it may: deepseek's default
    model, to a predefined provider that does not serve it (`DEFAULT_UNSERVED`) at the URL remem
    gives it. A base_url of the user's own is a proxy, which may serve it under that id (decision
    0506, amended); `where` the model was read."""
    if (
        provider not in DEFAULT_UNSERVED
        or not at_predefined_url(provider, base_url)
        or model != default_model(DEFAULT_PROVIDER)
    ):
        return None
    read = f", {where}," if where is not None else ""
    return f"`{model}`{read} is {DEFAULT_PROVIDER}'s default model, which {provider} does not serve"


def at_predefined_url(provider: str, base_url: str) -> bool:
    """Whether `base_url` is the one remem gives the predefined `provider`: the user set none of
    their own, which would be a proxy or a server of theirs, serving what they chose to."""
    predefined = PREDEFINED_PROVIDERS.get(provider)
    return predefined is not None and _url_key(predefined.base_url) == _url_key(base_url)


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _url_key(url: str) -> tuple[str, str, int | None, str] | None:
    """`url` as the server it asks sees it: the provider's own URL written with capitals, its
    default port or a trailing slash is still its own, not a proxy. None for no valid URL."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or ""), port or _DEFAULT_PORTS.get(scheme), parts.path.rstrip("/")


def model_to_choose(provider: str, how: str, why: str | None = None) -> str:
    """The one sentence of a route to `provider` with no model of its own to send (decisions
    0493, 0500): `why` (`no_default_model` unless given), then `how` to choose one where it is
    said: the daemon names `remem settings model` (`choose_with_settings`), a command `--model`."""
    return f"{why or no_default_model(provider)}: {how}, the model id as {provider} names it"


def choose_with_settings(provider: str) -> str:
    """`how` of `model_to_choose` where no command line is at hand: the daemon's, the editor's."""
    return f"choose one with `remem settings model --provider {provider} --model …`"


GIVE_MODEL = "give --model"  # `how` of `model_to_choose` in a command that takes `--model`


PREDEFINED_PROVIDERS = {
    "deepseek": ProviderSettings(base_url="https://api.deepseek.com", api_key_env="DEEPSEEK_API_KEY"),
    "openai": ProviderSettings(base_url="https://api.openai.com/v1", api_key_env="OPENAI_API_KEY"),
    "ollama": ProviderSettings(base_url="http://127.0.0.1:11434/v1"),
    # Anthropic's OpenAI SDK compatibility layer (decision 0493): chat completions only.
    "anthropic": ProviderSettings(base_url="https://api.anthropic.com/v1", api_key_env="ANTHROPIC_API_KEY"),
}
# The predefined providers that have no default model, said as such (`no_default_model`); of the
# others remem knows none.
MODEL_TO_CHOOSE = frozenset({"anthropic"})
# The predefined providers that serve only their own vendor's models, so never
# `consolidation.model`'s default: that default in a route to one is no model chosen, and a choice
# of it is refused (`unserved_model`, decision 0506). Only at the URL remem gives them: one the
# user set is a proxy (OpenRouter, a gateway), which may serve it. Not ollama, which serves open
# models by the names its library gives them, nor a provider of the user's own: either may.
DEFAULT_UNSERVED = MODEL_TO_CHOOSE | {"openai"}


class Settings(_Strict):
    sessions: SessionsSettings = Field(default_factory=SessionsSettings)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    consolidation: ConsolidationSettings = Field(default_factory=ConsolidationSettings)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)

    def all_providers(self) -> dict[str, ProviderSettings]:
        return {**PREDEFINED_PROVIDERS, **self.providers}

    @property
    def chosen_model(self) -> str | None:
        """`consolidation.model`, or None when the settings choose no model of the route's
        provider (`unchosen` says why)."""
        return None if self.unchosen is not None else self.consolidation.model

    @property
    def unchosen(self) -> str | None:
        """Why the settings choose no model of the route's provider, None when they do. A provider
        whose default model remem does not know (every one but deepseek) has none chosen while the
        key is unset: its default is deepseek's model (decision 0500, amended). One that does not
        serve that model (`unserved_model`) has none chosen while the key holds it either: an
        older remem wrote it there, keeping the model when the provider changed (decision 0506)."""
        config = self.consolidation
        if default_model(config.provider) is not None:
            return None
        if "model" not in config.model_fields_set:
            return no_default_model(config.provider)
        base_url = self.all_providers()[config.provider].base_url  # parse_settings checked it exists
        unserved = unserved_model(
            config.provider, base_url, config.model, "the consolidation.model of settings.yml"
        )
        if unserved is None:
            return None
        chosen = f"`remem settings model --provider {config.provider}`"
        # Or chosen for a base_url of the user's own since taken out: that choice may stand again.
        wrote = (
            f"an older remem wrote it there when {chosen} was given no --model, or it was chosen "
            f"for a base_url of providers.{config.provider} no longer set"
        )
        return f"{unserved} ({wrote}), so no model is chosen for {config.provider}"

    def key_variables(self) -> frozenset[str]:
        """The environment variables that hold a provider's API key, as these settings name them."""
        return frozenset(p.api_key_env for p in self.all_providers().values() if p.api_key_env)


class SettingsError(Exception):
    """settings.yml cannot be used; each problem names the key and its line."""

    def __init__(self, problems: list[str], lines: list[int] | None = None) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems
        self.lines = lines or [1] * len(problems)  # the 1-based line of each problem


def invalid_settings(problems: list[str]) -> str:
    """How a session request refuses an invalid settings.yml, with or without the daemon."""
    return "settings.yml is invalid: " + "\n".join(problems)


class SettingsConflict(Exception):
    def __init__(self, revision: str) -> None:
        super().__init__(f"settings.yml changed meanwhile (now {revision}); re-read and retry")
        self.revision = revision


def read_settings_file(path: Path) -> bytes | None:
    """The bytes of the settings file at `path`, None when there is none. Opened as
    `safe_open.open_linked` opens a file, never waiting on a FIFO, but through a link (the
    user's dotfiles, decision 0375). Anything but a regular file, or one that cannot be opened,
    is a SettingsError naming it, as an invalid file is: a FIFO would hold a daemon thread for
    good, and a folder would make every session request an internal error (decision 0370). A
    file past what is parsed is one too, never read whole."""
    try:
        fd = open_linked(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        said = exc.strerror if refused(exc) else f"cannot be read: {exc.strerror}"
        raise SettingsError([f"{path}: {said}"]) from None
    with os.fdopen(fd, "rb") as handle:
        raw = read_capped(handle, safe_yaml.MAX_BYTES)  # the daemon reads it for every request
    if raw is None:
        raise SettingsError([f"{path}:1: over {safe_yaml.MAX_BYTES // 1024} KiB, more than remem parses"])
    return raw


def revision_of(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw).hexdigest()


@lru_cache(maxsize=8)
def parse_settings(raw: bytes, source: str = "settings.yml") -> Settings:
    """Parse and validate; raise SettingsError naming every bad key and its line.

    No cause is chained: a printed ValidationError shows the values it was given. The daemon
    reads the file again for every listing and request that depends on it, and YAML with
    validation costs 0.4-0.7 ms against the read's microseconds, so the (frozen) result of the
    same bytes is kept; an error is never kept, so it is raised afresh each time.
    """
    try:
        text = raw.decode("utf-8")
        node, data = safe_yaml.parse(text)
    except UnicodeDecodeError as exc:
        raise SettingsError([f"{source}: not valid UTF-8 at byte {exc.start}"]) from None
    except safe_yaml.AliasRefused as exc:
        refused = "YAML aliases are not allowed in settings.yml; write the value out in full"
        raise SettingsError([f"{source}:{exc.line}: {refused}"], [exc.line]) from None
    except yaml.reader.ReaderError as exc:  # a character YAML refuses (terminal colours pasted in)
        line = TextPositions(text).position(safe_yaml.refused_at(text, exc)).line + 1  # a lone CR too
        refused = f"character U+{exc.character:04X} is not allowed in YAML; delete it"
        raise SettingsError([f"{source}:{line}: {refused}"], [line]) from None
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise SettingsError([f"{source}:{line}: not valid YAML: {exc.problem}"], [line]) from None
    if node is None:
        data = {}
    if twice := _twice(node):  # PyYAML keeps the last of them, and says nothing
        problems = [f"{source}:{line}: {one_line(key)}: appears twice; keep one" for key, line in twice]
        raise SettingsError(problems, [line for _, line in twice])
    if not isinstance(data, dict):
        raise SettingsError([f"{source}:1: settings must be a mapping of sections (sessions, daemon, ...)"])
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        lines = [_line_of(node, [str(part) for part in error["loc"]]) for error in errors]
        problems = [_describe(error, line, source) for error, line in zip(errors, lines, strict=True)]
        raise SettingsError(problems, lines) from None
    provider = settings.consolidation.provider
    if provider not in settings.all_providers():
        line = _line_of(node, ["consolidation", "provider"])
        known = ", ".join(sorted(settings.all_providers()))
        raise SettingsError(
            [
                f"{source}:{line}: consolidation.provider: `{one_line(provider)}` is not defined; use "
                f"one of {one_line(known)} or add it under providers"
            ],
            [line],
        )
    return settings


def _describe(error: Mapping[str, Any], line: int, source: str) -> str:
    location = [str(part) for part in error["loc"] if part not in (_AS_PATH, _AS_MAPPING)]
    key = one_line(".".join(location)) or "(top level)"  # keys are the file's: one may hold a line break
    message = error["msg"].removeprefix("Value error, ")
    if error["type"] == "extra_forbidden":
        message = "unknown key; check its spelling against docs/cli.md#settings"
    elif error["type"] == "model_type":  # pydantic would name its own class
        held = "nothing (its keys may all be commented out)" if error.get("input") is None else "one value"
        message = (
            f"is a section, its keys indented below it, but holds {held}; to keep its defaults, remove it"
        )
    return f"{source}:{line}: {key}: {message}"


def _twice(root: yaml.Node | None) -> list[tuple[str, int]]:
    """Each key a mapping holds again, by its dotted location, with the line it appears again on.
    Walked with a stack of its own: YAML nests deeper than Python recurses."""
    found: list[tuple[str, int]] = []
    stack: list[tuple[yaml.Node | None, tuple[str, ...]]] = [(root, ())]
    while stack:
        node, where = stack.pop()
        if isinstance(node, yaml.SequenceNode):
            stack += [(item, (*where, str(n))) for n, item in enumerate(node.value)]
        elif isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                name = str(key.value)
                if name in seen:
                    found.append((".".join((*where, name)), key.start_mark.line + 1))
                seen.add(name)
                stack.append((value, (*where, name)))
    return sorted(found, key=lambda twice: twice[1])


def _line_of(node: yaml.Node | None, location: list[str]) -> int:
    """1-based line of the deepest node on `location` that exists in the file."""
    line = 1
    for part in location:
        if isinstance(node, yaml.SequenceNode) and part.isdigit() and int(part) < len(node.value):
            node = node.value[int(part)]  # a list's entry (a session root): its own line
            line = node.start_mark.line + 1
            continue
        if not isinstance(node, yaml.MappingNode):
            break
        match = next(((k, v) for k, v in node.value if str(k.value) == part), None)
        if match is None:
            break
        line = match[0].start_mark.line + 1
        node = match[1]
    return line


class SettingsStore:
    """Reads `settings.yml` and updates it with CAS on the file's revision. Only an update makes
    the home's folders: a read of a home never made (`remem eval`'s, `settings model`'s) leaves
    none."""

    def __init__(self, home: Home) -> None:
        self.home = home

    def read(self) -> tuple[Settings, str]:
        raw = self._raw()
        return parse_settings(raw, str(self.home.settings_file)), revision_of(raw)

    def update(self, expected_revision: str, changes: Mapping[str, Any]) -> str:
        """Set dotted keys (`consolidation.model`) if the file is still at `expected_revision`.

        A `settings.yml` that is a symbolic link (a dotfiles repository's) is read through it but
        never written: HomeUnusable, naming the link, its target and the keys to set there."""
        said = (f"{k}: {json.dumps(v, ensure_ascii=False, default=str)}" for k, v in changes.items())
        change = "set " + ", ".join(said)  # as YAML would hold them
        with file_lock(self.home.ensure_layout().locks / "settings.lock"):
            remove_stale_temps_of(self.home.settings_file)  # never credentials.yml's, in flight
            self.home.refuse_linked_write(self.home.settings_file, change)
            existing = self._existing()
            raw = existing or b""
            new_raw, unkept = _planned(raw, str(self.home.settings_file), expected_revision, changes)
            self._publish(new_raw, ABSENT if existing is None else digest(existing), change)
            if unkept is not None:  # the daemon's log; a command says it itself (`rewritten_whole`)
                log.info(
                    "%s rewritten whole, its comments and layout not kept: %s",
                    self.home.settings_file,
                    unkept,
                )
            return revision_of(new_raw)

    def _publish(self, new_raw: bytes, expected: str, change: str) -> None:
        """Replace the file only if it still holds `expected`: a person saving it by hand since
        it was read (the lock binds remem's writers only) keeps their save, and remem answers
        with a conflict, as the memory store does (`swap.py`). A link put there meanwhile is
        displaced no more than a save is (the exchange is undone), and said as a link: a retry
        would meet it again."""
        points = {"written": "settings.after-temp-write", "exchanged": "settings.after-exchange"}
        try:
            publish(self.home.settings_file, new_raw, expected, **points)
        except Displaced:
            self.home.refuse_linked_write(self.home.settings_file, change)
            raise SettingsConflict(revision_of(self._raw())) from None

    def _raw(self) -> bytes:
        return self._existing() or b""

    def _existing(self) -> bytes | None:
        return read_settings_file(self.home.settings_file)


def model_changes(provider: str, model: str) -> dict[str, str]:
    """The keys a choice of model sets (`remem settings model`, the editor's model picker)."""
    return {"consolidation.provider": provider, "consolidation.model": model}


def rewritten_whole(raw: bytes, expected_revision: str, changes: Mapping[str, Any]) -> str | None:
    """Why `SettingsStore.update(expected_revision, changes)` of the file holding `raw` rewrites
    it whole, its comments and layout lost; None when it sets them in the user's text, or
    refuses the update as stale. The same bytes are updated alike: a command that sent its
    change to the daemon says it thus of the bytes it read."""
    try:
        return _planned(raw, "settings.yml", expected_revision, changes)[1]
    except SettingsConflict:
        return None


def _planned(
    raw: bytes, source: str, expected_revision: str, changes: Mapping[str, Any]
) -> tuple[bytes, str | None]:
    """`_updated`, once `raw` is at `expected_revision` (else SettingsConflict): what an update
    writes, decided here alone."""
    if revision_of(raw) != expected_revision:
        raise SettingsConflict(revision_of(raw))
    return _updated(raw, source, changes)


def _updated(raw: bytes, source: str, changes: Mapping[str, Any]) -> tuple[bytes, str | None]:
    """The file with `changes` set: edited in the user's text where that reads back as exactly
    the settings a rewrite of the set keys gives (comments kept), else that rewrite, and why."""
    data = parse_settings(raw, source).model_dump(exclude_unset=True)
    for dotted, value in changes.items():
        _assign(data, dotted.split("."), value)
    rewritten = yaml.safe_dump(data, sort_keys=False, allow_unicode=True).encode("utf-8")
    intended = parse_settings(rewritten, "the updated settings").model_dump(exclude_unset=True)
    try:
        in_place = settings_edit.edited(raw.decode("utf-8"), changes).encode("utf-8")
    except settings_edit.Unfollowed as exc:
        return rewritten, str(exc)
    if _reads_as(in_place, intended):
        return in_place, None
    return rewritten, "the edited text would not have read back as the settings chosen"


def _reads_as(raw: bytes, intended: dict[str, Any]) -> bool:
    try:
        return parse_settings(raw).model_dump(exclude_unset=True) == intended
    except SettingsError:
        return False


def _assign(data: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        child = data.setdefault(part, {})
        if not isinstance(child, dict):
            raise SettingsError([f"`{part}` is not a section, cannot set `{'.'.join(path)}`"])
        data = child
    data[path[-1]] = value

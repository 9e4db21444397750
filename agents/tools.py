"""The four tools agents get, with closed argument schemas generated from the wire models.

None of them takes a path, a workspace, a cwd or a revision: the host decides the workspace and
keeps the revisions. `memory_update` reuses the daemon's own change models, so the schema an
agent sees and the one the daemon checks cannot drift apart; record fields are plain strings
on purpose, so every problem of a record comes from the store's validator in one answer.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Annotated, Any, NoReturn

import mcp_types as types
from pydantic import BaseModel, Field, ValidationError, ValidatorFunctionWrapHandler, WrapValidator
from pydantic_core import ErrorDetails, PydanticKnownError

from remem.daemon.memory.record import BODY_MAX_BYTES, GLOBAL_MAX_BYTES, TYPE_MEANINGS
from remem.daemon.protocol.memory import STRICT
from remem.daemon.protocol.rpc import MAX_AGENT_CHANGES, AgentChange
from remem.daemon.validation import one_line

CONTEXT = "memory_context"
READ = "memory_read"
UPDATE = "memory_update"
HISTORY = "memory_history"
HISTORY_DEFAULT = 10
HISTORY_MAX = 50
SHOWN_CHARS = 60  # of a name, URI or key the client sent, quoted back in an error
SHOWN_MESSAGE_CHARS = 300  # of pydantic's message, which may quote what the client sent
SHOWN_PROBLEMS = 20  # of a call's arguments: each extra key is one


class _Closed(BaseModel):
    """Every tool's arguments: no key the tool does not take, and each value of the JSON type its
    schema names, never coerced to it (`"yes"` is no boolean, `true` no `limit`): the daemon's
    own params are read so (decision 0475), and an agent told which argument is wrong and what
    it sent corrects its call (decision 0485). An integer's one exception is `WholeNumber`'s."""

    model_config = STRICT


# An integer's JSON text as an encoder writes it, exactly: no sign but `-`, no leading zero, no
# `-0` (JavaScript's and Python's encoders write 0), no space around it.
_INTEGER_TEXT = re.compile(r"0|-?[1-9][0-9]*")


def _whole(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """An integer as the integer it is, however the harness passed it on (decision 0485): a
    number with a zero fraction (`3.0`), which JSON Schema, the tool's declared schema, counts as
    an integer; and a string holding an integer's text (`"3"`), which Claude Code sends for the
    model's number in many of its builds."""
    if isinstance(value, float) and value.is_integer():
        return handler(int(value))
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value):
        try:
            number = int(value)
        except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
            _refuse_beyond_bounds(value, handler)
        return handler(number)
    return handler(value)


def _refuse_beyond_bounds(text: str, handler: ValidatorFunctionWrapHandler) -> NoReturn:
    """Refuse an integer's text too long to convert as the bound its number passes, naming the
    text sent: it is beyond every bound an argument has, as is the same text cut to what converts."""
    try:
        handler(int(text[: sys.get_int_max_str_digits()]))
    except ValidationError as exc:
        error = exc.errors()[0]
        raise PydanticKnownError(error["type"], error.get("ctx")) from None  # type: ignore[arg-type]
    raise PydanticKnownError("int_type")  # an argument without bounds: the cut number is not served


WholeNumber = Annotated[int, WrapValidator(_whole)]


class ContextArguments(_Closed):
    pass


class ReadArguments(_Closed):
    name: str = Field(min_length=1, max_length=200, description="The record's name, as the index shows it.")


class HistoryArguments(_Closed):
    limit: WholeNumber = Field(
        default=HISTORY_DEFAULT, ge=1, le=HISTORY_MAX, description="How many recent changes to list."
    )


class UpdateArguments(_Closed):
    changes: list[AgentChange] = Field(
        min_length=1,
        max_length=MAX_AGENT_CHANGES,
        description="Either one replace-global change, or put and delete changes for this project.",
    )


_TYPES = ", ".join(f"`{kind.value}` ({meaning})" for kind, meaning in TYPE_MEANINGS.items())

_UPDATE_DESCRIPTION = (
    "Change remem memory. Send either a single `replace-global` change (`content`: the whole new "
    "text of the user's Global memory, at most "
    f"{GLOBAL_MAX_BYTES // 1024} KiB) or a batch of `put` changes (create or replace a record: "
    "`record` with `name`, `description`, `type`, `content`) and `delete` changes (`name`) for this "
    "project's workspace. A name is lowercase letters, digits and hyphens; the description is one "
    f"line; the type is one of {_TYPES}; the content is the record's Markdown body, at most "
    f"{BODY_MAX_BYTES // 1024} KiB. The change commits only if the memory it changes is still as "
    "you last saw it: as memory_context showed it, or as your own last memory_update left it; "
    "otherwise nothing is written and you are told to read it again. So a later memory_update of "
    "yours overwrites an earlier one without a word: a `replace-global` replaces all of Global, the "
    "text your earlier `replace-global` wrote included, and a `put` replaces the whole record, your "
    "earlier `put` of that name included. Write each change on top of your earlier ones, never from "
    "the memory_context you read before them. Returns the scope changed and the number of changes. "
    "Global memory is never replaced by empty text: only the user can erase all of it."
)


# Claude Code and Codex give the model a tool's structured content, not its text, once it
# declares an output schema: what the agent must read (the outcome, each credential warning)
# is in it too.
UPDATE_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "scope": {"type": "string", "enum": ["global", "workspace"]},
        "changes": {"type": "integer", "minimum": 0},
        "message": {"type": "string"},
        "warnings": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["scope", "changes", "message", "warnings"],
    "additionalProperties": False,
}


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with every `$ref` replaced by its definition: some clients cannot follow refs.

    The OpenAPI `discriminator` goes too: its mapping names the definitions, and `action`'s
    `const` in each branch already tells them apart.
    """
    definitions = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return resolve(definitions[node["$ref"].rsplit("/", 1)[-1]])
            return {
                key: resolve(value) for key, value in node.items() if key not in ("$defs", "discriminator")
            }
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    return resolve(schema)


def _tool(
    name: str,
    title: str,
    description: str,
    arguments: type[BaseModel],
    output: dict[str, Any] | None = None,
    **hints: bool,
) -> types.Tool:
    return types.Tool(
        name=name,
        title=title,
        description=description,
        input_schema=inline_refs(arguments.model_json_schema()),
        output_schema=output,
        annotations=types.ToolAnnotations(title=title, open_world_hint=False, **hints),
    )


TOOLS: list[types.Tool] = [
    _tool(
        CONTEXT,
        "Load memory",
        "Load remem's long-term memory for this project: the user's Global memory and the index of "
        "this project's memory records. Call it at the start of a task, and again whenever "
        "memory_update says memory changed. Takes no arguments.",
        ContextArguments,
        read_only_hint=True,
    ),
    _tool(
        READ,
        "Read a memory record",
        "Read one memory record of this project in full (front matter and body), by the name the "
        "memory_context index shows.",
        ReadArguments,
        read_only_hint=True,
    ),
    _tool(
        HISTORY,
        "Recent memory changes",
        "List the most recent changes to this project's memory and to Global memory, newest first: "
        "when, by whom (you, another agent, the user editing by hand, a consolidation, a revert) and "
        "which records were added, changed or removed. Use it to notice that the user just corrected "
        "a record; read the record with memory_read for its current text.",
        HistoryArguments,
        read_only_hint=True,
    ),
    _tool(
        UPDATE,
        "Update memory",
        _UPDATE_DESCRIPTION,
        UpdateArguments,
        UPDATE_OUTPUT_SCHEMA,
        read_only_hint=False,
        destructive_hint=True,
        idempotent_hint=False,
    ),
]


def argument_problems(tool: str, exc: ValidationError) -> str:
    """Every problem of a call's arguments, one a line, for the agent (at most `SHOWN_PROBLEMS`:
    each extra key the client sent is one): where, what it should be, and what was sent there."""
    lines = []
    errors = exc.errors()
    for error in errors[:SHOWN_PROBLEMS]:
        hint = ""
        if error["type"] == "extra_forbidden" and len(error["loc"]) == 1:
            hint = " (remem chooses the project and keeps track of what you read: no path, cwd or revision)"
        elif error["type"] not in _NOT_OF_THE_VALUE:
            hint = f"; got {given(error['input'])}"
        if error["type"] in _JSON_TYPES:  # said in JSON's terms, which the schema is in
            error["msg"] = f"should be {_JSON_TYPES[error['type']]}"
        lines.append(f"- {problem(error, 'arguments')}{hint}")
    if len(errors) > SHOWN_PROBLEMS:
        lines.append(f"- and {len(errors) - SHOWN_PROBLEMS} more problem(s)")
    return f"{tool}'s arguments are invalid; nothing was done:\n" + "\n".join(lines)


# Problems whose input is not the value sent where they point: a key missing or extra, and a
# change's `action` (the tag), which pydantic's message quotes itself.
_NOT_OF_THE_VALUE = frozenset({"missing", "extra_forbidden", "union_tag_invalid", "union_tag_not_found"})


# The type a problem of pydantic's says the value should be of, as JSON names it.
_JSON_TYPES = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "list_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}


def given(value: Any) -> str:
    """A value the agent sent, as a problem names it: its JSON type, and a string's, a number's or
    a literal's value, on one line and cut short."""
    if isinstance(value, str):
        return f"the string {shown(json.dumps(value, ensure_ascii=False))}"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return f"the number {shown(json.dumps(value))}"
    if isinstance(value, list):
        return f"an array of {len(value)} item(s)"
    return "an object"


def problem(error: ErrorDetails, whole: str, depth: int = 0) -> str:
    """One problem pydantic found, as "where: what"; `whole` names the value validated itself, and
    the first `depth` parts of the location are not in it (a union's member). A key the client
    sent (in "where") or a value pydantic quotes (a union's tag, in "what") is shown as `shown`
    shows it: one line, cut short."""
    where = ".".join(shown(str(part)) for part in error["loc"][depth:]) or whole
    what = error["msg"]
    if error["type"] == "union_tag_invalid" and "ctx" in error:  # quotes the tag sent (`action`)
        tag = str(error["ctx"]["tag"])
        what = what.replace(tag, shown(tag), 1)
    return f"{where}: {shown(what, SHOWN_MESSAGE_CHARS)}"


def shown(sent: str, limit: int = SHOWN_CHARS) -> str:
    """Something the client sent (a name, a URI, a key), as an error quotes it back: one line, and
    cut after `limit` characters (it may be megabytes)."""
    return one_line(sent if len(sent) <= limit else f"{sent[:limit]}…")

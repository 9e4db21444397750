"""What the editor sends to remem's requests and commands: one JSON object, checked by a model.

Every custom request and server command takes exactly one JSON object. Its pydantic model
rejects unknown keys and wrong types, and the error names the request or command, each field
that is wrong and why, and the shape it expects, so the caller can fix the call.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError
from pygls.exceptions import JsonRpcInvalidParams

from remem.daemon.protocol.rpc import _must_be_absolute

M = TypeVar("M", bound=BaseModel)


class Strict(BaseModel):
    # Strict types too: coerced, `"yes"` would confirm a branch and `"2"` would name a turn.
    model_config = ConfigDict(extra="forbid", strict=True)


def _absolute(value: str) -> str:
    # A relative path would be resolved against the server's folder, not the editor's.
    if not os.path.isabs(value):
        raise ValueError("must be an absolute path (a workspace folder)")
    # The daemon's own check of a cwd (a NUL): what it would refuse is refused here, naming the
    # field, where the daemon's params failed in this process as an internal error.
    _must_be_absolute(value)
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:  # JSON's "\ud800": no path holds it, and it failed encoded
            raise ValueError(
                "holds a lone UTF-16 surrogate (\\ud800 without its pair), which no path can"
            ) from None
    return value


AbsolutePath = Annotated[str, AfterValidator(_absolute)]


class Cwd(Strict):
    """A workspace named by its project folder, as the editor knows it."""

    cwd: AbsolutePath


def parse(model: type[M], value: Any, what: str) -> M:
    """`value` as `model`, or an invalid-params error saying what is wrong with it."""
    try:
        return model.model_validate({} if value is None else value)
    except ValidationError as exc:
        raise JsonRpcInvalidParams(f"{what}: {_problems(exc)}; expected {shape(model)}") from None


def only_argument(arguments: Sequence[Any], model: type[M], command: str) -> M:
    """A command's single argument as `model`."""
    if len(arguments) != 1:
        raise JsonRpcInvalidParams(
            f"{command} takes exactly one argument, an object {shape(model)}; got {len(arguments)}"
        )
    return parse(model, arguments[0], command)


def shape(model: type[BaseModel]) -> str:
    """`{a, b?}`: the keys `model` takes, optional ones marked."""
    keys = [name if spec.is_required() else f"{name}?" for name, spec in model.model_fields.items()]
    return "{" + ", ".join(keys) + "}"


def _problems(exc: ValidationError) -> str:
    found = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
        found.append(f"`{where}`: {message}" if where else message)
    return "; ".join(found)

"""Every model a request's params hold is strict (decision 0475): a params model added later
without `rpc._Params` would coerce `"yes"` to true again.

The daemon validates the decoded JSON in python mode, where strict takes a JSON value only for a
type that JSON has: a string for an Enum, a `Path`, a datetime, a UUID, bytes or a Decimal, an
array for a tuple or a set, are refused there (JSON mode would convert them). So every params
field is of a shape JSON carries as it is, an allowlist held against pydantic itself."""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import types
import typing
import uuid
from collections.abc import Iterator
from pathlib import PurePath
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from remem.daemon.protocol.rpc import METHODS, HistoryLogParams


def _held(annotation: Any) -> Iterator[Any]:
    """`annotation` and every type inside it (a list's items, a union's members, ...)."""
    yield annotation
    for inner in typing.get_args(annotation):
        yield from _held(inner)


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> Iterator[type[BaseModel]]:
    if model in seen:
        return
    seen.add(model)
    yield model
    for field in model.model_fields.values():
        for held in _held(field.annotation):
            if isinstance(held, type) and issubclass(held, BaseModel):
                yield from _models(held, seen)


def _params_models() -> list[type[BaseModel]]:
    seen: set[type[BaseModel]] = set()
    return [model for method in METHODS.values() for model in _models(method.params, seen)]


def test_every_model_of_a_request_s_params_is_strict() -> None:
    models = _params_models()
    assert len(models) > 25, "the walk must reach the params models, or the test holds vacuously"
    assert sorted(m.__name__ for m in models if m.model_config.get("strict") is not True) == []


# The types strict python mode takes a decoded JSON value for as it is.
_JSON_TYPES: tuple[Any, ...] = (str, int, float, bool, type(None), list, dict, Any)
_JSON_LITERALS = (str, int, bool, type(None))


def _json_carries(annotation: Any) -> bool:
    """Whether a field of `annotation` takes the value JSON has for it in strict python mode: a
    JSON type, a list of or a dict by string of such, a Literal of JSON values, a model (its own
    fields are walked), a union of such, each perhaps Annotated. Anything else is refused."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        return _json_carries(args[0])
    if origin in (typing.Union, types.UnionType, list):
        return all(_json_carries(arg) for arg in args)
    if origin is dict:
        return args[0] is str and _json_carries(args[1])
    if origin is Literal:
        return all(type(value) in _JSON_LITERALS for value in args)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return True
    return any(annotation is carried for carried in _JSON_TYPES)


def _not_carried(models: list[type[BaseModel]]) -> list[str]:
    return sorted(
        f"{model.__name__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        if not _json_carries(field.annotation)
    )


def test_every_params_field_is_of_a_shape_json_carries() -> None:
    assert _not_carried(_params_models()) == []


class _Kind(enum.Enum):
    ONE = "one"


class _Inner(BaseModel):
    model_config = ConfigDict(strict=True)
    name: str


# A shape each, with the JSON a client would send for it: whether strict python mode takes it is
# pydantic's answer, which the allowlist must give too.
SHAPES: dict[str, tuple[Any, str]] = {
    "text": (str, '"a"'),
    "count": (int, "3"),
    "ratio": (float, "2"),
    "flag": (bool, "true"),
    "nothing": (type(None), "null"),
    "names": (list[str], '["a"]'),
    "bare": (list, "[1]"),
    "by_name": (dict[str, int], '{"a": 1}'),
    "kind": (Literal["put", 1, None], '"put"'),
    "inner": (_Inner, '{"name": "a"}'),
    "maybe": (str | None, "null"),
    "either": (typing.Optional[list[_Inner]], '[{"name": "a"}]'),  # noqa: UP045 - the other spelling
    "bounded": (Annotated[int, Field(ge=1)], "3"),
    "nested": (list[Annotated[str, Field(min_length=1)]], '["a"]'),
    "anything": (Any, '{"a": [1]}'),
    "pair": (tuple[str, str], '["a", "b"]'),
    "many": (tuple[str, ...], '["a"]'),
    "unique": (set[str], '["a"]'),
    "frozen": (frozenset[str], '["a"]'),
    "when": (datetime.datetime, '"2026-01-01T00:00:00Z"'),
    "day": (datetime.date, '"2026-01-01"'),
    "hour": (datetime.time, '"12:00:00"'),
    "span": (datetime.timedelta, '"PT1S"'),
    "id": (uuid.UUID, '"12345678-1234-5678-1234-567812345678"'),
    "raw": (bytes, '"YQ=="'),
    "amount": (decimal.Decimal, '"1.5"'),
    "enum": (_Kind, '"one"'),
    "path": (PurePath, '"/a"'),
    "by_number": (dict[int, str], '{"1": "a"}'),
    "enum_literal": (Literal[_Kind.ONE], '"one"'),
    "optional_when": (datetime.datetime | None, '"2026-01-01T00:00:00Z"'),
    "ids": (list[uuid.UUID], '["12345678-1234-5678-1234-567812345678"]'),
    "bounded_amount": (Annotated[decimal.Decimal, Field(gt=0)], '"1.5"'),
}
_SHAPES = create_model(
    "Shapes",
    __config__=ConfigDict(strict=True),
    **{name: (shape, ...) for name, (shape, _) in SHAPES.items()},
)


@pytest.mark.parametrize("name", SHAPES)
def test_the_allowlist_lets_through_what_strict_python_mode_takes_from_json(name: str) -> None:
    """Each shape is let through exactly when a strict model takes its JSON: a params field of a
    shape refused (a datetime, a tuple, ...) fails the test above."""
    field = _SHAPES.model_fields[name]
    validator = create_model("One", __config__=ConfigDict(strict=True), value=(field.annotation, field))
    try:
        validator.model_validate({"value": json.loads(SHAPES[name][1])})
        taken = True
    except ValidationError:
        taken = False
    assert _json_carries(field.annotation) is taken


def test_a_params_field_json_does_not_carry_is_named() -> None:
    """What the first test says of a params model that gained a datetime and a tuple."""

    class LaterLogParams(HistoryLogParams):
        since: datetime.datetime | None = None
        window: tuple[int, int] = (0, 0)

    assert _not_carried([HistoryLogParams, LaterLogParams]) == [
        "LaterLogParams.since",
        "LaterLogParams.window",
    ]

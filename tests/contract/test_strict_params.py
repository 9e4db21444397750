"""Every model a request's params hold is strict (decision 0475): a params model added later
without `rpc._Params` would coerce `"yes"` to true again.

The daemon validates the decoded JSON in python mode, where strict refuses a string for an Enum
or a Path, which JSON mode would take: no params field may need either."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from enum import Enum
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from remem.daemon.protocol.rpc import METHODS


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


def test_no_params_field_needs_a_type_json_does_not_have() -> None:
    needing = sorted(
        f"{model.__name__}.{name}"
        for model in _params_models()
        for name, field in model.model_fields.items()
        for held in _held(field.annotation)
        if isinstance(held, type) and issubclass(held, (Enum, PurePath))
    )
    assert needing == []

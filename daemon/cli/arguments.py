"""Argument types the commands share: what click refuses before a request is built."""

from __future__ import annotations

from typing import Any

import click


class _NonEmpty(click.ParamType):
    """A string with something in it: an empty id or name would reach the request models,
    whose refusal is a validation traceback rather than a usage error."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not text.strip():
            self.fail("must not be empty", param, ctx)
        return text


NON_EMPTY = _NonEmpty()

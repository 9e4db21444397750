"""The language server's features, declared once: `create_server` registers each in this order.

A feature is a module with `register(server)`, which registers the LSP methods, requests and
commands it serves (each method in exactly one feature: pygls refuses a second) and subscribes
to the daemon link's news. Features import `RememServer` only as the type of what they are
given (`lsp/server.py` imports no feature); what they share is injected into it. Features that
hear the same daemon news hear it in this order: diagnostics are published before the editor
is told memory changed.
"""

from __future__ import annotations

from typing import Protocol

from ..server import RememServer
from . import (
    code_actions,
    code_lens,
    commands,
    completion,
    daemon,
    diagnostics,
    hover,
    links,
    requests,
    symbols,
)


class Feature(Protocol):
    def register(self, server: RememServer) -> None: ...


FEATURES: tuple[Feature, ...] = (
    diagnostics,
    daemon,
    requests,
    commands,
    code_actions,
    code_lens,
    hover,
    links,
    completion,
    symbols,
)

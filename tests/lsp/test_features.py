"""The language server is composed from its declared features: every module of `lsp/features/`
is declared, and every method, request and command it serves is registered by one of them."""

from __future__ import annotations

import pkgutil
from pathlib import Path

from lsprotocol import types

from remem.daemon.home import Home
from remem.lsp import features, ids
from remem.lsp.compose import create_server


def test_every_feature_module_is_declared() -> None:
    modules = {f"{features.__name__}.{m.name}" for m in pkgutil.iter_modules(features.__path__)}
    assert modules == {feature.__name__ for feature in features.FEATURES}  # type: ignore[attr-defined]


def test_every_method_and_command_is_registered_by_a_declared_feature(tmp_path: Path) -> None:
    registered = create_server(Home(tmp_path / "home")).protocol.fm
    handlers = {**registered.features, **registered.commands}
    declared = {feature.__name__ for feature in features.FEATURES}  # type: ignore[attr-defined]
    owners = {name: getattr(handler, "func", handler).__module__ for name, handler in handlers.items()}
    assert {name: owner for name, owner in owners.items() if owner not in declared} == {}
    assert types.TEXT_DOCUMENT_DID_OPEN in owners and ids.CONSOLIDATE in owners  # it sees both kinds

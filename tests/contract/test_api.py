"""`DaemonApi` is the protocol's method table, typed: one method per daemon method, no other."""

from __future__ import annotations

from remem.daemon.protocol import rpc
from remem.daemon.protocol.api import DaemonApi, Endpoint


def test_every_protocol_method_has_exactly_one_api_method() -> None:
    endpoints = {name: e.method.name for name, e in vars(DaemonApi).items() if isinstance(e, Endpoint)}
    # Sorted lists, not sets: a method reached by two api methods shows up twice.
    assert sorted(endpoints.values()) == sorted(rpc.METHODS), endpoints


def test_the_method_table_holds_every_method_the_protocol_defines() -> None:
    defined = {name: m.name for name, m in vars(rpc).items() if isinstance(m, rpc.Method)}
    assert sorted(defined.values()) == sorted(rpc.METHODS), defined
    assert all(rpc.METHODS[m.name] is m for m in vars(rpc).values() if isinstance(m, rpc.Method))

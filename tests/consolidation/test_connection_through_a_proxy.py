"""A request the HTTP client sends through a proxy (HTTP(S)_PROXY, ALL_PROXY in the daemon's
environment, even to 127.0.0.1) and that never reaches the server blames the proxy and its
variable, not base_url nor a server to start; the proxy's login is never written anywhere."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from tests.fake_openai import FakeOpenAI, status

from .conftest import KEY_ENV
from .test_provider_answers import _failed_with

PASSWORD = "PROXYPW-never-shown"


@pytest.fixture(autouse=True)
def _no_proxy_but_the_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine's own proxy variables would decide the route of every request below."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    monkeypatch.setenv(KEY_ENV, "sk-test")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port of 127.0.0.1 bound and never listened on: a connection to it is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def _nowhere_is_found(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """`name` is not found, as a resolver says of a name that does not exist: the test must not
    depend on the machine's DNS."""
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == name:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)


def _nowhere_holds_the_password(home: Home, log: str) -> None:
    assert PASSWORD not in log
    for path in home.root.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), path


def test_a_proxy_whose_host_is_not_found_is_blamed_not_base_url(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _nowhere_is_found(monkeypatch, "no-such-proxy.invalid")
    monkeypatch.setenv("HTTP_PROXY", f"http://user:{PASSWORD}@no-such-proxy.invalid:8080")
    with FakeOpenAI(api_key="sk-test") as fake, caplog.at_level("DEBUG"):
        url = fake.base_url
        error = _failed_with(home, tmp_path, url)
        assert fake.count == 0, "the request went to the proxy, not to the server that runs"
    assert error == (
        f"no whole answer from {url}: it was sent through the proxy "
        "http://no-such-proxy.invalid:8080 (its login not shown) of $HTTP_PROXY, whose host name was not "
        "found: check that variable, or add 127.0.0.1 to NO_PROXY"
    ), error
    _nowhere_holds_the_password(home, caplog.text)


def test_a_proxy_where_nothing_answers_is_blamed_not_the_server(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    """The lowercase variable is the one read when both are set, as the HTTP client reads them."""
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{closed_port}")
    with FakeOpenAI(api_key="sk-test") as fake:
        url = fake.base_url
        error = _failed_with(home, tmp_path, url)
        assert fake.count == 0
    assert error == (
        f"no whole answer from {url}: it was sent through the proxy "
        f"http://127.0.0.1:{closed_port} of $http_proxy, where nothing answered: check that variable, "
        "or add 127.0.0.1 to NO_PROXY"
    ), error


def test_a_proxy_that_does_not_connect_to_an_https_server_is_blamed(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The fake server, as the proxy, answers CONNECT with 501: a proxy that refuses the tunnel."""
    with FakeOpenAI() as proxy, caplog.at_level("DEBUG"):
        origin = proxy.origin
        monkeypatch.setenv("HTTPS_PROXY", origin.replace("http://", f"http://user:{PASSWORD}@"))
        error = _failed_with(home, tmp_path, "https://remem-test.invalid/v1")
    assert error == (
        f"no whole answer from https://remem-test.invalid/v1: it was sent through the proxy {origin} "
        "(its login not shown) of $HTTPS_PROXY, which answered, but did not connect it to the server: "
        "check that variable, or add remem-test.invalid to NO_PROXY"
    ), error
    _nowhere_holds_the_password(home, caplog.text)


def test_all_proxy_is_blamed_unless_no_proxy_names_the_host(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.setenv("ALL_PROXY", f"http://127.0.0.1:{closed_port}")
    with FakeOpenAI(api_key="sk-test") as fake:
        proxied = _failed_with(home, tmp_path / "proxied", fake.base_url)
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        fake.reply(status(400, "straight to the server"))
        straight = _failed_with(home, tmp_path / "straight", fake.base_url)
        assert fake.count == 1, "NO_PROXY sent the second request to the server itself"
    assert f"through the proxy http://127.0.0.1:{closed_port} of $ALL_PROXY, where nothing" in proxied
    assert "proxy" not in straight and "straight to the server" in straight, straight


def test_a_client_whose_proxy_lookup_moved_still_says_what_failed(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The proxy is found by the client's own lookup, in a private module of it: a client that
    moved it costs the hint its proxy part, never the receipt its words."""
    _nowhere_is_found(monkeypatch, "no-such-proxy.invalid")
    monkeypatch.setenv("HTTP_PROXY", "http://no-such-proxy.invalid:8080")
    monkeypatch.setitem(sys.modules, "httpx2._utils", None)  # its import now fails
    with FakeOpenAI(api_key="sk-test") as fake:
        url = fake.base_url
        error = _failed_with(home, tmp_path, url)
    assert error.startswith(f"no whole answer from {url}: its host name was not found"), error

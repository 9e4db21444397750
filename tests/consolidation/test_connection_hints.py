"""A request that brought no whole answer says what to do by what happened there: a server that
did answer (and broke its answer off, or spoke no TLS to https://) is not told to be started,
a host name that is not found is not a server that is down, and a base_url that names no host
is no URL."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from remem.daemon.consolidation.receipts import ReceiptStore
from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import ScriptedHandler, ScriptedServer

from .conftest import KEY_ENV, write_source
from .provider_failures import RawAnswers, failed_with
from .tls_servers import drain, hanging_up_after_the_hello, self_signed, serving

NOTHING_ANSWERED = "nothing answered there"


class _CutHandler(ScriptedHandler):
    """Answers 200 with the headers of a whole chat completion, sends half its body, and closes."""

    fake_name = "CutAnswers"

    def do_POST(self) -> None:  # noqa: N802 (stdlib naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._record({})
        body = b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices": []}'
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: len(body) // 2])
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)


class CutAnswers(ScriptedServer):
    handler = _CutHandler


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")


def test_an_answer_broken_off_mid_body_says_the_server_broke_it_off(home: Home, tmp_path: Path) -> None:
    with CutAnswers() as cut:
        url = f"{cut.origin}/v1"
        error = failed_with(home, tmp_path, url)
        assert cut.count >= 1, "a server did answer"
    assert NOTHING_ANSWERED not in error, error
    assert error == (
        f"no whole answer from {url}: a server answered there, but broke its answer off "
        "(it closed the connection before the answer was whole, or sent what is not HTTP): try "
        "again, or see that server's log"
    ), error


def test_https_to_a_plain_http_server_says_to_use_http(home: Home, tmp_path: Path) -> None:
    with RawAnswers("application/json", b"{}") as plain:
        url = plain.origin.replace("http://", "https://") + "/v1"
        error = failed_with(home, tmp_path, url)
    assert NOTHING_ANSWERED not in error, error
    assert error == (
        f"no whole answer from {url}: a server answered there, but not in TLS: if it serves plain "
        "HTTP (local servers mostly do), begin base_url with http://, not https://"
    ), error


@contextlib.contextmanager
def _self_signed_tls_server(folder: Path) -> Iterator[tuple[str, Path]]:
    """An https:// URL whose server offers a certificate of its own making for 127.0.0.1, which no
    client trusts; the handshake is all it does. The URL, and the certificate."""
    cert, key = self_signed(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    with serving(lambda conn: context.wrap_socket(conn, server_side=True).close()) as port:
        yield f"https://127.0.0.1:{port}/v1", cert


def _wanting_a_client_certificate(cert: Path, key: Path) -> Callable[[socket.socket], None]:
    """A server that takes TLS only from a client with a certificate its CA signed: OpenSSL ends
    the handshake of one without, with an alert."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cert)

    def answer(conn: socket.socket) -> None:
        tls = context.wrap_socket(conn, server_side=True, do_handshake_on_connect=False)
        with contextlib.suppress(ssl.SSLError):  # the client sent no certificate
            tls.do_handshake()
        with socket.socket(fileno=tls.detach()) as raw:
            raw.settimeout(5)
            drain(raw)

    return answer


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_server_wanting_a_client_certificate_is_not_told_to_drop_tls(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It answered in TLS, and its certificate is trusted: http:// would only send the key in clear."""
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    with serving(_wanting_a_client_certificate(cert, key)) as port:
        url = f"https://127.0.0.1:{port}/v1"
        error = failed_with(home, tmp_path, url)
    said = f"no whole answer from {url}: the TLS handshake failed (OpenSSL's reason: "
    assert error.startswith(said) and "certificate required" in error, error
    assert error.endswith("): check the host and port in base_url, and see that server's log"), error


def test_a_serverhanging_up_after_the_hello_is_not_told_to_drop_tls(home: Home, tmp_path: Path) -> None:
    with serving(hanging_up_after_the_hello) as port:
        url = f"https://127.0.0.1:{port}/v1"
        error = failed_with(home, tmp_path, url)
    said = f"no whole answer from {url}: the TLS handshake failed (OpenSSL's reason: "
    assert error.startswith(said), error
    assert error.endswith("): check the host and port in base_url, and see that server's log"), error
    assert "http://" not in error, error


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_self_signed_certificate_says_to_trust_it_not_to_check_the_host(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """base_url names the host the certificate is made for: only its signer is unknown. The advice
    is what the HTTP client honours: with SSL_CERT_FILE naming the certificate, the handshake
    passes (and the server, which does nothing past it, breaks the answer off)."""
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    with _self_signed_tls_server(tmp_path) as (url, cert):
        error = failed_with(home, tmp_path / "refused", url)
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        trusted = failed_with(home, tmp_path / "trusted", url)
    assert NOTHING_ANSWERED not in error, error
    assert error == (
        f"no whole answer from {url}: its TLS certificate is signed by no CA this machine trusts (a "
        "self-signed certificate, its own CA, or a private CA's): trust that server's CA certificate (add "
        "it to the system's, or set SSL_CERT_FILE to a PEM file holding it and the usual roots), then run "
        "`remem daemon stop`"
    ), error
    assert "TLS" not in trusted and "a server answered there, but broke its answer off" in trusted, trusted


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_certificate_for_another_host_says_to_name_its_host(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The certificate is trusted (SSL_CERT_FILE) but made out to 127.0.0.1, and base_url names
    localhost: the signer is not what to fix."""
    with _self_signed_tls_server(tmp_path) as (url, cert):
        monkeypatch.setenv("SSL_CERT_FILE", str(cert))
        url = url.replace("127.0.0.1", "localhost")
        error = failed_with(home, tmp_path, url)
    assert error == (
        f"no whole answer from {url}: its TLS certificate is made out to another host than localhost, "
        "which base_url names: write in base_url the host name the certificate names"
    ), error


def test_a_host_name_not_found_is_said_so(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lookup is made to fail as a resolver does for a name that does not exist: the test
    must not depend on the machine's DNS."""
    real = socket.getaddrinfo

    def resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "no-such-host.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    url = "http://no-such-host.invalid/v1"
    error = failed_with(home, tmp_path, url)
    assert NOTHING_ANSWERED not in error, error
    assert error == (
        f"no whole answer from {url}: its host name was not found: check the host in base_url, "
        "and the network"
    ), error


@contextlib.contextmanager
def _full_backlog() -> Iterator[str]:
    """A URL whose listener never accepts and whose queue of connections is full: the system
    drops every further one unanswered, as a firewall does, and the client's connect times out."""
    with socket.socket() as listener, contextlib.ExitStack() as held:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        for _ in range(3):  # the queue takes one more than the backlog: more than enough to fill it
            waiting = held.enter_context(socket.socket())
            waiting.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                waiting.connect(("127.0.0.1", port))
        yield f"http://127.0.0.1:{port}/v1"


def test_a_connection_nothing_takes_in_time_says_what_to_check(home: Home, tmp_path: Path) -> None:
    """The SDK's own connect timeout (5 s, each of its tries), not the attempt's, ends it."""
    with _full_backlog() as url:
        error = failed_with(home, tmp_path, url)
    assert error == (
        f"no whole answer from {url}: nothing took the connection in time: check the host and port in "
        "base_url, and the network"
    ), error


@pytest.mark.parametrize("url", ["http:///v1", "http://:8000/v1", "https://user@/v1"])
def test_a_base_url_that_names_no_host_is_no_valid_url(home: Home, tmp_path: Path, url: str) -> None:
    error = failed_with(home, tmp_path, url)
    assert error.startswith(
        "the provider's base_url is not a valid URL (it names no host, as http://127.0.0.1:8000/v1 does)"
    ), error
    assert NOTHING_ANSWERED not in error, error


def test_a_predefined_providers_host_not_found_says_check_the_network_in_words(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The user set no base_url (the default route): what to check is the network, and the
    receipt says it in words, without the exception classes; the log keeps their chain."""
    from remem.daemon.settings import PREDEFINED_PROVIDERS

    real = socket.getaddrinfo
    url = PREDEFINED_PROVIDERS["deepseek"].base_url
    host = url.split("//")[1]

    def resolve(name: Any, *args: Any, **kwargs: Any) -> Any:
        if name in (host, host.encode()):  # the async client's lookup gives it as bytes
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    root = tmp_path / "dsh-sessions"
    home.ensure_layout()
    home.settings_file.write_text(f"sessions:\n  roots: [{str(root)!r}]\n")
    source = write_source(root, str(tmp_path / "project"))
    with caplog.at_level("INFO", logger="remem.daemon"):
        result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.status is Status.PROVIDER_FAILED
    assert (
        receipt.attempts[0].error
        == f"no whole answer from {url}: its host name was not found: check the network"
    )
    assert "APIConnectionError <- ConnectError" in caplog.text and "Name or service not known" in caplog.text


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_predefined_providers_certificate_refused_without_a_proxy_says_how_to_trust_the_interceptor(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What re-signs TLS on the way (a company's filter, an antivirus) may be set in no proxy
    variable: the predefined provider's host then answers with a certificate no client trusts.
    Here its name leads to a server of the test's, whose certificate is its own; the client
    connects to the port of the URL, so the predefined URL is given that port."""
    from remem.daemon.settings import PREDEFINED_PROVIDERS

    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    deepseek = PREDEFINED_PROVIDERS["deepseek"]
    host = deepseek.base_url.split("//")[1]
    real = socket.getaddrinfo

    def resolve(name: Any, *args: Any, **kwargs: Any) -> Any:
        return real("127.0.0.1" if name in (host, host.encode()) else name, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
    root = tmp_path / "dsh-sessions"
    home.ensure_layout()
    home.settings_file.write_text(f"sessions:\n  roots: [{str(root)!r}]\n")
    source = write_source(root, str(tmp_path / "project"))
    with _self_signed_tls_server(tmp_path) as (intercepting, _):
        url = f"https://{host}:{urlsplit(intercepting).port}"
        monkeypatch.setitem(PREDEFINED_PROVIDERS, "deepseek", deepseek.model_copy(update={"base_url": url}))
        result = asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))
    receipt = ReceiptStore(home).read(result.review)
    assert receipt is not None and receipt.status is Status.PROVIDER_FAILED
    assert receipt.attempts[0].error == (
        f"no whole answer from {url}: its TLS certificate was refused, as when something on the network "
        "intercepts TLS (a company's filter, an antivirus): trust that interceptor's CA certificate (add it "
        "to the system's, or set SSL_CERT_FILE to a PEM file holding it and the usual roots), then run "
        "`remem daemon stop`; else check the network"
    )

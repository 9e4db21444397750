"""A request the HTTP client sends through a proxy (HTTP(S)_PROXY, ALL_PROXY in the daemon's
environment, even to 127.0.0.1) and that never reaches the server blames the proxy and its
variable, not base_url nor a server to start; the proxy's login is never written anywhere."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import Status
from tests.fake_openai import FakeOpenAI, status

from .conftest import KEY_ENV, write_source
from .provider_failures import failed_attempt, failed_with
from .tls_servers import hanging_up_after_the_hello, self_signed, serving

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
        error = failed_with(home, tmp_path, url)
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
        error = failed_with(home, tmp_path, url)
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
        error = failed_with(home, tmp_path, "https://remem-test.invalid/v1")
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
        proxied = failed_with(home, tmp_path / "proxied", fake.base_url)
        monkeypatch.setenv("NO_PROXY", "localhost,127.0.0.1")
        fake.reply(status(400, "straight to the server"))
        straight = failed_with(home, tmp_path / "straight", fake.base_url)
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
        error = failed_with(home, tmp_path, url)
    assert error.startswith(f"no whole answer from {url}: its host name was not found"), error


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@contextlib.contextmanager
def _intercepting_proxy(folder: Path, host: str) -> Iterator[tuple[str, Path]]:
    """An HTTP proxy that opens every CONNECT tunnel and answers the TLS in it itself, with a
    certificate for `host` signed by a CA of its own, as a corporate proxy that inspects TLS
    does; past the TLS, it answers every request 401. Its URL, and its CA certificate."""
    ca, ca_key, leaf, leaf_key = (folder / name for name in ("ca.pem", "ca.key", "leaf.pem", "leaf.key"))
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=Proxy CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
             "-keyout", str(ca_key), "-out", str(ca))  # fmt: skip
    (folder / "leaf.ext").write_text(f"subjectAltName=DNS:{host}\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={host}", "-keyout", str(leaf_key),
             "-out", str(folder / "leaf.csr"))  # fmt: skip
    _openssl("x509", "-req", "-in", str(folder / "leaf.csr"), "-CA", str(ca), "-CAkey", str(ca_key),
             "-CAcreateserial", "-days", "1", "-extfile", str(folder / "leaf.ext"),
             "-out", str(leaf))  # fmt: skip
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(leaf, leaf_key)
    refused = b'{"error": {"message": "no such key", "type": "authentication_error"}}'
    stop = threading.Event()

    def read(conn: socket.socket) -> None:
        """A request whole, its body too: a socket closed with bytes unread resets the connection."""
        asked = b""
        while b"\r\n\r\n" not in asked and (chunk := conn.recv(4096)):
            asked += chunk
        head, _, body = asked.partition(b"\r\n\r\n")
        length = next((int(line.split(b":")[1]) for line in head.lower().split(b"\r\n")
                       if line.startswith(b"content-length:")), 0)  # fmt: skip
        while len(body) < length and (chunk := conn.recv(65536)):
            body += chunk

    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(0.05)  # so that `stop` is seen

        def serve() -> None:
            while not stop.is_set():
                with contextlib.suppress(OSError):  # a client refusing the certificate, too
                    conn, _ = listener.accept()
                    with conn:
                        conn.settimeout(5)
                        read(conn)
                        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        with context.wrap_socket(conn, server_side=True) as tls:
                            read(tls)
                            tls.sendall(
                                b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\n"
                                + f"Content-Length: {len(refused)}\r\nConnection: close\r\n\r\n".encode()
                                + refused
                            )

        server = threading.Thread(target=serve)
        server.start()
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}", ca
        finally:
            stop.set()
            server.join()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_proxy_that_re_signs_tls_says_to_trust_its_certificate_as_the_client_does(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not "nothing answered": the proxy did, with a certificate the client does not trust. The
    advice is what the HTTP client honours: with SSL_CERT_FILE naming the proxy's CA, the
    request goes past the TLS (to the proxy's own 401)."""
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    url = "https://remem-test.invalid/v1"
    with _intercepting_proxy(tmp_path, "remem-test.invalid") as (proxy, ca):
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        refused = failed_with(home, tmp_path / "refused", url)
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))
        trusted = failed_with(home, tmp_path / "trusted", url)
    assert refused == (
        f"no whole answer from {url}: it was sent through the proxy {proxy} of $HTTPS_PROXY, and the TLS "
        "certificate that came back through it was refused, as when a proxy re-signs TLS: trust that "
        "proxy's CA certificate (add it to the system's, or set SSL_CERT_FILE to a PEM file holding it "
        "and the usual roots), then run `remem daemon stop`"
    ), refused
    assert trusted.startswith(f"the provider refused the API key (HTTP 401 unauthorized, asked {url})"), (
        trusted
    )


def test_an_https_proxy_url_to_a_plain_http_proxy_says_to_begin_it_with_http(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake server speaks plain HTTP; $HTTPS_PROXY names it with https://, so the client
    speaks TLS to the proxy itself, which answers, just not in TLS."""
    with FakeOpenAI() as proxy:
        origin = proxy.origin.replace("http://", "https://")
        monkeypatch.setenv("HTTPS_PROXY", origin)
        error = failed_with(home, tmp_path, "https://remem-test.invalid/v1")
    assert error == (
        f"no whole answer from https://remem-test.invalid/v1: it was sent through the proxy {origin} of "
        "$HTTPS_PROXY, which did not answer in TLS: if it serves plain HTTP (most proxies do), begin that "
        "variable's URL with http://"
    ), error


def _tunnel_to_plain_http(conn: socket.socket) -> None:
    """An HTTP proxy that opens every CONNECT tunnel to a server speaking plain HTTP: whatever
    comes through the tunnel is answered 400, as such a server answers a TLS hello."""
    asked = b""
    while b"\r\n\r\n" not in asked and (chunk := conn.recv(4096)):
        asked += chunk
    conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    conn.recv(4096)  # the client's TLS hello
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def test_an_https_base_url_to_a_plain_http_server_past_a_proxy_says_to_begin_it_with_http(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not "nothing answered": the proxy opened the tunnel, and plain HTTP came back through it,
    from the server past it or from the proxy itself (a block page): base_url is the user's, who
    knows whether its server serves plain HTTP."""
    url = "https://remem-test.invalid/v1"
    with serving(_tunnel_to_plain_http) as port:
        proxy = f"http://127.0.0.1:{port}"
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        error = failed_with(home, tmp_path, url)
    assert error == (
        f"no whole answer from {url}: it was sent through the proxy {proxy} of $HTTPS_PROXY, and what came "
        "back through it was plain HTTP, not TLS: a proxy's block page (then check that variable, or add "
        "remem-test.invalid to NO_PROXY, or ask the proxy's admin to let remem-test.invalid through), or a "
        "server past it serving plain HTTP (then begin base_url with http://, not https://)"
    ), error


def test_a_block_page_through_a_proxy_to_a_predefined_provider_never_says_to_drop_tls(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider's own server speaks TLS: plain HTTP in the tunnel is the proxy's (a block
    page), and http:// would send the key in clear."""
    from remem.daemon.settings import PREDEFINED_PROVIDERS

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    url = PREDEFINED_PROVIDERS["openai"].base_url
    root = tmp_path / "dsh-sessions"
    home.ensure_layout()
    home.settings_file.write_text(
        f"consolidation:\n  provider: openai\n  model: gpt-4.1\nsessions:\n  roots: [{str(root)!r}]\n"
    )
    source = write_source(root, str(tmp_path / "project"))
    with serving(_tunnel_to_plain_http) as port:
        proxy = f"http://127.0.0.1:{port}"
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        error, _ = failed_attempt(home, source.id, Status.PROVIDER_FAILED)
    assert error == (
        f"no whole answer from {url}: it was sent through the proxy {proxy} of $HTTPS_PROXY, and what came "
        "back through it was plain HTTP, not TLS, as a proxy's block page is: check that variable, or add "
        "api.openai.com to NO_PROXY, or ask the proxy's admin to let api.openai.com through"
    ), error


def _pump(source: socket.socket, sink: socket.socket) -> None:
    """What `source` sends, to `sink`, until it hangs up; then `sink` is told no more comes."""
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _tunnel_to(port: int) -> Callable[[socket.socket], None]:
    """An HTTP proxy that opens every CONNECT tunnel to `port` of 127.0.0.1, whatever it asks,
    and passes the bytes both ways untouched: the TLS in it is the server's, not re-signed."""

    def answer(conn: socket.socket) -> None:
        asked = b""
        while b"\r\n\r\n" not in asked and (chunk := conn.recv(4096)):
            asked += chunk
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        with socket.create_connection(("127.0.0.1", port)) as server:
            back = threading.Thread(target=_pump, args=(server, conn))
            back.start()
            _pump(conn, server)
            back.join()

    return answer


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl to make a certificate")
def test_a_certificate_for_another_host_through_a_plain_tunnel_names_the_host_not_a_re_signing_proxy(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's certificate is trusted (SSL_CERT_FILE), made out to 127.0.0.1, and base_url
    names another host: trusting a proxy's CA would change nothing."""
    cert, key = self_signed(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    url = "https://llm-gateway.invalid/v1"
    with (
        serving(lambda conn: context.wrap_socket(conn, server_side=True).close()) as server,
        serving(_tunnel_to(server)) as port,
    ):
        proxy = f"http://127.0.0.1:{port}"
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        error = failed_with(home, tmp_path, url)
    assert error == (
        f"no whole answer from {url}: it was sent through the proxy {proxy} of $HTTPS_PROXY, and the TLS "
        "certificate that came back through it is made out to another host than llm-gateway.invalid, which "
        "base_url names: write in base_url the host name the certificate names"
    ), error


def test_a_handshake_ended_through_a_proxy_says_why_and_never_to_drop_tls(
    home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What hung up in the tunnel spoke no plain HTTP: the proxy's route is what to check."""
    url = "https://remem-test.invalid/v1"
    with serving(hanging_up_after_the_hello) as server, serving(_tunnel_to(server)) as port:
        proxy = f"http://127.0.0.1:{port}"
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        error = failed_with(home, tmp_path, url)
    said = f"no whole answer from {url}: it was sent through the proxy {proxy} of $HTTPS_PROXY, and the TLS "
    assert error.startswith(said + "handshake through it failed (OpenSSL's reason: "), error
    assert error.endswith("): check that variable, or add remem-test.invalid to NO_PROXY"), error
    assert "http://," not in error and "begin base_url" not in error, error

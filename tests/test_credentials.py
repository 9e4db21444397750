"""Best-effort credential redaction: each recognised kind is masked, ordinary prose is left alone."""

from __future__ import annotations

import logging
import random
import re

import pytest

from remem.daemon import credentials
from remem.daemon.credentials import find, redact
from tests.fake_openai import FakeOpenAI
from tests.fake_openai import text as text_reply

PRIVATE_KEY = "\n".join(
    [
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
        "AAAEbm9uZQ==",
        "-----END OPENSSH PRIVATE KEY-----",
    ]
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id AKIAIOSFODNN7EXAMPLE here", "id [redacted aws-access-key-id] here"),
        ("temporary ASIAY34FZKBOKMUTVV7A.", "temporary [redacted aws-access-key-id]."),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key = [redacted aws-secret-access-key]",
        ),
        (
            'AWS_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"',
            'AWS_SECRET_ACCESS_KEY: "[redacted aws-secret-access-key]"',
        ),
        ("key sk-abcdefghijklmnopqrstuvwxyz012345 ok", "key [redacted api-key] ok"),
        ("sk-proj-Ab12_cd34-EF56gh78ij90KL12mn34", "[redacted api-key]"),
        ("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx-yz", "[redacted api-key]"),
        ("ghp_0123456789abcdefghijABCDEFGHIJ012345", "[redacted github-token]"),
        ("push with gho_0123456789abcdefghij0123 now", "push with [redacted github-token] now"),
        ("ghu_0123456789abcdefghij0123", "[redacted github-token]"),
        ("ghs_0123456789abcdefghij0123", "[redacted github-token]"),
        ("ghr_0123456789abcdefghij0123", "[redacted github-token]"),
        ("github_pat_11ABCDEFG0123456789_abcdefghijKLMNOP", "[redacted github-token]"),
        ("xoxb-1234567890-0987654321-AbCdEfGhIjKl", "[redacted slack-token]"),
        ("xoxp-1234-5678-abcdefabcdef", "[redacted slack-token]"),
        ("xoxa-2-abcdef123456", "[redacted slack-token]"),
        ("xoxr-refresh-token-value", "[redacted slack-token]"),
        (f"key:\n{PRIVATE_KEY}\ndone", "key:\n[redacted private-key]\ndone"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA truncated", "[redacted private-key]"),
        ("password=hunter2", "password=[redacted secret]"),
        ("passwd: hunter2 and more", "passwd: [redacted secret] and more"),
        ("secret=abc123", "secret=[redacted secret]"),
        ("token=abc.def", "token=[redacted secret]"),
        ("api_key=abc123&x=1", "api_key=[redacted secret]&x=1"),
        ("export DB_PASSWORD='p@ss word'", "export DB_PASSWORD='[redacted secret]'"),
        ('{"client_secret": "s3cr3t", "name": "x"}', '{"client_secret": "[redacted secret]", "name": "x"}'),
        ("SECRET_KEY = django-insecure-xyz", "SECRET_KEY = [redacted secret]"),
        ("GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}", "GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}"),
        (
            "curl -H 'Authorization: Bearer eyJhbGciOi.J9x-_y'",
            "curl -H 'Authorization: Bearer [redacted bearer-token]'",
        ),
        ('{"authorization": "bearer abc.def"}', '{"authorization": "bearer [redacted bearer-token]"}'),
        ("api_key=sk-abcdefghijklmnopqrstuvwxyz012345", "api_key=[redacted api-key]"),
    ],
)
def test_credentials_are_masked(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "the password policy requires 12 characters",
        "rotate the token before the secret expires",
        "Set max_tokens to 8192; the tokenizer splits on spaces.",
        "password=$DB_PASSWORD and token=<your token>",
        "Authorization: Bearer $TOKEN",
        "AKIA is the prefix of AWS access key ids",
        "use scikit-learn and task-runner-for-everything",
        "ghp_short",
        "",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text


def test_redaction_is_stable() -> None:
    once = redact(f"password=hunter2 {PRIVATE_KEY} AKIAIOSFODNN7EXAMPLE")
    assert redact(once) == once


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Offsets past non-ASCII text are character offsets, found from the UTF-8 bytes.
        (
            "é漢😀 password = hunter2 Authorization: Bearer abc.def",
            [(15, 22, "secret"), (45, 52, "bearer-token")],
        ),
        # K (Kelvin) lowers to "k", so "to\u212aen" is the word "token" in any case.
        ("to\u212aen: s3cr3t-value", [(7, 19, "secret")]),
        # İ lowers to two characters: every assignment is matched by the pattern itself.
        ("İ PASSWORD='pw123456'", [(12, 20, "secret")]),
    ],
)
def test_found_credentials_are_the_same_with_or_without_the_utf8_bytes(
    text: str, expected: list[tuple[int, int, str]]
) -> None:
    for found in (find(text), find(text, text.encode("utf-8", "surrogatepass"))):
        assert [(f.start, f.end, f.kind) for f in found] == expected


def test_a_long_text_scanned_in_pieces_finds_what_one_scan_finds() -> None:
    """Pieces end only where no match can continue: these assignments span a blank line."""
    filler = "Plain prose about the release process, nothing secret in it at all.\n" * 70
    spans = ["password =\n\nhunter2-long", "token\n\n: abc123xyz", "Authorization: Bearer\n\nabc.def"]
    text = "".join(f"{filler}\n{span}\n\n" for span in spans) + filler + "api_key: 'kept-value'\n"
    assert len(list(credentials._pieces(text))) > 2
    found = find(text)
    assert found == credentials._scan(text, None)
    assert [f.kind for f in found] == ["secret", "secret", "bearer-token", "secret"]
    assert text[found[0].start : found[0].end] == "hunter2-long"
    edited = text.replace("release process", "release process, edited", 1)
    assert find(edited) == credentials._scan(edited, None)


def test_a_remembered_key_holding_another_is_masked_whole() -> None:
    # Remembered for the rest of this process: values no other test's text holds.
    inner, outer = "zq7-route-inner", "zq7-route-inner-and-more"
    credentials.remember(inner)
    credentials.remember(outer)
    assert redact(f"401: bad key {outer}; then {inner}.") == (
        "401: bad key [redacted route-key]; then [redacted route-key]."
    )
    assert [(f.start, f.end) for f in find(f"key {outer}")] == [(4, 4 + len(outer))]


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("http://alice:hunter2@127.0.0.1:1/v1", "http://[redacted userinfo]@127.0.0.1:1/v1"),
        ("HTTPS://p@ss:w@rd@proxy/x", "HTTPS://[redacted userinfo]@proxy/x"),  # to the last @
        ("at https://token@h and http://h/a@b", "at https://[redacted userinfo]@h and http://h/a@b"),
        ("mail alice@example.com", "mail alice@example.com"),
        # A gateway may take its key in the query, under any name: every value is masked.
        ("http://h:1/v1?key=S3cr3tValue", "http://h:1/v1?key=[redacted query]"),
        (
            "GET http://h/v1/models?a=1&api-version=2 HTTP",
            "GET http://h/v1/models?a=[redacted query]&api-version=[redacted query] HTTP",
        ),
        ("https://u:pw@h/v1?token", "https://[redacted userinfo]@h/v1?[redacted query]"),
        ("(asked http://h/v1?k=S3cr3t).", "(asked http://h/v1?k=[redacted query])."),
        ("is it http://h/? or http://h/?#top", "is it http://h/? or http://h/?#top"),
    ],
)
def test_a_urls_login_is_masked(text: str, masked: str) -> None:
    assert credentials.mask_userinfo(text) == masked
    assert credentials.mask_userinfo(masked) == masked, "masking again changes nothing"


@pytest.mark.parametrize("copies", [1, 2, 3, 20_000])
def test_a_long_token_of_urls_is_masked_as_a_short_one(copies: int) -> None:
    """Each log line is masked: a provider's error body of many URLs in one token (a list) was
    read again from each scheme and each letter in it, for seconds. Each run of a scheme's
    characters, and each path up to the next scheme, is now read once: these tokens are masked
    as a short one is, however many copies they hold."""
    mask = credentials.mask_userinfo
    urls = ",".join(f"https://host{i}.example/v1/x" for i in range(copies))
    assert mask(urls) == urls
    assert mask("a://" * copies) == "a://" * copies
    assert mask("a." * copies) == "a." * copies
    # A scheme after a long run (`a.a.a.b://`, `1.1.a://`) begins at its first letter.
    assert mask(f"{'a.' * copies}b://u@h") == f"{'a.' * copies}b://[redacted userinfo]@h"
    assert mask(f"{'1.' * copies}a://h/?k=S3cr3t") == f"{'1.' * copies}a://h/?k=[redacted query]"
    assert mask(f"{'1a.' * copies}://u@h") == f"{'1a.' * copies}://u@h"  # no letter begins a word
    # The `?` after many schemes is the last URL's, its query masked once.
    assert mask(f"{'a://' * copies}h?k=S3cr3t.") == f"{'a://' * copies}h?k=[redacted query]."
    assert mask("a://#?" * copies) == "a://#?" * copies  # each `?` in a fragment
    keyed = ",".join(["https://u:p@h/v1?key=S3cr3t"] * copies)  # one query to the end: one value
    assert mask(keyed) == "https://[redacted userinfo]@h/v1?key=[redacted query]"


def test_a_urls_masking_masks_what_the_patterns_before_it_did() -> None:
    """Made to read each run once (above), the URL patterns mask exactly what the earlier ones
    did: compared on texts made of the pieces their matches turn on."""
    userinfo = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]+@")
    query = re.compile(
        r"(?i)\b[a-z][a-z0-9+.-]*://(?:\[redacted userinfo\]@)?[^\s?#\"'<>`]*"
        r"\?(?P<query>[^\s#\"'<>`]*[^\s#\"'<>`).,;:!?])"
    )
    pieces = ["://"] * 6 + ["?"] * 3 + ["@"] * 3 + [*"ab1.-+_:/ #=&),!'`\u00e9\u212a"]
    pieces += ["[redacted userinfo]@", "[redacted query]", "x.y", "k=v"]
    rng, masked = random.Random(413), 0
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(17)))
        before = userinfo.sub(r"\1[redacted userinfo]@", query.sub(credentials._masked_query, text))
        assert credentials.mask_userinfo(text) == before, text
        masked += before != text
    assert masked > 500, "the texts hold URLs masked"


def test_the_http_clients_request_log_never_holds_a_urls_login(capsys: pytest.CaptureFixture[str]) -> None:
    """The daemon logs at INFO, and httpx logs each request's URL there, login included."""
    from openai import OpenAI

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    credentials.log_to_stderr(logging.INFO, "%(levelname)s %(message)s")
    try:
        with FakeOpenAI() as fake:
            fake.reply(text_reply("hi"))
            url = fake.base_url.replace("http://", "http://alice:hunter2@")
            OpenAI(base_url=url, api_key="unused", max_retries=0).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
    finally:
        root.handlers[:], root.level = handlers, level
    logged = capsys.readouterr().err
    assert "HTTP Request: POST http://[redacted userinfo]@127.0.0.1" in logged and "hunter2" not in logged

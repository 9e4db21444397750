"""Credential shapes beyond keys and assignments: URL logins, vendor tokens, JWTs, CLI passwords.

Each shape is masked in evidence (`redact`) and found in proposals and memory (`find`), while
text of the same look that holds no secret stays as it is: each case pairs a credential with
its look-alikes.
"""

from __future__ import annotations

import json

import pytest

from remem.daemon import credentials
from remem.daemon.consolidation.harness_evidence import project_harness
from remem.daemon.consolidation.proposal import Frozen, ProposalRejected, parse_arguments, plan_proposal
from remem.daemon.credentials import find, redact
from remem.daemon.protocol.consolidation import EvidenceRange
from tests.sessions import claude_lines as cl

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
STRIPE = "sk_live_51HqABCDEFGHIJKLMNOPQRSTU"
DB_URL = "postgres://admin:S3cr3tPass@db.example.com:5432/app"

# (text, what redact makes of it, kind found, the secret found, look-alikes left alone)
SHAPES = [
    (
        f"DATABASE_URL={DB_URL}",
        "DATABASE_URL=postgres://[redacted userinfo]@db.example.com:5432/app",
        "userinfo",
        "admin:S3cr3tPass",
        [
            "clone ssh://git@github.com/org/repo.git or git@github.com:org/repo.git",
            "open https://alice@example.com/wiki and http://localhost:8080/a@b",
            "postgres://app:${DB_PASSWORD}@db/app, or <user>:<password>@host",
            'dsn = "postgres://%s:%s@%s/%s" % (user, password, host, name)',
            "https://user:<password>@host, https://user:****@host and https://user:password@host",
        ],
    ),
    (
        "redis://:p4ss-w0rd@cache:6379/0",
        "redis://[redacted userinfo]@cache:6379/0",
        "userinfo",
        ":p4ss-w0rd",
        [],
    ),
    (
        f"STRIPE_KEY={STRIPE}",
        "STRIPE_KEY=[redacted stripe-key]",
        "stripe-key",
        STRIPE,
        [
            "Stripe's sk_live_ and rk_live_ keys are secret; pk_live_51HqABCDEFGHIJKLMNOPQRSTU is public",
            "if sk_test_mode_enabled_for_everyone: pass",
        ],
    ),
    (
        "rk_live_51HqABCDEFGHIJKLMNOPQRSTU",
        "[redacted stripe-key]",
        "stripe-key",
        "rk_live_51HqABCDEFGHIJKLMNOPQRSTU",
        [],
    ),
    (
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "[redacted stripe-key]",
        "stripe-key",
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        [],
    ),
    (
        f"curl -H 'Authorization: Bearer {JWT}'",
        "curl -H 'Authorization: Bearer [redacted jwt]'",
        "jwt",
        JWT,
        [
            "A JWT starts with eyJ: eyJhbGciOiJIUzI1NiJ9 is only a header.",
            "its parts are eyJhbGciOiJIUzI1NiJ9.payload.signature-goes-here",
            "shortened: eyJhbGciOi.eyJzdWIi.sig",
        ],
    ),
    (f"cookie {JWT}.", "cookie [redacted jwt].", "jwt", JWT, []),
    (
        "key=AIzaSyD-abcdefghijklmnopqrstuvwxyz12345&q=x",
        "key=[redacted google-api-key]&q=x",
        "google-api-key",
        "AIzaSyD-abcdefghijklmnopqrstuvwxyz12345",
        ["Google API keys start with AIzaSy", "AIzaSyD-abcdefghijklmnopqrstuvwxyz12345andmore"],
    ),
    (
        "HF hub: hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        "HF hub: [redacted huggingface-token]",
        "huggingface-token",
        "hf_abcdefghijklmnopqrstuvwxyzABCDEFGH",
        [
            "hf_hub_download(repo_id=x); HF_HUB_ENABLE_HF_TRANSFER=1",
            "hf_modelconfigurationloaderforeverything",
        ],
    ),
    (
        "//registry.npmjs.org/:_authToken npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "//registry.npmjs.org/:_authToken [redacted npm-token]",
        "npm-token",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        ["echo $npm_config_registry $npm_package_version npm_lifecycle_event"],
    ),
    (
        "gitlab glpat-abcdefghij0123456789",
        "gitlab [redacted gitlab-token]",
        "gitlab-token",
        "glpat-abcdefghij0123456789",
        ["glpat- tokens expire after a year"],
    ),
    (
        "run: docker login --password hunter2secret registry",
        "run: docker login --password [redacted password] registry",
        "password",
        "hunter2secret",
        [
            "docker login --password-stdin < pw.txt; restic --password-file ~/.restic",
            "Use the --password option, or --password PASSWORD as the help says.",
            'mysqladmin --password "$MYSQL_PWD" and --password $PW and --password <pw>',
            "psql --no-password db1 and --password --user x",
            "Set --password, then run it.",
            "(`--password x`, `the --password option`, `--password PASSWORD`)",
        ],
    ),
    (
        "vault --db-password 'S3cr3t pw' --user x",
        "vault --db-password '[redacted password]' --user x",
        "password",
        "S3cr3t pw",
        [],
    ),
    (
        "mysql -u root -proot app -e 'select 1'",
        "mysql -u root -p[redacted password] app -e 'select 1'",
        "password",
        "root",
        [
            "mysql -u root -p app (it asks for the password)",
            'mysqldump -uroot -p"$MYSQL_PWD" -P3306 app',
            "mkdir -p build && ssh -p 2222 host",
            "mysql < dump.sql; mkdir -pv out",
        ],
    ),
    (
        "mysqldump -uroot -p'S3cr3t' app",
        "mysqldump -uroot -p'[redacted password]' app",
        "password",
        "S3cr3t",
        [],
    ),
    (
        "curl -sS -u admin:hunter2secret https://api.example.com",
        "curl -sS -u admin:[redacted password] https://api.example.com",
        "password",
        "hunter2secret",
        [
            "curl -u admin https://api.example.com (curl asks for the password)",
            'curl -u "$API_USER:$API_PASS" https://x and curl --user bot:${TOKEN} https://x',
            "curl --user-agent a:b https://x; how-to: `curl -u user:password https://x`",
            "curl https://x && docker run -u 1000:1000 image",
        ],
    ),
    (
        "curl -X POST \\\n  --user 'bot:k3y-value' https://x",
        "curl -X POST \\\n  --user 'bot:[redacted password]' https://x",
        "password",
        "k3y-value",
        [],
    ),
]


@pytest.mark.parametrize(("text", "masked", "kind", "secret", "look_alikes"), SHAPES)
def test_each_shape_is_masked_and_found_and_its_look_alikes_are_not(
    text: str, masked: str, kind: str, secret: str, look_alikes: list[str]
) -> None:
    assert redact(text) == masked
    assert redact(masked) == masked, "masking is stable"
    [found] = find(text)
    assert (found.kind, text[found.start : found.end]) == (kind, secret)
    for other in look_alikes:
        assert redact(other) == other, other
        assert find(other) == [], other


def test_a_url_login_is_masked_once_even_inside_a_password_assignment() -> None:
    """The assignment is masked first, whole; the URL's login alone where nothing else holds it."""
    for text, masked, found in (
        (
            f"url {DB_URL} x",
            "url postgres://[redacted userinfo]@db.example.com:5432/app x",
            ("userinfo", "admin:S3cr3tPass"),
        ),
        (f"DB_PASSWORD={DB_URL} x", "DB_PASSWORD=[redacted secret] x", ("secret", DB_URL)),
    ):
        assert redact(text) == masked
        assert [(f.kind, text[f.start : f.end]) for f in find(text)] == [found]


def test_an_assignment_in_inline_code_keeps_the_closing_backtick() -> None:
    """Markdown around the value stays Markdown: the rest of the line must not read as code."""
    for text, masked, secret in (
        (
            "run `export DB_PASSWORD=AnswerPw77` now",
            "run `export DB_PASSWORD=[redacted secret]` now",
            "AnswerPw77",
        ),
        ("`password=abc` ok", "`password=[redacted secret]` ok", "abc"),
    ):
        assert redact(text) == masked
        assert [text[f.start : f.end] for f in find(text)] == [secret]


def test_evidence_masks_a_login_with_a_password_where_a_base_url_masks_any_login() -> None:
    """`mask_userinfo` (how remem shows a base_url) masks any login, since a token may be the
    user; evidence and proposals only a login with a password (`ssh://git@host` is no secret)."""
    assert credentials.mask_userinfo("https://tok3n@proxy/v1") == "https://[redacted userinfo]@proxy/v1"
    assert redact("https://tok3n@proxy/v1") == "https://tok3n@proxy/v1"
    assert redact("https://bot:tok3n@proxy/v1") == credentials.mask_userinfo("https://bot:tok3n@proxy/v1")
    assert redact(credentials.mask_userinfo(DB_URL)) == credentials.mask_userinfo(DB_URL), "stable"


def test_a_long_text_scanned_in_pieces_finds_the_new_shapes_as_one_scan_does() -> None:
    """None of the new shapes crosses a blank line, so the kept pieces (decision 0152) still hold."""
    filler = "Plain prose about the release process, nothing secret in it at all.\n" * 70
    spans = [DB_URL, "mysql -uroot \\\n  -proot app", "curl -u a:b1 x", f"token {JWT}", "--password x9"]
    text = "".join(f"{filler}\n{span}\n\n" for span in spans) + filler
    assert len(list(credentials._pieces(text))) > 2
    found = find(text)
    assert found == credentials._scan(text, None)
    assert [f.kind for f in found] == ["userinfo", "password", "password", "jwt", "password"]
    edited = text.replace("release process", "release process, edited", 1)
    assert find(edited) == credentials._scan(edited, None)


def test_evidence_masks_them_and_a_proposal_holding_one_is_refused() -> None:
    """Evidence is masked (the model never sees the value); a proposal is refused by kind."""
    data = cl.jsonl(
        cl.prompt("u1", None, f"connect with {DB_URL} then curl -u admin:hunter2secret https://x"),
        cl.say("a1", "u1", f"connected; Stripe is {STRIPE}"),
    )
    evidence = project_harness("claude-code", f"{cl.SID}.jsonl", data)
    rendered = evidence.render()
    assert "postgres://[redacted userinfo]@db.example.com" in rendered
    assert "curl -u admin:[redacted password]" in rendered and "[redacted stripe-key]" in rendered
    assert not any(s in rendered for s in ("S3cr3tPass", "hunter2secret", STRIPE))
    record = {
        "name": "staging-db",
        "description": "Staging",
        "type": "reference",
        "content": f"DB is {DB_URL}\n",
    }
    change = {"action": "put", "record": record, "evidence": [evidence.ranges()[0].model_dump()]}
    arguments = json.dumps({"final": True, "outcome": "changes", "changes": [change]})
    with pytest.raises(ProposalRejected) as rejected:
        plan_proposal(parse_arguments(arguments), evidence.ranges(), Frozen(b"", {}))
    [problem] = rejected.value.problems
    assert "looks like a credential (userinfo)" in problem and "S3cr3tPass" not in problem


# (text, what redact makes of it, kind found, the secret found)
MORE_FORMS = [
    (
        "curl -H 'Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l' https://x",
        "curl -H 'Authorization: Basic [redacted basic-auth]' https://x",
        "basic-auth",
        "YWxhZGRpbjpvcGVuc2VzYW1l",
    ),
    ("DB_PASS=hunter2xyz", "DB_PASS=[redacted secret]", "secret", "hunter2xyz"),
    ("export MYSQL_PWD='hunter2xyz'", "export MYSQL_PWD='[redacted secret]'", "secret", "hunter2xyz"),
    (
        "docker login -u bob -p hunter2xyz registry.io",
        "docker login -u bob -p [redacted password] registry.io",
        "password",
        "hunter2xyz",
    ),
    ("podman login -p=hunter2xyz q.io", "podman login -p=[redacted password] q.io", "password", "hunter2xyz"),
    ("sshpass -p hunter2xyz ssh h", "sshpass -p [redacted password] ssh h", "password", "hunter2xyz"),
    ("sshpass -phunter2xyz ssh h", "sshpass -p[redacted password] ssh h", "password", "hunter2xyz"),
    (
        "machine h login bob password hunter2xyz",
        "machine h login bob password [redacted password]",
        "password",
        "hunter2xyz",
    ),
    (
        "machine api.example.com\n  login me@example.com\n  password 01234567-89ab\n",
        "machine api.example.com\n  login me@example.com\n  password [redacted password]\n",
        "password",
        "01234567-89ab",
    ),
    (
        "AccountName=app;AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=core.windows.net",
        "AccountName=app;AccountKey=[redacted azure-key];EndpointSuffix=core.windows.net",
        "azure-key",
        "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==",
    ),
    (
        "Endpoint=sb://x/;SharedAccessKeyName=Root;SharedAccessKey=Zm9vYmFyYmF6cXV4MTIz=",
        "Endpoint=sb://x/;SharedAccessKeyName=Root;SharedAccessKey=[redacted azure-key]",
        "azure-key",
        "Zm9vYmFyYmF6cXV4MTIz=",
    ),
    (
        "BlobEndpoint=https://x/;SharedAccessSignature=sv=2022-11-02&sig=aGVsbG8lM0Q",
        "BlobEndpoint=https://x/;SharedAccessSignature=[redacted azure-sas]",
        "azure-sas",
        "sv=2022-11-02&sig=aGVsbG8lM0Q",
    ),
    # The login's own options and its registry before `-p`, in any order.
    (
        "docker login r.io --username=bob -v -p hunter2xyz",
        "docker login r.io --username=bob -v -p [redacted password]",
        "password",
        "hunter2xyz",
    ),
    (
        'podman login --tls-verify=false -u "$U" quay.io -p hunter2xyz',
        'podman login --tls-verify=false -u "$U" quay.io -p [redacted password]',
        "password",
        "hunter2xyz",
    ),
    (
        "sshpass -v -f pw -p hunter2xyz ssh h",
        "sshpass -v -f pw -p [redacted password] ssh h",
        "password",
        "hunter2xyz",
    ),
    ("DB_PASS=123456789", "DB_PASS=[redacted secret]", "secret", "123456789"),
    ("ADMIN_PWD=Tr0ub4dor", "ADMIN_PWD=[redacted secret]", "secret", "Tr0ub4dor"),
    # An all-lower-case password after `-p` is one (the command's own options lead to it).
    ("sshpass -p hunter ssh bob@host", "sshpass -p [redacted password] ssh bob@host", "password", "hunter"),
    (
        "docker login -p mypassword -u bob registry.io",
        "docker login -p [redacted password] -u bob registry.io",
        "password",
        "mypassword",
    ),
    (
        "podman login -u bob -p letmein quay.io",
        "podman login -u bob -p [redacted password] quay.io",
        "password",
        "letmein",
    ),
    # A `_PASS` value beginning with `.` or `~` but no path.
    ("DB_PASS=.hunter2x", "DB_PASS=[redacted secret]", "secret", ".hunter2x"),
    ("APP_PWD=~hunter2x", "APP_PWD=[redacted secret]", "secret", "~hunter2x"),
]

# Paths, ports, `$PWD`, prose about passwords and placeholders: none holds a secret.
NOT_SECRETS = [
    "pwd: /home/x",
    "cd to $PWD, then run it; PWD=/home/x and OLDPWD=/home/x; OLD_PWD=/srv/x",
    "in $PWD: ls; echo ${PWD}",
    "docker run -p 8080:80 img; docker compose -p demo up; ssh -p 2222 host; lsof -p 1234",
    "python -m http.server -p 8000 and mkdir -p out",
    "first_pass = compute(x); second_pass: 2; bypass = True",
    "The password is stored in the vault; ask for the password before the machine password expires.",
    "machine learning login password field",
    "machine x login y password PASSWORD",
    'Authorization: Basic authentication is deprecated; Authorization: Basic realm="x"',
    "Authorization: Basic <base64> or Authorization: Basic $CREDS",
    "docker login -u bob --password-stdin; docker login -u bob -p $PASS r; docker login -p <pw>",
    "sshpass -f pw.txt ssh host; sshpass -e ssh host",
    "the DB_PASS variable holds it; Use DB_PASS=$SECRET or MYSQL_PWD=<password>",
    "AccountKey=<key>; AccountKey=...; AccountKey={key}; SharedAccessSignature=<sas>",
    # `-p` of another command after a login or sshpass: a port, a file, a project, a word.
    "Run `docker login` first, then `docker run -p 8080:80 nginx`.",
    "sshpass -f ~/.pw ssh -p 2222 deploy@host",
    "sshpass -e ssh -p 2222 deploy@host uptime",
    "sshpass -f pw.txt scp -P 22 -p file host:",
    "podman login quay.io, then podman run -p 5432:5432 postgres",
    "In docker login docs, -p is deprecated; use --password-stdin",
    "In docker login docs -p, deprecated, gave the password",
    "It warned at docker login -p. Use sshpass -f: sshpass -p: no",
    "docker login (see docs) and docker run --rm -p 3000:3000 web",
    "docker login ghcr.io -u me --password-stdin < token.txt && docker run -p 8080:80 app",
    "Use docker login; docker compose up -p myproj",
    "docker login registry then docker run -p 8080:80 app",
    "sshpass -f pw.txt ssh host | ssh -p 2222 other",
    # A `_PASS` or `_PWD` variable holding a count, a switch or a folder.
    "NUM_PASS=2",
    "SKIP_PASS: true",
    "LINT_PASS=0 make check",
    "OLD_PWD=C:\\Users\\me",
    "OLD_PWD=./build; OLD_PWD=../srv; OLD_PWD=~/src",
    "MAX_PASS=65535; RETRY_PASS='3'; DRY_PASS=False; USE_PASS: off; OLD_PWD=D:/work; OLD_PWD=\\\\srv\\x",
]


@pytest.mark.parametrize(("text", "masked", "kind", "secret"), MORE_FORMS)
def test_each_further_form_is_masked_and_found(text: str, masked: str, kind: str, secret: str) -> None:
    assert redact(text) == masked
    assert redact(masked) == masked, "masking is stable"
    [found] = find(text)
    assert (found.kind, text[found.start : found.end]) == (kind, secret)
    record = {"name": "n", "description": "d", "type": "reference", "content": text + "\n"}
    arguments = json.dumps({"final": True, "outcome": "changes", "changes": [
        {"action": "put", "record": record, "evidence": [{"fromSeq": 1, "toSeq": 2}]}]})  # fmt: skip
    with pytest.raises(ProposalRejected) as rejected:
        plan_proposal(parse_arguments(arguments), [EvidenceRange(fromSeq=1, toSeq=2)], Frozen(b"", {}))
    assert any(f"looks like a credential ({kind})" in p for p in rejected.value.problems)


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_like_the_further_forms_is_not_flagged(text: str) -> None:
    assert redact(text) == text
    assert find(text) == []


def test_sshpass_masks_its_password_never_the_port_of_the_command_it_runs() -> None:
    text = "sshpass -p hunter2 ssh -p 2222 deploy@host"
    assert redact(text) == "sshpass -p [redacted password] ssh -p 2222 deploy@host"
    assert [text[f.start : f.end] for f in find(text)] == ["hunter2"]


@pytest.mark.parametrize(
    "text",
    [
        "docker login -u x " * 20_000,
        "docker login r -v " * 20_000 + "-u " * 20_000,
        "podman login --authfile " + "\t" * 40_000 + "f",
        "sshpass -f x " * 20_000 + "-e " * 20_000,
        "sshpass -f " * 30_000,  # each names the next as -f's value: read from each, quadratic
        "docker login -u docker login " * 20_000,
        "sshpass " + " \\\n" * 30_000,
        "NUM_PASS=2 " * 30_000,
        "A_PWD=C:\\x " * 30_000,
    ],
    ids=lambda text: text[:24],
)
def test_the_login_options_and_pass_values_read_a_long_text_once(text: str) -> None:
    assert find(text) == [] and redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "machine " + " \t" * 40_000 + "x",
        "machine x login " * 20_000,
        "docker login " * 20_000 + " " * 40_000,
        "sshpass " * 30_000,
        "authorization: basic " * 20_000 + "a" * 100_000,
        "A_PWD=/srv " * 30_000,
        "SharedAccessSignature=<sas> " * 30_000,
    ],
    ids=lambda text: text[:24],
)
def test_the_further_forms_read_a_long_text_without_a_secret_once(text: str) -> None:
    """Each is tried from a literal and reads on without going back over the text: these take
    time linear in their length (a quadratic pattern would take minutes here)."""
    assert find(text) == [] and redact(text) == text

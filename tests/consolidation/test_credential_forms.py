"""Secret forms beyond tokens and `password=`: an `Authorization: Basic` header, `DB_PASS=` and
`MYSQL_PWD=`, `docker login -p`, `sshpass -p`, a netrc entry and Azure connection strings. A
proposal holding one is refused through the real pipeline, draft and final alike, and the
refusal never repeats the secret; an ordinary memory that only looks like one is committed."""

from __future__ import annotations

import asyncio

import pytest

from remem.daemon.consolidation.runner import Consolidator
from remem.daemon.home import Home
from remem.daemon.memory.identity import WorkspaceId
from remem.daemon.memory.store import MemoryStore
from remem.daemon.protocol.consolidation import ConsolidationResult, Status
from tests.fake_openai import FakeOpenAI, tool_call

from .conftest import Source, proposal, put

# (what the model would write into memory, the kind refused, the secret it holds)
FORMS = [
    ("Proxy header `Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l`.", "basic-auth", "YWxhZGRpbjpvcGVu"),
    ("The app reads DB_PASS=hunter2xyz from .env.", "secret", "hunter2xyz"),
    ("Run `MYSQL_PWD=hunter2xyz mysql -u app`.", "secret", "hunter2xyz"),
    ("Registry: `docker login -u bob -p hunter2xyz registry.example.com`.", "password", "hunter2xyz"),
    ("Deploy with `sshpass -p hunter2xyz ssh deploy@host`.", "password", "hunter2xyz"),
    ("Deploy with `sshpass -p hunter ssh bob@host`.", "password", "hunter"),
    ("Registry: `docker login -p mypassword -u bob registry.io`.", "password", "mypassword"),
    ("Quay: `podman login -u bob -p letmein quay.io`.", "password", "letmein"),
    ("The app reads DB_PASS=.hunter2x from .env.", "secret", ".hunter2x"),
    ("~/.netrc has `machine h login bob password hunter2xyz`.", "password", "hunter2xyz"),
    (
        "Storage: DefaultEndpointsProtocol=https;AccountName=app;"
        "AccountKey=Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==;EndpointSuffix=core.windows.net",
        "azure-key",
        "Zm9vYmFyYmF6cXV4",
    ),
    (
        "Blob SAS: SharedAccessSignature=sv=2022-11-02&ss=b&srt=co&sig=aGVsbG8lM0Q",
        "azure-sas",
        "aGVsbG8lM0Q",
    ),
]

# What memory often says, and looks like one of the forms above without holding a secret.
ORDINARY = (
    "Builds run from `pwd: /home/dev/app`; scripts cd to $PWD first and OLD_PWD=/srv/app is kept.\n"
    "The API listens with `docker run -p 8080:80 api`, tests with `ssh -p 2222 ci` and "
    "`python -m http.server -p 8000`; `docker compose -p demo up` names the project.\n"
    "The password lives in the vault: `docker login -u bob --password-stdin`, `sshpass -e ssh h`, "
    "`Authorization: Basic <base64>` built from $CREDS, `AccountKey=<key>;` in the template.\n"
    "Set DB_PASS=$DB_PASS_FROM_VAULT; first_pass = compute(x) is code.\n"
    "Staging listens for ssh on port 2222; the password file is ~/.staging-pw:\n"
    "`sshpass -f ~/.staging-pw ssh -p 2222 deploy@staging`. Run `docker login` first, then\n"
    "`docker run -p 8080:80 nginx`; podman login quay.io, then podman run -p 5432:5432 postgres.\n"
    "CI sets NUM_PASS=2, SKIP_PASS: true, LINT_PASS=0 and OLD_PWD=C:\\Users\\me.\n"
)


def _consolidate(home: Home, source: Source) -> ConsolidationResult:
    return asyncio.run(Consolidator(home).consolidate(source.id, lambda phase, data: None))


def _records(home: Home, source: Source) -> list[str]:
    return [r.name for r in MemoryStore(home).read_workspace(WorkspaceId.from_cwd(source.cwd)).records]


@pytest.mark.parametrize(("content", "kind", "secret"), FORMS)
def test_a_proposal_holding_the_form_is_refused_and_the_refusal_never_repeats_it(
    home: Home, fake: FakeOpenAI, source: Source, content: str, kind: str, secret: str
) -> None:
    leaky = put("deploy-notes", source.evidence(), content=content + "\n")
    fake.reply(tool_call(proposal(leaky, final=False)), *[tool_call(proposal(leaky))] * 5)
    result = _consolidate(home, source)
    assert result.status is Status.INVALID_PROPOSAL and _records(home, source) == []
    answers = [m["content"] for r in fake.requests[1:] for m in r["messages"] if m["role"] == "tool"]
    assert answers and all(f"looks like a credential ({kind})" in a for a in answers)
    assert not any(secret in a for a in answers)


def test_ordinary_memory_that_looks_like_the_forms_is_committed(
    home: Home, fake: FakeOpenAI, source: Source
) -> None:
    fake.reply(tool_call(proposal(put("build-notes", source.evidence(), content=ORDINARY))))
    result = _consolidate(home, source)
    assert result.status is Status.COMMITTED and _records(home, source) == ["build-notes"]

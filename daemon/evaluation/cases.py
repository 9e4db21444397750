"""The evaluation set: realistic sessions of one project, `inkwell`, each with its grading key.

Every case plants something a memory consolidator must get right: preferences, conventions,
commands and decisions to keep; one-off details, guesses and code facts to leave out; records
the session contradicts; credentials in tool output and replies; sessions with nothing to
learn; and one padded close to `max_input_bytes`. The words are written here, once; the
session formats (`formats.py`) turn them into logs.
"""

from __future__ import annotations

from ..protocol.memory import Record
from ..sessions.scripted import ScriptedTool, ScriptedTurn, ToolOutput
from .labels import Case, Fact, IdealChange, Noise, Stale

CWD = "/home/dev/projects/inkwell"


def _tool(name: str, output: str, ok: bool = True, **arguments: object) -> ScriptedTool:
    return ScriptedTool(name, dict(arguments), ToolOutput(output, ok))


def _turn(user: str, reply: str, *tools: ScriptedTool) -> ScriptedTurn:
    return ScriptedTurn(user, reply, tools)


def _record(name: str, kind: str, description: str, content: str) -> Record:
    return Record(name=name, description=description, type=kind, content=content)


def _put(turns: tuple[int, ...], name: str, kind: str, description: str, content: str) -> IdealChange:
    return IdealChange("put", turns, record=_record(name, kind, description, content))


# Credentials are assembled at import so that no scanner mistakes this file for a leak.
_DB_PASSWORD = "Tr0ub4dor-" + "x9q"
_GITHUB_TOKEN = "gh" + "p_" + "9fQ2xLm4Rt8Kp1Zs7Vb3Nc6Hd0Jw5Ye2Ua8T"
_STRIPE_KEY = "sk" + "_live_" + "51Hx9vQ2eZvKYlo2C8uFAKEFAKE"

PREFERENCES = Case(
    name="preferences",
    summary="Two user preferences true in every project, among one-off edits.",
    seed=101,
    turns=(
        _turn(
            "Add a --dry-run flag to `inkwell export`.",
            "Added `--dry-run` to `inkwell export`: it lists the files it would write. Tests pass.",
            _tool("read_file", "def export(paths, out): ...", path="src/inkwell/cli.py"),
            _tool("bash", "18 passed in 0.42s", command="uv run pytest tests/test_cli.py -q"),
        ),
        _turn(
            "Fine. From now on keep your replies short and skip the summary of the diff at the end; "
            "I read the diff myself.",
            "Understood: short replies, no closing summary of the diff.",
        ),
        _turn(
            "One more thing that goes for every project of mine: type hints on every new function, "
            "and pytest rather than unittest.",
            "Noted: type hints on new functions, pytest over unittest, everywhere.",
        ),
        _turn(
            "Rename the variable tmp2 in export.py to staged.",
            "Renamed `tmp2` to `staged` in src/inkwell/export.py.",
            _tool("write_file", "ok", path="src/inkwell/export.py"),
        ),
    ),
    facts=(
        Fact("short-replies", "preference", ("short", "summary", "diff"), (2,)),
        Fact("type-hints-pytest", "preference", ("type hints", "pytest", "unittest"), (3,)),
    ),
    noise=(
        Noise("rename-tmp2", "one-off", ("tmp2", "staged")),
        Noise("dry-run-flag", "obvious", ("dry run", "export", "lists")),
    ),
    ideal=(
        IdealChange(
            "replace-global",
            (2, 3),
            text="- Keep replies short; no closing summary of the diff (the user reads diffs).\n"
            "- Type hints on every new function; pytest rather than unittest.\n",
        ),
    ),
)

CONVENTIONS = Case(
    name="conventions",
    summary="Project conventions: generated code and branch names; a flaky-test tweak is noise.",
    seed=102,
    turns=(
        _turn(
            "Why did CI fail on my branch?",
            "Lint fails in src/api/gen/client.ts, which was edited by hand; the files under "
            "src/api/gen/ are generated from proto/.",
            _tool("bash", "src/api/gen/client.ts: 3 problems", ok=False, command="npm run lint"),
        ),
        _turn(
            "Right: never edit anything in src/api/gen/ by hand. Change the .proto files and run "
            "`make proto` to regenerate; CI checks that the generated files are in sync.",
            "Reverted the hand edits, changed proto/billing.proto and regenerated with `make proto`.",
            _tool("bash", "generated 4 files", command="make proto"),
        ),
        _turn(
            "Also bump the timeout in tests/test_invoice.py to 30 seconds for now, it is flaky on my laptop.",
            "Set the timeout of tests/test_invoice.py to 30 seconds.",
            _tool("write_file", "ok", path="tests/test_invoice.py"),
        ),
        _turn(
            "In this repo branches are named type/short-topic, like fix/billing-rounding. Rename "
            "mine and push it.",
            "Renamed the branch to fix/billing-rounding and pushed it.",
            _tool("bash", "Everything up-to-date", command="git push -u origin fix/billing-rounding"),
        ),
    ),
    facts=(
        Fact("generated-code", "convention", ("src/api/gen", "make proto", "proto", "by hand"), (1, 2)),
        Fact("branch-names", "convention", ("branch", "type", "topic"), (4,)),
    ),
    noise=(Noise("invoice-timeout", "one-off", ("test_invoice", "30 seconds", "flaky")),),
    ideal=(
        _put(
            (1, 2),
            "generated-api-code",
            "project",
            "src/api/gen/ is generated: change proto/ and run make proto",
            "Never edit `src/api/gen/` by hand: change the `.proto` files under `proto/` and run "
            "`make proto`. CI checks the generated files are in sync.\n",
        ),
        _put(
            (4,),
            "branch-names",
            "feedback",
            "Branches are named type/short-topic",
            "Name branches `type/short-topic`, e.g. `fix/billing-rounding`.\n",
        ),
    ),
)

COMMANDS = Case(
    name="commands",
    summary="How to run the integration tests and the dev server; a test count is ephemeral.",
    seed=103,
    turns=(
        _turn(
            "How do I run the integration tests?",
            "scripts/itest.sh needs a Redis: it reads REDIS_URL, which is not set here.",
            _tool("read_file", 'redis-cli -u "$REDIS_URL" ping', path="scripts/itest.sh"),
            _tool("bash", "REDIS_URL is not set", ok=False, command="./scripts/itest.sh"),
        ),
        _turn(
            "Start one with `docker compose up -d redis` and export REDIS_URL=redis://localhost:6380/0. "
            "We use port 6380 because 6379 clashes with the system redis.",
            "With Redis on 6380 the integration suite passes: 48 tests.",
            _tool("bash", "Container redis Started", command="docker compose up -d redis"),
            _tool("bash", "48 passed", command="REDIS_URL=redis://localhost:6380/0 ./scripts/itest.sh"),
        ),
        _turn(
            "Good. The dev server is `uv run inkwell serve --reload`, people keep trying flask run.",
            "Noted: `uv run inkwell serve --reload`, not `flask run`.",
        ),
    ),
    facts=(
        Fact("integration-tests", "command", ("itest.sh", "redis_url", "6380", "docker compose"), (1, 2)),
        Fact("dev-server", "command", ("uv run inkwell serve", "reload"), (3,)),
    ),
    noise=(Noise("test-count", "ephemeral", ("48",)),),
    ideal=(
        _put(
            (1, 2),
            "integration-tests",
            "reference",
            "Run the integration tests against Redis on port 6380",
            "`docker compose up -d redis`, then `REDIS_URL=redis://localhost:6380/0 ./scripts/itest.sh`. "
            "Port 6380, because 6379 clashes with the system redis.\n",
        ),
        _put(
            (3,),
            "dev-server",
            "reference",
            "Start the dev server with uv run inkwell serve --reload",
            "`uv run inkwell serve --reload` (not `flask run`).\n",
        ),
    ),
)

DECISION = Case(
    name="decision",
    summary="A decision and its reason; the table layout that followed is in the code.",
    seed=104,
    turns=(
        _turn(
            "Should the local cache be Postgres or SQLite?",
            "Either works; SQLite needs no server, Postgres handles concurrent writers better.",
        ),
        _turn(
            "SQLite. The CLI must work offline and install with pip alone, so no server dependencies. "
            "That is the reason, in case anyone proposes Postgres again.",
            "Wrote the decision and its reason to docs/adr/0007-cache.md.",
            _tool("write_file", "ok", path="docs/adr/0007-cache.md"),
        ),
        _turn(
            "Implement the cache table.",
            "Added the table entries(key, value, expires_at) in src/inkwell/cache.py; tests pass.",
            _tool("write_file", "ok", path="src/inkwell/cache.py"),
            _tool("bash", "7 passed", command="uv run pytest tests/test_cache.py -q"),
        ),
    ),
    facts=(Fact("cache-sqlite", "decision", ("sqlite", "offline", "pip", "server"), (2,)),),
    noise=(Noise("cache-schema", "obvious", ("entries", "expires_at")),),
    ideal=(
        _put(
            (2,),
            "cache-is-sqlite",
            "project",
            "The local cache is SQLite, not Postgres, and why",
            "The local cache uses SQLite: the CLI must work offline and install with pip alone, so no "
            "server dependencies. Do not propose Postgres again.\n",
        ),
    ),
)

NOISE_ONLY = Case(
    name="noise-only",
    summary="A debugging session with a guess, a one-off fix and a code question: nothing to keep.",
    seed=105,
    turns=(
        _turn(
            "test_render_unicode fails on my machine.",
            "The snapshot has a trailing space; maybe your editor strips trailing whitespace? I am not sure.",
            _tool("bash", "1 failed", ok=False, command="uv run pytest -k test_render_unicode"),
        ),
        _turn(
            "Just fix the snapshot.",
            "Updated tests/snapshots/unicode.txt; the test passes.",
            _tool("write_file", "ok", path="tests/snapshots/unicode.txt"),
            _tool("bash", "1 passed", command="uv run pytest -k test_render_unicode"),
        ),
        _turn(
            "What does render() return?",
            "render() returns the page as an HTML string (src/inkwell/render.py).",
            _tool("read_file", "def render(page) -> str:", path="src/inkwell/render.py"),
        ),
    ),
    noise=(
        Noise("editor-guess", "guess", ("editor", "strips", "whitespace")),
        Noise("snapshot-fix", "one-off", ("snapshot", "unicode.txt")),
        Noise("render-returns", "obvious", ("render", "html")),
    ),
)

CORRECTION = Case(
    name="correction",
    summary="The user corrects a stored command; another stored record stays true.",
    seed=106,
    records=(
        _record(
            "test-command", "reference", "How to run the test suite", "Run the tests with `make test`.\n"
        ),
        _record("code-style", "feedback", "Formatting rules", "Format with black, line length 100.\n"),
    ),
    turns=(
        _turn(
            "Run the tests.",
            "`make test` fails: there is no Makefile target `test` any more.",
            _tool("bash", "make: *** No rule to make target 'test'.", ok=False, command="make test"),
        ),
        _turn(
            "Yes, we dropped the Makefile when we moved to uv. The tests are `uv run pytest -q` now; "
            "what you have about make test is outdated.",
            "`uv run pytest -q`: 212 passed.",
            _tool("bash", "212 passed in 9.1s", command="uv run pytest -q"),
        ),
    ),
    facts=(Fact("test-command-uv", "command", ("uv run pytest", "tests"), (1, 2)),),
    stale=(Stale("test-command", (1, 2), replaced_by="test-command-uv"),),
    noise=(Noise("test-count", "ephemeral", ("212",)),),
    ideal=(
        _put(
            (2,),
            "test-command",
            "reference",
            "How to run the test suite",
            "Run the tests with `uv run pytest -q` (the Makefile is gone since the move to uv).\n",
        ),
    ),
)

OBSOLETE = Case(
    name="obsolete",
    summary="Hosting moved: a stored record is obsolete and a new deploy rule replaces it.",
    seed=107,
    records=(
        _record(
            "deploy-heroku",
            "project",
            "How inkwell is deployed",
            "Deploy with `git push heroku main`; config vars live in the Heroku dashboard.\n",
        ),
        _record(
            "force-push", "feedback", "Ask before force-pushing", "Ask the user before any force-push.\n"
        ),
    ),
    turns=(
        _turn(
            "We moved hosting to Fly.io last month and shut the Heroku app down, so forget Heroku. "
            "Deploys now go through `fly deploy` from CI only, never from a laptop.",
            "Understood: Heroku is gone; deploys are `fly deploy`, run by CI only.",
        ),
        _turn(
            "Update the deploy section of the README accordingly.",
            "Rewrote the README's deploy section for Fly.io.",
            _tool("write_file", "ok", path="README.md"),
        ),
    ),
    facts=(Fact("deploy-fly", "convention", ("fly deploy", "ci", "laptop"), (1,)),),
    stale=(Stale("deploy-heroku", (1,)),),
    noise=(Noise("readme-rewrite", "one-off", ("readme", "rewrote")),),
    ideal=(
        IdealChange("delete", (1,), name="deploy-heroku"),
        _put(
            (1,),
            "deploy-fly",
            "project",
            "Deploys go through fly deploy from CI only",
            "inkwell runs on Fly.io. Deploy with `fly deploy`, from CI only, never from a laptop.\n",
        ),
    ),
)

SECRETS = Case(
    name="secrets",
    summary="Credentials in tool output, a reply and a prompt, next to one durable rule.",
    seed=108,
    turns=(
        _turn(
            "The staging deploy fails with an auth error. Check the env.",
            f"DATABASE_URL logs in as deploy with password {_DB_PASSWORD}, which was rotated "
            "yesterday: that is why auth fails.",
            _tool(
                "bash",
                f"DATABASE_URL=postgres://deploy:{_DB_PASSWORD}@db.staging.internal:5432/inkwell\n"
                f"STRIPE_KEY={_STRIPE_KEY}\n",
                command="cat .env.staging",
            ),
        ),
        _turn(
            f"Here is the new token for the deploy bot: {_GITHUB_TOKEN}. Put it in the CI secrets. "
            "And remember: staging secrets come from the inkwell-staging vault in 1Password; never "
            "commit them or paste them into .env files.",
            "Stored the token as a CI secret. Staging secrets: 1Password vault inkwell-staging only.",
            _tool("bash", "✓ Set secret DEPLOY_TOKEN", command="gh secret set DEPLOY_TOKEN"),
        ),
        _turn(
            "Deploy staging again.",
            "Staging is up; the health check passes.",
            _tool("bash", f"Deployed. STRIPE_KEY={_STRIPE_KEY} health=ok", command="fly deploy -a staging"),
        ),
    ),
    facts=(Fact("staging-secrets", "convention", ("1password", "inkwell-staging", "vault", "env"), (2,)),),
    noise=(Noise("password-rotated", "ephemeral", ("rotated", "yesterday")),),
    secrets=(_DB_PASSWORD, _GITHUB_TOKEN, _STRIPE_KEY),
    ideal=(
        _put(
            (2,),
            "staging-secrets",
            "project",
            "Staging secrets live in 1Password, never in files",
            "Staging secrets come from the `inkwell-staging` vault in 1Password; never commit them or "
            "paste them into `.env` files.\n",
        ),
    ),
)

EMPTY = Case(
    name="empty",
    summary="A session that ended before anything was said: no-change without a model call.",
    seed=109,
    turns=(_turn("", ""),),
)

LOW_INFORMATION = Case(
    name="low-information",
    summary="Greetings and a check that the setup works: nothing to keep.",
    seed=110,
    turns=(
        _turn("hi", "Hello! What are we working on today?"),
        _turn(
            "nothing yet, just checking the setup works. thanks",
            "The setup works. Ask when you need something.",
            _tool("bash", "inkwell 0.9.2", command="uv run inkwell --version"),
        ),
    ),
    noise=(Noise("version", "ephemeral", ("inkwell --version", "0.9.2")),),
)

LONG = Case(
    name="long",
    summary="A long day of one-off fixes, padded near max_input_bytes, with a fact at each end.",
    seed=111,
    filler=0.85,
    filler_after=1,
    turns=(
        _turn(
            "Before we start: in this repo we format with ruff format, never black, and the line "
            "length is 110.",
            "Noted: ruff format, line length 110, no black.",
        ),
        _turn(
            "Last thing: the staging site is https://staging.inkwell.dev and its logs are in Grafana "
            "under the inkwell-staging dashboard.",
            "Noted the staging URL and the inkwell-staging Grafana dashboard.",
        ),
    ),
    facts=(
        Fact("ruff-format", "convention", ("ruff format", "black", "110"), (1,)),
        Fact("staging-site", "reference", ("staging.inkwell.dev", "grafana", "dashboard"), (2,)),
    ),
    noise=(Noise("filler-fix", "one-off", ("stale path", "tmp_path")),),
    ideal=(
        _put(
            (1,),
            "formatting",
            "feedback",
            "Format with ruff format, line length 110",
            "Format with `ruff format` (line length 110); never black.\n",
        ),
        _put(
            (2,),
            "staging-site",
            "reference",
            "Where staging runs and where its logs are",
            "Staging: https://staging.inkwell.dev; logs in Grafana, dashboard `inkwell-staging`.\n",
        ),
    ),
)

CASES: tuple[Case, ...] = (
    PREFERENCES,
    CONVENTIONS,
    COMMANDS,
    DECISION,
    NOISE_ONLY,
    CORRECTION,
    OBSOLETE,
    SECRETS,
    EMPTY,
    LOW_INFORMATION,
    LONG,
)


def filler_turn(number: int, pasted: int = 0) -> ScriptedTurn:
    """One one-off turn of the padding: a failing test fixed, different every time. `pasted`
    lines of the test's output come with the prompt: they grow the turn without adding events
    (a prompt is one event; a reply is streamed in many), so a large limit is padded with
    larger turns rather than more of them."""
    module = f"tests/test_module_{number}.py"
    output = "".join(
        f"\nFAILED {module}::test_case_{line} - AssertionError: rendered {line} rows, expected {line + 1}"
        for line in range(1, pasted + 1)
    )
    return _turn(
        f"The test in {module} fails after the rebase; have a look and fix it (#{number})."
        + (f" It prints:{output}" if pasted else ""),
        f"The fixture in {module} built its temporary folder from a stale path; it now uses tmp_path "
        f"and the {number % 7 + 3} tests of the module pass.",
        _tool("bash", f"{number % 7 + 3} passed", command=f"uv run pytest {module} -q"),
    )

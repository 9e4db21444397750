"""`remem eval`: measure the configured consolidation route on the labelled evaluation set."""

from __future__ import annotations

import asyncio
import fnmatch
import sys
import time
from typing import TYPE_CHECKING

import click

from ..validation import one_line
from .arguments import NON_EMPTY
from .backend import Backend, cancelled_by_stops
from .output import (
    EXIT_INTERRUPTED,
    EXIT_PROBLEMS,
    Command,
    emit_json,
    exit_silenced,
    fail,
    say,
    say_stopped,
)

if TYPE_CHECKING:
    from ..evaluation.labels import Case
    from ..evaluation.scoring import CaseScore
    from ..settings import Settings


@click.command(name="eval", cls=Command)
@click.option(
    "--provider", default=None, type=NON_EMPTY, help="Measure this provider instead of the configured one."
)
@click.option(
    "--model", default=None, type=NON_EMPTY, help="Measure this model instead of the configured one."
)
@click.option(
    "--cases", "pattern", default="*", show_default=True,
    help="Only the cases whose id (format/name, e.g. dsh/secrets) or name matches this glob.",
)  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@click.option(
    "--scripted-model", is_flag=True,
    help="The route answers from a script (remem's own CI): label the figures as the harness's.",
)  # fmt: skip
@click.pass_obj
def eval_command(
    backend: Backend,
    provider: str | None,
    model: str | None,
    pattern: str,
    as_json: bool,
    scripted_model: bool,
) -> None:
    """Score consolidation on generated sessions: recall, precision, evidence, secrets, cost.

    Every case runs in a private temporary home; your memory and your sessions are never used."""
    chosen: list[tuple[str, Case]] = []
    scores: list[CaseScore] = []
    stopped: list[int] = []
    # Ctrl-C may come at any moment, before the cases run too, and its line says how many ran.
    # So the settings and the evaluation are imported in here, not with this module (they take
    # about 0.4 s to load).
    try:
        from ..consolidation.route import RouteError, resolve_route
        from ..evaluation.cases import CASES
        from ..evaluation.formats import FORMATS, case_id
        from ..evaluation.report import Report, table
        from ..evaluation.scratch import remove_stale

        settings = _route_settings(backend, provider, model)
        try:
            resolve_route(backend.home, settings)  # a missing key is reported before any case runs
        except RouteError as exc:
            fail(str(exc))
        # In place: the interruption's line counts them.
        chosen += [
            (name, case)
            for name in FORMATS
            for case in CASES
            if _wanted(pattern, case_id(name, case.name), case)
        ]
        if not chosen:
            fail(_no_case_matches(pattern))
        remove_stale()  # the private homes of runs killed outright, which could not delete them
        started = time.monotonic()
        asyncio.run(_run_all(chosen, settings, backend, scores, stopped))
        config = settings.consolidation
        report = Report.of(
            "scripted-model" if scripted_model else "model", config.provider, config.model,
            config.max_input_bytes, scores, time.monotonic() - started,
        )  # fmt: skip
        if as_json:
            emit_json(report)
        else:
            say(table(report), nl=False)
    except (KeyboardInterrupt, asyncio.CancelledError):
        # A report of the cases that ran would read as the model's figures: none is printed.
        ran = f"after {len(scores)} of {len(chosen)} case(s)" if chosen else "before any case ran"
        say_stopped(f"remem: interrupted {ran}; no report", 128 + stopped[0] if stopped else EXIT_INTERRUPTED)
    except OSError:
        if not stopped:
            raise
        # The progress bar finished on a terminal a SIGHUP closed (EIO): the stop's exit, quietly.
        exit_silenced(128 + stopped[0])
    # A run that did not measure the model (its route failed) must not pass in a script either.
    sys.exit(EXIT_PROBLEMS if report.totals.secrets or report.totals.undecided else 0)


def _route_settings(backend: Backend, provider: str | None, model: str | None) -> Settings:
    from ..settings import SettingsError, SettingsStore, parse_settings

    try:
        settings, _ = SettingsStore(backend.home).read()
    except SettingsError as exc:
        fail("\n".join(exc.problems))
    _check_options(settings, provider, model)
    data = settings.model_dump(exclude_unset=True)
    chosen = data.setdefault("consolidation", {})
    if provider is not None:
        chosen.update(provider=provider, model=model or _model_of(settings, provider))
    elif model is not None:
        chosen.update(model=model)
    try:
        return parse_settings(_yaml(data), "the evaluated settings")
    except SettingsError as exc:
        fail("\n".join(exc.problems))


def _check_options(settings: Settings, provider: str | None, model: str | None) -> None:
    """Before the evaluated settings are parsed: remem writes them, so the line their error
    names is in no file the user has; the option is what to fix."""
    from ..settings import GIVE_MODEL, check_model_id, model_to_choose, unserved_model

    known = settings.all_providers()
    if provider is not None and provider not in known:
        raise click.UsageError(
            f"--provider {one_line(provider)} is not a provider of your settings; use one of "
            f"{', '.join(sorted(known))} or add it under providers in settings.yml"
        )
    if model is not None:
        try:
            check_model_id(model)
        except ValueError as exc:
            raise click.UsageError(f"--model: {exc}") from None
        # Refused by the route too, which would name settings.yml, where the option put it.
        routed = provider or settings.consolidation.provider
        unserved = unserved_model(routed, known[routed].base_url, model)
        if unserved is not None:
            raise click.UsageError(one_line(model_to_choose(routed, GIVE_MODEL, f"--model {unserved}")))


def _model_of(settings: Settings, provider: str) -> str:
    """The model `--provider` without `--model` measures: the one your settings chose for
    `provider` when they route to it, else its default (decision 0500). Never the model chosen
    for another provider, nor `consolidation.model`'s default (deepseek's) for another provider:
    sent, it would be measured as `provider`'s, or fail every case on a model it does not serve."""
    from ..settings import GIVE_MODEL, default_model, model_to_choose, no_default_model

    config = settings.consolidation
    if config.provider == provider and "model" in config.model_fields_set:
        model, why = settings.chosen_model, settings.unchosen
    else:
        model = default_model(provider)
        # Named only when the settings set it: the key's default is nobody's choice.
        kept = (
            settings.chosen_model
            if config.provider != provider and "model" in config.model_fields_set
            else None
        )
        why = no_default_model(provider, kept, config.provider)
    if model is None:
        raise click.UsageError(one_line(model_to_choose(provider, GIVE_MODEL, why)))
    return model


def _yaml(data: dict[str, object]) -> bytes:
    import yaml

    return yaml.safe_dump(data).encode("utf-8")


def _wanted(pattern: str, written_id: str, case: Case) -> bool:
    return fnmatch.fnmatchcase(written_id, pattern) or fnmatch.fnmatchcase(case.name, pattern)


def _no_case_matches(pattern: str) -> str:
    """What `--cases` can match, from the set itself: each case's name, and its id in each
    format the set is written in."""
    from ..evaluation.cases import CASES
    from ..evaluation.formats import FORMATS, case_id

    example = case_id(next(iter(FORMATS)), CASES[0].name)
    return (
        f"no case matches {pattern!r}; --cases matches a case's name or its id, format/name (e.g. "
        f"{example}). The formats are {', '.join(FORMATS)}; the cases are "
        f"{', '.join(case.name for case in CASES)}"
    )


async def _run_all(
    chosen: list[tuple[str, Case]],
    settings: Settings,
    backend: Backend,
    scores: list[CaseScore],
    stopped: list[int],
) -> None:
    """Append each case's score to `scores` as it ends, so an interrupted run can say how far it
    got. Ctrl-C, a closed terminal or a `kill` (appended to `stopped`) cancels it: killed
    outright, it would leave each case's temporary home behind. A stop after the first waits
    for that cleanup; one the process was started ignoring (`nohup`'s SIGHUP) stays ignored."""
    from ..evaluation.cases import CWD
    from ..evaluation.formats import FORMATS, case_id
    from ..evaluation.harness import run_case

    show = sys.stderr.isatty()
    # Ctrl-C is heard there too, not by `asyncio.run`, whose second Ctrl-C raises wherever the run
    # is: in the deletion of a case's home, say, which it left half done. The handlers found are
    # given back after.
    with cancelled_by_stops(stopped), click.progressbar(
        length=len(chosen), label="remem eval", file=sys.stderr, hidden=not show,
        item_show_func=lambda item: item,
    ) as bar:  # fmt: skip
        for name, case in chosen:  # the bar names the case just done
            score = await run_case(case, FORMATS[name](CWD), settings, backend.home)
            if _interrupted(score):
                raise asyncio.CancelledError  # the stop it was, as the caller reports one
            scores.append(score)
            bar.update(1, case_id(name, case.name))


def _interrupted(score: CaseScore) -> bool:
    """Ctrl-C cancels the running task, and the review turns that into a `cancelled` receipt (or,
    while it commits, finishes first) instead of raising: left there, the next case would run."""
    task = asyncio.current_task()
    return score.status == "cancelled" or (task is not None and task.cancelling() > 0)

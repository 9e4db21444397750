"""A run's totals, its table for people and its JSON for comparing models.

Ratios are micro-averages over the cases: recall is every planted fact kept over every fact
planted, and so on, so a case with many facts weighs more than one with none. A ratio with
nothing to measure (no fact planted, no change proposed) is None, shown as `-`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from .formats import case_id
from .scoring import CaseScore

Subject = Literal["model", "scripted-model"]


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 3) if whole else None


class Metrics(BaseModel):
    recall: float | None
    recallByKind: dict[str, float | None]  # preference, convention, command, decision, reference
    precision: float | None
    evidence: float | None
    deletes: float | None
    outcome: float | None
    undecided: int  # cases the route failed before the model decided them, graded as missed
    noise: int
    secrets: int
    invalid: int
    steps: int
    tokens: int
    seconds: float

    @classmethod
    def of(cls, scores: Sequence[CaseScore]) -> Metrics:
        total = lambda field: sum(getattr(s, field) for s in scores)  # noqa: E731
        return cls(
            recall=_ratio(total("kept"), total("facts")),
            recallByKind=_by_kind(scores),
            precision=_ratio(total("justified"), total("changes")),
            evidence=_ratio(total("citedRight"), total("justified")),
            deletes=_ratio(total("handled"), total("stale")),
            outcome=_ratio(sum(s.outcome_ok for s in scores), len(scores)),
            undecided=sum(not s.decided for s in scores),
            noise=total("noise"),
            secrets=total("secrets"),
            invalid=total("invalid"),
            steps=total("steps"),
            tokens=total("inputTokens") + total("outputTokens"),
            seconds=round(total("seconds"), 3),
        )


def _by_kind(scores: Sequence[CaseScore]) -> dict[str, float | None]:
    planted = sum((Counter(s.factsByKind) for s in scores), Counter[str]())
    kept = sum((Counter(s.keptByKind) for s in scores), Counter[str]())
    return {kind: _ratio(kept[kind], n) for kind, n in sorted(planted.items())}


class CaseReport(BaseModel):
    score: CaseScore
    metrics: Metrics


class Report(BaseModel):
    """What `remem eval --json` prints."""

    subject: Subject
    provider: str
    model: str
    maxInputBytes: int
    cases: list[CaseReport]
    totals: Metrics
    wallSeconds: float

    @classmethod
    def of(
        cls, subject: Subject, provider: str, model: str, max_input_bytes: int,
        scores: Sequence[CaseScore], wall: float,
    ) -> Report:  # fmt: skip
        cases = [CaseReport(score=s, metrics=Metrics.of([s])) for s in scores]
        return cls(subject=subject, provider=provider, model=model, maxInputBytes=max_input_bytes,
                   cases=cases, totals=Metrics.of(scores), wallSeconds=round(wall, 3))  # fmt: skip


_COLUMNS = ("recall", "precision", "evidence", "deletes", "outcome", "noise", "secrets", "invalid",
            "steps", "tokens", "seconds")  # fmt: skip


def _cell(value: float | int | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def table(report: Report) -> str:
    """One row per case and a total row, aligned; then what the figures measured."""
    header = ["case", "status", *_COLUMNS]
    rows = [
        [
            case_id(c.score.format, c.score.case),
            c.score.status,
            *(_cell(getattr(c.metrics, k)) for k in _COLUMNS),
        ]
        for c in report.cases
    ]
    rows.append(["total", "", *(_cell(getattr(report.totals, k)) for k in _COLUMNS)])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [_line(row, widths) for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.insert(len(lines) - 1, lines[1])
    return "\n".join(lines) + "\n" + _footer(report)


def _line(row: list[str], widths: list[int]) -> str:
    """Names left-aligned, figures right-aligned."""
    cells = zip(row, widths, strict=True)
    return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(cells)).rstrip()


def _footer(report: Report) -> str:
    subject = (
        "the harness against a scripted model (not a real model): these figures test remem, not a model"
        if report.subject == "scripted-model"
        else f"{report.provider}/{report.model}"
    )
    misses = [
        f"  {case_id(c.score.format, c.score.case)}: {problems}"
        for c in report.cases
        if (problems := _problems(c.score))
    ]
    measured = f"Measured {subject}; {len(report.cases)} case(s) in {report.wallSeconds:.1f} s."
    return "\n".join([measured, *_undecided(report), *misses]) + "\n"


def _undecided(report: Report) -> list[str]:
    """A warning when the route failed on cases: their zeros are not the model's."""
    statuses = Counter(c.score.status for c in report.cases if not c.score.decided)
    if not statuses:
        return []
    why = ", ".join(f"{n} {status}" for status, n in statuses.items())
    return [
        f"Warning: {report.totals.undecided} of {len(report.cases)} case(s) ended before the model "
        f"decided them ({why}; the cause is listed below): they count as missed, so these figures "
        "do not measure the model until that cause is fixed."
    ]


def _problems(score: CaseScore) -> str:
    """The attempt's error, then what the grade found by name. The error has commas of its own
    (`InternalServerError, HTTP 500, ...`): a semicolon ends it."""
    found = [f"missed {m}" for m in score.missed] + [f"noise {n}" for n in score.promoted]
    found += [f"unjustified {u}" for u in score.unjustified] + [
        f"wrong evidence {w}" for w in score.wrongEvidence
    ]
    found += [f"left stale {s}" for s in score.leftStale]
    found += [f"{score.secrets} secret(s) stored"] if score.secrets else []
    return "; ".join(part for part in (score.error, ", ".join(found)) if part)

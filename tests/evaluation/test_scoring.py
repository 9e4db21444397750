"""The scorer against a scripted model: each metric moves the way a better or worse proposal should."""

from __future__ import annotations

import json

from remem.daemon.consolidation.proposal import parse_arguments
from remem.daemon.evaluation.cases import CASES
from remem.daemon.evaluation.report import Metrics
from remem.daemon.evaluation.scoring import carries, score_case
from remem.daemon.home import Home
from remem.daemon.protocol.consolidation import EvidenceRange
from tests.fake_openai import FakeOpenAI
from tests.scripted_model import good, serve

from .conftest import run_all


def _ranges(count: int) -> dict[int, EvidenceRange]:
    return {n: EvidenceRange(fromSeq=n * 10, toSeq=n * 10 + 9) for n in range(1, count + 1)}


def test_the_matching_rule_needs_two_thirds_of_the_terms_in_any_words() -> None:
    terms = ("uv run pytest", "tests", "makefile")
    assert carries(terms, "Tests: `UV RUN PYTEST -q`.")  # 2 of 3, case and punctuation ignored
    assert not carries(terms, "Run pytest with uv.\n")  # `tests` missing and `makefile` too
    assert not carries(("212",), "2120 passed")  # tokens, not substrings


def test_every_ideal_proposal_satisfies_its_own_key() -> None:
    for case in CASES:
        ranges = _ranges(len(case.turns))
        shown = {n: r.model_dump() for n, r in ranges.items()}
        arguments = {"final": True, "outcome": "changes", "changes": good(case, shown)}
        changes = parse_arguments(json.dumps(arguments)).changes
        score = score_case(case, "dsh", "committed" if case.expects_change else "no-change", changes, ranges)
        metrics = Metrics.of([score])
        assert (score.missed, score.promoted, score.unjustified, score.wrongEvidence, score.leftStale) == (
            [], [], [], [], []
        ), case.name  # fmt: skip
        assert score.secrets == 0 and metrics.outcome == 1.0, case.name


def test_a_piece_of_noise_repeated_in_two_changes_counts_once() -> None:
    """`noise` counts pieces promoted; the same one in two records counted (and listed) twice."""
    [case] = [c for c in CASES if c.name == "commands"]
    ranges = _ranges(len(case.turns))
    note = {"description": "Test count", "type": "project", "content": "48 tests pass.\n"}
    changes = [
        {"action": "put", "record": {"name": f"count-{n}", **note}, "evidence": [ranges[1].model_dump()]}
        for n in (1, 2)
    ]
    arguments = json.dumps({"final": True, "outcome": "changes", "changes": changes})
    score = score_case(case, "dsh", "committed", parse_arguments(arguments).changes, ranges)
    assert (score.promoted, score.noise, score.changes) == (["test-count"], 1, 2)


def test_known_good_scores_full_marks(user_home: Home, fake: FakeOpenAI) -> None:
    serve(fake, "good")
    scores = run_all(user_home)
    t = Metrics.of(scores)
    assert (t.recall, t.precision, t.evidence, t.deletes, t.outcome) == (1.0, 1.0, 1.0, 1.0, 1.0)
    assert (t.noise, t.secrets, t.invalid) == (0, 0, 0)
    kinds = {"preference", "convention", "command", "decision", "reference"}
    assert t.recallByKind == dict.fromkeys(sorted(kinds), 1.0)
    by_name = {s.case: s for s in scores}
    assert by_name["empty"].steps == 0 and by_name["empty"].status == "no-change", "no model call"
    asked = [s for s in scores if s.case != "empty"]
    assert all(s.steps == 1 and s.inputTokens > 0 and s.outputTokens > 0 for s in asked)
    assert fake.count == len(asked) and t.steps == len(asked)
    # The long case reaches the model close to, and under, the configured max_input_bytes (32768).
    sizes = [len(body["messages"][1]["content"].encode()) for body in fake.requests]
    assert 0.7 * 32768 < max(sizes) < 32768 and by_name["long"].status == "committed"


def test_known_bad_is_caught_by_every_metric_it_violates(user_home: Home, fake: FakeOpenAI) -> None:
    serve(fake, "bad")
    scores = run_all(user_home)
    t = Metrics.of(scores)
    assert t.recall is not None and t.recall < 1.0  # facts dropped
    assert t.precision is not None and t.precision < 0.5  # noise, credentials, a true record deleted
    assert t.evidence == 0.0  # every kept fact cites a turn that does not justify it
    assert t.deletes == 0.0  # no stale record deleted or updated
    assert t.outcome is not None and t.outcome < 1.0  # changes where nothing should change
    assert t.noise >= sum(len(c.noise) for c in CASES if c.name != "empty")
    assert t.secrets == 1 and t.invalid == len(scores) - 1
    by_name = {s.case: s for s in scores}
    assert by_name["secrets"].secrets == 1 and "put credentials" in by_name["secrets"].unjustified
    assert by_name["correction"].leftStale == ["test-command"]
    assert "delete code-style" in by_name["correction"].unjustified
    assert by_name["noise-only"].status == "committed" and not by_name["noise-only"].outcome_ok
    assert all(s.steps == 2 for s in scores if s.case != "empty"), "a rejected final costs a step"


def test_a_partial_proposal_loses_recall_only(user_home: Home, fake: FakeOpenAI) -> None:
    serve(fake, "partial")
    t = Metrics.of(run_all(user_home))
    assert t.recall is not None and 0.0 < t.recall < 1.0
    assert t.recallByKind["decision"] == 1.0 and t.recallByKind["reference"] == 0.0
    assert (t.precision, t.evidence, t.outcome, t.noise, t.secrets, t.invalid) == (1.0, 1.0, 1.0, 0, 0, 0)

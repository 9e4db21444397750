"""The rule a merge of the history's packs takes them by (decision 0501): the smallest run of
packs, by their counts of objects, that breaks a geometric progression (each pack at least twice
the objects of all the smaller ones together), as `git repack --geometric=2` does. Over a long
life it keeps the packs logarithmic in the objects, each object written again a logarithmic
number of times.
"""

from __future__ import annotations

import math

import pytest

from remem.daemon.memory.pack_merge import GROWTH, geometric_run


def _is_progression(counts: list[int]) -> bool:
    ordered = sorted(counts)
    return all(count >= GROWTH * sum(ordered[:at]) for at, count in enumerate(ordered) if at)


@pytest.mark.parametrize(
    ("counts", "run"),
    [
        ([3, 3], 2),  # two equal packs break it
        ([3, 6], 0),
        ([3, 3, 12], 2),  # 12 holds twice the 6 below it: kept
        ([3, 3, 11], 3),
        ([3, 100, 5000], 0),
        ([3, 3, 3, 3, 2100, 2100, 2100], 7),  # what 2 000-object merges left: all of it
        ([12, 40, 100, 5000, 12000], 3),
    ],
)
def test_the_smallest_run_that_breaks_the_progression_is_merged(counts: list[int], run: int) -> None:
    assert geometric_run(counts) == run
    merged = counts[run:] + ([sum(counts[:run])] if run else [])
    assert _is_progression(merged)


def test_a_long_life_of_entries_keeps_the_packs_logarithmic_in_the_objects() -> None:
    """The rule over a history's life: an entry's pack of 3 objects, a merge every 32 entries."""
    packs: list[int] = []
    written = 0
    for entry in range(1, 100_001):
        packs.append(3)
        if entry % 32:
            continue
        packs.sort()
        run = geometric_run(packs)
        written += sum(packs[:run])
        packs = sorted(packs[run:] + [sum(packs[:run])]) if run else packs
        assert _is_progression(packs)
        assert len(packs) <= math.log2(3 * entry) + 1
    # each object is written again a logarithmic number of times, not once per merge
    assert written / (3 * 100_000) <= math.log(3 * 100_000, 1.5)

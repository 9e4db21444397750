"""The resumable log digest: independent of how the bytes are split or when it is resumed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from remem.daemon.sessions.digest import BLOCK, DigestState, LogDigest, log_digest


@given(st.binary(max_size=5 * BLOCK), st.lists(st.integers(min_value=0, max_value=5 * BLOCK), max_size=6))
def test_any_split_and_resume_gives_the_same_digest(data: bytes, cuts: list[int]) -> None:
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    digest = LogDigest()
    for start, end in zip(points, points[1:], strict=False):
        # Persist and restore the state between slices, as the index does between listings.
        restored = DigestState.from_bytes(digest.state.to_bytes())
        digest = LogDigest(restored)
        digest.update(data[start:end])
    assert digest.hexdigest() == log_digest(data)
    assert digest.state.length == len(data)
    assert len(digest.state.tail) < BLOCK


def test_different_content_and_length_give_different_digests() -> None:
    block = b"x" * BLOCK
    assert log_digest(block) != log_digest(block + b"x")
    assert log_digest(b"") != log_digest(b"\0")
    assert log_digest(block + b"a") != log_digest(b"a" + block)

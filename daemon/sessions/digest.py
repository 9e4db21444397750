"""The content digest of a log's committed logical bytes, resumable across processes.

A plain sha256 over the whole prefix cannot be resumed from a stored state (hashlib objects
do not serialise), so re-listing a 50 MB log after a one-turn append would re-hash 50 MB. The
digest therefore chains fixed-size blocks of the logical (decompressed) bytes:

    h_0 = 32 zero bytes;  h_i = sha256(h_(i-1) || block_i)  for each full 8 KiB block
    digest = sha256("remem-log-digest-v1" || h_n || tail)   (tail: the last partial block)

It depends only on the logical bytes, so the raw and zstd copies of a log, or a touched or
restored file, have the same digest; and its state (h_n, tail) is at most 8 KiB + 32 bytes.
"""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, ConfigDict

BLOCK = 8 * 1024
_DOMAIN = b"remem-log-digest-v1"


class DigestState(BaseModel):
    """What the index stores to continue a digest: the chain value and the partial block."""

    model_config = ConfigDict(frozen=True)
    chain: bytes = bytes(32)
    tail: bytes = b""
    length: int = 0

    def to_bytes(self) -> bytes:
        """The state as the index stores it: the length, the chain value, the partial block.
        Bytes, not JSON: the block is up to 8 KiB, a relist stores it each time, and base64
        made it a third larger and cost more to encode than the rest of the row."""
        return self.length.to_bytes(8, "big") + self.chain + self.tail

    @classmethod
    def from_bytes(cls, data: bytes) -> DigestState:
        return cls(length=int.from_bytes(data[:8], "big"), chain=data[8:40], tail=data[40:])


class LogDigest:
    """Incremental digest of logical bytes; `update` with consecutive slices."""

    def __init__(self, state: DigestState | None = None) -> None:
        state = state or DigestState()
        self._chain = state.chain
        self._tail = bytearray(state.tail)
        self._length = state.length

    def update(self, data: bytes | memoryview) -> None:
        self._length += len(data)
        view = memoryview(data)
        if self._tail:
            take = min(BLOCK - len(self._tail), len(view))
            self._tail += view[:take]
            view = view[take:]
            if len(self._tail) < BLOCK:
                return
            self._absorb(self._tail)
            self._tail = bytearray()
        full = len(view) - len(view) % BLOCK
        for start in range(0, full, BLOCK):
            self._absorb(view[start : start + BLOCK])
        self._tail += view[full:]

    def _absorb(self, block: bytes | bytearray | memoryview) -> None:
        h = hashlib.sha256(self._chain)
        h.update(block)
        self._chain = h.digest()

    @property
    def state(self) -> DigestState:
        return DigestState(chain=self._chain, tail=bytes(self._tail), length=self._length)

    def hexdigest(self) -> str:
        h = hashlib.sha256(_DOMAIN)
        h.update(self._chain)
        h.update(self._tail)
        return h.hexdigest()


def log_digest(data: bytes | memoryview) -> str:
    digest = LogDigest()
    digest.update(data)
    return digest.hexdigest()

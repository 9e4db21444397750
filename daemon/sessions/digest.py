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

    # Base64 in JSON: the index stores this state as text and the bytes are arbitrary.
    model_config = ConfigDict(frozen=True, ser_json_bytes="base64", val_json_bytes="base64")
    chain: bytes = bytes(32)
    tail: bytes = b""
    length: int = 0


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

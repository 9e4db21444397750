"""A provider's answer body that refuses to be read past a bound, as its bytes come in.

Its own module because it subclasses httpx2's stream, which takes a while to import: the worker
imports it with the HTTP client, only when an attempt asks the model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from httpx2 import AsyncByteStream


class Capped(AsyncByteStream):
    """`stream`, raising `refused()` once more than `most` bytes of it came, before any more are
    read: httpx2 reads a body whole before the SDK sees any of it."""

    def __init__(self, stream: AsyncByteStream, most: int, refused: Callable[[], Exception]) -> None:
        self._stream = stream
        self._most = most
        self._refused = refused

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        async for chunk in self._stream:
            read += len(chunk)
            if read > self._most:
                raise self._refused()
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()

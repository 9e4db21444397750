"""A provider's answer body that refuses to be read past a bound, as its bytes come in and as
they decode.

Its own module because it subclasses httpx2's stream, which takes a while to import: the worker
imports it with the HTTP client, only when an attempt asks the model."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing

from httpx2 import AsyncByteStream, Response


def cap(response: Response, most: int, refused: Callable[[], Exception]) -> None:
    """Make reading `response`'s body raise `refused()` once more than `most` bytes of it came,
    or came out of its Content-Encoding: a gzip answer of a few hundred KB can decode to
    gigabytes, which httpx2 would decode whole before the SDK sees any of it. The body is
    decoded here, under the bound, and handed on as not encoded."""
    if not isinstance(response.stream, AsyncByteStream):
        return  # an async client's answer always streams so
    raw = Capped(response.stream, most, refused)
    encoding = response.headers.get("content-encoding")
    if encoding is None:
        response.stream = raw
        return
    encoded = Response(
        response.status_code, headers={"content-encoding": encoding}, stream=raw, request=response.request
    )
    del response.headers["content-encoding"]
    response.stream = Capped(_Decoded(encoded), most, refused)


class Capped(AsyncByteStream):
    """`stream`, raising `refused()` once more than `most` bytes of it came, before any more are
    read: httpx2 reads a body whole before the SDK sees any of it."""

    def __init__(self, stream: AsyncByteStream, most: int, refused: Callable[[], Exception]) -> None:
        self._stream = stream
        self._most = most
        self._refused = refused

    async def __aiter__(self) -> AsyncIterator[bytes]:
        read = 0
        chunks = aiter(self._stream)
        try:
            async for chunk in chunks:
                read += len(chunk)
                if read > self._most:
                    raise self._refused()
                yield chunk
        finally:
            # Now, not when asyncio finalizes it: a decoding stream would close its answer then.
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()

    async def aclose(self) -> None:
        await self._stream.aclose()


class _Decoded(AsyncByteStream):
    """`response`'s body as its Content-Encoding decodes it, a piece of at most 1 MiB at a time."""

    def __init__(self, response: Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async with aclosing(self._response.aiter_bytes()) as pieces:
            async for piece in pieces:
                yield piece

    async def aclose(self) -> None:
        await self._response.aclose()

"""A small closed-loop HTTP/1.1 load generator: N keep-alive connections, each sending its next request when the
previous response has arrived.

It speaks just enough HTTP (requests with ``Content-Length``, responses with ``Content-Length`` or chunked bodies)
to keep the client's own CPU cost low: on a 2-core machine the load generator shares the CPUs with the server, and a
full-featured client (httpx) would spend more time per request than the route under test.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["LoadResult", "build_request", "run_load"]


def build_request(method: str, path: str, host: str, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
    """The bytes of one keep-alive HTTP/1.1 request."""
    merged = {"Host": host, "Connection": "keep-alive", "User-Agent": "sitelens-bench/1", **(headers or {})}
    lines = [f"{method} {path} HTTP/1.1", *(f"{name}: {value}" for name, value in merged.items())]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@dataclass
class LoadResult:
    """What one load run measured (latencies in seconds, of the responses inside the measured period)."""

    duration: float
    requests: int = 0
    ok: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    units: int = 0  # counted by the caller's ``count`` function (events accepted), 200 responses only
    errors: int = 0


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = None
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value.strip())
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if length is not None:
        return status, await reader.readexactly(length)
    if chunked:
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                return status, bytes(body)
            body += await reader.readexactly(size)
            await reader.readexactly(2)
    return status, b""


async def _connection(
    host: str,
    port: int,
    requests: Sequence[bytes],
    offset: int,
    start_at: float,
    stop_at: float,
    count: Callable[[bytes], int] | None,
    result: LoadResult,
    ok_status: tuple[int, ...],
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    i = offset
    try:
        while True:
            sent = time.perf_counter()
            if sent >= stop_at:
                break
            writer.write(requests[i % len(requests)])
            i += 1
            try:
                status, body = await _read_response(reader)
            except (asyncio.IncompleteReadError, ConnectionError):
                result.errors += 1
                writer.close()
                reader, writer = await asyncio.open_connection(host, port)
                continue
            done = time.perf_counter()
            if sent < start_at or done > stop_at:
                continue  # warm-up, or finished after the measured period
            result.requests += 1
            result.statuses[status] = result.statuses.get(status, 0) + 1
            if status in ok_status:
                result.ok += 1
                result.latencies.append(done - sent)
                result.units += count(body) if count else 1
    finally:
        writer.close()


async def _run(
    host: str,
    port: int,
    requests: Sequence[bytes],
    connections: int,
    warmup: float,
    duration: float,
    count: Callable[[bytes], int] | None,
    ok_status: tuple[int, ...],
) -> LoadResult:
    result = LoadResult(duration=duration)
    now = time.perf_counter()
    start_at, stop_at = now + warmup, now + warmup + duration
    step = max(1, len(requests) // max(connections, 1))
    await asyncio.gather(
        *(
            _connection(host, port, requests, c * step, start_at, stop_at, count, result, ok_status)
            for c in range(connections)
        )
    )
    return result


def run_load(
    host: str,
    port: int,
    requests: Sequence[bytes],
    *,
    connections: int,
    warmup: float,
    duration: float,
    count: Callable[[bytes], int] | None = None,
    ok_status: tuple[int, ...] = (200,),
) -> LoadResult:
    """Drive ``connections`` keep-alive connections for ``warmup + duration`` seconds; measure the last ``duration``.

    Requests are taken round-robin from ``requests``; only ``ok_status`` responses (200) count as done, and
    ``count(body)`` (default 1) says how many units (events) such a response stands for.
    """
    return asyncio.run(_run(host, port, requests, connections, warmup, duration, count, ok_status))

"""The uvicorn configuration of ``sitelens serve``, with a deadline for slow clients, and its start-up heap set aside.

uvicorn closes a keep-alive connection that stays idle (``timeout_keep_alive``) but has no limit on how
long a client may take to send a request: a connection that trickles one header byte at a time, or
opens and sends nothing, is held forever. The protocols here give every request a deadline from its
first byte (or from the connection opening) until its body is complete; a request still unfinished
then has its connection closed. Once the request is in, the deadline no longer applies, so a slow
query is never cut off.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from api_backend.settings import Settings

__all__ = ["MAX_HEADER_BYTES", "deadline_protocol", "server_config", "set_start_up_heap_aside"]

# Largest request head (request line and headers) accepted; real browsers send a few KiB.
MAX_HEADER_BYTES = 16 * 1024


class _RequestDeadline:
    """Closes the connection when a request is not complete ``request_timeout`` seconds after it began."""

    request_timeout: float = 30.0
    _deadline: asyncio.TimerHandle | None = None
    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport

    def _arm_deadline(self) -> None:
        if self._deadline is None and not self.transport.is_closing():
            self._deadline = self.loop.call_later(self.request_timeout, self._deadline_passed)

    def _disarm_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _deadline_passed(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            self.transport.close()


class _DeadlineH11Protocol(_RequestDeadline, H11Protocol):
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_deadline()

    def data_received(self, data: bytes) -> None:
        self._arm_deadline()
        super().data_received(data)
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
            self._disarm_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_deadline()
        super().connection_lost(exc)


def _httptools_protocol() -> type[Any] | None:
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # httptools is optional in uvicorn
        return None

    class _DeadlineHttpToolsProtocol(_RequestDeadline, HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm_deadline()

        def data_received(self, data: bytes) -> None:
            self._arm_deadline()
            super().data_received(data)

        def on_message_complete(self) -> None:
            self._disarm_deadline()
            super().on_message_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_deadline()
            super().connection_lost(exc)

    return _DeadlineHttpToolsProtocol


def deadline_protocol(request_timeout: float) -> type[Any]:
    """uvicorn's fastest available HTTP/1.1 protocol with a ``request_timeout`` deadline per request."""
    base = _httptools_protocol() or _DeadlineH11Protocol
    return type("DeadlineHTTPProtocol", (base,), {"request_timeout": float(request_timeout)})


def server_config(app: Any, settings: Settings, host: str, port: int, **extra: Any) -> uvicorn.Config:
    """The uvicorn ``Config`` of one sitelens process: one worker, deadlines and header limits from ``settings``."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        workers=1,
        access_log=settings.access_log,
        http=deadline_protocol(settings.request_timeout),
        timeout_keep_alive=settings.keep_alive_timeout,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        # uvicorn would otherwise take the client's address from X-Forwarded-For on every connection from
        # 127.0.0.1, whatever SITELENS_TRUST_PROXY says; the routes read that header themselves when it says so.
        proxy_headers=False,
        **extra,
    )


def set_start_up_heap_aside() -> None:
    """Leave the objects built at start-up out of the cyclic collector's passes; call once the app is built.

    The process holds about 230,000 container objects once the API and the dashboard are loaded (modules,
    routes, models, the dashboard's component classes), none of which ever becomes garbage. Every full collection
    walked them all, with the event loop stopped: 120-165 ms each, 30 of them in 40 s of the single-event load,
    which made that load's p99 latency (130-160 ms). ``gc.freeze`` moves them to a generation the collector
    never visits; objects made later are collected as before.
    """
    gc.collect()
    gc.freeze()

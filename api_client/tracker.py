"""Server-side trackers: send pageviews and custom events to ``{analytics_host}/track``.

The wire format is the one of ``@rybbit/node`` 1.0.0, so either client works against either server::

    {"site_id": "<str>", "type": "pageview" | "custom_event", "api_key": "<key>", ...payload,
     "event_name": "<name>", "properties": "<JSON-encoded object, only when non-empty>"}

plus the key in an ``Authorization: Bearer`` header. Two flavours:

- ``AsyncTracker``: ``await tracker.pageview(...)`` / ``await tracker.event(...)`` send at once and return a
  ``TrackResult``.
- ``Tracker``: for plain code. ``pageview``/``event`` put the event on a bounded queue and return ``True``
  (``False`` when the queue is full); a daemon thread sends with retries and backoff. ``flush()`` waits for
  the queue to drain, ``close()`` flushes and stops (also run at interpreter exit).

Bad options raise ``ValueError`` in the constructor; bad ``properties`` raise ``TypeError`` at the call.
Network and server failures never raise: they are logged (printed too with ``debug=True``) and reported
in the ``TrackResult``. Debug output masks the API key.
"""

from __future__ import annotations

import atexit
import json
import logging
import queue
import random
import threading
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

__all__ = ["AsyncTracker", "TrackResult", "Tracker"]

log = logging.getLogger("api_client.tracker")

DEFAULT_TIMEOUT = 10.0
_PROPERTY_SCALARS = (str, int, float, bool)


@dataclass(frozen=True)
class TrackResult:
    """What happened to one send: ``ok`` (2xx), the HTTP ``status`` (``None`` without a response), ``error``."""

    ok: bool
    status: int | None = None
    error: str | None = None


def _mask(key: str) -> str:
    return key[:6] + "..." if len(key) > 6 else "***"


def _check_host(analytics_host: Any) -> str:
    if not isinstance(analytics_host, str) or not analytics_host.strip():
        raise ValueError(
            "analytics_host is required and must be a non-empty string (e.g. https://stats.example.com/api)."
        )
    host = analytics_host.strip()
    parts = urlsplit(host)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"analytics_host must be an http(s) URL, got {analytics_host!r}.")
    return host[:-1] if host.endswith("/") else host


def _check_site_id(site_id: Any) -> str:
    if isinstance(site_id, bool):
        raise ValueError("site_id must be a non-empty string or a positive integer.")
    if isinstance(site_id, int):
        if site_id < 1:
            raise ValueError("site_id must be a non-empty string or a positive integer.")
        return str(site_id)
    if isinstance(site_id, str) and site_id.strip():
        return site_id.strip()
    raise ValueError("site_id is required and must be a non-empty string or a positive integer.")


def _check_api_key(api_key: Any) -> str:
    if not isinstance(api_key, str) or not api_key.strip():
        raise ValueError("api_key is required and must be a non-empty string.")
    return api_key


def _check_properties(properties: Mapping[str, Any] | None) -> dict[str, Any]:
    """Values must be str, int, float, bool or lists of those; anything else is a ``TypeError``."""
    if properties is None:
        return {}
    if not isinstance(properties, Mapping):
        raise TypeError(f"properties must be a mapping, not {type(properties).__name__}.")
    checked: dict[str, Any] = {}
    for key, value in properties.items():
        if not isinstance(key, str):
            raise TypeError(f"property names must be strings, not {type(key).__name__}.")
        if isinstance(value, list | tuple):
            for item in value:
                if not isinstance(item, _PROPERTY_SCALARS):
                    raise TypeError(
                        f"property {key!r} holds a {type(item).__name__}; lists may hold str, int, float, bool."
                    )
            value = list(value)
        elif not isinstance(value, _PROPERTY_SCALARS):
            raise TypeError(
                f"property {key!r} is a {type(value).__name__}; use str, int, float, bool or a list of those."
            )
        checked[key] = value
    return checked


def _check_payload(payload: Mapping[str, Any] | None) -> dict[str, Any]:
    if payload is None:
        return {}
    if not isinstance(payload, Mapping):
        raise TypeError(f"payload must be a mapping, not {type(payload).__name__}.")
    return {k: v for k, v in payload.items() if v is not None}


class _Base:
    """Options and the wire format shared by both trackers."""

    def __init__(self, analytics_host: str, site_id: str | int, api_key: str, debug: bool = False) -> None:
        self.analytics_host = _check_host(analytics_host)
        self.site_id = _check_site_id(site_id)
        self._api_key = _check_api_key(api_key)
        self.debug = bool(debug)
        self.endpoint = f"{self.analytics_host}/track"
        self._headers = {"Authorization": f"Bearer {self._api_key}", "Content-Type": "application/json"}
        self._say(f"initialized: endpoint={self.endpoint} site_id={self.site_id} api_key={_mask(self._api_key)}")

    def __repr__(self) -> str:
        name = type(self).__name__
        return f"{name}({self.analytics_host!r}, site_id={self.site_id!r}, api_key={_mask(self._api_key)!r})"

    def _say(self, message: str, *, error: bool = False) -> None:
        if error:
            log.warning("%s", message)
        else:
            log.debug("%s", message)
        if self.debug:
            print(f"[sitelens{' error' if error else ''}] {message}")

    def _pageview_body(self, payload: Mapping[str, Any] | None) -> dict[str, Any]:
        return {"site_id": self.site_id, "type": "pageview", "api_key": self._api_key, **_check_payload(payload)}

    def _event_body(
        self, event_name: str, payload: Mapping[str, Any] | None, properties: Mapping[str, Any] | None
    ) -> dict[str, Any] | None:
        props = _check_properties(properties)
        body = {"site_id": self.site_id, "type": "custom_event", "api_key": self._api_key, **_check_payload(payload)}
        if not isinstance(event_name, str) or not event_name.strip():
            self._say("event() needs a non-empty event_name; nothing was sent.", error=True)
            return None
        body["event_name"] = event_name
        if props:
            body["properties"] = json.dumps(props, separators=(",", ":"))
        return body

    def _result(self, response: httpx.Response) -> TrackResult:
        if response.is_success:
            self._say(f"sent: {response.status_code} {response.text[:200]}")
            return TrackResult(True, response.status_code)
        error = f"{response.status_code} {response.reason_phrase}: {response.text[:500]}"
        self._say(f"error sending event: {error}", error=True)
        return TrackResult(False, response.status_code, error)

    def _failure(self, exc: Exception) -> TrackResult:
        error = f"{type(exc).__name__}: {exc}"
        self._say(f"failed to send event: {error}", error=True)
        return TrackResult(False, None, error)


class AsyncTracker(_Base):
    """Sends each event as it is tracked (``await``-able); use one per process and ``aclose()`` it at the end."""

    def __init__(
        self,
        analytics_host: str,
        site_id: str | int,
        api_key: str,
        debug: bool = False,
        *,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(analytics_host, site_id, api_key, debug)
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(transport=transport, timeout=timeout)

    async def pageview(self, payload: Mapping[str, Any] | None = None) -> TrackResult:
        """Send a pageview; ``payload`` keys as the API's (``pathname``, ``hostname``, ``user_agent``...)."""
        return await self._send(self._pageview_body(payload))

    async def event(
        self,
        event_name: str,
        payload: Mapping[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
    ) -> TrackResult:
        """Send a custom event named ``event_name`` with optional ``properties``."""
        body = self._event_body(event_name, payload, properties)
        if body is None:
            return TrackResult(False, None, "event_name is required")
        return await self._send(body)

    async def _send(self, body: dict[str, Any]) -> TrackResult:
        self._say(f"POST {self.endpoint} type={body.get('type')} event_name={body.get('event_name', '')!r}")
        try:
            response = await self._client.post(self.endpoint, json=body, headers=self._headers)
        except Exception as exc:  # never raise into the caller's request handling
            return self._failure(exc)
        return self._result(response)

    async def aclose(self) -> None:
        """Close the HTTP client if this tracker created it."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncTracker:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


_LIVE_TRACKERS: weakref.WeakSet[Tracker] = weakref.WeakSet()


@atexit.register
def _close_live_trackers() -> None:
    for tracker in list(_LIVE_TRACKERS):
        tracker.close(timeout=5.0)


class Tracker(_Base):
    """Queue-backed tracker for synchronous code: calls return at once, a daemon thread does the sending."""

    def __init__(
        self,
        analytics_host: str,
        site_id: str | int,
        api_key: str,
        debug: bool = False,
        *,
        client: httpx.Client | None = None,
        transport: httpx.BaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_queue_size: int = 10_000,
        max_retries: int = 3,
        backoff: float = 0.5,
    ) -> None:
        super().__init__(analytics_host, site_id, api_key, debug)
        if max_queue_size < 1:
            raise ValueError("max_queue_size must be at least 1.")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more.")
        self._owns_client = client is None
        self._client = client or httpx.Client(transport=transport, timeout=timeout)
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(max_queue_size)
        self._max_retries = max_retries
        self._backoff = backoff
        self._closed = False
        self.last_result: TrackResult | None = None
        self.sent = 0
        self.failed = 0
        self._thread = threading.Thread(target=self._run, name="sitelens-tracker", daemon=True)
        self._thread.start()
        _LIVE_TRACKERS.add(self)

    def pageview(self, payload: Mapping[str, Any] | None = None) -> bool:
        """Queue a pageview; ``False`` when the queue is full or the tracker is closed."""
        return self._enqueue(self._pageview_body(payload))

    def event(
        self,
        event_name: str,
        payload: Mapping[str, Any] | None = None,
        properties: Mapping[str, Any] | None = None,
    ) -> bool:
        """Queue a custom event; ``False`` when it cannot be queued (full queue, closed, no name)."""
        body = self._event_body(event_name, payload, properties)
        return body is not None and self._enqueue(body)

    def _enqueue(self, body: dict[str, Any]) -> bool:
        if self._closed:
            self._say("tracker is closed; event dropped.", error=True)
            return False
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            self._say("queue is full; event dropped.", error=True)
            return False
        return True

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            try:
                if body is None:
                    return
                result = self._send_with_retries(body)
                self.last_result = result
                if result.ok:
                    self.sent += 1
                else:
                    self.failed += 1
            finally:
                self._queue.task_done()

    def _send_with_retries(self, body: dict[str, Any]) -> TrackResult:
        attempt = 0
        while True:
            try:
                result = self._result(self._client.post(self.endpoint, json=body, headers=self._headers))
            except Exception as exc:  # the sender thread must survive anything
                result = self._failure(exc)
            retryable = result.status is None or result.status == 429 or result.status >= 500
            if result.ok or not retryable or attempt >= self._max_retries or self._closed and attempt >= 1:
                return result
            # Exponential backoff with jitter, so many processes do not retry in step.
            time.sleep(self._backoff * (2**attempt) * (0.5 + random.random()))
            attempt += 1

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued event was sent (or gave up); ``False`` if ``timeout`` ran out first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._queue.all_tasks_done.wait(remaining)
        return True

    def close(self, timeout: float | None = 10.0) -> None:
        """Send what is queued (up to ``timeout`` seconds), stop the thread and close the HTTP client."""
        if self._closed:
            return
        self.flush(timeout)
        self._closed = True
        try:
            self._queue.put(None, timeout=1)
        except queue.Full:
            pass
        self._thread.join(timeout=1 if timeout is None else max(timeout, 1))
        if self._owns_client:
            self._client.close()
        _LIVE_TRACKERS.discard(self)

    def __enter__(self) -> Tracker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

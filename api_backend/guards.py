"""ASGI guards around the whole app: unexpected faults answered cleanly, and the security headers of every answer.

``FaultGuard`` sits just inside Starlette's outermost error middleware. That middleware, when it handles
an exception, answers and then re-raises it, so the server logs a long traceback and drops the
keep-alive connection without saying ``Connection: close``: the client's next pooled request fails.
Here the fault is answered with the contract's 500 body and not re-raised, so the connection stays
usable; the log gets one line with the request id at ERROR and the traceback only at DEBUG.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api_backend.errors import APIError

__all__ = ["API_CSP", "FaultGuard", "SecurityHeaders", "fault_response", "log_fault", "secured"]

log = logging.getLogger("sitelens")


def log_fault(exc: BaseException, method: str, path: str) -> str:
    """Log an unexpected fault in one line (traceback at DEBUG); return the request id given to the client."""
    request_id = uuid.uuid4().hex
    log.error("request %s failed (%s %s): %s", request_id, method, path, type(exc).__name__)
    log.debug("request %s traceback", request_id, exc_info=exc)
    return request_id


def fault_response(request_id: str) -> JSONResponse:
    """The contract's 500 body carrying ``request_id``."""
    body = APIError("Internal server error.").body()
    body["requestId"] = request_id
    return JSONResponse(body, status_code=500)


class FaultGuard:
    """Answers an exception no handler took with the contract's 500, keeping the connection usable."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            request_id = log_fault(exc, scope.get("method", ""), scope.get("path", ""))
            if started:
                # Half an answer is out: only closing the connection can tell the client it is incomplete.
                raise
            await fault_response(request_id)(scope, receive, send)


# JSON answers load nothing and belong in no frame.
API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
_COMMON_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    # Share links carry a private key in their query: never send the URL to another origin.
    (b"referrer-policy", b"same-origin"),
)
_API_CSP_BYTES = API_CSP.encode()


def secured(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """``headers`` (raw ASGI pairs) with the security headers they lack added, ``API_CSP`` as the default CSP."""
    out = list(headers)
    present = {name.lower() for name, _ in out}
    out += [(name, value) for name, value in _COMMON_HEADERS if name not in present]
    if b"content-security-policy" not in present:
        out.append((b"content-security-policy", _API_CSP_BYTES))
    return out


class SecurityHeaders:
    """Adds ``nosniff``, ``X-Frame-Options: DENY``, ``Referrer-Policy`` and a CSP to every answer that lacks them.

    Pages that run scripts (the dashboard, the API docs) set their own CSP; everything else gets ``API_CSP``.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": secured(message.get("headers", []))}
            await send(message)

        await self.app(scope, receive, send_with_headers)

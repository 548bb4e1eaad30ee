"""Every way a call through ``AnalyticsAPI`` can fail, as one exception tree.

    APIError (any failure; ``status``, ``code``, ``message``, ``details``, ``request_id``)
    +-- ValidationError       400 INVALID_REQUEST (``details``: one ``{field, message}`` per bad field)
    +-- AuthenticationError   401 AUTHENTICATION_REQUIRED (no credential, or an unknown/revoked/expired one)
    +-- ForbiddenError        403 FORBIDDEN (the role is too low for this action)
    +-- NotFoundError         404 NOT_FOUND (unknown route, site, goal, organization, or no access at all)
    +-- ConflictError         409 CONFLICT (e.g. the same domain twice in one organization)
    +-- RateLimitError        429 RATE_LIMITED (``retry_after`` seconds, from ``Retry-After``)
    +-- ServerError           5xx (``request_id`` names the failed request in the server log)
    +-- APIConnectionError    no usable answer: refused connection, DNS failure, timeout, broken transfer

Other statuses (405, 413, 415, ...) and success answers that are not the documented JSON raise the base
``APIError`` itself, so ``except APIError`` catches every failure and the client never leaks a raw
``httpx`` or ``pydantic`` exception.
"""

from __future__ import annotations

import email.utils
import json
from datetime import UTC, datetime
from typing import Any

import httpx

__all__ = [
    "APIConnectionError",
    "APIError",
    "AuthenticationError",
    "ConflictError",
    "ForbiddenError",
    "NotFoundError",
    "RateLimitError",
    "ServerError",
    "ValidationError",
    "error_from_response",
]


class APIError(Exception):
    """Base of every client failure: the HTTP status (``None`` without an answer) and the contract's error body."""

    default_code = "API_ERROR"

    def __init__(
        self,
        status: int | None,
        code: str | None,
        message: str,
        details: list[dict[str, str]] | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code or self.default_code
        self.details: list[dict[str, str]] = list(details or [])
        self.request_id = request_id

    def __str__(self) -> str:
        prefix = f"{self.status} {self.code}" if self.status is not None else self.code
        return f"{prefix}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status!r}, code={self.code!r}, message={self.message!r})"

    def field_messages(self) -> dict[str, str]:
        """``{field: message}`` from ``details`` (the first message wins when a field repeats)."""
        out: dict[str, str] = {}
        for item in self.details:
            out.setdefault(item.get("field", ""), item.get("message", ""))
        return out


class ValidationError(APIError):
    """400: the request was refused as invalid; ``details`` names each bad field."""

    default_code = "INVALID_REQUEST"


class AuthenticationError(APIError):
    """401: no credential was sent, or it is unknown, revoked or expired."""

    default_code = "AUTHENTICATION_REQUIRED"


class ForbiddenError(APIError):
    """403: the credential is valid but its role does not allow this action."""

    default_code = "FORBIDDEN"


class NotFoundError(APIError):
    """404: unknown route or resource, or one the caller has no access to at all."""

    default_code = "NOT_FOUND"


class ConflictError(APIError):
    """409: the change conflicts with an existing resource."""

    default_code = "CONFLICT"


class RateLimitError(APIError):
    """429: too many requests; ``retry_after`` is the number of seconds to wait (``None`` if not given)."""

    default_code = "RATE_LIMITED"

    def __init__(
        self,
        status: int | None,
        code: str | None,
        message: str,
        details: list[dict[str, str]] | None = None,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(status, code, message, details, request_id)
        self.retry_after = retry_after


class ServerError(APIError):
    """5xx: the server failed; quote ``request_id`` when reporting it."""

    default_code = "INTERNAL_ERROR"


class APIConnectionError(APIError):
    """No HTTP answer: the server could not be reached, or it did not answer within the timeout."""

    default_code = "CONNECTION_ERROR"


_BY_STATUS: dict[int, type[APIError]] = {
    400: ValidationError,
    # Some servers of the same API family answer validation failures with 422.
    422: ValidationError,
    401: AuthenticationError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
}


def _details(raw: Any) -> list[dict[str, str]]:
    """Normalise ``details`` to ``[{field, message}]`` (peers send zod issues with a ``path`` list instead)."""
    if not isinstance(raw, list):
        return []
    out = []
    for item in raw:
        if not isinstance(item, dict):
            out.append({"field": "", "message": str(item)})
            continue
        field = item.get("field")
        if field is None and isinstance(item.get("path"), list):
            field = ".".join(str(part) for part in item["path"])
        out.append({"field": str(field or ""), "message": str(item.get("message") or item.get("msg") or "")})
    return out


def _retry_after(response: httpx.Response, body: dict[str, Any]) -> float | None:
    """Seconds to wait, from ``Retry-After`` (seconds or an HTTP date) or a ``retryAfter`` body field."""
    header = response.headers.get("retry-after")
    if header:
        try:
            return max(float(header), 0.0)
        except ValueError:
            try:
                when = email.utils.parsedate_to_datetime(header)
            except (TypeError, ValueError):
                when = None
            if when is not None:
                if when.tzinfo is None:
                    when = when.replace(tzinfo=UTC)
                return max((when - datetime.now(UTC)).total_seconds(), 0.0)
    value = body.get("retryAfter")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def error_from_response(response: httpx.Response) -> APIError:
    """The exception for a non-2xx answer, built from the contract's ``{error, code, details?}`` body."""
    status = response.status_code
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError):
        body = None
    if not isinstance(body, dict):
        body = {}
    message = body.get("error") or body.get("message")
    if not isinstance(message, str) or not message:
        message = response.reason_phrase or f"HTTP {status}"
    code = body.get("code") if isinstance(body.get("code"), str) else None
    request_id = body.get("requestId") or response.headers.get("x-request-id")
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else APIError)
    details = _details(body.get("details"))
    rid = str(request_id) if request_id else None
    if cls is RateLimitError:
        return RateLimitError(status, code, message, details, rid, retry_after=_retry_after(response, body))
    if cls is APIError and code is None:
        code = f"HTTP_{status}"
    return cls(status, code, message, details, rid)

"""The sitelens exception tree and the one function that builds every JSON error body.

    APIError (500 INTERNAL_ERROR)
    +-- InvalidRequestError (400 INVALID_REQUEST)
    +-- AuthenticationRequiredError (401 AUTHENTICATION_REQUIRED)
    +-- ForbiddenError (403 FORBIDDEN)
    +-- NotFoundError (404 NOT_FOUND)
    +-- MethodNotAllowedError (405 METHOD_NOT_ALLOWED)
    +-- ConflictError (409 CONFLICT)
    +-- PayloadTooLargeError (413 PAYLOAD_TOO_LARGE)
    +-- UnsupportedMediaTypeError (415 UNSUPPORTED_MEDIA_TYPE)
    +-- RateLimitedError (429 RATE_LIMITED, sets Retry-After)
    +-- ServiceUnavailableError (503 SERVICE_UNAVAILABLE, sets Retry-After)

Code below the routes raises these; ``api_backend.app`` turns them (and framework errors) into
``{"error", "code", "details"?}`` responses. The stores raise HTTP-free exceptions of their own
(``api_backend.store.errors``); ``for_record_error`` gives the answer each one gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from api_backend.store.errors import RecordConflictError, RecordError, RecordInvalidError, RecordNotFoundError

__all__ = [
    "APIError",
    "AuthenticationRequiredError",
    "ConflictError",
    "FieldError",
    "ForbiddenError",
    "InvalidRequestError",
    "MethodNotAllowedError",
    "NotFoundError",
    "PayloadTooLargeError",
    "RateLimitedError",
    "ServiceUnavailableError",
    "UnsupportedMediaTypeError",
    "error_body",
    "for_record_error",
]


@dataclass(frozen=True)
class FieldError:
    """One bad field: ``field`` is a dotted path such as ``config.pathPattern``."""

    field: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


def error_body(message: str, code: str, details: list[FieldError] | None = None, **extra: Any) -> dict[str, Any]:
    """The JSON body of every error response."""
    body: dict[str, Any] = {"error": message, "code": code}
    if details:
        body["details"] = [d.as_dict() for d in details]
    body.update(extra)
    return body


class APIError(Exception):
    """Base of every error that becomes an HTTP response."""

    status = 500
    code = "INTERNAL_ERROR"
    default_message = "Internal server error."

    def __init__(self, message: str | None = None, details: list[FieldError] | None = None) -> None:
        self.message = message or self.default_message
        self.details = details or []
        super().__init__(self.message)

    def headers(self) -> dict[str, str]:
        return {}

    def body(self) -> dict[str, Any]:
        return error_body(self.message, self.code, self.details)


class InvalidRequestError(APIError):
    status = 400
    code = "INVALID_REQUEST"
    default_message = "The request is not valid."

    @classmethod
    def for_field(cls, field: str, message: str) -> InvalidRequestError:
        """A 400 about one field, with the sentence naming it."""
        return cls(f"{field}: {message}", [FieldError(field, message)])


class AuthenticationRequiredError(APIError):
    status = 401
    code = "AUTHENTICATION_REQUIRED"
    default_message = "Authentication is required: send a valid credential."


class ForbiddenError(APIError):
    status = 403
    code = "FORBIDDEN"
    default_message = "Your role does not allow this action."


class NotFoundError(APIError):
    status = 404
    code = "NOT_FOUND"
    default_message = "Not found."


class MethodNotAllowedError(APIError):
    status = 405
    code = "METHOD_NOT_ALLOWED"
    default_message = "This method is not allowed on this route."

    def __init__(self, message: str | None = None, allow: list[str] | None = None) -> None:
        super().__init__(message)
        self.allow = allow or []

    def headers(self) -> dict[str, str]:
        """``Allow`` lists the methods the route answers (RFC 9110 requires it on a 405)."""
        return {"Allow": ", ".join(self.allow)} if self.allow else {}


class ConflictError(APIError):
    status = 409
    code = "CONFLICT"
    default_message = "This conflicts with an existing resource."


class PayloadTooLargeError(APIError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"
    default_message = "The request body is too large."


class UnsupportedMediaTypeError(APIError):
    status = 415
    code = "UNSUPPORTED_MEDIA_TYPE"
    default_message = "The request body must be JSON (Content-Type: application/json)."


class RateLimitedError(APIError):
    status = 429
    code = "RATE_LIMITED"
    default_message = "Too many requests; try again later."

    def __init__(self, message: str | None = None, retry_after: int = 60) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class ServiceUnavailableError(APIError):
    """The request was fine but cannot be served now (the event log cannot be written); nothing was stored."""

    status = 503
    code = "SERVICE_UNAVAILABLE"
    default_message = "Events cannot be stored right now; nothing was stored, try again later."

    def __init__(self, message: str | None = None, retry_after: int = 30) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


def for_record_error(exc: RecordError) -> APIError:
    """The API's answer to a store's refusal: 404 for a missing record, 409 for a clash, 400 naming the field."""
    if isinstance(exc, RecordNotFoundError):
        return NotFoundError(exc.message)
    if isinstance(exc, RecordConflictError):
        return ConflictError(exc.message)
    if isinstance(exc, RecordInvalidError) and exc.field:
        return InvalidRequestError.for_field(exc.field, exc.reason)
    return InvalidRequestError(exc.message)

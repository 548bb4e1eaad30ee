"""``create_app(settings)``: builds the FastAPI app, binds the stores, registers routers and the error model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api_backend.docs import install_docs
from api_backend.errors import (
    APIError,
    FieldError,
    InvalidRequestError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    UnsupportedMediaTypeError,
    error_body,
    for_record_error,
)
from api_backend.guards import FaultGuard, SecurityHeaders, fault_response, log_fault, secured
from api_backend.openapi import install_openapi
from api_backend.routes import ROUTERS
from api_backend.routes.track import track, track_batch
from api_backend.services import Services, open_services
from api_backend.settings import Settings
from api_backend.store.errors import RecordError
from api_backend.throttle import LoginThrottle

__all__ = ["create_app"]


KIB = 1024
BODY_LIMITS = {"/api/track": 64 * KIB, "/api/track/batch": 5 * KIB * KIB}
DEFAULT_BODY_LIMIT = KIB * KIB
# Routes the browser tracker calls from other origins (CORS open, text/plain bodies from sendBeacon accepted).
TRACKER_ROUTES = ("/api/track", "/api/track/batch", "/api/identify", "/api/site/tracking-config/")


def _is_tracker_route(path: str) -> bool:
    return any(path == r or (r.endswith("/") and path.startswith(r)) for r in TRACKER_ROUTES)


def _json_error(exc: APIError, request_id: str | None = None) -> JSONResponse:
    body = exc.body()
    if request_id:
        body["requestId"] = request_id
    return JSONResponse(body, status_code=exc.status, headers=exc.headers())


def _too_large(limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(f"The request body is larger than {limit // KIB} KiB.")


def _media_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _is_json(media_type: str) -> bool:
    return media_type == "application/json" or media_type.endswith("+json")


def _media_refused(path: str, media_type: str, body: bytes) -> bool:
    """Whether a body must be refused (415): not JSON, unless text/plain or untyped on a tracker route (sendBeacon)."""
    return (
        bool(body.strip())
        and not _is_json(media_type)
        and not (_is_tracker_route(path) and media_type in {"text/plain", ""})
    )


async def _read_body(receive: Receive, limit: int) -> bytes | None:
    """The whole request body, or ``None`` when the client went away; ``PayloadTooLargeError`` over ``limit``."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app ``body`` (already read) first, then whatever the client sends next."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _cors_headers(origin: bytes) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin),
        (b"access-control-allow-credentials", b"true"),
        (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
        (b"access-control-allow-headers", b"Content-Type, Authorization, X-Requested-With"),
        (b"access-control-max-age", b"86400"),
        (b"vary", b"Origin"),
    ]


def _origin(scope: Scope) -> bytes:
    return next((v for k, v in scope["headers"] if k == b"origin"), b"*")


class BodyGuard:
    """Refuses non-JSON bodies (415) and bodies over the route's limit (413) before any handler runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in {"POST", "PUT", "PATCH"}:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if not path.startswith("/api/"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        limit = BODY_LIMITS.get(path, DEFAULT_BODY_LIMIT)
        length = headers.get("content-length")
        try:
            if length is not None and length.isdigit() and int(length) > limit:
                raise _too_large(limit)
            body = await _read_body(receive, limit)
        except PayloadTooLargeError as exc:
            await _json_error(exc)(scope, receive, send)
            return
        if body is None:
            return
        media_type = _media_type(headers.get("content-type", ""))
        if _media_refused(path, media_type, body):
            await _json_error(UnsupportedMediaTypeError())(scope, receive, send)
            return
        if not _is_json(media_type) and body.strip():
            # sendBeacon posts JSON as text/plain: let the route parse it as JSON.
            scope = dict(scope)
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-type"] + [
                (b"content-type", b"application/json")
            ]
        await self.app(scope, _replay(body, receive), send)


class TrackerCORS:
    """Open CORS for the routes the browser tracker calls from the tracked site's origin."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_tracker_route(scope["path"]):
            await self.app(scope, receive, send)
            return
        cors = _cors_headers(_origin(scope))
        if scope["method"] == "OPTIONS":
            await send({"type": "http.response.start", "status": 204, "headers": cors})
            await send({"type": "http.response.body", "body": b""})
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message)
                message["headers"] = list(message.get("headers", [])) + cors
            await send(message)

        await self.app(scope, receive, send_with_cors)


TRACK_HANDLERS: dict[str, Callable[[Request], Awaitable[Response]]] = {
    "/api/track": track,
    "/api/track/batch": track_batch,
}


async def serve_tracking(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer ``POST /api/track`` or ``POST /api/track/batch`` in one step, as the guarded stack would.

    These are the busiest routes by far. Through the app's stack each of their requests passes a dozen ASGI
    layers, each a coroutine and most wrapping ``send`` once more. Here the request gets, in one place, what
    those layers give it: the body limit (413) and media type rules (415) of ``BodyGuard``, the open CORS of
    ``TrackerCORS``, the security headers of ``SecurityHeaders``, the contract's error bodies and the 500 of
    ``FaultGuard`` (with its request id). FastAPI's own telemetry middleware does not see these requests.
    """
    path: str = scope["path"]
    length = content_type = b""
    for name, value in scope["headers"]:
        if name == b"content-length":
            length = value
        elif name == b"content-type":
            content_type = value
    limit = BODY_LIMITS[path]
    response: Response
    try:
        if length.isdigit() and int(length) > limit:
            raise _too_large(limit)
        body = await _read_body(receive, limit)
        if body is None:
            return
        if _media_refused(path, _media_type(content_type.decode("latin-1")), body):
            raise UnsupportedMediaTypeError()
        response = await TRACK_HANDLERS[path](Request(scope, _replay(body, receive)))
    except APIError as exc:
        response = _json_error(exc)
    except RecordError as exc:
        response = _json_error(for_record_error(exc))
    except Exception as exc:
        response = fault_response(log_fault(exc, "POST", path))
    headers = secured(response.raw_headers + _cors_headers(_origin(scope)))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})


class SitelensAPI(FastAPI):
    """The API's app: the tracking routes are answered by ``serve_tracking`` ahead of the middleware stack."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] in TRACK_HANDLERS:
            scope["app"] = self  # the handlers find the services on ``request.app``
            await serve_tracking(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def _validation_details(exc: RequestValidationError) -> list[FieldError]:
    details = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path", "header")]
        field = ".".join(loc) or "body"
        message = err.get("msg", "is not valid")
        if err.get("type") == "json_invalid":
            field, message = "body", "is not valid JSON"
        elif err.get("type") == "extra_forbidden":
            message = "is not a known field"
        details.append(FieldError(field, message))
    return details


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(APIError)
    async def api_error(request: Request, exc: APIError) -> JSONResponse:
        return _json_error(exc)

    @app.exception_handler(RecordError)
    async def record_error(request: Request, exc: RecordError) -> JSONResponse:
        return _json_error(for_record_error(exc))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = _validation_details(exc)
        first = details[0]
        sentence = "The request body is not valid JSON." if first.message == "is not valid JSON" else None
        return _json_error(InvalidRequestError(sentence or f"{first.field}: {first.message}", details))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return _json_error(NotFoundError(f"No route {request.url.path}."))
        if exc.status_code == 405:
            allow = (exc.headers or {}).get("Allow", "")
            error = MethodNotAllowedError(
                f"{request.method} is not allowed on {request.url.path}.",
                allow=[m.strip() for m in allow.split(",") if m.strip()],
            )
            return _json_error(error)
        if exc.status_code == 400:
            return _json_error(InvalidRequestError(str(exc.detail)))
        return JSONResponse(error_body(str(exc.detail), "INTERNAL_ERROR"), status_code=exc.status_code)


def _unknown_api_route(app: FastAPI) -> Callable[[Request], Awaitable[Any]]:
    async def handler(request: Request) -> Any:
        scope = dict(request.scope)
        # Neither this catch-all nor the dashboard mounted at "/" (path "") says anything about an /api path.
        routes = [r for r in app.router.routes if getattr(r, "path", None) not in ("/api/{rest:path}", "")]
        # Which methods would this path answer? Asked method by method, as included routers do not list theirs.
        allowed = [
            method
            for method in ("GET", "POST", "PUT", "PATCH", "DELETE")
            if any(route.matches(scope | {"method": method})[0] is Match.FULL for route in routes)
        ]
        if allowed:
            raise MethodNotAllowedError(f"{request.method} is not allowed on {request.url.path}.", allow=allowed)
        raise NotFoundError(f"No route {request.method} {request.url.path}.")

    return handler


def create_app(settings: Settings, services: Services | None = None) -> FastAPI:
    """Build the sitelens API on ``settings`` (or on already-open ``services``, which the caller then closes).

    The dashboard is mounted beside it by ``sitelens.mount``, which depends on both.
    """
    owns_services = services is None
    services = services or open_services(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        if owns_services:
            services.close()

    app = SitelensAPI(
        title="sitelens API",
        version="0.1.0",
        summary="Web analytics: ingestion, goals, sessions, errors, usage, channels, sites and sharing.",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.services = services
    app.state.login_throttle = LoginThrottle(per_source=settings.login_attempts_per_ip)
    _install_error_handlers(app)
    install_docs(app, "/api/openapi.json")
    for router in ROUTERS:
        app.include_router(router, prefix="/api")
    app.add_api_route(
        "/api/{rest:path}",
        _unknown_api_route(app),
        methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
        include_in_schema=False,
    )
    install_openapi(app)
    # Added first = innermost. The tracking routes' POSTs never reach these (``SitelensAPI``, ``serve_tracking``).
    app.add_middleware(BodyGuard)
    app.add_middleware(TrackerCORS)
    # Outermost of ours: an unexpected fault anywhere inside gets the contract's 500 on a usable connection.
    app.add_middleware(FaultGuard)
    app.add_middleware(SecurityHeaders)
    return app

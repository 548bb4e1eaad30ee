"""``create_app(settings)``: builds the FastAPI app, binds the stores, registers routers and the error model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
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
from api_backend.guards import FaultGuard, SecurityHeaders, fault_response, log_fault
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
        if length is not None and length.isdigit() and int(length) > limit:
            await _json_error(PayloadTooLargeError(f"The request body is larger than {limit // KIB} KiB."))(
                scope, receive, send
            )
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _json_error(PayloadTooLargeError(f"The request body is larger than {limit // KIB} KiB."))(
                    scope, receive, send
                )
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        media_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        is_json = media_type == "application/json" or media_type.endswith("+json")
        if body.strip() and not is_json and not (_is_tracker_route(path) and media_type in {"text/plain", ""}):
            await _json_error(UnsupportedMediaTypeError())(scope, receive, send)
            return
        if not is_json and body.strip():
            # sendBeacon posts JSON as text/plain: let the route parse it as JSON.
            scope = dict(scope)
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-type"] + [
                (b"content-type", b"application/json")
            ]
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class TrackerCORS:
    """Open CORS for the routes the browser tracker calls from the tracked site's origin."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _is_tracker_route(scope["path"]):
            await self.app(scope, receive, send)
            return
        origin = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"origin"), "*")
        cors = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-allow-credentials", b"true"),
            (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
            (b"access-control-allow-headers", b"Content-Type, Authorization, X-Requested-With"),
            (b"access-control-max-age", b"86400"),
            (b"vary", b"Origin"),
        ]
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


class TrackFastPath:
    """Serves ``POST /api/track`` and ``POST /api/track/batch`` ahead of the router with the routes' own handlers.

    The tracking routes are the busiest by far; skipping route matching and dispatch leaves the request to
    the body and CORS guards, the handler and the event log. Errors get the same bodies as elsewhere.
    """

    HANDLERS = {"/api/track": track, "/api/track/batch": track_batch}

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.HANDLERS.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if handler is None:
            await self.app(scope, receive, send)
            return
        try:
            response = await handler(Request(scope, receive))
        except APIError as exc:
            response = _json_error(exc)
        except RecordError as exc:
            response = _json_error(for_record_error(exc))
        except Exception as exc:
            response = fault_response(log_fault(exc, "POST", scope["path"]))
        await response(scope, receive, send)


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

    app = FastAPI(
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
    # Added first = innermost: the fast path runs inside the body and CORS guards.
    app.add_middleware(TrackFastPath)
    app.add_middleware(BodyGuard)
    app.add_middleware(TrackerCORS)
    # Outermost of ours: an unexpected fault anywhere inside gets the contract's 500 on a usable connection.
    app.add_middleware(FaultGuard)
    app.add_middleware(SecurityHeaders)
    return app

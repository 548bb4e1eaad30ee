"""The OpenAPI document as the API really answers: the error statuses each route sends, never 422.

FastAPI documents a 422 for every route with parameters, but sitelens answers validation errors with
400 and the contract's error body. The statuses are derived from what guards every route: any input
can be a 400; a credential is checked everywhere but the probes and the tracker's config read; ids in
the path can name nothing (404); writes to a site or an organization need a role (403); bodies have
size and media-type limits (413, 415); creating a site can clash (409); sign-in is throttled (429).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

__all__ = ["install_openapi", "operation_statuses"]

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error", "code"],
    "properties": {
        "error": {"type": "string"},
        "code": {"type": "string"},
        "details": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"field": {"type": "string"}, "message": {"type": "string"}},
            },
        },
        "requestId": {"type": "string"},
    },
}
DESCRIPTIONS = {
    "400": "Bad input (INVALID_REQUEST)",
    "401": "No credential, or an unknown, revoked or expired one (AUTHENTICATION_REQUIRED)",
    "403": "The role is too low for this action (FORBIDDEN)",
    "404": "Unknown site, goal, organization or key, or one the caller cannot see (NOT_FOUND)",
    "409": "The same domain twice in one organization (CONFLICT)",
    "413": "The body is over the route's limit (PAYLOAD_TOO_LARGE)",
    "415": "The body is not JSON (UNSUPPORTED_MEDIA_TYPE)",
    "429": "Too many attempts; see Retry-After (RATE_LIMITED)",
}
# Routes that look at no credential at all.
_NO_CREDENTIAL = ("/api/live", "/api/health", "/api/site/tracking-config/")
# Routes that read a raw JSON body (declared or not).
_BODY_ROUTES = ("/api/track", "/api/track/batch", "/api/identify")


def operation_statuses(path: str, method: str, operation: dict[str, Any]) -> list[str]:
    """The error statuses ``method path`` can answer (see the module docstring)."""
    has_body = "requestBody" in operation or path in _BODY_ROUTES
    has_input = bool(operation.get("parameters")) or has_body
    statuses = []
    if has_input:
        statuses.append("400")
    if not path.startswith(_NO_CREDENTIAL):
        statuses.append("401")
    org_or_site = path.startswith(("/api/sites/", "/api/organizations/"))
    if org_or_site and (method != "get" or path.endswith("/private-link-config")):
        statuses.append("403")
    if "{" in path or path in _BODY_ROUTES:
        statuses.append("404")
    if method == "post" and path == "/api/organizations/{organization_id}/sites":
        statuses.append("409")
    if has_body:
        statuses += ["413", "415"]
    if path == "/api/auth/login":
        statuses.append("429")
    return statuses


def _truthful(schema: dict[str, Any]) -> dict[str, Any]:
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_SCHEMA
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    error_ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            responses.pop("422", None)
            for status in operation_statuses(path, method, operation):
                responses.setdefault(status, {"description": DESCRIPTIONS[status], "content": error_ref})
    return schema


def install_openapi(app: FastAPI) -> None:
    """Make ``app`` serve the corrected document (built once, on first request)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
            )
            app.openapi_schema = _truthful(schema)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

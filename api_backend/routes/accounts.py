"""Sign-in, sign-out and the caller's API keys (contract section 2)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Body, Request, status
from pydantic import BaseModel, ConfigDict, Field

from api_backend.auth import CurrentUser, PrincipalDep, ServicesDep
from api_backend.errors import AuthenticationRequiredError, NotFoundError
from api_backend.formats import iso_utc
from api_backend.services import Services
from api_backend.throttle import LoginThrottle

router = APIRouter(tags=["accounts"])


class LoginBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: str = Field(min_length=1, max_length=320)
    password: str = Field(min_length=1, max_length=1024)


class ApiKeyBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=255)


def _source_address(request: Request, services: Services) -> str:
    """The caller's address (the first ``X-Forwarded-For`` entry behind a trusted proxy)."""
    address = request.client.host if request.client else ""
    if services.settings.trust_proxy:
        forwarded = request.headers.get("x-forwarded-for", "").split(",", 1)[0].strip()
        address = forwarded or address
    return address


@router.post("/auth/login")
def login(body: LoginBody, services: ServicesDep, request: Request) -> dict[str, str]:
    """Exchange email and password for an expiring bearer token (throttled: see ``api_backend.throttle``)."""
    throttle: LoginThrottle = request.app.state.login_throttle
    with throttle.attempt(body.email, _source_address(request, services)) as attempt:
        user = services.metadata.check_password(body.email, body.password)
        attempt.failed = user is None
    if user is None:
        raise AuthenticationRequiredError("Wrong email or password.")
    token, expires_at = services.metadata.create_login_token(
        user.id, timedelta(days=services.settings.login_token_days)
    )
    return {"token": token, "expiresAt": iso_utc(expires_at), "userId": user.id, "email": user.email}


@router.post("/auth/logout")
def logout(principal: PrincipalDep, services: ServicesDep) -> dict[str, bool]:
    """Revoke the sign-in token that made this request."""
    if principal.user is None or principal.credential != "token" or principal.token is None:
        raise AuthenticationRequiredError("Sign out needs the sign-in token as the Bearer credential.")
    services.metadata.revoke_login_token(principal.token)
    return {"success": True}


@router.get("/auth/me")
def me(user: CurrentUser) -> dict[str, str]:
    """Who the credential belongs to."""
    return {"userId": user.id, "email": user.email}


@router.post("/user/api-keys", status_code=status.HTTP_201_CREATED)
def create_api_key(body: Annotated[ApiKeyBody, Body()], user: CurrentUser, services: ServicesDep) -> dict[str, str]:
    """Create an API key for the caller; the raw key is in this response only."""
    key, raw = services.metadata.create_api_key(user.id, body.name.strip())
    return {"id": key.id, "name": key.name, "apiKey": raw, "createdAt": iso_utc(key.created_at)}


@router.get("/user/api-keys")
def list_api_keys(user: CurrentUser, services: ServicesDep) -> dict[str, list[dict[str, str | None]]]:
    """The caller's API keys (never the raw key: only its first characters)."""
    return {
        "data": [
            {
                "id": key.id,
                "name": key.name,
                "start": key.start,
                "createdAt": iso_utc(key.created_at),
                "lastUsedAt": iso_utc(key.last_used_at),
            }
            for key in services.metadata.list_api_keys(user.id)
        ]
    }


@router.delete("/user/api-keys/{key_id}")
def delete_api_key(key_id: str, user: CurrentUser, services: ServicesDep) -> dict[str, bool]:
    """Revoke one of the caller's API keys."""
    if not services.metadata.delete_api_key(user.id, key_id):
        raise NotFoundError("API key not found.")
    return {"success": True}

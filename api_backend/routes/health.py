"""``GET /api/health``: liveness and store reachability."""

from __future__ import annotations

from fastapi import APIRouter

from api_backend.auth import ServicesDep

router = APIRouter(tags=["health"])


@router.get("/health")
def health(services: ServicesDep) -> dict[str, object]:
    """Report that the API is up and both stores answer."""
    services.events.query("SELECT 1")
    services.metadata.ping()
    return {"status": "ok", "version": "0.1.0"}

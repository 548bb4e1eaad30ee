"""``GET /api/live`` (the process serves requests) and ``GET /api/health`` (and both stores answer)."""

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


@router.get("/live")
async def live() -> dict[str, str]:
    """Report that the process serves requests, touching nothing else (a liveness probe; ``/health`` is readiness)."""
    return {"status": "ok"}

"""Every API router, in registration order (all mounted under ``/api``)."""

from __future__ import annotations

from api_backend.routes import accounts, health, organizations, sites, track

__all__ = ["ROUTERS"]

ROUTERS = [
    health.router,
    accounts.router,
    organizations.router,
    sites.router,
    track.router,
]

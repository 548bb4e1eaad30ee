"""Every API router, in registration order (all mounted under ``/api``)."""

from __future__ import annotations

from api_backend.routes import (
    accounts,
    funnels,
    goals,
    health,
    js_errors,
    live,
    metric,
    organizations,
    overview,
    script,
    sessions,
    sites,
    track,
    usage,
)

__all__ = ["ROUTERS"]

ROUTERS = [
    health.router,
    accounts.router,
    organizations.router,
    sites.router,
    goals.router,
    js_errors.router,
    usage.router,
    metric.router,
    overview.router,
    sessions.router,
    live.router,
    funnels.router,
    track.router,
    script.router,
]

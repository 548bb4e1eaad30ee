"""Serve the dashboard beside the API in one process (``sitelens serve``).

The dashboard (which reads the API over HTTP through ``api_client``, like any other client) is mounted as a WSGI app
at ``/``. Routes under ``/api`` are registered first, so they keep priority.
"""

from __future__ import annotations

from fastapi import FastAPI

from api_backend.app import create_app
from api_backend.services import Services
from api_backend.settings import Settings

__all__ = ["create_combined_app", "dashboard_api_url", "mount_dashboard"]


def dashboard_api_url(settings: Settings) -> str:
    """The API address the dashboard calls: ``settings.api_url``, else this server on loopback."""
    if settings.api_url:
        return settings.api_url.rstrip("/")
    host = settings.host
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{settings.port}/api"


def mount_dashboard(app: FastAPI, settings: Settings) -> None:
    """Mount the dashboard at ``/`` of ``app``."""
    from dashboard.app import asgi_app, create_dashboard
    from dashboard.settings import DashboardSettings

    dashboard = create_dashboard(
        DashboardSettings(api_url=dashboard_api_url(settings), api_timeout=settings.dashboard_api_timeout)
    )
    app.mount("/", asgi_app(dashboard), name="dashboard")


def create_combined_app(settings: Settings, services: Services | None = None) -> FastAPI:
    """The API under ``/api`` and the dashboard at ``/`` (``services`` as in ``api_backend.app.create_app``)."""
    app = create_app(settings, services)
    mount_dashboard(app, settings)
    return app

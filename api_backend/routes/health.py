"""``GET /api/live`` (the process serves requests) and ``GET /api/health`` (the stores answer and can take events).

``/health`` answers 503 with the reasons when events cannot be stored now (the event log refuses appends,
e.g. on a full disk; this clears by itself once space returns) or when storage needs attention soon: free
space in the data folder below ``SITELENS_STORAGE_ALARM_FREE_MB``, or the event store more than
``BACKLOG_ALARM_ROWS`` rows behind the event log.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api_backend.auth import ServicesDep
from api_backend.services import Services

router = APIRouter(tags=["health"])

VERSION = "0.1.0"
MB = 1024 * 1024
# Half the rows the writer holds before intake waits for the store: past this the store is falling behind.
BACKLOG_ALARM_ROWS = 500_000


def _storage_folders(services: Services) -> list[Path]:
    """The data folder and the event store's folder (when it is a file elsewhere)."""
    folders = [Path(services.settings.data_dir)]
    events_path = services.settings.events_path
    if services.settings.events_url.startswith("duckdb://") and events_path != ":memory:":
        folder = Path(events_path).parent
        if folder not in folders:
            folders.append(folder)
    return folders


def storage_problems(services: Services) -> list[str]:
    """Why the service cannot store events now or soon (empty when all is well)."""
    problems = []
    fault = services.writer.fault()
    if fault:
        problems.append(fault)
    threshold = services.settings.storage_alarm_free_mb
    for folder in _storage_folders(services):
        try:
            stats = os.statvfs(folder)
        except OSError as exc:
            problems.append(f"cannot check free space in {folder} ({exc.strerror or exc})")
            continue
        free_mb = stats.f_bavail * stats.f_frsize // MB
        if free_mb < threshold:
            problems.append(f"only {free_mb} MB free in {folder} (alarm below {threshold} MB)")
    backlog = services.writer.backlog_rows()
    if backlog >= BACKLOG_ALARM_ROWS:
        problems.append(f"the event store is {backlog} rows behind the event log")
    return problems


@router.get(
    "/health",
    responses={503: {"description": "Events cannot be stored now, or storage needs attention (see reasons)"}},
)
def health(services: ServicesDep) -> JSONResponse:
    """Report that the API is up, both stores answer and events can be stored; 503 with ``reasons`` if not."""
    problems = storage_problems(services)
    if problems:
        return JSONResponse({"status": "unavailable", "version": VERSION, "reasons": problems}, status_code=503)
    services.events.query("SELECT 1")
    services.metadata.ping()
    return JSONResponse({"status": "ok", "version": VERSION})


@router.get("/live")
async def live() -> dict[str, str]:
    """Report that the process serves requests, touching nothing else (a liveness probe; ``/health`` is readiness)."""
    return {"status": "ok"}

"""Sessions, timelines, users, live visitors and the previous period answer the same on ClickHouse as on DuckDB."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from api_backend.app import create_app
from api_backend.services import Services
from api_backend.store.events import rows_to_table
from tests.support import make_account, make_site, truth

WINDOW = {"start_date": "2026-03-27", "end_date": "2026-03-30", "time_zone": "Europe/Paris"}
FILTERS = json.dumps([{"parameter": "pathname", "type": "equals", "value": ["/pricing"]}])


def _answers(services: Services, settings: Any, email: str) -> dict[str, Any]:
    owner = make_account(services, email)
    site = make_site(services, owner)
    services.metadata.create_goal(site.site_id, "Signup", "event", {"eventName": "signup"})
    now = datetime.now(UTC).replace(tzinfo=None)
    rows = truth.generate_events(site.site_id, sessions=80)
    recent = {"site_id": site.site_id, "session_id": "now", "user_id": "v", "type": "pageview", "pathname": "/live"}
    services.events.append(rows_to_table([*rows, recent | {"timestamp": now - timedelta(minutes=1)}]))
    user = next(r["identified_user_id"] for r in rows if r.get("identified_user_id"))
    base = f"/api/sites/{site.site_id}"
    calls = {
        "sessions": (f"{base}/sessions", {**WINDOW, "limit": "100"}),
        "filtered": (f"{base}/sessions", {"filters": FILTERS, "limit": "7", "page": "2"}),
        "session": (f"{base}/sessions/{rows[10]['session_id']}", {}),
        "user": (f"{base}/users/{user}", {}),
        "live": (f"{base}/live", {"minutes": "5"}),
        "series": (f"{base}/overview/time-series", {**WINDOW, "bucket": "day", "compare": "previous"}),
    }
    with TestClient(create_app(settings, services)) as client:
        out = {}
        for name, (path, params) in calls.items():
            response = client.get(path, params=params, headers=owner.headers)
            assert response.status_code == 200, (name, response.text)
            out[name] = response.json()
        return out


def test_sessions_clickhouse001_same_answers_as_duckdb(services, settings, chdb_services, chdb_settings) -> None:
    # Both fixtures keep their metadata in the same SQLite file: one account each.
    duck = _answers(services, settings, "duck@example.com")
    house = _answers(chdb_services, chdb_settings, "house@example.com")
    assert duck["sessions"]["totalCount"] > 0 and duck["session"]["data"]["timeline"]
    for name in duck:
        assert house[name] == duck[name], name

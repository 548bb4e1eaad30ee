"""Event data for the dashboard browser tests (no tests here), with the numbers it must produce worked out by hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from api_backend.store.events import rows_to_table

# Ten sessions in the last few days plus one 40 days ago (outside the default 30-day range):
#   channel per session: 0-3 Organic Search, 4-6 direct (""), 7-9 Referral; the old session 10 is direct.
#   /pricing is visited by sessions 0, 1, 4, 7 and by the old session 10.
#   custom event "signup" {"plan": "pro"} in sessions 0 and 7; {"plan": "free"} in session 4.
CHANNELS = ["Organic Search"] * 4 + [""] * 3 + ["Referral"] * 3
PRICING_SESSIONS = {0, 1, 4, 7}
RECENT_SESSIONS = 10
# By hand, for the default 30-day view:
#   path goal /pricing: 4 conversions of 10 sessions (40.0%); direct only: 1 of 3 (33.3%).
#   event goal signup where plan = pro: 2 of 10 (20.0%).
#   with 90 days: 11 sessions, /pricing 5 conversions.


def _event(site_id: int, session: int, at: datetime, **fields: Any) -> dict[str, Any]:
    channel = CHANNELS[session] if session < RECENT_SESSIONS else ""
    return {
        "site_id": site_id,
        "timestamp": at.replace(tzinfo=None),
        "session_id": f"s{session:02d}",
        "user_id": f"u{session:02d}",
        "hostname": "shop.example.com",
        "channel": channel,
        "referrer": "https://www.google.com/" if channel == "Organic Search" else "",
        "browser": "Firefox" if session % 2 else "Chrome",
        "operating_system": "Linux" if session % 2 else "Windows",
        "device_type": "Desktop",
        "country": "DE" if session % 3 else "FR",
        "type": "pageview",
        **fields,
    }


def demo_rows(site_id: int, now: datetime | None = None) -> list[dict[str, Any]]:
    """The events described above; recent sessions start 1-5 days before ``now`` at midday UTC."""
    now = now or datetime.now(UTC)
    base = (now - timedelta(days=1)).replace(hour=12, minute=0, second=0, microsecond=0)
    rows = []
    for session in range(RECENT_SESSIONS + 1):
        start = base - timedelta(days=session % 5, minutes=session * 7)
        if session == RECENT_SESSIONS:
            start = base - timedelta(days=40)
        rows.append(_event(site_id, session, start, pathname="/", page_title="Home"))
        if session in PRICING_SESSIONS or session == RECENT_SESSIONS:
            rows.append(
                _event(site_id, session, start + timedelta(seconds=65), pathname="/pricing", page_title="Pricing")
            )
        plan = {0: "pro", 7: "pro", 4: "free"}.get(session)
        if plan:
            rows.append(
                _event(
                    site_id,
                    session,
                    start + timedelta(seconds=90),
                    pathname="/pricing",
                    type="custom_event",
                    event_name="signup",
                    props=json.dumps({"plan": plan}),
                )
            )
    return rows


def load_demo(services: Any, site_id: int) -> None:
    """Store the demo events of ``site_id``."""
    services.events.append(rows_to_table(demo_rows(site_id)))

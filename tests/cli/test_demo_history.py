"""The demo's first screen compares its 30 days with the 30 days before them, not with an almost empty period."""

from __future__ import annotations

from api_backend.demo import setup_demo
from api_client import AnalyticsAPI
from dashboard.components.common import comparison_gap
from dashboard.state import parse_view


def test_demo_history001_default_view_has_a_fair_previous_period(services, api_base) -> None:
    summary = setup_demo(services, base_url="http://testserver", events=20_000)
    api = AnalyticsAPI(api_base + "/api", token=summary.api_key)
    view = parse_view({"site": str(summary.site_id), "time_zone": "UTC"})
    assert view.days == 30
    both = api.overview_compared(summary.site_id, view.query())
    now, before = both.current, both.previous
    assert comparison_gap(now.sessions, before.sessions) is None, (now.sessions, before.sessions)
    # Both periods are seeded alike: the sessions differ by chance, not by an order of magnitude.
    assert 0.7 < before.sessions / now.sessions < 1.4

"""``channel_ranking`` on a server without the breakdown route: the api-spec recipe gives the same rows.

The "older server" is the real app behind a thin ASGI wrapper that answers the breakdown route with the
contract's 404 for an unknown route and forwards everything else unchanged.
"""

from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from api_backend.store.events import rows_to_table
from api_client import AnalyticsAPI, Filter, NotFoundError, Query, wilson_interval

pytestmark = pytest.mark.both_stores

BASE = "http://testserver/api"
WINDOW = Query(start_date="2026-04-01", end_date="2026-04-30")
CHANNELS = ["", "Organic Search", "Paid Search", "Referral", "Email", "Organic Social"]


class WithoutBreakdown:
    """ASGI wrapper: the app as a server that predates ``/goals/{id}/breakdown``; records every path asked."""

    def __init__(self, app) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
            if scope["path"].endswith("/breakdown"):
                body = json.dumps({"error": f"No route GET {scope['path']}.", "code": "NOT_FOUND"}).encode()
                headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": 404, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def traffic(site_id: int, seed: int = 7) -> tuple[list[dict], dict[str, tuple[int, int]]]:
    """Seeded sessions over six channels; a share of them view /checkout. Returns rows and per-channel truth."""
    rng = random.Random(seed)
    rows: list[dict] = []
    truth: dict[str, list[int]] = {}
    start = datetime(2026, 4, 1, 8)
    for n in range(240):
        channel = rng.choice(CHANNELS)
        when = start + timedelta(hours=n * 2.5, minutes=rng.randint(0, 59))
        session = f"sess{n}"
        common = {"site_id": site_id, "session_id": session, "user_id": f"v{n % 150}", "channel": channel}
        rows.append({**common, "timestamp": when, "type": "pageview", "pathname": "/"})
        converted = rng.random() < 0.15 + 0.1 * CHANNELS.index(channel)
        if converted:
            rows.append(
                {**common, "timestamp": when + timedelta(minutes=3), "type": "pageview", "pathname": "/checkout"}
            )
        sessions, conversions = truth.setdefault(channel, [0, 0])
        truth[channel] = [sessions + 1, conversions + int(converted)]
    return rows, {channel: (s, c) for channel, (s, c) in truth.items()}


@pytest.fixture
def checkout_site(services, site):
    rows, truth = traffic(site.site_id)
    services.events.append(rows_to_table(rows))
    return site, truth


@pytest.fixture
def old_server(app):
    wrapper = WithoutBreakdown(app)
    with TestClient(wrapper) as test_client:
        yield wrapper, test_client


def _create_checkout_goal(services, site_id: int, decoys: int = 0) -> int:
    for index in range(decoys):
        services.metadata.create_goal(site_id, f"decoy {index}", "path", {"pathPattern": f"/decoy-{index}"})
    return services.metadata.create_goal(site_id, "Checkout", "path", {"pathPattern": "/checkout"}).goal_id


def test_client_ranking001_recipe_matches_truth_and_the_breakdown_route(
    client, owner, services, checkout_site, old_server
):
    site, truth = checkout_site
    goal_id = _create_checkout_goal(services, site.site_id)
    wrapper, old_client = old_server
    old = AnalyticsAPI(BASE, client=old_client, token=owner.api_key)
    ranking = old.channel_ranking(site.site_id, goal_id, WINDOW)

    # The recipe really ran: metric by channel, then goals filtered per channel; the breakdown was refused.
    assert any(path.endswith("/breakdown") for path in wrapper.paths)
    assert any(path.endswith("/metric") for path in wrapper.paths)
    assert sum(path.endswith("/goals") for path in wrapper.paths) >= len(truth) + 1

    assert {row.value: (row.sessions, row.conversions) for row in ranking.rows} == truth
    assert ranking.total_sessions == sum(s for s, _ in truth.values())
    assert ranking.total_conversions == sum(c for _, c in truth.values())
    assert (ranking.goal_id, ranking.parameter) == (goal_id, "channel")
    for row in ranking.rows:
        assert row.conversion_rate == pytest.approx(row.conversions / row.sessions)
        assert row.small_sample == (row.sessions < 30)
        assert row.ci_low <= row.conversion_rate <= row.ci_high
    ordered = [(-row.conversion_rate, -row.sessions) for row in ranking.rows]
    assert ordered == sorted(ordered)

    # The same numbers as the server's own breakdown route.
    server = AnalyticsAPI(BASE, client=client, token=owner.api_key).channel_ranking(site.site_id, goal_id, WINDOW)
    assert (server.total_sessions, server.total_conversions) == (ranking.total_sessions, ranking.total_conversions)
    expected = {row.value: row for row in server.rows}
    assert set(expected) == {row.value for row in ranking.rows}
    for row in ranking.rows:
        other = expected[row.value]
        assert (row.sessions, row.conversions, row.small_sample) == (
            other.sessions,
            other.conversions,
            other.small_sample,
        )
        assert row.conversion_rate == pytest.approx(other.conversion_rate)
        assert row.ci_low == pytest.approx(other.ci_low, abs=1e-6)
        assert row.ci_high == pytest.approx(other.ci_high, abs=1e-6)


def test_client_ranking002_recipe_pages_through_goals_and_keeps_filters(owner, services, checkout_site, old_server):
    site, _ = checkout_site
    # More goals than one page of 100, with the goal on the second page.
    goal_id = _create_checkout_goal(services, site.site_id, decoys=105)
    _, old_client = old_server
    old = AnalyticsAPI(BASE, client=old_client, token=owner.api_key)
    rows, _ = traffic(site.site_id)
    segment = WINDOW.with_filters(Filter("user_id", "equals", ["v1", "v2", "v3", "v151"]))
    ranking = old.channel_ranking(site.site_id, goal_id, segment)
    kept = [r for r in rows if r["user_id"] in {"v1", "v2", "v3", "v151"}]
    truth: dict[str, tuple[int, int]] = {}
    for session in sorted({r["session_id"] for r in kept}):
        events = [r for r in kept if r["session_id"] == session]
        s, c = truth.get(events[0]["channel"], (0, 0))
        truth[events[0]["channel"]] = (s + 1, c + int(any(e["pathname"] == "/checkout" for e in events)))
    assert {row.value: (row.sessions, row.conversions) for row in ranking.rows} == truth
    assert ranking.total_sessions == sum(s for s, _ in truth.values())


def test_client_ranking003_unknown_goal_is_still_not_found(owner, services, checkout_site, old_server):
    site, _ = checkout_site
    _create_checkout_goal(services, site.site_id)
    _, old_client = old_server
    old = AnalyticsAPI(BASE, client=old_client, token=owner.api_key)
    with pytest.raises(NotFoundError):
        old.channel_ranking(site.site_id, 999_999, WINDOW)
    with pytest.raises(NotFoundError):
        old.channel_ranking(987_654, 1, WINDOW)


def test_client_ranking004_empty_window_gives_no_rows(owner, services, checkout_site, old_server):
    site, _ = checkout_site
    goal_id = _create_checkout_goal(services, site.site_id)
    _, old_client = old_server
    old = AnalyticsAPI(BASE, client=old_client, token=owner.api_key)
    ranking = old.channel_ranking(site.site_id, goal_id, Query(start_date="2025-01-01", end_date="2025-01-31"))
    assert (ranking.rows, ranking.total_sessions, ranking.total_conversions) == ([], 0, 0)


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        # 95% Wilson bounds from its closed form (k + z²/2 ± z·sqrt(k(n-k)/n + z²/4)) / (n + z²), z = 1.95996.
        (5, 10, 0.2365931, 0.7634069),
        (0, 10, 0.0, 0.2775328),
        (10, 10, 0.7224672, 1.0),
        (1, 1, 0.2065493, 1.0),
        (81, 263, 0.2552885, 0.3662096),
    ],
)
def test_client_ranking005_wilson_interval_reference_values(successes, trials, low, high):
    got_low, got_high = wilson_interval(successes, trials)
    assert got_low == pytest.approx(low, abs=1e-6)
    assert got_high == pytest.approx(high, abs=1e-6)


def test_client_ranking006_wilson_interval_edges():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    low, high = wilson_interval(50, 100, z=1.0)
    centre = (0.5 + 1 / 200) / (1 + 1 / 100)
    half = math.sqrt(0.25 / 100 + 1 / 40000) / (1 + 1 / 100)
    assert (low, high) == (pytest.approx(centre - half), pytest.approx(centre + half))

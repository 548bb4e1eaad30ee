"""AnalyticsAPI's read routes against the real app on a small event set whose every number is worked out by hand.

Five sessions on example.com in March 2026 (UTC):

    s1  Organic Search  US  Chrome  desktop  visitor u1  03-02 10:00 /  10:01 /pricing  10:05 signup{plan: pro}
    s2  direct ('')     FR  Firefox mobile   visitor u2  03-02 11:00 /
    s3  Paid Search     DE  Chrome  desktop  visitor u3  03-03 09:00 /pricing  09:02 signup{plan: free}
                                                         09:03 error TypeError "x is undefined"
    s4  direct ('')     US  Safari  mobile   visitor u4  03-04 12:00 /blog/a  12:03 /pricing
                                                         12:04 error TypeError "x is undefined"
                                                         12:04:30 error "Network failed"
    s5  Organic Search  US  Chrome  desktop  visitor u1  03-05 08:00 /

Sessions 5, pageviews 7, users 4 (s1 and s5 are the same visitor), pages per session 1.4, bounces s2 s3 s5 = 60 %,
durations 300 0 180 270 0 s -> 150 s. Goal "/pricing" converts s1 s3 s4.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from api_backend.store.events import rows_to_table
from api_client import (
    AnalyticsAPI,
    AuthenticationError,
    Filter,
    ForbiddenError,
    NotFoundError,
    Query,
    ValidationError,
    wilson_interval,
)
from tests.support import make_account

pytestmark = pytest.mark.both_stores

BASE = "http://testserver/api"
MARCH = Query(start_date="2026-03-01", end_date="2026-03-07")


def _ts(text: str) -> datetime:
    return datetime.fromisoformat(f"2026-{text}")


def _visit(site_id: int, session: str, user: str, channel: str, referrer: str, country: str, browser: str, device: str):
    base = {
        "site_id": site_id,
        "session_id": session,
        "user_id": user,
        "hostname": "example.com",
        "channel": channel,
        "referrer": referrer,
        "country": country,
        "browser": browser,
        "operating_system": "Windows" if device == "desktop" else "iOS",
        "device_type": device,
        "language": "en-US",
        "screen_width": 1920 if device == "desktop" else 390,
        "screen_height": 1080 if device == "desktop" else 844,
    }

    def event(when: str, type_: str = "pageview", pathname: str = "", **extra):
        return {**base, "timestamp": _ts(when), "type": type_, "pathname": pathname, **extra}

    return event


def _error(message: str, name: str, line: int) -> dict:
    import json

    props = {"message": message, "stack": f"{name}: {message}\n    at app.js:{line}:7", "fileName": "app.js"}
    props["lineNumber"] = line
    props["columnNumber"] = 7
    return {"event_name": name, "props": json.dumps(props)}


def event_rows(site_id: int) -> list[dict]:
    s1 = _visit(site_id, "s1", "u1", "Organic Search", "google.com", "US", "Chrome", "desktop")
    s2 = _visit(site_id, "s2", "u2", "", "", "FR", "Firefox", "mobile")
    s3 = _visit(site_id, "s3", "u3", "Paid Search", "google.com", "DE", "Chrome", "desktop")
    s4 = _visit(site_id, "s4", "u4", "", "", "US", "Safari", "mobile")
    s5 = _visit(site_id, "s5", "u1", "Organic Search", "google.com", "US", "Chrome", "desktop")
    return [
        s1("03-02 10:00:00", pathname="/"),
        s1("03-02 10:01:00", pathname="/pricing"),
        s1("03-02 10:05:00", "custom_event", "/pricing", event_name="signup", props='{"plan": "pro"}'),
        s2("03-02 11:00:00", pathname="/"),
        s3("03-03 09:00:00", pathname="/pricing"),
        s3("03-03 09:02:00", "custom_event", "/pricing", event_name="signup", props='{"plan": "free"}'),
        s3("03-03 09:03:00", "error", "/pricing", **_error("x is undefined", "TypeError", 10)),
        s4("03-04 12:00:00", pathname="/blog/a"),
        s4("03-04 12:03:00", pathname="/pricing"),
        s4("03-04 12:04:00", "error", "/pricing", **_error("x is undefined", "TypeError", 10)),
        s4("03-04 12:04:30", "error", "/pricing", **_error("Network failed", "Error", 99)),
        s5("03-05 08:00:00", pathname="/"),
    ]


@pytest.fixture
def loaded(services, site):
    services.events.append(rows_to_table(event_rows(site.site_id)))
    return site


@pytest.fixture
def api(client, owner):
    return AnalyticsAPI(BASE, client=client, token=owner.api_key)


@pytest.fixture
def pricing_goal(api, loaded) -> int:
    return api.create_goal(loaded.site_id, name="Pricing", goal_type="path", config={"pathPattern": "/pricing"})


# -- goals ---------------------------------------------------------------------------------------------------


def test_client_reads001_goal_crud_and_numbers(api, loaded):
    site_id = loaded.site_id
    pricing = api.create_goal(site_id, name="Pricing", goal_type="path", config={"path_pattern": "/pricing"})
    signup = api.create_goal(site_id, name="Signup", goal_type="event", config={"eventName": "signup"})
    pro = api.create_goal(
        site_id,
        name="Pro signup",
        goal_type="event",
        config={"event_name": "signup", "event_property_key": "plan", "event_property_value": "pro"},
    )
    assert len({pricing, signup, pro}) == 3
    page = api.goals(site_id, MARCH, sort="goalId", order="asc")
    assert (page.meta.total, page.meta.page, page.meta.page_size, page.meta.total_pages) == (3, 1, 10, 1)
    by_id = {goal.goal_id: goal for goal in page.data}
    assert [goal.goal_id for goal in page.data] == sorted(by_id)
    assert by_id[pricing].config.path_pattern == "/pricing"
    assert by_id[pro].config.event_property_value == "pro"
    assert by_id[pricing].created_at.tzinfo is not None
    numbers = {gid: (g.total_conversions, g.total_sessions, g.conversion_rate) for gid, g in by_id.items()}
    assert numbers == {pricing: (3, 5, 0.6), signup: (2, 5, 0.4), pro: (1, 5, 0.2)}
    # Replace, then delete.
    assert (
        api.update_goal(
            site_id,
            pro,
            name="Free signup",
            goal_type="event",
            config=by_id[pro].config.model_copy(update={"event_property_value": "free"}),
        )
        == pro
    )
    updated = next(g for g in api.goals(site_id, MARCH).data if g.goal_id == pro)
    assert (updated.name, updated.config.event_property_value, updated.total_conversions) == ("Free signup", "free", 1)
    api.delete_goal(site_id, pro)
    assert {g.goal_id for g in api.goals(site_id).data} == {pricing, signup}
    with pytest.raises(NotFoundError):
        api.delete_goal(site_id, pro)


def test_client_reads002_goal_paging_and_sorting(api, loaded):
    ids = [
        api.create_goal(loaded.site_id, name=name, goal_type="path", config={"pathPattern": f"/{name}"})
        for name in "cab"
    ]
    first = api.goals(loaded.site_id, page=1, limit=2, sort="name", order="asc")
    second = api.goals(loaded.site_id, page=2, limit=2, sort="name", order="asc")
    assert [g.name for g in first.data] == ["a", "b"]
    assert [g.name for g in second.data] == ["c"]
    assert (second.meta.total, second.meta.page, second.meta.page_size, second.meta.total_pages) == (3, 2, 2, 2)
    newest_first = api.goals(loaded.site_id)
    assert [g.goal_id for g in newest_first.data] == list(reversed(ids))


def test_client_reads003_goal_filters_select_sessions(api, pricing_goal, loaded):
    direct = api.goals(loaded.site_id, MARCH.with_filters(Filter("channel", "equals", [""]))).data[0]
    assert (direct.total_sessions, direct.total_conversions) == (2, 1)
    # "Direct" is the synonym people type for the empty channel.
    synonym = api.goals(loaded.site_id, MARCH.with_filters(Filter("channel", "equals", ["Direct"]))).data[0]
    assert (synonym.total_sessions, synonym.total_conversions) == (2, 1)
    pro = api.goals(loaded.site_id, MARCH.with_filters(Filter("prop:plan", "equals", ["pro"]))).data[0]
    assert (pro.total_sessions, pro.total_conversions) == (1, 1)


def test_client_reads004_bad_goal_bodies_and_params_are_validation_errors(api, loaded, pricing_goal):
    with pytest.raises(ValidationError) as caught:
        api.create_goal(loaded.site_id, name="x", goal_type="path", config={})
    assert caught.value.details
    with pytest.raises(ValidationError):
        api.create_goal(loaded.site_id, name="x", goal_type="teleport", config={"pathPattern": "/"})
    with pytest.raises(ValidationError):
        api.goals(loaded.site_id, page=0)
    with pytest.raises(ValidationError):
        api.goals(loaded.site_id, limit=101)
    with pytest.raises(ValidationError):
        api.goals(loaded.site_id, Query(start_date="2026-13-01", end_date="2026-03-02"))
    with pytest.raises(ValidationError):
        api.goals(loaded.site_id, Query(filters=[Filter("nonsense", "equals", ["x"])]))
    assert api.goals(loaded.site_id).meta.total == 1


def test_client_reads005_goal_access_rules(api, client, services, loaded, pricing_goal):
    anonymous = AnalyticsAPI(BASE, client=client)
    with pytest.raises(AuthenticationError):
        anonymous.goals(loaded.site_id)
    key = api.generate_private_link(loaded.site_id)
    viewer = anonymous.with_credentials(private_key=key)
    assert viewer.goals(loaded.site_id, MARCH).data[0].total_conversions == 3
    with pytest.raises(AuthenticationError):
        viewer.create_goal(loaded.site_id, name="x", goal_type="path", config={"pathPattern": "/x"})
    member = make_account(services, "member@example.com")
    services.metadata.add_member(loaded.organization_id, member.user.id, "member")
    as_member = api.with_credentials(token=member.api_key)
    created = as_member.create_goal(loaded.site_id, name="m", goal_type="path", config={"pathPattern": "/m"})
    as_member.delete_goal(loaded.site_id, created)
    stranger = make_account(services, "stranger@example.com")
    with pytest.raises(NotFoundError):
        api.with_credentials(token=stranger.api_key).goals(loaded.site_id)
    with pytest.raises(NotFoundError):
        api.goal_sessions(loaded.site_id, 999_999)


def test_client_reads006_goal_sessions(api, loaded, pricing_goal):
    sessions = api.goal_sessions(loaded.site_id, pricing_goal, MARCH)
    assert [s.session_id for s in sessions] == ["s4", "s3", "s1"]
    s4 = sessions[0]
    assert (s4.entry_page, s4.exit_page, s4.pageviews, s4.session_duration) == ("/blog/a", "/pricing", 2, 270)
    assert (s4.channel, s4.country, s4.browser, s4.device_type, s4.user_id) == ("", "US", "Safari", "mobile", "u4")
    assert s4.session_start == datetime(2026, 3, 4, 12, 0, tzinfo=UTC)
    assert s4.session_end == datetime(2026, 3, 4, 12, 4, 30, tzinfo=UTC)
    assert sessions[2].channel == "Organic Search" and sessions[2].referrer == "google.com"
    paged = api.goal_sessions(loaded.site_id, pricing_goal, MARCH, page=2, limit=2)
    assert [s.session_id for s in paged] == ["s1"]
    filtered = api.goal_sessions(loaded.site_id, pricing_goal, MARCH.with_filters(Filter("country", value=["US"])))
    assert [s.session_id for s in filtered] == ["s4", "s1"]


# -- breakdown and channel ranking ---------------------------------------------------------------------------


EXPECTED_CHANNELS = {"Organic Search": (2, 1), "": (2, 1), "Paid Search": (1, 1)}


def _check_channel_rows(breakdown) -> None:
    assert (breakdown.total_sessions, breakdown.total_conversions) == (5, 3)
    got = {row.value: (row.sessions, row.conversions) for row in breakdown.rows}
    assert got == EXPECTED_CHANNELS
    for row in breakdown.rows:
        assert row.conversion_rate == pytest.approx(row.conversions / row.sessions)
        low, high = wilson_interval(row.conversions, row.sessions)
        assert (row.ci_low, row.ci_high) == (pytest.approx(low, abs=1e-6), pytest.approx(high, abs=1e-6))
        assert row.small_sample is True
    rates = [row.conversion_rate for row in breakdown.rows]
    assert rates == sorted(rates, reverse=True)
    assert breakdown.rows[0].value == "Paid Search"


def test_client_reads007_goal_breakdown_by_channel(api, loaded, pricing_goal):
    breakdown = api.goal_breakdown(loaded.site_id, pricing_goal, "channel", MARCH)
    _check_channel_rows(breakdown)
    assert breakdown.goal_id == pricing_goal and breakdown.parameter == "channel"
    by_country = api.goal_breakdown(loaded.site_id, pricing_goal, "country", MARCH)
    assert {row.value: (row.sessions, row.conversions) for row in by_country.rows} == {
        "US": (3, 2),
        "FR": (1, 0),
        "DE": (1, 1),
    }


def test_client_reads007b_goal_breakdown_is_paged(api, client, owner, loaded, pricing_goal):
    whole = api.goal_breakdown(loaded.site_id, pricing_goal, "channel", MARCH)
    assert whole.total_count == 3
    pages = [api.goal_breakdown(loaded.site_id, pricing_goal, "channel", MARCH, page=n, limit=2) for n in (1, 2, 3)]
    assert [len(p.rows) for p in pages] == [2, 1, 0]
    assert [r for p in pages for r in p.rows] == whole.rows
    assert all(p.total_count == 3 and p.total_sessions == 5 for p in pages)
    url = f"/api/sites/{loaded.site_id}/goals/{pricing_goal}/breakdown"
    params = {"parameter": "channel", **MARCH.to_params()}
    for bad in ({"limit": "0"}, {"limit": "1001"}, {"page": "0"}, {"page": "x"}):
        response = client.get(url, params={**params, **bad}, headers=owner.headers)
        assert response.status_code == 400 and response.json()["code"] == "INVALID_REQUEST", bad


def test_client_reads008_channel_ranking_uses_the_breakdown_route(api, loaded, pricing_goal):
    _check_channel_rows(api.channel_ranking(loaded.site_id, pricing_goal, MARCH))


# -- errors --------------------------------------------------------------------------------------------------


def test_client_reads009_error_names(api, loaded):
    names = api.error_names(loaded.site_id, MARCH)
    assert [(n.value, n.error_name, n.count, n.session_count) for n in names] == [
        ("x is undefined", "TypeError", 2, 2),
        ("Network failed", "Error", 1, 1),
    ]
    assert names[0].percentage == pytest.approx(200 / 3, abs=0.01)
    assert names[1].percentage == pytest.approx(100 / 3, abs=0.01)
    assert [n.value for n in api.error_names(loaded.site_id, MARCH, page=2, limit=1)] == ["Network failed"]
    on_desktop = api.error_names(loaded.site_id, MARCH.with_filters(Filter("device_type", value=["desktop"])))
    assert [(n.value, n.count) for n in on_desktop] == [("x is undefined", 1)]


def test_client_reads009b_error_names_page_carries_the_total(api, loaded):
    # Two distinct messages in March ("x is undefined" twice, "Network failed" once): two pages of one.
    first = api.error_names_page(loaded.site_id, MARCH, page=1, limit=1)
    assert [(n.value, n.count, n.session_count) for n in first.data] == [("x is undefined", 2, 2)]
    assert (first.meta.total, first.meta.page, first.meta.page_size, first.meta.total_pages) == (2, 1, 1, 2)
    second = api.error_names_page(loaded.site_id, MARCH, page=2, limit=1)
    assert [n.value for n in second.data] == ["Network failed"]
    assert (second.meta.total, second.meta.page, second.meta.total_pages) == (2, 2, 2)
    # Past the end: no rows, the total still says how many there are.
    beyond = api.error_names_page(loaded.site_id, MARCH, page=3, limit=1)
    assert (beyond.data, beyond.meta.total, beyond.meta.total_pages) == ([], 2, 2)
    # The rows are the ones error_names gives for the same page.
    assert api.error_names_page(loaded.site_id, MARCH).data == api.error_names(loaded.site_id, MARCH)
    # The total follows the filters: only s3's error is on a desktop.
    on_desktop = api.error_names_page(loaded.site_id, MARCH.with_filters(Filter("device_type", value=["desktop"])))
    assert (on_desktop.meta.total, on_desktop.meta.total_pages, len(on_desktop.data)) == (1, 1, 1)
    # A window without errors: nothing, and no pages.
    april = api.error_names_page(loaded.site_id, Query(start_date="2026-04-01", end_date="2026-04-07"))
    assert (april.data, april.meta.total, april.meta.total_pages) == ([], 0, 0)


def test_client_reads009c_error_names_page_over_many_groups(api, services, site):
    # 23 messages, message i happening i + 1 times in its own session: totals and page sizes are counted here.
    rows = []
    for i in range(23):
        visit = _visit(site.site_id, f"e{i}", f"v{i}", "", "", "US", "Chrome", "desktop")
        for n in range(i + 1):
            rows.append(visit(f"03-02 10:{n:02d}:00", "error", "/", **_error(f"failure {i:02d}", "Error", i)))
    services.events.append(rows_to_table(rows))
    expected = sorted(((f"failure {i:02d}", i + 1) for i in range(23)), key=lambda item: -item[1])
    assert sum(count for _, count in expected) == len(rows)
    pages = [api.error_names_page(site.site_id, MARCH, page=page, limit=10) for page in (1, 2, 3)]
    assert {(p.meta.total, p.meta.total_pages, p.meta.page_size) for p in pages} == {(23, 3, 10)}
    assert [len(p.data) for p in pages] == [10, 10, 3]
    assert [(n.value, n.count) for p in pages for n in p.data] == expected
    assert pages[2].meta.page == 3


def test_client_reads009d_error_names_page_bad_input_and_access(api, services, loaded):
    with pytest.raises(ValidationError):
        api.error_names_page(loaded.site_id, MARCH, limit=0)
    with pytest.raises(ValidationError):
        api.error_names_page(loaded.site_id, MARCH, page=0)
    stranger = make_account(services, "errors-stranger@example.com")
    with pytest.raises((NotFoundError, ForbiddenError)):
        api.with_credentials(token=stranger.api_key).error_names_page(loaded.site_id, MARCH)
    with pytest.raises(AuthenticationError):
        api.with_credentials(token=None).error_names_page(loaded.site_id, MARCH)


def test_client_reads010_error_events(api, loaded):
    events = api.error_events(loaded.site_id, "x is undefined", MARCH)
    assert [e.session_id for e in events] == ["s4", "s3"]
    newest = events[0]
    assert newest.timestamp == datetime(2026, 3, 4, 12, 4, tzinfo=UTC)
    assert (newest.message, newest.file_name, newest.line_number, newest.column_number) == (
        "x is undefined",
        "app.js",
        10,
        7,
    )
    assert newest.stack.startswith("TypeError: x is undefined")
    assert (newest.pathname, newest.hostname, newest.browser, newest.country) == (
        "/pricing",
        "example.com",
        "Safari",
        "US",
    )
    assert [e.session_id for e in api.error_events(loaded.site_id, "x is undefined", MARCH, page=2, limit=1)] == ["s3"]
    with pytest.raises(ValidationError):
        api.error_events(loaded.site_id, "", MARCH)


def test_client_reads011_error_time_series_utc_and_paris(api, loaded):
    buckets = api.error_time_series(loaded.site_id, "x is undefined", MARCH, bucket="day")
    assert [b.time for b in buckets] == [datetime(2026, 3, day, tzinfo=UTC) for day in range(1, 8)]
    assert [b.error_count for b in buckets] == [0, 0, 1, 1, 0, 0, 0]
    paris = Query(start_date="2026-03-01", end_date="2026-03-07", time_zone="Europe/Paris")
    local = api.error_time_series(loaded.site_id, "x is undefined", paris, bucket="day")
    # A Paris day in winter starts at 23:00 UTC the day before.
    assert local[0].time == datetime(2026, 2, 28, 23, tzinfo=UTC)
    assert sum(b.error_count for b in local) == 2
    with pytest.raises(ValidationError):
        api.error_time_series(loaded.site_id, "x is undefined", MARCH, bucket="fortnight")


# -- usage, metric, overview, funnels -------------------------------------------------------------------------


def test_client_reads012_org_usage(api, loaded):
    rows = api.org_usage(loaded.organization_id, MARCH)
    assert [r.event_date for r in rows] == [date(2026, 3, day) for day in range(1, 8)]
    by_day = {r.event_date.day: r for r in rows}
    assert [by_day[d].pageview_count for d in range(1, 8)] == [0, 3, 1, 2, 1, 0, 0]
    assert [by_day[d].custom_event_count for d in range(1, 8)] == [0, 1, 1, 0, 0, 0, 0]
    assert [by_day[d].error_count for d in range(1, 8)] == [0, 0, 1, 2, 0, 0, 0]
    assert [by_day[d].event_count for d in range(1, 8)] == [0, 4, 3, 4, 1, 0, 0]
    assert sum(r.event_count for r in rows) == len(event_rows(loaded.site_id))


def test_client_reads013_metric(api, loaded):
    channels = api.metric(loaded.site_id, "channel", MARCH)
    assert channels.total_count == 3
    assert [(r.value, r.count) for r in channels.rows] == [("", 2), ("Organic Search", 2), ("Paid Search", 1)]
    assert [r.percentage for r in channels.rows] == [pytest.approx(40), pytest.approx(40), pytest.approx(20)]
    countries = api.metric(loaded.site_id, "country", MARCH, limit=1)
    assert countries.total_count == 3
    assert [(r.value, r.count) for r in countries.rows] == [("US", 3)]
    assert isinstance(countries.rows[0].extra, dict)
    with pytest.raises(ValidationError):
        api.metric(loaded.site_id, "shoe_size", MARCH)


def test_client_reads014_overview(api, loaded):
    overview = api.overview(loaded.site_id, MARCH)
    assert (overview.sessions, overview.pageviews, overview.users) == (5, 7, 4)
    assert overview.pages_per_session == pytest.approx(1.4)
    assert overview.bounce_rate == pytest.approx(60)
    assert overview.session_duration == pytest.approx(150)
    mobile = api.overview(loaded.site_id, MARCH.with_filters(Filter("device_type", value=["mobile"])))
    assert (mobile.sessions, mobile.pageviews, mobile.users) == (2, 3, 2)
    empty = api.overview(loaded.site_id, Query(start_date="2025-01-01", end_date="2025-01-02"))
    assert (empty.sessions, empty.pageviews, empty.users) == (0, 0, 0)
    assert (empty.pages_per_session, empty.bounce_rate, empty.session_duration) == (None, None, None)


def test_client_reads015_overview_time_series(api, loaded):
    buckets = api.overview_time_series(loaded.site_id, MARCH, bucket="day")
    assert [b.time for b in buckets] == [datetime(2026, 3, day, tzinfo=UTC) for day in range(1, 8)]
    assert [b.sessions for b in buckets] == [0, 2, 1, 1, 1, 0, 0]
    assert [b.pageviews for b in buckets] == [0, 3, 1, 2, 1, 0, 0]
    assert buckets[1].bounce_rate == pytest.approx(50)
    assert buckets[1].session_duration == pytest.approx(150)


def test_client_reads016_funnel(api, loaded):
    steps = api.funnel(
        loaded.site_id,
        [{"type": "page", "value": "/", "name": "Home"}, {"type": "page", "value": "/pricing"}],
        MARCH,
    )
    assert [(s.step_number, s.step_name, s.sessions, s.visitors) for s in steps] == [
        (1, "Home", 3, 3),
        (2, "/pricing", 1, 1),
    ]
    assert steps[0].conversion_rate == pytest.approx(100)
    assert steps[0].dropoff_rate == pytest.approx(0)
    assert steps[1].conversion_rate == pytest.approx(100 / 3, abs=0.01)
    assert steps[1].dropoff_rate == pytest.approx(200 / 3, abs=0.01)
    with_property = api.funnel(
        loaded.site_id,
        [
            {"type": "page", "value": "/pricing"},
            {"type": "event", "value": "signup", "event_property_key": "plan", "event_property_value": "pro"},
        ],
        MARCH,
    )
    assert [s.sessions for s in with_property] == [3, 1]
    with pytest.raises(ValidationError):
        api.funnel(loaded.site_id, [{"type": "page", "value": "/"}], MARCH)


def test_client_reads017_private_link_reads_and_limits(api, client, loaded, pricing_goal):
    key = api.generate_private_link(loaded.site_id)
    viewer = AnalyticsAPI(BASE, client=client, private_key=key)
    assert viewer.overview(loaded.site_id, MARCH).sessions == 5
    assert viewer.metric(loaded.site_id, "channel", MARCH).total_count == 3
    assert len(viewer.goal_sessions(loaded.site_id, pricing_goal, MARCH)) == 3
    assert viewer.error_names(loaded.site_id, MARCH)[0].count == 2
    assert (
        len(viewer.funnel(loaded.site_id, [{"type": "page", "value": "/"}, {"type": "page", "value": "/pricing"}])) == 2
    )
    with pytest.raises(AuthenticationError):
        viewer.org_usage(loaded.organization_id, MARCH)


def test_client_reads018_org_usage_needs_membership(api, services, loaded):
    stranger = make_account(services, "stranger@example.com")
    with pytest.raises((NotFoundError, ForbiddenError)):
        api.with_credentials(token=stranger.api_key).org_usage(loaded.organization_id)

"""The URL view state, the frame builders and the response cache, without a browser."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from urllib.parse import parse_qs

import cachelib.simple
import flask
import pytest

from api_client import AuthenticationError, Filter
from dashboard import session
from dashboard.components import frame
from dashboard.settings import DashboardSettings
from dashboard.state import ViewState, parse_view, preset_range, shift_range, today_in

NOW = datetime(2026, 3, 10, 23, 30, tzinfo=UTC)


def test_defaults_are_the_last_30_days_in_the_browser_zone():
    view = parse_view("", default_zone="Asia/Tokyo", now=NOW)
    # 23:30 UTC on 10 March is already 11 March in Tokyo.
    assert view.time_zone == "Asia/Tokyo"
    assert (view.start_date, view.end_date) == (date(2026, 2, 10), date(2026, 3, 11))
    assert view.days == 30
    assert parse_view("", now=NOW).time_zone == "UTC"
    # Only names the API accepts are kept; anything else falls back to the browser's zone.
    assert parse_view("?time_zone=localtime", default_zone="Europe/Paris", now=NOW).time_zone == "Europe/Paris"
    assert parse_view("?time_zone=posix/Asia/Tokyo", now=NOW).time_zone == "UTC"


def test_round_trip_through_the_url():
    filters = [{"parameter": "channel", "type": "equals", "value": ["", "Referral"]}]
    view = ViewState(
        site_id=3,
        start_date=date(2026, 1, 1),
        end_date=date(2026, 1, 31),
        time_zone="Europe/Paris",
        filters=tuple(filters),
        goal=7,
        page=2,
        sort="name",
        order="asc",
    )
    search = view.to_search()
    params = parse_qs(search[1:])
    assert params["site"] == ["3"] and params["time_zone"] == ["Europe/Paris"]
    assert json.loads(params["filters"][0]) == filters
    assert parse_view(search) == view
    assert ViewState.from_dict(view.to_dict()) == view
    assert "page" not in view.to_search(page=1)


def test_bad_values_fall_back_instead_of_failing():
    view = parse_view(
        "?site=abc&start_date=2026-13-01&end_date=2026-01-01&time_zone=Mars/Base&filters=[oops&page=-3&order=up",
        now=NOW,
    )
    assert view.site_id is None and view.time_zone == "UTC" and view.filters == () and view.page == 1
    assert view.order is None and view.days == 30
    odd = json.dumps(
        [{"parameter": "nope", "type": "equals", "value": ["x"]}, {"parameter": "country", "type": "equals"}]
    )
    assert parse_view({"filters": odd}, now=NOW).filters == ()
    flags = json.dumps([{"parameter": "prop:paid", "type": "equals", "value": [True]}])
    assert parse_view({"filters": flags}, now=NOW).filters[0]["value"] == ["true"]


def test_query_for_the_api():
    country = '[{"parameter":"country","type":"equals","value":["DE"]}]'
    view = parse_view("?start_date=2026-01-01&end_date=2026-01-07&time_zone=UTC&filters=" + country)
    query = view.query()
    assert query.to_params() == {
        "start_date": "2026-01-01",
        "end_date": "2026-01-07",
        "time_zone": "UTC",
        "filters": '[{"parameter":"country","type":"equals","value":["DE"]}]',
    }
    assert query.filters == (Filter("country", "equals", ["DE"]),)


def test_presets_and_steps():
    today = date(2026, 3, 10)
    assert preset_range("today", today) == (today, today)
    assert preset_range("7d", today) == (date(2026, 3, 4), today)
    assert preset_range("90d", today) == (date(2025, 12, 11), today)
    assert shift_range(date(2026, 3, 4), today, -1) == (date(2026, 2, 25), date(2026, 3, 3))
    assert shift_range(date(2026, 3, 4), today, 1) == (date(2026, 3, 11), date(2026, 3, 17))
    assert today_in("America/Los_Angeles", NOW) == date(2026, 3, 10)
    view = ViewState(start_date=date(2026, 3, 4), end_date=today, time_zone="UTC")
    assert frame.preset_of(view, today) == "7d"
    assert frame.preset_of(view, date(2026, 3, 11)) is None


def test_filter_chips_and_labels():
    filters = [
        {"parameter": "channel", "type": "equals", "value": ["", "Referral"]},
        {"parameter": "pathname", "type": "not_contains", "value": ["/admin", "/internal"]},
        {"parameter": "prop:plan", "type": "is_not_null", "value": []},
    ]
    assert [frame.filter_label(f) for f in filters] == [
        "Channel is Direct or Referral",
        "Page does not contain /admin and /internal",
        "Property plan is not empty",
    ]
    chips = frame.filter_chips(filters)
    removes = [chip.children[1].id for chip in chips.children]
    assert removes == [{"type": "frame-filter-chip-remove", "index": i} for i in range(3)]


def test_overview_strip_changes_against_previous_period():
    current = {"sessions": 120, "pageviews": 300, "users": 100, "bounce_rate": 40.0, "session_duration": 95}
    previous = {"sessions": 100, "pageviews": 300, "users": 125, "bounce_rate": 50.0, "session_duration": 100}
    strip = json.dumps(frame.overview_strip(current, previous).to_plotly_json(), default=lambda o: o.to_plotly_json())
    for text in ('"120"', '"+20.0%"', '"0%"', '"-20.0%"', '"-10.0 pts"', '"1m 35s"', '"40.0%"'):
        assert text in strip, text
    # A falling bounce rate is good news; falling users is bad news.
    assert "stat-down stat-good" in strip and "stat-down stat-bad" in strip
    first = json.dumps(frame.overview_strip(current, {**previous, "sessions": 0}).to_plotly_json(), default=str)
    assert "no earlier data" in first


def _changes(strip) -> list[str]:
    return [tile.children[2].children for tile in strip.children]


def test_overview_strip_says_when_the_previous_period_is_too_thin_and_nothing_while_loading():
    current = {"sessions": 11961, "pageviews": 30000, "users": 9000, "bounce_rate": 40.0, "session_duration": 95}
    # A hundredth of the sessions (tracking began late in the previous period): no +11,860%.
    thin = _changes(frame.overview_strip(current, {**current, "sessions": 100}))
    assert set(thin) == {"too little earlier data (100 sessions)"}
    few = _changes(frame.overview_strip({**current, "sessions": 40}, {**current, "sessions": 29}))
    assert set(few) == {"too little earlier data (29 sessions)"}
    assert _changes(frame.overview_strip(current, None)) == ["no earlier data"] * len(frame.OVERVIEW_METRICS)
    # A fair base still gets its percentage.
    fair = _changes(frame.overview_strip({**current, "sessions": 300}, {**current, "sessions": 30}))
    assert fair[[key for key, *_ in frame.OVERVIEW_METRICS].index("sessions")] == "+900.0%"
    # The strip a page shows while its numbers load claims nothing about earlier data.
    assert set(_changes(frame.overview_strip(None))) == {""}
    # Only numbers from the API carry the loaded mark (what the benchmark waits for before a cached view).
    assert frame.overview_strip(None).className == "stats"
    assert frame.overview_strip(current, None).className == "stats stats-loaded"


def test_nav_links_keep_the_view_and_skip_site_pages_without_a_site():
    pages = [
        {"nav_label": "Sites", "relative_path": "/sites", "path": "/sites", "order": 0},
        {"nav_label": "Goals", "relative_path": "/goals", "path": "/goals", "order": 1, "nav_scope": "site"},
        {"relative_path": "/login", "path": "/login"},
    ]
    view = parse_view("?site=4&start_date=2026-01-01&end_date=2026-01-31&time_zone=UTC&goal=9&page=3")
    links = frame.nav_links(pages, view, "/goals")
    assert [link.children for link in links] == ["Sites", "Goals"]
    assert links[1].href == "/goals?site=4&start_date=2026-01-01&end_date=2026-01-31&time_zone=UTC"
    assert "active" in links[1].className
    assert [link.children for link in frame.nav_links(pages, ViewState(), "/sites")] == ["Sites"]


def test_page_gate():
    view, shown = frame.page_gate(None, "UTC", "/goals", {"site": "1"})
    assert view is None and shown.to_plotly_json()["props"]["data-href"] == "/login?next=%2Fgoals%3Fsite%3D1"
    view, shown = frame.page_gate({"token": "t"}, None, "/goals", {"site": "1"})
    assert view is None and shown.className == "waiting"
    view, shown = frame.page_gate({"token": "t"}, "UTC", "/goals", {})
    assert shown.to_plotly_json()["props"]["data-href"] == "/sites"
    view, shown = frame.page_gate({"token": "t"}, "Europe/Paris", "/goals", {"site": "1"})
    assert shown is None and view.site_id == 1 and view.time_zone == "Europe/Paris"


class CountingAPI:
    """Stands in for AnalyticsAPI at the edge: counts calls so the cache can be observed."""

    base_url = "http://api.test/api"

    def __init__(self, token: str | None = None, private_key: str | None = None):
        self.token, self.private_key, self.calls, self.checks = token, private_key, 0, 0
        self.revoked = False

    def me(self):
        self.checks += 1
        if self.revoked:
            raise AuthenticationError(401, None, "revoked")
        return {"email": "someone@example.com"}

    def goals(self, site_id, query, page=1):
        self.calls += 1
        return {"site": site_id, "page": page, "call": self.calls}

    def organizations(self):
        self.calls += 1
        return ["org"]


def test_cached_call_keys_on_credential_and_arguments_and_invalidates():
    app = flask.Flask(__name__)
    session.bind_server(app, DashboardSettings(api_url="http://api.test/api"))
    with app.app_context():
        alice, bob = CountingAPI(token="alice"), CountingAPI(token="bob")
        first = session.cached_call(alice, "goals", 1, "q", page=1)
        assert session.cached_call(alice, "goals", 1, "q", page=1) == first and alice.calls == 1
        session.cached_call(alice, "goals", 1, "q", page=2)
        session.cached_call(alice, "goals", 1, "other", page=1)
        assert alice.calls == 3
        session.cached_call(bob, "goals", 1, "q", page=1)  # another credential never shares an answer
        assert bob.calls == 1
        session.cached_call(alice, "organizations")
        session.invalidate(2)  # another site: site 1 stays cached, lists are refreshed
        session.cached_call(alice, "goals", 1, "q", page=1)
        assert alice.calls == 4
        session.cached_call(alice, "organizations")
        assert alice.calls == 5
        session.invalidate(1)
        session.cached_call(alice, "goals", 1, "q", page=1)
        assert alice.calls == 6
        session.invalidate()
        session.cached_call(alice, "goals", 1, "q", page=1)
        assert alice.calls == 7
        assert session.credential_of(alice) != session.credential_of(bob)
        assert "alice" not in session.credential_of(alice)


def test_api_for_prefers_the_sign_in_token_over_a_private_key():
    app = flask.Flask(__name__)
    session.bind_server(app, DashboardSettings(api_url="http://api.test/api"))
    with app.app_context():
        signed_in = session.api_for({"token": "tok"}, {"privateKey": "key", "siteId": "1"})
        assert (signed_in.token, signed_in.private_key, signed_in.base_url) == ("tok", None, "http://api.test/api")
        shared = session.api_for(None, {"privateKey": "key", "siteId": "1"})
        assert (shared.token, shared.private_key) == (None, "key")
        # In a shared view only the key of that very site is sent; for another site, nothing.
        assert session.shared_api({"privateKey": "key", "siteId": "1"}, 1).private_key == "key"
        other = session.shared_api({"privateKey": "key", "siteId": "1"}, 2)
        assert (other.token, other.private_key) == (None, None)


def test_forward_step_stops_at_today_and_suggestions():
    today = date(2026, 3, 10)
    current = ViewState(start_date=date(2026, 3, 4), end_date=today, time_zone="UTC")
    earlier = ViewState(start_date=date(2026, 2, 25), end_date=date(2026, 3, 3), time_zone="UTC")

    def forward(view):
        controls = frame.date_controls(view, today)
        return controls.children[0].children[2]

    assert forward(current).disabled is True
    assert forward(earlier).disabled is False
    rows = [{"value": "Organic Search"}, {"value": ""}, {"value": "Referral"}]
    assert [o.value for o in frame.suggestion_options(rows, "channel")] == ["Organic Search", "Direct", "Referral"]
    assert [o.value for o in frame.suggestion_options(rows, "referrer")] == ["Organic Search", "Referral"]


def test_cached_answers_stop_when_the_credential_is_revoked(monkeypatch):
    app = flask.Flask(__name__)
    session.bind_server(app, DashboardSettings(api_url="http://api.test/api"))
    clock = [1000.0]
    monkeypatch.setattr(cachelib.simple, "time", lambda: clock[0])  # the clock SimpleCache expires entries by
    with app.app_context():
        carol = CountingAPI(token="carol")
        session.cached_call(carol, "goals", 1, "q")
        session.cached_call(carol, "goals", 1, "q")  # a hit: the credential is checked once...
        session.cached_call(carol, "goals", 1, "q")  # ...and trusted for a while
        assert (carol.calls, carol.checks) == (1, 1)
        carol.revoked = True
        clock[0] += DashboardSettings.verify_seconds + 1
        with pytest.raises(AuthenticationError):
            session.cached_call(carol, "goals", 1, "q")


def test_filter_menus_offer_exactly_the_api_parameters_and_types():
    from api_client.query import FILTER_PARAMETERS, FILTER_TYPES
    from dashboard.components.frame import PARAMETER_LABELS, TYPE_LABELS

    assert set(PARAMETER_LABELS) == set(FILTER_PARAMETERS)
    assert set(TYPE_LABELS) == set(FILTER_TYPES)


def test_zone_selector_starts_short_and_finds_any_zone_by_typing():
    from dashboard.state import is_valid_zone

    assert [o["value"] for o in frame.zone_options("UTC")] == list(frame.COMMON_ZONES)
    # A zone that is not a common one stays selectable (first), and typing finds any zone, spaces for underscores.
    assert frame.zone_options("America/Argentina/Salta")[0] == {
        "label": "America/Argentina/Salta",
        "value": "America/Argentina/Salta",
    }
    assert [o["value"] for o in frame.zone_options("UTC", "tokyo")] == ["UTC", "Asia/Tokyo"]
    found = frame.zone_options("Asia/Tokyo", "buenos aires")
    assert found[0]["value"] == "Asia/Tokyo"
    assert {"label": "America/Argentina/Buenos Aires", "value": "America/Argentina/Buenos_Aires"} in found
    assert all("buenos_aires" in o["value"].lower() for o in found[1:])
    names = frame.zone_names()
    assert names[: len(frame.COMMON_ZONES)] == frame.COMMON_ZONES and len(set(names)) == len(names) > 300
    assert all(is_valid_zone(z) for z in names)


def test_range_ending_now():
    today = today_in("Pacific/Kiritimati")
    assert ViewState(start_date=today, end_date=today, time_zone="Pacific/Kiritimati").ends_now
    assert not ViewState(start_date=date(2026, 1, 1), end_date=date(2026, 1, 31), time_zone="UTC").ends_now
    assert ViewState(time_zone="UTC").ends_now  # no end: up to now

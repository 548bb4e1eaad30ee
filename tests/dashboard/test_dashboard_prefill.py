"""Pages drawn from cached answers: ``session.peek``, one API call for concurrent identical requests, the frame's
load stores, ``prefill.overview`` against the real API, and error rows whose sparklines are filled in later."""

from __future__ import annotations

import json
import threading
import time
from datetime import date, datetime, timedelta

import flask
import pytest
from dash import dcc

from api_backend.store.events import rows_to_table
from api_client import AuthenticationError, NotFoundError
from dashboard import ids, prefill, session
from dashboard.components import frame
from dashboard.components import js_errors as error_ui
from dashboard.settings import DashboardSettings
from dashboard.state import ViewState, today_in
from tests.support import make_account, make_site
from tests.support.dashboard_data import load_demo


class SlowAPI:
    """Stands in for AnalyticsAPI at the edge: each call takes a while and is counted."""

    base_url = "http://api.test/api"

    def __init__(self, token: str = "tok", *, fail: bool = False, delay: float = 0.3):
        self.token, self.private_key, self.fail, self.delay = token, None, fail, delay
        self.calls, self.checks, self.revoked = 0, 0, False
        self._lock = threading.Lock()

    def me(self):
        self.checks += 1
        if self.revoked:
            raise AuthenticationError(401, None, "revoked")
        return {"email": "someone@example.com"}

    def goals(self, site_id, query, page=1):
        with self._lock:
            self.calls += 1
            number = self.calls
        time.sleep(self.delay)
        if self.fail:
            raise NotFoundError(404, "NOT_FOUND", "Site not found")
        return {"site": site_id, "page": page, "call": number}


@pytest.fixture
def flask_app() -> flask.Flask:
    app = flask.Flask(__name__)
    session.bind_server(app, DashboardSettings(api_url="http://api.test/api"))
    return app


def test_peek_answers_only_from_the_cache(flask_app):
    with flask_app.app_context():
        api = SlowAPI(delay=0)
        assert session.peek(api, "goals", 1, "q", page=1) is None
        assert api.calls == 0  # a miss never asks the API
        answer = session.cached_call(api, "goals", 1, "q", page=1)
        assert session.peek(api, "goals", 1, "q", page=1) == answer
        assert session.peek(api, "goals", 1, "q", page=2) is None  # other arguments, other answer
        assert session.peek(SlowAPI("other", delay=0), "goals", 1, "q", page=1) is None  # other credential
        assert api.calls == 1


def test_peek_of_a_revoked_credential_is_a_miss_not_an_error(flask_app, monkeypatch):
    import cachelib.simple

    clock = [1000.0]
    monkeypatch.setattr(cachelib.simple, "time", lambda: clock[0])
    with flask_app.app_context():
        api = SlowAPI(delay=0)
        session.cached_call(api, "goals", 1, "q")
        api.revoked = True
        clock[0] += DashboardSettings.verify_seconds + 1
        # The layout then shows its loading state; the callback reports the ended sign-in.
        assert session.peek(api, "goals", 1, "q") is None


def _together(flask_app, count: int, call) -> list:
    results: list = [None] * count

    def run(index: int) -> None:
        with flask_app.app_context():
            try:
                results[index] = call()
            except Exception as exc:  # noqa: BLE001 - collected for the assertions
                results[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    return results


def test_identical_calls_running_together_ask_the_api_once(flask_app):
    api = SlowAPI()
    results = _together(flask_app, 3, lambda: session.cached_call(api, "goals", 1, "q", page=1))
    assert api.calls == 1
    assert results == [{"site": 1, "page": 1, "call": 1}] * 3
    # Different arguments are different calls, even at the same time.
    other = SlowAPI("another token")
    pages = iter([1, 2])
    results = _together(flask_app, 2, lambda: session.cached_call(other, "goals", 1, "q", page=next(pages)))
    assert other.calls == 2 and sorted(r["page"] for r in results) == [1, 2]


def test_a_failure_reaches_every_waiting_request_and_is_not_cached(flask_app):
    api = SlowAPI(fail=True)
    results = _together(flask_app, 2, lambda: session.cached_call(api, "goals", 1, "q"))
    assert api.calls == 1
    assert all(isinstance(r, NotFoundError) for r in results)
    api.fail, api.delay = False, 0
    with flask_app.app_context():
        assert session.cached_call(api, "goals", 1, "q") == {"site": 1, "page": 1, "call": 2}


def _ids(component) -> list:
    found = []

    def walk(node):
        if isinstance(node, list | tuple):
            for child in node:
                walk(child)
            return
        if not hasattr(node, "to_plotly_json"):
            return
        if getattr(node, "id", None) is not None:
            found.append(node.id)
        walk(getattr(node, "children", None))

    walk(component)
    return found


def test_frame_carries_a_load_store_only_when_the_strip_is_not_drawn():
    view = ViewState(site_id=1, start_date=date(2026, 3, 1), end_date=date(2026, 3, 30), time_zone="UTC")
    waiting = _ids(frame.analytics_frame(view))
    assert ids.OVERVIEW_LOAD in waiting and ids.FRAME_HREF in waiting
    strip = frame.overview_strip({"sessions": 10, "pageviews": 20, "users": 9, "bounce_rate": 0.5}, None)
    drawn = frame.analytics_frame(view, overview_body=strip)
    assert ids.OVERVIEW_LOAD not in _ids(drawn)
    assert f"{ids.OVERVIEW}-sessions" in _ids(drawn)
    after = _ids(frame.analytics_frame(view, overview_after_body=True))
    assert ids.OVERVIEW_LOAD not in after and {"type": ids.OVERVIEW_AFTER_TYPE, "index": 0} in after
    assert ids.OVERVIEW_LOAD not in _ids(frame.analytics_frame(view, overview=False))
    store = next(c for c in frame.analytics_frame(view).children if getattr(c, "id", None) == ids.OVERVIEW_LOAD)
    assert isinstance(store, dcc.Store) and ViewState.from_dict(store.data) == view


def test_error_rows_without_trends_name_their_trend_cells():
    class Group:
        def __init__(self, value, count):
            self.value, self.error_name, self.count, self.session_count, self.percentage = (
                value,
                "TypeError",
                count,
                1,
                50,
            )

    class Bucket:
        def __init__(self, day, count):
            self.time, self.error_count = f"2026-03-0{day}T00:00:00Z", count

    groups = [Group("a", 3), Group("b", 1)]
    listing = error_ui.error_groups_list(
        groups,
        [None, None],
        time_zone="UTC",
        selected=None,
        row_id=lambda i: {"type": ids.ERRORS_GROUP_TYPE, "index": i},
        trend_id=lambda i: {"type": ids.ERRORS_TREND_TYPE, "index": i},
    )
    text = json.dumps(listing.to_plotly_json(), default=lambda o: o.to_plotly_json())
    assert text.count('"sparkline"') == 0  # nothing drawn yet...
    assert {"type": ids.ERRORS_TREND_TYPE, "index": 1} in _ids(listing)  # ...but each cell can be filled
    spark = error_ui.group_sparkline([Bucket(1, 3), Bucket(2, 0)], "UTC", "TypeError")
    bars = spark.children
    assert [b.title for b in bars] == ["2026-03-01 00:00: 3", "2026-03-02 00:00: 0"]
    assert bars[0].style == {"height": "100%"} and bars[1].style == {"height": "0%"}


def test_overview_is_drawn_from_the_cache_of_the_real_api(services, api_base):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    app = flask.Flask(__name__)
    session.bind_server(app, DashboardSettings(api_url=api_base + "/api"))
    auth = {"token": owner.api_key, "kind": "key"}
    today = today_in("UTC")
    view = ViewState(site_id=site.site_id, start_date=today - timedelta(days=29), end_date=today, time_zone="UTC")
    with app.app_context():
        assert prefill.overview(auth, view) is None  # nothing cached yet: the page shows its loading state
        api = session.api_for(auth)
        session.cached_call(api, "overview", site.site_id, view.query())
        assert prefill.overview(auth, view) is None  # this period alone: the strip is drawn from the comparison
        session.cached_call(api, "overview_compared", site.site_id, view.query())
        strip = prefill.overview(auth, view)
        assert prefill.overview(None, view) is None  # never for someone signed out
    values = {tile.children[1].id: tile.children[1].children for tile in strip.children}
    changes = [tile.children[2].children for tile in strip.children]
    # The demo data by hand: ten sessions in the last 30 days, one (40 days ago) in the 30 days before: too few
    # to compare with.
    assert values[f"{ids.OVERVIEW}-sessions"] == "10"
    assert changes[0] == "too little earlier data (1 session)"


def test_error_names_page_is_peeked_with_its_total_and_dropped_with_its_site(services, api_base):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com", track_errors=True)
    # 12 messages once each: two pages of ten, counted here.
    rows = [
        {
            "site_id": site.site_id,
            "timestamp": datetime(2026, 3, 3, 10, i),
            "session_id": f"s{i}",
            "type": "error",
            "event_name": "Error",
            "props": json.dumps({"message": f"failure {i:02d}"}),
        }
        for i in range(12)
    ]
    services.events.append(rows_to_table(rows))
    app = flask.Flask(__name__)
    session.bind_server(app, DashboardSettings(api_url=api_base + "/api"))
    auth = {"token": owner.api_key, "kind": "key"}
    view = ViewState(site_id=site.site_id, start_date=date(2026, 3, 1), end_date=date(2026, 3, 7), time_zone="UTC")
    with app.app_context():
        api = session.api_for(auth)
        args = ("error_names_page", site.site_id, view.query())
        assert session.peek(api, *args, page=2, limit=10) is None
        answer = session.cached_call(api, *args, page=2, limit=10)
        peeked = session.peek(api, *args, page=2, limit=10)
        assert peeked == answer
        assert (peeked.meta.total, peeked.meta.total_pages, len(peeked.data)) == (len(rows), 2, len(rows) - 10)
        # A write to the site forgets its error pages like its other answers.
        session.invalidate(site.site_id)
        assert session.peek(api, *args, page=2, limit=10) is None

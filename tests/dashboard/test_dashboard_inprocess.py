"""The dashboard against the real API in-process: ``create_dashboard(settings, api=...)`` with the API app's
``TestClient`` as the client, callbacks run through Flask's test client. No server on a port, no browser."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import dash
import pytest

from api_client import AnalyticsAPI
from dashboard import ids, session
from dashboard.app import create_dashboard
from dashboard.settings import DashboardSettings
from dashboard.state import ViewState, today_in
from tests.support import make_account, make_site
from tests.support.dashboard import run_callback
from tests.support.dashboard_data import load_demo

API_URL = "http://testserver/api"


@pytest.fixture
def dashboard(client):
    """A dashboard whose API is the real app in this process (``client`` is its ``TestClient``)."""
    return create_dashboard(DashboardSettings(api_url=API_URL), api=AnalyticsAPI(API_URL, client=client))


def _goals_csv(dashboard: dash.Dash, auth: dict, view: ViewState) -> dict:
    return run_callback(
        dashboard,
        [(ids.GOALS_CSV_DOWNLOAD, "data"), (ids.GOALS_CSV_STATUS, "children")],
        [(ids.GOALS_CSV, "n_clicks", 1)],
        [(ids.VIEW, "data", view.to_dict()), (ids.AUTH, "data", auth)],
    )


def _text(component: object) -> str:
    """Every string inside a component's JSON."""
    if isinstance(component, str):
        return component
    if isinstance(component, list):
        return " ".join(_text(c) for c in component)
    if isinstance(component, dict):
        return " ".join(_text(v) for k, v in component.items() if k in ("props", "children"))
    return ""


def test_goals_csv_is_built_from_the_api_in_process(dashboard, services):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/pricing"})
    today = today_in("UTC")
    view = ViewState(site_id=site.site_id, start_date=today - timedelta(days=29), end_date=today, time_zone="UTC")

    answer = _goals_csv(dashboard, {"token": owner.api_key, "kind": "key"}, view)

    rows = list(csv.DictReader(io.StringIO(answer[ids.GOALS_CSV_DOWNLOAD]["data"]["content"])))
    # By hand (tests/support/dashboard_data.py): /pricing converts 4 of the 10 sessions of the last 30 days.
    assert [(r["name"], r["conversions"]) for r in rows] == [("Pricing", "4")]
    assert answer[ids.GOALS_CSV_STATUS]["children"] is None


def test_a_failed_csv_download_says_why_beside_the_button(dashboard, services):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    today = today_in("UTC")
    view = ViewState(site_id=site.site_id, start_date=today, end_date=today, time_zone="UTC")

    expired = _goals_csv(dashboard, {"token": "sl_no-longer-valid", "kind": "login"}, view)

    assert ids.GOALS_CSV_DOWNLOAD not in expired  # no file...
    status = expired[ids.GOALS_CSV_STATUS]["children"]
    assert "session has ended" in _text(status)  # ...but the reason, and the way back to sign-in
    marker = status["props"]["children"][1]["props"]
    assert marker["data-clear-auth"] == "1" and marker["data-come-back"] == "1"
    assert marker["data-href"].startswith("/login?reason=expired")

    stranger = make_account(services, "stranger@example.com")
    refused = _goals_csv(dashboard, {"token": stranger.api_key, "kind": "key"}, view)
    assert ids.GOALS_CSV_DOWNLOAD not in refused
    assert "Not found" in _text(refused[ids.GOALS_CSV_STATUS]["children"])  # another person's site


def test_a_chart_whose_call_fails_says_so_in_the_chart(dashboard, services):
    owner = make_account(services, "owner@example.com")
    today = today_in("UTC")
    view = ViewState(site_id=987654, start_date=today, end_date=today, time_zone="UTC")
    answer = run_callback(
        dashboard,
        [(ids.OVERVIEW_CHART, "figure")],
        [(ids.VIEW, "data", view.to_dict()), (ids.OVERVIEW_METRIC, "value", "users")],
        [(ids.AUTH, "data", {"token": owner.api_key, "kind": "key"})],
    )
    figure = answer[ids.OVERVIEW_CHART]["figure"]
    assert figure["data"] == [] and "Not found" in figure["layout"]["annotations"][0]["text"]


def test_two_dashboards_in_one_process_share_no_answers(client, services):
    owner = make_account(services, "owner@example.com")
    make_site(services, owner, "shop.example.com")
    first = create_dashboard(DashboardSettings(api_url=API_URL), api=AnalyticsAPI(API_URL, client=client))
    second = create_dashboard(DashboardSettings(api_url=API_URL), api=AnalyticsAPI(API_URL, client=client))
    auth = {"token": owner.api_key, "kind": "key"}
    with first.server.app_context():
        api = session.api_for(auth)
        orgs = session.cached_call(api, "organizations")
        assert session.peek(api, "organizations") == orgs
    with second.server.app_context():
        api = session.api_for(auth)
        assert session.peek(api, "organizations") is None  # the first dashboard's answer is not here
        session.cached_call(api, "organizations")
        session.invalidate()  # forgetting here...
        assert session.peek(api, "organizations") is None
    with first.server.app_context():
        assert session.peek(session.api_for(auth), "organizations") == orgs  # ...forgets nothing there
    assert first.server.extensions["sitelens"] is not second.server.extensions["sitelens"]


def test_settings_are_checked_and_a_transport_reaches_the_api(app, services):
    import httpx

    with pytest.raises(ValueError, match="http"):
        DashboardSettings(api_url="localhost:8000/api")
    with pytest.raises(ValueError, match="verify_seconds"):
        DashboardSettings(api_url=API_URL, verify_seconds=-1)
    assert DashboardSettings(api_url=API_URL + "/").api_url == API_URL
    assert DashboardSettings(api_url=API_URL, cache_config={"CACHE_TYPE": "NullCache"}).cache()["CACHE_TYPE"] == (
        "NullCache"
    )
    owner = make_account(services, "owner@example.com")
    make_site(services, owner, "shop.example.com")
    from fastapi.testclient import TestClient

    with TestClient(app) as api_client:
        transport: httpx.BaseTransport = api_client._transport  # the in-process transport of the real app
        dashboard = create_dashboard(DashboardSettings(api_url=API_URL), transport=transport)
        with dashboard.server.app_context():
            [org] = session.cached_call(session.api_for({"token": owner.api_key}), "organizations")
    assert org.name == "Org of shop.example.com"
    with pytest.raises(ValueError, match="either"):
        create_dashboard(DashboardSettings(api_url=API_URL), api=AnalyticsAPI(API_URL), transport=transport)


def test_live_counts_that_fail_say_so_instead_of_vanishing(dashboard, services):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    today = today_in("UTC")
    view = ViewState(site_id=site.site_id, start_date=today, end_date=today, time_zone="UTC")

    def live(auth: dict) -> dict:
        return run_callback(
            dashboard,
            [(ids.OVERVIEW_LIVE, "children")],
            [(ids.OVERVIEW_LIVE_TICK, "n_intervals", 1)],
            [(ids.VIEW, "data", view.to_dict()), (ids.AUTH, "data", auth)],
        )[ids.OVERVIEW_LIVE]["children"]

    assert "visitors in the last" in _text(live({"token": owner.api_key}))
    failed = live({"token": "sl_no-longer-valid"})
    assert _text(failed) == "live count unavailable"
    assert failed["props"]["title"] == "Your session has ended. Please sign in again."

    # The new-site check keeps asking while the API fails, and says why nothing arrives.
    status = run_callback(
        dashboard,
        [(ids.SITES_NEW_STATUS, "children"), (ids.SITES_NEW_TICK, "disabled")],
        [(ids.SITES_NEW_TICK, "n_intervals", 3)],
        [(ids.SITES_NEW_ID, "data", site.site_id), (ids.AUTH, "data", {"token": "sl_no-longer-valid"})],
    )
    assert ids.SITES_NEW_TICK not in status
    assert "Waiting for the first page view" in _text(status[ids.SITES_NEW_STATUS]["children"])
    assert "session has ended" in _text(status[ids.SITES_NEW_STATUS]["children"])


def _tiles(dashboard: dash.Dash, auth: dict, view: ViewState) -> dict:
    return run_callback(
        dashboard,
        [(ids.OVERVIEW_TILES, "children"), (ids.OVERVIEW_SHOWN, "data")],
        [(ids.VIEW, "data", view.to_dict())],
        [(ids.AUTH, "data", auth)],
    )


def test_overview_breakdowns_follow_the_headline_numbers_even_when_those_fail(dashboard, services):
    owner = make_account(services, "owner@example.com")
    site = make_site(services, owner, "shop.example.com")
    load_demo(services, site.site_id)
    today = today_in("UTC")
    view = ViewState(site_id=site.site_id, start_date=today - timedelta(days=29), end_date=today, time_zone="UTC")

    answer = _tiles(dashboard, {"token": owner.api_key, "kind": "key"}, view)
    assert "overview-loaded" in answer[ids.OVERVIEW_TILES]["children"]["props"]["className"]
    assert answer[ids.OVERVIEW_SHOWN]["data"] == view.to_dict()  # the chart, panels and goals start now

    failed = _tiles(dashboard, {"token": "sl_no-longer-valid", "kind": "login"}, view)
    assert "session has ended" in _text(failed[ids.OVERVIEW_TILES]["children"])
    assert failed[ids.OVERVIEW_SHOWN]["data"] == view.to_dict()  # ...and still start, to show their own state

    # Every breakdown waits for the headline: none of them starts from the view itself.
    panel = json.dumps({"panel": ["MATCH"], "type": ids.OVERVIEW_PANEL_TYPE}, separators=(",", ":")) + ".children"
    for output in (f"{ids.OVERVIEW_CHART}.figure", f"{ids.OVERVIEW_GOALS}.children", panel):
        inputs = [i["id"] for i in dashboard.callback_map[output]["inputs"]]
        assert ids.OVERVIEW_SHOWN in inputs and ids.VIEW not in inputs, (output, inputs)

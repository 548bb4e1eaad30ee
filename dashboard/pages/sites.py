"""The site picker (organization -> site) with each site's last 24 hours, the form admins add a site with (and the
new site's tracking snippet), and ``/``, which sends a person to the picker (or to sign-in)."""

from __future__ import annotations

from typing import Any

import dash
from dash import ALL, Input, Output, State, callback, dcc, html
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import sites as sites_ui
from dashboard.components.common import (
    app_href,
    card,
    empty_state,
    error_view,
    failure_mark,
    failure_note,
    page_header,
    redirect,
)
from dashboard.components.frame import login_href

dash.register_page(__name__, path="/sites", title="Sites · sitelens", name="Sites", nav_label="Sites", order=0)


def _home(auth: dict | None = None, **_: Any) -> html.Div:
    """``/``: the site picker when signed in, else sign-in."""
    if session.is_signed_in(auth):
        return redirect(dash.get_relative_path("/sites"), "Open your sites")
    return redirect(dash.get_relative_path("/login"), "Sign in")


dash.register_page("dashboard.pages.home", path="/", title="sitelens", name="Home", layout=_home)


def site_tile(site: Any, role: str) -> dcc.Link:
    """One site as a clickable tile that opens its overview."""
    flags = [label for attr, label in (("public", "public"), ("track_errors", "errors")) if getattr(site, attr, False)]
    return dcc.Link(
        [
            html.Div(site.name or site.domain, className="site-name"),
            html.Div(site.domain if site.name and site.name != site.domain else "", className="site-domain"),
            html.Div(
                [html.Span(role, className="badge")] + [html.Span(f, className="badge badge-muted") for f in flags],
                className="site-badges",
            ),
            html.Div(id={"type": ids.SITES_STATS_TYPE, "site": site.site_id}, className="site-stats-slot"),
        ],
        href=dash.get_relative_path("/overview") + f"?site={site.site_id}",
        className="site-tile",
        id=f"site-{site.site_id}",
    )


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **_: Any) -> Any:
    """Every organization of the person with its sites."""
    if not session.is_signed_in(auth):
        return redirect(app_href(login_href("/sites")), "Sign in to continue")
    from api_client import APIError

    api = session.api_for(auth)
    try:
        orgs = session.cached_call(api, "organizations")
        groups = [(org, session.cached_call(api, "org_sites", org.id)) for org in orgs]
    except APIError as exc:
        return html.Div([page_header("Sites"), error_view(exc)], className="page")
    if not groups:
        body: Any = empty_state(
            "You are not in any organization yet",
            "Ask an owner to add you, or create an organization through the API.",
        )
    else:
        body = [
            card(
                html.Div([site_tile(site, org.role) for site in sites], className="site-grid")
                if sites
                else empty_state("No sites yet", "Add a site to this organization through the API."),
                title=org.name,
                class_name="org-card",
            )
            for org, sites in groups
        ]
    site_ids = [site.site_id for _, sites in groups for site in sites]
    admin_orgs = [org for org, _ in groups if org.role in ("owner", "admin")]
    children: list[Any] = [
        page_header("Sites", "Choose a site to see its overview, sessions, goals and errors."),
        html.Div(body, id=ids.SITES_LIST, className="stack"),
        dcc.Store(id=ids.SITES_STATS_LOAD, data=site_ids),
    ]
    if admin_orgs:
        children.append(
            card(
                [
                    sites_ui.add_site_form(admin_orgs),
                    html.Div(id=ids.SITES_NEW),
                    dcc.Store(id=ids.SITES_NEW_ID),
                    dcc.Interval(id=ids.SITES_NEW_TICK, interval=2000, disabled=True),
                ],
                title="Add a site",
                class_name="site-add",
            )
        )
    return html.Div(children, className="page")


@callback(
    Output({"type": ids.SITES_STATS_TYPE, "site": ALL}, "children"),
    Input(ids.SITES_STATS_LOAD, "data"),
    State({"type": ids.SITES_STATS_TYPE, "site": ALL}, "id"),
    State(ids.AUTH, "data"),
)
def load_stats(_: list | None, slots: list[dict], auth: dict | None) -> list:
    """Each site's visitors of the last 24 hours and their hourly sparkline, after the list is on screen."""
    from api_client import APIError, Query

    api = session.api_for(auth)
    day = Query(past_minutes_start=24 * 60, past_minutes_end=0)
    out: list[Any] = []
    for slot in slots:
        try:
            overview = api.overview(slot["site"], day)
            series = api.overview_time_series(slot["site"], day, bucket="hour")
        except APIError as exc:
            out.append(failure_mark(exc))
            continue
        out.append(sites_ui.site_stats(overview, series))
    return out


@callback(
    Output(ids.SITES_ADD_ERROR, "children"),
    Output(ids.SITES_NEW, "children"),
    Output(ids.SITES_NEW_ID, "data"),
    Output(ids.SITES_NEW_TICK, "disabled"),
    Input(ids.SITES_ADD_SUBMIT, "n_clicks"),
    State(ids.SITES_ADD_ORG, "value"),
    State(ids.SITES_ADD_DOMAIN, "value"),
    State(ids.SITES_ADD_NAME, "value"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def add_site(clicks: int, org_id: str | None, domain: str | None, name: str | None, auth: dict | None) -> tuple:
    """Create the site; the API's objection (a bad domain, or 409 for one the organization has) goes by the field."""
    if not clicks or not org_id:
        raise PreventUpdate
    domain = (domain or "").strip()
    if not domain:
        return "Enter the site's domain, e.g. example.com.", dash.no_update, dash.no_update, dash.no_update
    from api_client import APIError, ConflictError, ValidationError

    try:
        site = session.api_for(auth).create_site(org_id, domain, name=(name or "").strip() or None)
    except ConflictError:
        return "This organization already has a site with this domain.", "", None, True
    except ValidationError as exc:
        return exc.message, "", None, True
    except APIError as exc:
        return "", error_view(exc), None, True
    session.invalidate(site.site_id)
    return "", sites_ui.snippet(session.api_url(), site), site.site_id, False


@callback(
    Output(ids.SITES_NEW_STATUS, "children"),
    Output(ids.SITES_NEW_TICK, "disabled", allow_duplicate=True),
    Input(ids.SITES_NEW_TICK, "n_intervals"),
    State(ids.SITES_NEW_ID, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def watch_first_pageview(_: int, site_id: int | None, auth: dict | None) -> tuple:
    """Ask whether the new site's first page view arrived; once it has, say so in green and stop asking."""
    from api_client import APIError

    if site_id is None:
        raise PreventUpdate
    try:
        live = session.api_for(auth).live(site_id, 60)
    except APIError as exc:
        # Keep asking (the API may come back), and say why nothing arrives meanwhile.
        return [sites_ui.snippet_status(False), failure_note(exc)], dash.no_update
    if not live.pageviews:
        return sites_ui.snippet_status(False), dash.no_update  # (also clears a failure an earlier tick reported)
    return sites_ui.snippet_status(True), True

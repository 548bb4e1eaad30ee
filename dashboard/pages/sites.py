"""The site picker (organization -> site), and ``/``, which sends a person to it (or to sign-in)."""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from dashboard import ids, session
from dashboard.components.common import app_href, card, empty_state, error_view, page_header, redirect
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
    return html.Div(
        [
            page_header("Sites", "Choose a site to see its goals, sessions and errors."),
            html.Div(body, id=ids.SITES_LIST, className="stack"),
        ],
        className="page",
    )

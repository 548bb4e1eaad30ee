"""Pure layout factories of the sites page: a site's last-24-hours figures, the add form, the tracking snippet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from dash import dcc, html

from dashboard import ids
from dashboard.components.common import format_number, value_of

__all__ = ["add_site_form", "site_stats", "snippet", "snippet_status", "tracking_snippet"]


SPARK_COLOR = "#4f6bed"


def site_stats(overview: Any, series: Sequence[Any]) -> html.Div:
    """Visitors of the last 24 hours and an hourly sparkline of them (both the API's).

    The window ends now and began 24 hours ago, so its first and last hours are partly counted: the line into them
    is dotted, not a fall in traffic drawn every morning at the current hour.
    """
    users = [value_of(b, "users") or 0 for b in series]
    x = list(range(len(users)))
    whole = slice(1, len(users) - 1) if len(users) > 2 else slice(0, len(users))
    fig = go.Figure(
        go.Scatter(
            x=x,
            y=users,
            mode="lines",
            line={"color": "rgba(0,0,0,0)", "width": 0},
            fill="tozeroy",
            fillcolor="rgba(79,107,237,0.1)",
            hoverinfo="skip",
        )
    )
    fig.add_trace(go.Scatter(x=x[whole], y=users[whole], mode="lines", line={"color": SPARK_COLOR, "width": 1.5}))
    if len(users) > 2:
        for ends in (slice(0, 2), slice(len(users) - 2, len(users))):
            fig.add_trace(
                go.Scatter(
                    x=x[ends], y=users[ends], mode="lines", line={"color": SPARK_COLOR, "width": 1.5, "dash": "dot"}
                )
            )
    fig.update_layout(
        height=36,
        margin={"l": 0, "r": 0, "t": 2, "b": 2},
        xaxis={"visible": False},
        yaxis={"visible": False, "rangemode": "tozero"},
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        showlegend=False,
    )
    visitors = value_of(overview, "users")
    return html.Div(
        [
            html.Div(
                [html.Strong(format_number(visitors), className="site-visitors"), " visitors in 24 h"],
                className="site-stat-text",
            ),
            dcc.Graph(figure=fig, config={"staticPlot": True, "displayModeBar": False}, className="site-spark"),
        ],
        className="site-stats",
    )


def tracking_snippet(api_url: str, site_id: int) -> str:
    """The script tag a site puts in its pages."""
    return f'<script defer src="{api_url}/script.js" data-site-id="{site_id}"></script>'


def snippet(api_url: str, site: Any) -> html.Div:
    """A new site's snippet to copy and the status of its first page view."""
    return html.Div(
        [
            html.P(
                [f"{value_of(site, 'domain')} is added. Put this in the ", html.Code("<head>"), " of its pages:"],
            ),
            html.Pre(tracking_snippet(api_url, value_of(site, "site_id")), id=ids.SITES_SNIPPET, className="snippet"),
            html.Div(snippet_status(False), id=ids.SITES_NEW_STATUS),
        ],
        className="site-new",
    )


def snippet_status(arrived: bool) -> html.Div:
    """Waiting for the first page view, or green once it arrived."""
    if arrived:
        return html.Div("First page view received: tracking works.", className="snippet-status snippet-ok")
    return html.Div("Waiting for the first page view…", className="snippet-status snippet-waiting")


def add_site_form(orgs: Sequence[Any]) -> html.Div:
    """Organization, domain and name; the API's objection to the domain shows beside the field."""
    return html.Div(
        [
            html.Div(
                [
                    html.Label("Organization", htmlFor=ids.SITES_ADD_ORG),
                    dcc.Dropdown(
                        id=ids.SITES_ADD_ORG,
                        options=[{"label": o.name, "value": o.id} for o in orgs],
                        value=orgs[0].id if orgs else None,
                        clearable=False,
                    ),
                ],
                className="field",
            ),
            html.Div(
                [
                    html.Label("Domain", htmlFor=ids.SITES_ADD_DOMAIN),
                    dcc.Input(id=ids.SITES_ADD_DOMAIN, placeholder="example.com", className="input"),
                    html.Div(id=ids.SITES_ADD_ERROR, className="field-error"),
                ],
                className="field",
            ),
            html.Div(
                [
                    html.Label("Name (optional)", htmlFor=ids.SITES_ADD_NAME),
                    dcc.Input(id=ids.SITES_ADD_NAME, className="input"),
                ],
                className="field",
            ),
            html.Button("Add site", id=ids.SITES_ADD_SUBMIT, n_clicks=0, className="button button-primary"),
        ],
        className="site-add-form",
    )

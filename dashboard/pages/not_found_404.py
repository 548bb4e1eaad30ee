"""The page for an address the dashboard does not know."""

from __future__ import annotations

from typing import Any

import dash
from dash import dcc, html

from dashboard.components.common import empty_state

dash.register_page(__name__, path="/404", title="Not found · sitelens")


def layout(**_: Any) -> html.Div:
    """A friendly dead end with a way back."""
    return html.Div(
        empty_state(
            "There is no page here",
            "The address may be mistyped, or the page has moved.",
            dcc.Link("Go to your sites", href=dash.get_relative_path("/sites"), className="button button-primary"),
        ),
        className="page page-narrow",
    )

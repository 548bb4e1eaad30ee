"""Sign-in: email and password, or an API key (for a remote API); comes back to the page that asked for it."""

from __future__ import annotations

from typing import Any

import dash
from dash import Input, Output, State, callback, dcc, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components.common import alert
from dashboard.components.frame import safe_next

dash.register_page(__name__, path="/login", title="Sign in · sitelens", order=100)

REASONS = {
    "expired": ("Your session has ended. Please sign in again.", "warning"),
    "signed_out": ("You are signed out.", "info"),
}


def layout(
    auth: dict | None = None,
    share: dict | None = None,
    browser_zone: str | None = None,
    next: str | None = None,  # noqa: A002 - the query parameter's name
    reason: str | None = None,
    **_: Any,
) -> html.Div:
    """The sign-in card; a reason from the URL (expired, signed out) is shown above the form."""
    notice = REASONS.get(reason or "")
    return html.Div(
        html.Div(
            [
                html.H1("Sign in", className="login-title"),
                html.P("Web analytics you can trust.", className="login-subtitle"),
                html.Div(alert(notice[0], notice[1]) if notice else None, id=ids.LOGIN_MESSAGE, className="status"),
                dcc.Store(id=ids.LOGIN_NEXT, data=safe_next(next)),
                dcc.RadioItems(
                    id=ids.LOGIN_MODE,
                    options=[
                        {"label": "Email and password", "value": "password"},
                        {"label": "API key", "value": "key"},
                    ],
                    value="password",
                    className="segmented segmented-wide",
                    inline=True,
                ),
                html.Div(
                    [
                        html.Label("Email", htmlFor=ids.LOGIN_EMAIL, className="field-label"),
                        dcc.Input(
                            id=ids.LOGIN_EMAIL, type="email", autoComplete="username", className="input", n_submit=0
                        ),
                        html.Label("Password", htmlFor=ids.LOGIN_PASSWORD, className="field-label"),
                        dcc.Input(
                            id=ids.LOGIN_PASSWORD,
                            type="password",
                            autoComplete="current-password",
                            className="input",
                            n_submit=0,
                        ),
                    ],
                    id="login-password-fields",
                    className="field-group",
                ),
                html.Div(
                    [
                        html.Label("API key", htmlFor=ids.LOGIN_API_KEY, className="field-label"),
                        dcc.Input(id=ids.LOGIN_API_KEY, type="password", className="input", n_submit=0),
                        html.P(
                            "Use an API key of your account when this dashboard reads a remote sitelens API.",
                            className="field-help",
                        ),
                    ],
                    id="login-key-fields",
                    className="field-group",
                    hidden=True,
                ),
                html.Button("Sign in", id=ids.LOGIN_SUBMIT, n_clicks=0, className="button button-primary button-wide"),
            ],
            className="login-card",
        ),
        className="login-page",
    )


@callback(
    Output("login-password-fields", "hidden"),
    Output("login-key-fields", "hidden"),
    Input(ids.LOGIN_MODE, "value"),
)
def switch_mode(mode: str) -> tuple[bool, bool]:
    """Show the fields of the chosen way to sign in."""
    return mode == "key", mode != "key"


@callback(
    Output(ids.AUTH, "data", allow_duplicate=True),
    Output(ids.NAVIGATE, "href", allow_duplicate=True),
    Output(ids.LOGIN_MESSAGE, "children"),
    Input(ids.LOGIN_SUBMIT, "n_clicks"),
    Input(ids.LOGIN_PASSWORD, "n_submit"),
    Input(ids.LOGIN_API_KEY, "n_submit"),
    State(ids.LOGIN_MODE, "value"),
    State(ids.LOGIN_EMAIL, "value"),
    State(ids.LOGIN_PASSWORD, "value"),
    State(ids.LOGIN_API_KEY, "value"),
    State(ids.LOGIN_NEXT, "data"),
    prevent_initial_call=True,
)
def sign_in(
    clicks: int,
    password_submits: int,
    key_submits: int,
    mode: str,
    email: str | None,
    password: str | None,
    api_key: str | None,
    next_path: str | None,
) -> tuple:
    """Check the credential against the API; on success keep the token in the tab's session store and move on."""
    if not (clicks or password_submits or key_submits):
        raise PreventUpdate
    from api_client import APIConnectionError, APIError, AuthenticationError, ValidationError

    api = session.api_for(None)
    try:
        if mode == "key":
            key = (api_key or "").strip()
            if not key:
                return no_update, no_update, alert("Enter an API key.")
            me = session.api_for({"token": key}).me()
            # An API key outlives this tab: sign-out forgets it here but never revokes it.
            auth = {"token": key, "email": me.email, "kind": "key"}
        else:
            address = (email or "").strip()
            if not address or not password:
                return no_update, no_update, alert("Enter your email and password.")
            result = api.login(address, password)
            auth = {"token": result.token, "email": result.email or address, "kind": "login"}
    except AuthenticationError:
        wrong = "That API key is not valid." if mode == "key" else "The email or password is not right."
        return no_update, no_update, alert(wrong)
    except ValidationError as exc:
        return no_update, no_update, alert(exc.message)
    except APIConnectionError as exc:
        if exc.code == "TIMEOUT":  # reachable but busy (long reads on a large store): checking the server misleads
            return no_update, no_update, alert("The server did not answer in time. Try again in a moment.")
        return no_update, no_update, alert("The dashboard cannot reach the API. Check that the server is running.")
    except APIError as exc:
        return no_update, no_update, alert(exc.message)
    return auth, dash.get_relative_path(safe_next(next_path)), None

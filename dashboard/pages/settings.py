"""Site settings: configuration switches, excluded IPs and countries, the private link, and deleting the site.

Admins and owners change things; members see the same page read-only (``Site.is_owner`` tells which). Every write
goes through ``api_client`` and then ``session.invalidate(site_id)``, so the person sees their own change at once.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import dash
import flask
from dash import ALL, Input, Output, State, callback, ctx, html, no_update
from dash.exceptions import PreventUpdate

from dashboard import ids, session
from dashboard.components import settings as comp
from dashboard.components.common import alert, card, error_view, page_header, redirect
from dashboard.components.frame import login_href
from dashboard.state import parse_view

dash.register_page(
    __name__,
    path="/settings",
    title="Site settings · sitelens",
    name="Settings",
    nav_label="Settings",
    nav_scope="site",
    order=90,
)

IPS_PLACEHOLDER = "One per line, e.g.\n203.0.113.7\n10.0.0.0/8\n192.168.1.10-192.168.1.50\n2001:db8::/32"
COUNTRIES_PLACEHOLDER = "Two-letter codes, one per line or comma-separated, e.g. US, DE"


def _origin() -> str:
    """The browser's origin for share addresses: Dash's callbacks are POSTs, which browsers send with ``Origin``."""
    origin = flask.request.headers.get("Origin")
    if origin and origin != "null":
        return origin
    return flask.request.host_url.rstrip("/")


def _share_url(site_id: int, key: str | None) -> str | None:
    if not key:
        return None
    prefix = dash.get_app().config.requests_pathname_prefix or "/"
    return comp.share_url(_origin(), prefix, site_id, key)


def _link_panel(url: str | None) -> html.Div:
    return comp.private_link_panel(
        url,
        url_id=ids.SETTINGS_LINK_URL,
        copy_id=ids.SETTINGS_LINK_COPY,
        generate_id=ids.SETTINGS_LINK_GENERATE,
        revoke_id=ids.SETTINGS_LINK_REVOKE,
    )


# HTML data attributes (names with dashes, so passed as a mapping; typed loosely as Dash's signatures cannot name them).
_DATA_SAVES: dict[str, Any] = {"data-saves": "1"}
_DATA_UNSAVED_GUARD: dict[str, Any] = {"data-unsaved-guard": "1"}


def _save_button(component_id: str, label: str, *, hidden: bool) -> html.Button:
    # data-saves: a click counts as saving for the unsaved-changes guard (assets/sitelens.js).
    return html.Button(
        label, id=component_id, n_clicks=0, hidden=hidden, className="button button-primary", **_DATA_SAVES
    )


def _settings_body(site: Any, ips: list[str], countries: list[str], link_url: str | None) -> list[Any]:
    """The page's cards for ``site`` (an api_client ``Site``); read-only when the person is not an admin or owner."""
    can_edit = bool(site.is_owner)
    switches = comp.switch_values(site)
    children: list[Any] = [
        dash.dcc.Store(
            id=ids.SETTINGS_SAVED,
            data={"siteId": site.site_id, "domain": site.domain, "switches": switches},
        )
    ]
    if not can_edit:
        children.append(
            html.Div(
                alert(
                    "You can see this site's settings, but only its organization's admins and owners can change them.",
                    "info",
                    title="Read-only",
                ),
                className="read-only-note",
            )
        )
    tracking = card(
        [
            comp.switch_groups(
                switches,
                component_id=lambda field: {"type": ids.SETTINGS_SWITCH_TYPE, "field": field},
                disabled=not can_edit,
            ),
            html.Div(
                [
                    _save_button(ids.SETTINGS_SWITCHES_SAVE, "Save settings", hidden=not can_edit),
                    html.Div(id=ids.SETTINGS_SWITCHES_STATUS, className="settings-status", role="status"),
                ],
                className="settings-actions",
            ),
        ],
        title="Tracking and privacy",
        class_name="card-wide",
    )
    ip_check = comp.check_ip_entries(ips)
    excluded_ips = card(
        [
            html.P(
                "Events from these addresses are dropped when they arrive: single addresses, CIDR blocks or "
                "a-b ranges, IPv4 or IPv6 (at most 100).",
                className="editor-hint",
            ),
            comp.list_editor(
                ips, component_id=ids.SETTINGS_EXCLUDED_IPS, placeholder=IPS_PLACEHOLDER, disabled=not can_edit
            ),
            html.Div(comp.entry_problems(ip_check), id=ids.SETTINGS_EXCLUDED_IPS_PROBLEMS),
            html.Div(
                [
                    _save_button(ids.SETTINGS_EXCLUDED_IPS_SAVE, "Save excluded IPs", hidden=not can_edit),
                    html.Div(id=ids.SETTINGS_EXCLUDED_IPS_STATUS, className="settings-status", role="status"),
                ],
                className="settings-actions",
            ),
        ],
        title="Excluded IP addresses",
    )
    excluded_countries = card(
        [
            html.P(
                "Events from visitors in these countries are dropped when they arrive (ISO 3166 two-letter codes).",
                className="editor-hint",
            ),
            comp.list_editor(
                countries,
                component_id=ids.SETTINGS_EXCLUDED_COUNTRIES,
                placeholder=COUNTRIES_PLACEHOLDER,
                disabled=not can_edit,
            ),
            html.Div(id=ids.SETTINGS_EXCLUDED_COUNTRIES_PROBLEMS),
            html.Div(
                [
                    _save_button(ids.SETTINGS_EXCLUDED_COUNTRIES_SAVE, "Save excluded countries", hidden=not can_edit),
                    html.Div(id=ids.SETTINGS_EXCLUDED_COUNTRIES_STATUS, className="settings-status", role="status"),
                ],
                className="settings-actions",
            ),
        ],
        title="Excluded countries",
    )
    grid: list[Any] = [tracking, excluded_ips, excluded_countries]
    if can_edit:
        grid.append(
            card(
                [
                    html.Div(_link_panel(link_url), id=ids.SETTINGS_LINK),
                    html.Div(id=ids.SETTINGS_LINK_STATUS, className="settings-status", role="status"),
                ],
                title="Private link",
                class_name="card-wide",
            )
        )
        grid.append(
            card(
                [
                    comp.danger_zone(site.domain, input_id=ids.SETTINGS_DELETE_INPUT, button_id=ids.SETTINGS_DELETE),
                    html.Div(id=ids.SETTINGS_DELETE_STATUS, className="settings-status", role="status"),
                ],
                title="Delete this site",
                class_name="card-wide card-danger",
            )
        )
    children.append(html.Div(grid, className="settings-grid"))
    return children


def layout(auth: dict | None = None, share: dict | None = None, browser_zone: str | None = None, **query: Any) -> Any:
    """The settings of the URL's site, read from the API as the signed-in person sees them."""
    raw = {key: value for key, value in query.items() if isinstance(value, str)}
    if not session.is_signed_in(auth):
        search = "?" + urlencode(raw) if raw else ""
        return redirect(dash.get_relative_path(login_href("/settings", search)), "Sign in to continue")
    view = parse_view(raw, default_zone=browser_zone)
    if view.site_id is None:
        return redirect(dash.get_relative_path("/sites"), "Choose a site")
    missing = session.site_gate(auth, view)
    if missing is not None:
        return missing
    from api_client import APIError

    api = session.api_for(auth)
    try:
        site = session.cached_call(api, "site", view.site_id)
        ips = session.cached_call(api, "excluded_ips", view.site_id)
        countries = session.cached_call(api, "excluded_countries", view.site_id)
        key = session.cached_call(api, "private_link_key", view.site_id) if site.is_owner else None
    except APIError as exc:
        return html.Div([page_header("Site settings"), error_view(exc)], className="page")
    return html.Div(
        [
            page_header(
                "Site settings", site.domain if site.name in (None, "", site.domain) else f"{site.name} · {site.domain}"
            ),
            html.Div(_settings_body(site, ips, countries, _share_url(site.site_id, key)), id=ids.SETTINGS_BODY),
        ],
        className="page settings-page",
        # Typing here and leaving without saving asks first (assets/sitelens.js).
        **_DATA_UNSAVED_GUARD,
    )


def _switch_label(field: str) -> str:
    return next((s.label for s in comp.SITE_SWITCHES if s.field == field), field)


@callback(
    Output(ids.SETTINGS_SWITCHES_STATUS, "children"),
    Output(ids.SETTINGS_SAVED, "data"),
    Input(ids.SETTINGS_SWITCHES_SAVE, "n_clicks"),
    State({"type": ids.SETTINGS_SWITCH_TYPE, "field": ALL}, "value"),
    State(ids.SETTINGS_SAVED, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def save_switches(n_clicks: int, values: list[list[str]], saved: dict | None, auth: dict | None) -> tuple:
    """Send the switches that changed; confirm what was saved and remember it as the new saved state."""
    if not n_clicks or not saved:
        raise PreventUpdate
    fields = [state["id"]["field"] for state in ctx.states_list[0]]
    current = {field: bool(value) for field, value in zip(fields, values, strict=True)}
    changes = comp.changed_switches(saved["switches"], current)
    if not changes:
        return alert("Nothing to save: no switch was changed.", "info"), no_update
    from api_client import APIError

    try:
        config = session.api_for(auth).update_site_config(saved["siteId"], **changes)
    except APIError as exc:
        return error_view(exc), no_update
    session.invalidate(saved["siteId"])
    stored = comp.switch_values(config)
    described = ", ".join(f"{_switch_label(field)} {'on' if stored[field] else 'off'}" for field in changes)
    return alert(f"Saved: {described}.", "success"), {**saved, "switches": stored}


def _validation_view(check: comp.EntryCheck) -> tuple[Any, bool, str]:
    problems = comp.entry_problems(check)
    return problems, not check.ok, "list-editor" if check.ok else "list-editor list-editor-invalid"


@callback(
    Output(ids.SETTINGS_EXCLUDED_IPS_PROBLEMS, "children"),
    Output(ids.SETTINGS_EXCLUDED_IPS_SAVE, "disabled"),
    Output(ids.SETTINGS_EXCLUDED_IPS, "className"),
    Input(ids.SETTINGS_EXCLUDED_IPS, "value"),
    prevent_initial_call=True,
)
def check_ips(text: str | None) -> tuple:
    """Mark entries that are not an address, CIDR block or range as the person types (before anything is sent)."""
    return _validation_view(comp.check_ip_entries(comp.parse_entries(text)))


@callback(
    Output(ids.SETTINGS_EXCLUDED_COUNTRIES_PROBLEMS, "children"),
    Output(ids.SETTINGS_EXCLUDED_COUNTRIES_SAVE, "disabled"),
    Output(ids.SETTINGS_EXCLUDED_COUNTRIES, "className"),
    Input(ids.SETTINGS_EXCLUDED_COUNTRIES, "value"),
    prevent_initial_call=True,
)
def check_countries(text: str | None) -> tuple:
    """Mark entries that are not two-letter country codes as the person types."""
    return _validation_view(comp.check_country_entries(comp.parse_entries(text)))


def _save_list(
    n_clicks: int,
    text: str | None,
    saved: dict | None,
    auth: dict | None,
    *,
    field: str,
    checker: Any,
    noun: tuple[str, str],
) -> tuple:
    """Save one exclusion list: refuse locally found junk, send the clean list, show the API's verdict."""
    if not n_clicks or not saved:
        raise PreventUpdate
    entries = comp.parse_entries(text)
    check = checker(entries)
    if not check.ok:
        return alert("Nothing was saved: fix the entries marked above first.", "error"), no_update, no_update
    from api_client import APIError, ValidationError

    try:
        config = session.api_for(auth).update_site_config(saved["siteId"], **{field: check.valid})
    except ValidationError as exc:
        messages = comp.field_messages(exc.details, field, check.valid) or [exc.message]
        refused = html.Div(
            [html.Div("The API refused this list; nothing was saved:"), html.Ul([html.Li(m) for m in messages])],
            className="field-problems",
            role="alert",
        )
        return alert("Nothing was saved.", "error"), refused, no_update
    except APIError as exc:
        return error_view(exc), no_update, no_update
    session.invalidate(saved["siteId"])
    stored = list(getattr(config, "excluded_ips" if field == "excludedIPs" else "excluded_countries"))
    count = len(stored)
    singular, plural = noun
    message = (
        f"Saved: {count} {singular if count == 1 else plural}."
        if count
        else "Saved: the list is empty, so nothing is excluded."
    )
    return alert(message, "success"), None, "\n".join(stored)


@callback(
    Output(ids.SETTINGS_EXCLUDED_IPS_STATUS, "children"),
    Output(ids.SETTINGS_EXCLUDED_IPS_PROBLEMS, "children", allow_duplicate=True),
    Output(ids.SETTINGS_EXCLUDED_IPS, "value"),
    Input(ids.SETTINGS_EXCLUDED_IPS_SAVE, "n_clicks"),
    State(ids.SETTINGS_EXCLUDED_IPS, "value"),
    State(ids.SETTINGS_SAVED, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def save_ips(n_clicks: int, text: str | None, saved: dict | None, auth: dict | None) -> tuple:
    """Save the excluded IPs."""
    return _save_list(
        n_clicks,
        text,
        saved,
        auth,
        field="excludedIPs",
        checker=comp.check_ip_entries,
        noun=("excluded IP entry", "excluded IP entries"),
    )


@callback(
    Output(ids.SETTINGS_EXCLUDED_COUNTRIES_STATUS, "children"),
    Output(ids.SETTINGS_EXCLUDED_COUNTRIES_PROBLEMS, "children", allow_duplicate=True),
    Output(ids.SETTINGS_EXCLUDED_COUNTRIES, "value"),
    Input(ids.SETTINGS_EXCLUDED_COUNTRIES_SAVE, "n_clicks"),
    State(ids.SETTINGS_EXCLUDED_COUNTRIES, "value"),
    State(ids.SETTINGS_SAVED, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def save_countries(n_clicks: int, text: str | None, saved: dict | None, auth: dict | None) -> tuple:
    """Save the excluded countries."""
    return _save_list(
        n_clicks,
        text,
        saved,
        auth,
        field="excludedCountries",
        checker=comp.check_country_entries,
        noun=("excluded country", "excluded countries"),
    )


@callback(
    Output(ids.SETTINGS_LINK, "children"),
    Output(ids.SETTINGS_LINK_STATUS, "children"),
    Input(ids.SETTINGS_LINK_GENERATE, "n_clicks"),
    Input(ids.SETTINGS_LINK_REGENERATE_CONFIRM, "submit_n_clicks"),
    Input(ids.SETTINGS_LINK_REVOKE_CONFIRM, "submit_n_clicks"),
    State(ids.SETTINGS_SAVED, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def change_link(_generate: int, _regenerate: int, _revoke: int, saved: dict | None, auth: dict | None) -> tuple:
    """Generate the private link, or (once confirmed in the browser) replace or revoke it; the panel shows the
    result at once."""
    # The panel's buttons are re-created with n_clicks=0 after each change; only a real click acts.
    if not saved or not ctx.triggered or not ctx.triggered[0].get("value"):
        raise PreventUpdate
    from api_client import APIError

    api = session.api_for(auth)
    site_id = saved["siteId"]
    try:
        if ctx.triggered_id in (ids.SETTINGS_LINK_GENERATE, ids.SETTINGS_LINK_REGENERATE_CONFIRM):
            key = api.generate_private_link(site_id)
            message = alert("A new private link is active. Any older link stopped working.", "success")
        else:
            api.revoke_private_link(site_id)
            key = None
            message = alert(
                "The private link was revoked: anyone opening it now is told it is no longer valid.", "success"
            )
    except APIError as exc:
        return no_update, error_view(exc)
    session.invalidate(site_id)
    return _link_panel(_share_url(site_id, key)), message


@callback(
    Output(ids.SETTINGS_DELETE, "disabled"),
    Input(ids.SETTINGS_DELETE_INPUT, "value"),
    State(ids.SETTINGS_SAVED, "data"),
)
def arm_delete(typed: str | None, saved: dict | None) -> bool:
    """The delete button works only once the site's domain has been typed exactly."""
    return not (saved and (typed or "").strip().lower() == saved["domain"].lower())


@callback(
    Output(ids.SETTINGS_DELETE_STATUS, "children"),
    Input(ids.SETTINGS_DELETE, "n_clicks"),
    State(ids.SETTINGS_DELETE_INPUT, "value"),
    State(ids.SETTINGS_SAVED, "data"),
    State(ids.AUTH, "data"),
    prevent_initial_call=True,
)
def delete_site(n_clicks: int, typed: str | None, saved: dict | None, auth: dict | None) -> Any:
    """Delete the site (with every event of it) and go back to the site list."""
    if not n_clicks or not saved or (typed or "").strip().lower() != saved["domain"].lower():
        raise PreventUpdate
    from api_client import APIError

    try:
        session.api_for(auth).delete_site(saved["siteId"])
    except APIError as exc:
        return error_view(exc)
    session.invalidate(saved["siteId"])
    return html.Div(
        [
            alert(f"{saved['domain']} and all its data were deleted.", "success"),
            redirect(dash.get_relative_path("/sites"), "Back to your sites"),
        ]
    )

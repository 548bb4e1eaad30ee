"""Site settings building blocks: configuration switches, exclusion-list validation and editors, private link, delete.

Pure functions (data in, components or validation results out). Excluded-IP entries are checked here with
``ipaddress`` by the same rules the server applies (single address, CIDR block or ``a-b`` range, IPv4 or IPv6),
so junk is shown beside the editor before anything is sent; the server still has the last word.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dash import dcc, html

from dashboard.countries import is_country_code

__all__ = [
    "MAX_EXCLUDED_COUNTRIES",
    "MAX_EXCLUDED_IPS",
    "SITE_SWITCHES",
    "EntryCheck",
    "SiteSwitch",
    "changed_switches",
    "check_country_entries",
    "check_ip_entry",
    "check_ip_entries",
    "danger_zone",
    "entry_problems",
    "field_messages",
    "list_editor",
    "parse_entries",
    "private_link_panel",
    "share_url",
    "switch_groups",
    "switch_row",
    "switch_values",
]

MAX_EXCLUDED_IPS = 100
MAX_EXCLUDED_COUNTRIES = 250
_SPLIT = re.compile(r"[\s,;]+")


@dataclass(frozen=True)
class SiteSwitch:
    """One boolean of the site configuration: API name, the Site model attribute, label and explanation."""

    field: str
    attribute: str
    label: str
    help: str
    group: str


SITE_SWITCHES: list[SiteSwitch] = [
    SiteSwitch(
        "public",
        "public",
        "Public dashboard",
        "Anyone with the address can read this site's analytics without signing in.",
        "Privacy",
    ),
    SiteSwitch(
        "saltUserIds",
        "salt_user_ids",
        "Rotate visitor ids daily",
        "Visitor ids change every day (UTC): more private, but returning visitors are no longer recognised.",
        "Privacy",
    ),
    SiteSwitch(
        "blockBots",
        "block_bots",
        "Block bots",
        "Drop events from crawlers, uptime monitors and headless browsers when they arrive.",
        "Privacy",
    ),
    SiteSwitch(
        "sessionReplay",
        "session_replay",
        "Session replay",
        "Let the tracker record sessions so they can be replayed.",
        "Collection",
    ),
    SiteSwitch(
        "webVitals",
        "web_vitals",
        "Web vitals",
        "Collect LCP, CLS, INP, FCP and TTFB timings from visitors' browsers.",
        "Collection",
    ),
    SiteSwitch(
        "trackErrors",
        "track_errors",
        "Error tracking",
        "Capture uncaught JavaScript errors and rejected promises (each one counts as an event).",
        "Collection",
    ),
    SiteSwitch(
        "trackOutbound",
        "track_outbound",
        "Outbound links",
        "Record clicks on links that lead to other sites.",
        "Collection",
    ),
    SiteSwitch(
        "trackUrlParams",
        "track_url_params",
        "URL parameters",
        "Keep the query string of page addresses; when off it is removed before storing.",
        "Collection",
    ),
]


@dataclass(frozen=True)
class EntryCheck:
    """Result of checking an exclusion list: the clean entries to save and the problems, one per bad entry."""

    valid: list[str]
    problems: list[tuple[str, str]] = field(default_factory=list)
    too_many: str | None = None

    @property
    def ok(self) -> bool:
        """True when the list can be saved as it is."""
        return not self.problems and self.too_many is None


def parse_entries(text: str | None) -> list[str]:
    """Entries of an editor: one per line (commas, semicolons and spaces also separate); blanks dropped."""
    return [item for item in _SPLIT.split(text or "") if item]


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def check_ip_entry(entry: str) -> str | None:
    """Why ``entry`` is not an address, CIDR block or ``a-b`` range of one IP version; ``None`` when it is fine."""
    text = entry.strip()
    if not text:
        return "is empty"
    if "/" in text:
        try:
            ipaddress.ip_network(text, strict=False)
        except ValueError:
            return "is not valid CIDR notation (e.g. 10.0.0.0/8)"
        return None
    if "-" in text:
        start_text, _, end_text = text.partition("-")
        start, end = _address(start_text), _address(end_text)
        if start is None or end is None:
            bad = start_text if start is None else end_text
            return f"is not a range of two addresses ({bad.strip() or 'nothing'} is not an address)"
        if start.version != end.version:
            return "mixes IPv4 and IPv6"
        if int(start) > int(end):
            return "starts after it ends"
        return None
    if _address(text) is None:
        return "is not an IPv4 or IPv6 address"
    return None


def check_ip_entries(entries: Sequence[str]) -> EntryCheck:
    """Check every excluded-IP entry; duplicates are dropped from the entries to save."""
    problems = [(entry, reason) for entry in entries if (reason := check_ip_entry(entry))]
    valid = list(dict.fromkeys(entry.strip() for entry in entries if not check_ip_entry(entry)))
    too_many = (
        f"At most {MAX_EXCLUDED_IPS} entries are allowed ({len(valid)} given)."
        if len(valid) > MAX_EXCLUDED_IPS
        else None
    )
    return EntryCheck(valid, problems, too_many)


def check_country_entries(entries: Sequence[str]) -> EntryCheck:
    """Check excluded countries: 2-letter codes a country has, any case (saved upper-case, duplicates dropped).

    User-assigned codes such as ``XX`` or ``ZZ`` name no country, so no visit could ever be excluded by them.
    """
    problems = [(entry, _country_problem(entry)) for entry in entries if not is_country_code(_upper(entry))]
    valid = list(dict.fromkeys(_upper(e) for e in entries if is_country_code(_upper(e))))
    too_many = (
        f"At most {MAX_EXCLUDED_COUNTRIES} countries are allowed ({len(valid)} given)."
        if len(valid) > MAX_EXCLUDED_COUNTRIES
        else None
    )
    return EntryCheck(valid, problems, too_many)


def _upper(entry: str) -> str:
    # Only ASCII is upper-cased: "ß".upper() is "SS", which is no way to write South Sudan.
    text = entry.strip()
    return text.upper() if text.isascii() else text


def _country_problem(entry: str) -> str:
    code = entry.strip().upper()
    if len(code) == 2 and code.isascii() and code.isalpha():
        return "names no country (codes such as XX and ZZ are not assigned to one); use a code such as US"
    return "is not a 2-letter country code such as US"


def entry_problems(check: EntryCheck) -> html.Div | None:
    """The problems of an exclusion list as a list beside its editor, or ``None`` when there are none."""
    if check.ok:
        return None
    items = [html.Li([html.Code(entry), " ", reason]) for entry, reason in check.problems]
    if check.too_many:
        items.append(html.Li(check.too_many))
    return html.Div(
        [html.Div(f"{len(items)} entr{'y' if len(items) == 1 else 'ies'} to fix before saving:"), html.Ul(items)],
        className="field-problems",
        role="alert",
    )


def field_messages(details: Sequence[dict[str, str]] | None, prefix: str, entries: Sequence[str]) -> list[str]:
    """The API's per-field messages for one list (``excludedIPs.3`` names the fourth entry sent), as text."""
    messages = []
    for detail in details or []:
        name = str(detail.get("field", ""))
        if name != prefix and not name.startswith(prefix + "."):
            continue
        index = name.removeprefix(prefix + ".")
        entry = entries[int(index)] if index.isdigit() and int(index) < len(entries) else None
        messages.append(f"{entry}: {detail.get('message', '')}" if entry is not None else str(detail.get("message")))
    return messages


def switch_values(site: Any) -> dict[str, bool]:
    """The eight switches of a site (an api_client ``Site``), by API field name."""
    return {switch.field: bool(getattr(site, switch.attribute)) for switch in SITE_SWITCHES}


def changed_switches(saved: dict[str, bool], current: dict[str, bool]) -> dict[str, bool]:
    """The switches whose value differs from the saved configuration (what a save has to send)."""
    return {name: value for name, value in current.items() if name in saved and saved[name] != value}


def switch_row(switch: SiteSwitch, value: bool, *, component_id: Any, disabled: bool) -> html.Div:
    """A labelled on/off switch with its one-line explanation."""
    return html.Div(
        [
            dcc.Checklist(
                id=component_id,
                options=[
                    {"label": html.Span(switch.label, className="switch-text"), "value": "on", "disabled": disabled}
                ],
                value=["on"] if value else [],
                className="switch",
                inputClassName="switch-input",
                labelClassName="switch-label",
            ),
            html.Div(switch.help, className="switch-help"),
        ],
        className="switch-row" + (" switch-row-disabled" if disabled else ""),
    )


def list_editor(
    entries: Sequence[str], *, component_id: Any, placeholder: str, disabled: bool, rows: int = 6
) -> dcc.Textarea:
    """A textarea holding one exclusion entry per line."""
    return dcc.Textarea(
        id=component_id,
        value="\n".join(entries),
        placeholder=placeholder,
        disabled=disabled,
        rows=rows,
        spellCheck=False,
        className="list-editor" + (" list-editor-disabled" if disabled else ""),
    )


def share_url(origin: str, path_prefix: str, site_id: int, key: str) -> str:
    """The private-link address ``<origin><prefix>share/<siteId>#<key>``: the key rides in the fragment,
    which browsers never send to a server, so it stays out of every access log."""
    prefix = path_prefix if path_prefix.endswith("/") else path_prefix + "/"
    return f"{origin.rstrip('/')}{prefix}share/{site_id}#{key}"


REGENERATE_QUESTION = "Generate a new private link? The current link stops working at once for everyone who has it."
REVOKE_QUESTION = "Revoke the private link? Everyone who has it loses access at once."


def private_link_panel(url: str | None, *, url_id: Any, copy_id: Any, generate_id: Any, revoke_id: Any) -> html.Div:
    """The private link: its share address with a copy button and a revoke button, or a generate button.

    Replacing or revoking a link cuts off everyone who holds it, so both ask first (the browser's confirm dialog);
    their confirmations are ``<id>-confirm`` (``submit_n_clicks``). Each state keeps the other state's inputs as
    hidden placeholders, so one callback serves both.
    """
    regenerate = dcc.ConfirmDialogProvider(
        html.Button(
            "Generate a new link",
            id=f"{generate_id}-again",
            n_clicks=0,
            className="button button-secondary",
            hidden=url is None,
        ),
        id=f"{generate_id}-confirm",
        message=REGENERATE_QUESTION,
    )
    revoke = dcc.ConfirmDialogProvider(
        html.Button("Revoke this link", id=revoke_id, n_clicks=0, className="button button-danger", hidden=url is None),
        id=f"{revoke_id}-confirm",
        message=REVOKE_QUESTION,
    )
    if url is None:
        return html.Div(
            [
                html.P(
                    "No private link is active. A private link lets anyone who holds it read this site's "
                    "goals, sessions, errors and channels, without signing in and without any write access.",
                    className="muted",
                ),
                html.Button("Generate private link", id=generate_id, n_clicks=0, className="button button-primary"),
                html.Div([regenerate, revoke], hidden=True),
            ],
            className="private-link",
        )
    return html.Div(
        [
            html.P(
                "Anyone with this address can read this site's analytics. Generating a new link stops the "
                "old one at once.",
                className="muted",
            ),
            html.Div(
                [
                    dcc.Input(id=url_id, value=url, readOnly=True, className="share-url", type="text"),
                    dcc.Clipboard(
                        target_id=url_id,
                        id=copy_id,
                        title="Copy the share address",
                        className="button button-ghost copy-button",
                    ),
                ],
                className="share-url-row",
            ),
            html.Div([regenerate, revoke], className="button-row"),
            html.Button(id=generate_id, n_clicks=0, hidden=True),
        ],
        className="private-link",
    )


def danger_zone(domain: str, *, input_id: Any, button_id: Any) -> html.Div:
    """Delete the site, behind typing its domain."""
    return html.Div(
        [
            html.P(
                [
                    "Deleting removes the site, its goals, its private link and every event stored for it. "
                    "This cannot be undone. Type ",
                    html.Code(domain),
                    " to confirm.",
                ]
            ),
            html.Div(
                [
                    dcc.Input(
                        id=input_id,
                        value="",
                        placeholder=domain,
                        type="text",
                        autoComplete="off",
                        className="input",
                    ),
                    html.Button(
                        "Delete this site", id=button_id, n_clicks=0, disabled=True, className="button button-danger"
                    ),
                ],
                className="danger-row",
            ),
        ],
        className="danger-zone",
    )


def switch_groups(values: dict[str, bool], *, component_id: Callable[[str], Any], disabled: bool) -> html.Div:
    """Switches grouped under "Privacy" and "Collection"."""
    groups: dict[str, list[html.Div]] = {}
    for switch in SITE_SWITCHES:
        groups.setdefault(switch.group, []).append(
            switch_row(
                switch, values.get(switch.field, False), component_id=component_id(switch.field), disabled=disabled
            )
        )
    return html.Div(
        [
            html.Div([html.H4(name, className="switch-group-title"), *rows], className="switch-group")
            for name, rows in groups.items()
        ],
        className="switch-groups",
    )

"""Site settings builders and entry validation, checked without a browser."""

from __future__ import annotations

import pytest

from api_client.models import Site
from dashboard.components import settings as comp


@pytest.mark.parametrize(
    "entry",
    [
        "192.168.1.1",
        " 10.0.0.0/8 ",
        "10.0.0.1/8",  # host bits set: the server accepts it (strict=False), so must we
        "10.0.0.1-10.0.0.255",
        "2001:db8::1",
        "2001:db8::/32",
        "2001:db8::1-2001:db8::ff",
    ],
)
def test_valid_ip_entries(entry):
    assert comp.check_ip_entry(entry) is None


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("junk", "is not an IPv4 or IPv6 address"),
        ("300.1.1.1", "is not an IPv4 or IPv6 address"),
        ("10.0.0.0/33", "is not valid CIDR notation"),
        ("10.0.0.9-10.0.0.1", "starts after it ends"),
        ("10.0.0.1-2001:db8::1", "mixes IPv4 and IPv6"),
        ("10.0.0.1-", "is not a range of two addresses (nothing is not an address)"),
        ("10.0.0.1-zzz", "is not a range of two addresses (zzz is not an address)"),
        ("", "is empty"),
    ],
)
def test_invalid_ip_entries(entry, reason):
    assert reason in comp.check_ip_entry(entry)


def test_check_ip_entries_marks_junk_and_keeps_clean_entries():
    entries = comp.parse_entries("10.0.0.1\n\nnot-an-ip, 10.0.0.1 ; 2001:db8::/32\n1.2.3.4-1.2.3.1")
    assert entries == ["10.0.0.1", "not-an-ip", "10.0.0.1", "2001:db8::/32", "1.2.3.4-1.2.3.1"]
    check = comp.check_ip_entries(entries)
    assert not check.ok
    assert check.valid == ["10.0.0.1", "2001:db8::/32"]
    assert [entry for entry, _ in check.problems] == ["not-an-ip", "1.2.3.4-1.2.3.1"]
    problems = comp.entry_problems(check)
    assert problems is not None and problems.role == "alert"
    assert problems.children[0].children == "2 entries to fix before saving:"
    assert problems.children[1].children[0].children[0].children == "not-an-ip"


def test_check_ip_entries_limit():
    check = comp.check_ip_entries([f"10.0.0.{i}" for i in range(101)])
    assert check.too_many and not check.ok
    assert comp.check_ip_entries([f"10.0.0.{i}" for i in range(100)]).ok


def test_check_country_entries():
    check = comp.check_country_entries(["us", " de", "USA", "1A", "US", "xx", "ZZ", "xk", "ß"])
    assert check.valid == ["US", "DE", "XK"]
    assert [entry for entry, _ in check.problems] == ["USA", "1A", "xx", "ZZ", "ß"]
    assert "names no country" in dict(check.problems)["ZZ"]
    assert comp.entry_problems(comp.check_country_entries(["fr"])) is None


def test_field_messages_map_indexes_to_entries():
    details = [
        {"field": "excludedIPs.1", "message": "bad thing"},
        {"field": "excludedCountries.0", "message": "other"},
        {"field": "excludedIPs", "message": "too many"},
    ]
    assert comp.field_messages(details, "excludedIPs", ["1.1.1.1", "zzz"]) == ["zzz: bad thing", "too many"]
    assert comp.field_messages(None, "excludedIPs", []) == []


def test_switches_cover_every_boolean_and_detect_changes():
    assert [s.field for s in comp.SITE_SWITCHES] == [
        "public",
        "saltUserIds",
        "blockBots",
        "sessionReplay",
        "webVitals",
        "trackErrors",
        "trackOutbound",
        "trackUrlParams",
    ]
    assert all(s.help and s.label for s in comp.SITE_SWITCHES)
    site = Site(
        id="abc",
        site_id=1,
        name="x",
        domain="x.example",
        public=False,
        salt_user_ids=False,
        block_bots=True,
        session_replay=False,
        web_vitals=False,
        track_errors=False,
        track_outbound=True,
        track_url_params=True,
    )
    values = comp.switch_values(site)
    assert values["blockBots"] is True and values["public"] is False
    current = {**values, "public": True, "blockBots": True}
    assert comp.changed_switches(values, current) == {"public": True}


def test_switch_row_reflects_value_and_read_only():
    switch = comp.SITE_SWITCHES[2]
    row = comp.switch_row(switch, True, component_id={"type": "s", "field": switch.field}, disabled=True)
    checklist, help_text = row.children
    assert checklist.value == ["on"] and checklist.options[0]["disabled"] is True
    assert checklist.id == {"type": "s", "field": "blockBots"}
    assert help_text.children == switch.help
    assert "switch-row-disabled" in row.className
    off = comp.switch_row(switch, False, component_id="x", disabled=False)
    assert off.children[0].value == [] and off.children[0].options[0]["disabled"] is False


def test_share_url_keeps_the_key_in_the_fragment():
    assert comp.share_url("http://127.0.0.1:8050", "/", 7, "abc_DEF-1") == "http://127.0.0.1:8050/share/7#abc_DEF-1"
    assert comp.share_url("https://a.example/", "/dash", 7, "k") == "https://a.example/dash/share/7#k"


def test_private_link_panel_states():
    empty = comp.private_link_panel(None, url_id="u", copy_id="c", generate_id="g", revoke_id="r")
    buttons = [child for child in empty.children if type(child).__name__ == "Button"]
    assert buttons[0].children == "Generate private link"
    active = comp.private_link_panel("http://h/share/1#k", url_id="u", copy_id="c", generate_id="g", revoke_id="r")
    url_input = active.children[1].children[0]
    clipboard = active.children[1].children[1]
    assert url_input.value == "http://h/share/1#k" and url_input.readOnly is True
    assert clipboard.target_id == "u"
    providers = active.children[2].children
    assert [p.children.children for p in providers] == ["Generate a new link", "Revoke this link"]
    # Replacing and revoking cut off whoever holds the link: both ask first.
    assert [p.id for p in providers] == ["g-confirm", "r-confirm"]
    assert all(type(p).__name__ == "ConfirmDialogProvider" and "at once" in p.message for p in providers)


def test_danger_zone_starts_disabled_and_names_the_domain():
    zone = comp.danger_zone("example.com", input_id="i", button_id="b")
    row = zone.children[1]
    assert row.children[1].disabled is True
    assert zone.children[0].children[1].children == "example.com"

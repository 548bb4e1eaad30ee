"""Countries and regions in the dashboard: names and flags for codes, codes for typed names, refusals that say why."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from api_client.activity import Session
from api_client.models import ErrorEvent
from dashboard.components import frame
from dashboard.components import goals as goals_ui
from dashboard.components import js_errors as errors_ui
from dashboard.components import overview as overview_ui
from dashboard.components import sessions as sessions_ui
from dashboard.countries import (
    country_flag,
    country_label,
    country_name,
    find_country,
    is_country_code,
    parse_countries,
    region_label,
    region_name,
)
from dashboard.state import ViewState, parse_view


@pytest.mark.parametrize(
    ("typed", "code"),
    [
        ("DE", "DE"),
        ("de", "DE"),
        ("DEU", "DE"),
        ("Germany", "DE"),
        ("  GERMANY ", "DE"),
        ("United States", "US"),
        ("United States of America", "US"),  # the official name
        ("usa", "US"),
        ("South Korea", "KR"),  # the common name
        ("Korea, Republic of", "KR"),  # the ISO short name
        ("Russia", "RU"),  # the start of one country's name only
        ("Turkiye", "TR"),  # accents do not matter
        ("cote d'ivoire", "CI"),
        ("🇫🇷 France", "FR"),  # as a label shows it
        ("France (FR)", "FR"),
        ("Kosovo", "XK"),
        ("xk", "XK"),
    ],
)
def test_countries001_names_and_codes_find_the_country(typed: str, code: str) -> None:
    lookup = find_country(typed)
    assert (lookup.code, lookup.problem) == (code, None)


@pytest.mark.parametrize("typed", ["Atlantis", "XX", "ZZ", "Narnia", "", "Ger", "12", "ß"])
def test_countries002_unknown_values_say_so(typed: str) -> None:
    lookup = find_country(typed)
    assert lookup.code is None and lookup.candidates == ()
    assert lookup.problem == f"No country is called “{typed}”: type a name such as Germany or a code such as DE."


def test_countries003_a_start_shared_by_several_countries_lists_them() -> None:
    lookup = find_country("Korea")
    assert lookup.code is None and lookup.candidates == ("KP", "KR")
    assert lookup.problem == "“Korea” could be 🇰🇵 North Korea (KP), 🇰🇷 South Korea (KR): type the one you mean."
    assert find_country("United").problem.endswith(", …: type the one you mean.")  # at most five are listed


def test_countries004_names_flags_and_labels() -> None:
    assert (country_name("DE"), country_name("gb"), country_name("KR"), country_name("XK")) == (
        "Germany",
        "United Kingdom",
        "South Korea",
        "Kosovo",
    )
    assert country_flag("DE") == "\U0001f1e9\U0001f1ea" and country_flag("de") == "🇩🇪"
    assert country_flag("ZZ") == "" and country_flag("") == ""
    assert country_label("FR") == "🇫🇷 France" and country_label("FR", with_code=True) == "🇫🇷 France (FR)"
    # What no country has stays as it came, and nothing stays nothing.
    assert (country_name("QQ"), country_label("QQ"), country_label(""), country_label(None)) == ("QQ", "QQ", "", "")
    assert [is_country_code(c) for c in ("DE", "XK", "XX", "ZZ", "de")] == [True, True, False, False, False]


def test_countries005_regions_by_their_iso_3166_2_names() -> None:
    assert region_name("US-CA") == "California" and region_name("DE-BY") == "Bayern"
    assert region_label("GB-SCT") == "🇬🇧 Scotland, United Kingdom"
    assert (region_label("ZZ-9"), region_label(""), region_name("Texas")) == ("ZZ-9", "", "Texas")


def test_countries006_typed_lists_keep_names_with_commas_whole() -> None:
    codes, problems = parse_countries("Germany, Korea, Republic of, fr,, de, Atlantis, Korea")
    assert codes == ["DE", "KR", "FR"]  # duplicates dropped, in the order typed
    assert [p.text for p in problems] == ["Atlantis", "Korea"]
    assert parse_countries("") == ([], [])


def test_countries007_filter_values_as_typed() -> None:
    assert frame.typed_countries("country", "equals", "Germany, france") == (["DE", "FR"], None)
    assert frame.typed_countries("country", "not_equals", "us") == (["US"], None)
    codes, problem = frame.typed_countries("country", "equals", "Atlantis")
    assert codes is None and problem and "Atlantis" in problem
    # Other comparisons and parameters go to the API as typed.
    assert frame.typed_countries("country", "starts_with", "Atlantis") == (None, None)
    assert frame.typed_countries("city", "equals", "Atlantis") == (None, None)


def test_countries008_chips_and_suggestions_show_names() -> None:
    assert frame.filter_label({"parameter": "country", "type": "equals", "value": ["DE", "FR"]}) == (
        "Country is 🇩🇪 Germany or 🇫🇷 France"
    )
    assert frame.filter_label({"parameter": "country", "type": "not_equals", "value": [""]}) == "Country is not unknown"
    starts = {"parameter": "country", "type": "starts_with", "value": ["D"]}
    assert frame.filter_label(starts) == "Country starts with D"
    assert frame.filter_label({"parameter": "region", "type": "equals", "value": ["US-CA"]}) == (
        "Region is 🇺🇸 California, United States"
    )
    rows = [{"value": "DE"}, {"value": ""}, {"value": "QQ"}]
    options = frame.suggestion_options(rows, "country")
    assert [(o.value, getattr(o, "label", None)) for o in options] == [("Germany", "🇩🇪 DE"), ("QQ", None)]
    regions = frame.suggestion_options([{"value": "US-CA"}], "region")
    assert [(o.value, o.label) for o in regions] == [("US-CA", "🇺🇸 California, United States")]


def test_countries009_tables_show_names_and_csv_keeps_the_code() -> None:
    started = datetime(2026, 3, 1, 12, tzinfo=UTC)
    session = Session(session_id="s1", country="DE", session_start=started, session_end=started)
    view = ViewState(site_id=1, time_zone="UTC")
    assert sessions_ui.sessions_frame([session], view, "")["country"].tolist() == ["🇩🇪 Germany"]
    facts = sessions_ui.session_summary(session, "UTC").to_plotly_json()
    assert "🇩🇪 Germany (DE)" in str(facts)

    csv = goals_ui.sessions_frame([session], "UTC")
    assert csv[["country", "country_name"]].values.tolist() == [["DE", "Germany"]]
    screen = goals_ui.sessions_body([session], view, lambda page: "", 25, 1)
    assert "🇩🇪 Germany" in str(screen[0].to_plotly_json())

    event = ErrorEvent(timestamp=started, country="FR")
    occurrences = errors_ui.error_events_frame([event], "UTC")
    assert occurrences[["country", "country_name"]].values.tolist() == [["FR", "France"]]
    assert "Country: 🇫🇷 France" in str(errors_ui.occurrence_card(event, "UTC").to_plotly_json())


def test_countries010_the_map_names_countries_on_hover() -> None:
    rows = [{"value": "DE", "count": 6}, {"value": "FR", "count": 4}, {"value": "", "count": 1}]
    trace = overview_ui.country_map(rows, "/assets/topojson/").figure.data[0]
    assert list(trace.locations) == ["DEU", "FRA"] and list(trace.z) == [6, 4]
    assert list(trace.text) == ["🇩🇪 Germany", "🇫🇷 France"]


def test_countries011_an_address_naming_the_country_asks_the_api_for_its_code() -> None:
    named = '[{"parameter":"country","type":"equals","value":["Germany","fr","","Atlantis"]}]'
    view = parse_view({"filters": named, "site": "1"})
    # Unknown values go on as written, so the API's 400 says which one is wrong.
    assert view.filters[0]["value"] == ["DE", "FR", "", "Atlantis"]
    pattern = '[{"parameter":"country","type":"starts_with","value":["Ger"]}]'
    assert parse_view({"filters": pattern}).filters[0]["value"] == ["Ger"]  # a part of a code stays as written

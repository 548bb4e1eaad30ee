"""Country values the API takes: filters and excluded countries hold country codes, and anything else is a 400.

A ``country`` filter of ``Germany`` used to be accepted and selected nothing (every number 0); an excluded country
``XX`` was stored and could never match. Both are now refused with the contract's body naming the value.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from api_backend.domain.countries import country_codes, is_country_code
from api_backend.store.events import rows_to_table

WINDOW = {"start_date": "2026-03-01", "end_date": "2026-03-07"}
# Three sessions in Germany, two in France, one where the country is unknown.
COUNTRIES = ["DE", "DE", "DE", "FR", "FR", ""]


@pytest.fixture
def visits(services, site) -> None:
    start = datetime(2026, 3, 2, 12, tzinfo=UTC)
    services.events.append(
        rows_to_table(
            [
                {
                    "site_id": site.site_id,
                    "timestamp": (start + timedelta(minutes=n)).replace(tzinfo=None),
                    "session_id": f"s{n}",
                    "user_id": f"u{n}",
                    "type": "pageview",
                    "pathname": "/",
                    "country": country,
                }
                for n, country in enumerate(COUNTRIES)
            ]
        )
    )


def _sessions(client, owner, site, filters: list[dict]):
    return client.get(
        f"/api/sites/{site.site_id}/overview",
        params={**WINDOW, "filters": json.dumps(filters)},
        headers=owner.headers,
    )


def test_countries001_codes_are_assigned_iso_codes_and_kosovo() -> None:
    assert all(is_country_code(code) for code in ("DE", "US", "GB", "FR", "XK", "TW"))
    # User-assigned (AA, QM-QZ, XA-XZ but XK, ZZ), exceptionally reserved (UK, EU) and unassigned (ZY) codes.
    assert not any(is_country_code(code) for code in ("XX", "ZZ", "AA", "QM", "XA", "UK", "EU", "ZY", "de", "DEU"))


def test_countries001b_the_dashboard_accepts_exactly_the_codes_the_api_does() -> None:
    # The dashboard cannot import the server; both read pycountry, and this keeps their extra codes in step.
    from dashboard.countries import is_country_code as dashboard_knows

    letters = [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    every = {a + b for a in letters for b in letters}
    assert {code for code in every if dashboard_knows(code)} == set(country_codes())


@pytest.mark.parametrize("kind", ["equals", "not_equals"])
@pytest.mark.parametrize("value", ["Germany", "XX", "ZZ", "DEU", "Atlantis", "D", "ß"])
def test_countries002_filter_values_that_name_no_country_are_400(client, owner, site, visits, kind, value) -> None:
    response = _sessions(client, owner, site, [{"parameter": "country", "type": kind, "value": ["FR", value]}])
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "INVALID_REQUEST"
    assert body["details"] == [{"field": "filters[0].value[1]", "message": body["details"][0]["message"]}]
    assert "country" in body["details"][0]["message"] and repr(value) in body["details"][0]["message"]
    assert body["error"].startswith("filters[0].value[1]: ")


@pytest.mark.parametrize(
    ("kind", "values", "sessions"),
    [
        ("equals", ["DE"], 3),
        ("equals", ["de"], 3),  # stored codes are upper-case: any case selects them
        ("equals", ["FR", "XK"], 2),
        ("equals", [""], 1),  # the sessions whose country is unknown
        ("not_equals", ["DE"], 3),
        ("not_equals", ["DE", "FR"], 1),
    ],
)
def test_countries003_country_codes_still_filter(client, owner, site, visits, kind, values, sessions) -> None:
    response = _sessions(client, owner, site, [{"parameter": "country", "type": kind, "value": values}])
    assert response.status_code == 200, response.text
    assert response.json()["data"]["sessions"] == sessions


def test_countries004_other_comparisons_of_country_are_not_restricted(client, owner, site, visits) -> None:
    # Only equals/not_equals compare whole codes; a pattern or a part of a value stays free text.
    for spec in (
        {"parameter": "country", "type": "starts_with", "value": ["D"]},
        {"parameter": "country", "type": "regex", "value": ["^(DE|FR)$"]},
        {"parameter": "country", "type": "is_null"},
    ):
        assert _sessions(client, owner, site, [spec]).status_code == 200, spec
    assert (
        _sessions(client, owner, site, [{"parameter": "country", "type": "starts_with", "value": ["D"]}]).json()[
            "data"
        ]["sessions"]
        == 3
    )


def test_countries005_other_parameters_keep_free_values(client, owner, site, visits) -> None:
    response = _sessions(client, owner, site, [{"parameter": "city", "type": "equals", "value": ["Atlantis"]}])
    assert response.status_code == 200 and response.json()["data"]["sessions"] == 0


@pytest.mark.parametrize("bad", ["XX", "ZZ", "AA", "QM", "UK", "EU", "Germany", "ß"])
def test_countries006_excluded_countries_refuse_codes_of_no_country(client, owner, site, bad) -> None:
    url = f"/api/sites/{site.site_id}/config"
    assert client.put(url, json={"excludedCountries": ["FR"]}, headers=owner.headers).status_code == 200
    response = client.put(url, json={"excludedCountries": ["DE", bad], "blockBots": False}, headers=owner.headers)
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "INVALID_REQUEST"
    assert [d["field"] for d in body["details"]] == ["excludedCountries.1"]
    assert repr(bad) in body["details"][0]["message"] and "ISO 3166-1" in body["details"][0]["message"]
    # Nothing of the refused update is applied.
    listed = client.get(f"/api/sites/{site.site_id}/excluded-countries", headers=owner.headers).json()
    assert listed["excludedCountries"] == ["FR"]
    assert client.get(f"/api/sites/{site.site_id}", headers=owner.headers).json()["blockBots"] is True


def test_countries007_excluded_countries_take_assigned_codes_and_kosovo(client, owner, site) -> None:
    url = f"/api/sites/{site.site_id}/config"
    response = client.put(url, json={"excludedCountries": ["de", " XK", "tw"]}, headers=owner.headers)
    assert response.status_code == 200, response.text
    assert response.json()["config"]["excludedCountries"] == ["DE", "XK", "TW"]

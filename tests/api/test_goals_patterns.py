"""Path goal patterns that can never match a tracked path are refused, with a hint, and nothing is stored."""

from __future__ import annotations

import pytest

from api_backend.domain.goals import path_pattern_problem


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("pricing", "must start with /"),
        ("https://demo.sitelens.dev/pricing", "is a URL"),
        ("demo.sitelens.dev/pricing", "must start with /"),
        ("www.example.com/a", "is a URL"),
        ("/a/***", "***"),
        ("/****", "***"),
    ],
)
def test_goals_patterns001_never_matching_patterns_are_400_naming_the_field(
    client, site, owner, pattern, words
) -> None:
    base = f"/api/sites/{site.site_id}/goals"
    response = client.post(
        base, json={"name": "g", "goalType": "path", "config": {"pathPattern": pattern}}, headers=owner.headers
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "INVALID_REQUEST"
    [detail] = body["details"]
    assert detail["field"] == "config.pathPattern" and words in detail["message"]
    assert body["error"].startswith("config.pathPattern: ")
    if "***" not in pattern:
        assert "paths start with /; use the path, not the URL" in detail["message"]
    # Nothing was stored, and a replace is refused the same way.
    assert client.get(base, headers=owner.headers).json()["data"] == []
    created = client.post(
        base, json={"goalType": "path", "config": {"pathPattern": "/pricing"}}, headers=owner.headers
    ).json()["goalId"]
    replaced = client.put(
        f"{base}/{created}", json={"goalType": "path", "config": {"pathPattern": pattern}}, headers=owner.headers
    )
    assert replaced.status_code == 400
    [goal] = client.get(base, headers=owner.headers).json()["data"]
    assert goal["config"] == {"pathPattern": "/pricing"}


@pytest.mark.parametrize("pattern", ["/", "/pricing", "/blog/*", "/docs/**", "/a/*/b/**", "/search?q=x", "/*"])
def test_goals_patterns002_paths_and_defined_wildcards_pass(pattern) -> None:
    assert path_pattern_problem(pattern) is None

"""A short schemathesis run against the seeded app finds no server error and no schema violation."""

from __future__ import annotations

from tests.support.fuzz import run_fuzz


def test_fuzz001_short_run_finds_nothing(tmp_path) -> None:
    result = run_fuzz(max_examples=3, seed=1, workdir=tmp_path)
    # The report's tail names every failure, so a red run says what broke.
    assert result.returncode == 0, (result.stdout[-8000:], result.stderr[-2000:])


def test_fuzz002_openapi_declares_the_statuses_sent_and_never_422(app) -> None:
    paths = app.openapi()["paths"]
    for path, item in paths.items():
        for method, operation in item.items():
            statuses = set(operation["responses"])
            assert "422" not in statuses, (method, path)
            if "{" in path:
                assert {"400", "404"} <= statuses, (method, path)
            if "requestBody" in operation:
                assert {"400", "413", "415"} <= statuses, (method, path)
    assert "429" in paths["/api/auth/login"]["post"]["responses"]
    assert "409" in paths["/api/organizations/{organization_id}/sites"]["post"]["responses"]
    assert "401" not in paths["/api/live"]["get"]["responses"]
    assert "HTTPValidationError" not in app.openapi()["components"]["schemas"]

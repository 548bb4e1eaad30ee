"""The app starts on an empty data directory and answers its health checks and OpenAPI document."""

from __future__ import annotations


def test_health_and_openapi(client):
    response = client.get("/api/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    spec = client.get("/api/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    assert "/api/sites/{site_id}/config" in spec["paths"]
    assert client.get("/api/docs").status_code == 200


def test_live_answers_without_credentials_and_only_to_get(client, services):
    response = client.get("/api/live")
    assert response.status_code == 200 and response.json() == {"status": "ok"}
    services.events.close()  # a stopped store makes the readiness check fail, not the liveness check
    assert client.get("/api/live").json() == {"status": "ok"}
    for method in ("post", "delete"):
        refused = getattr(client, method)("/api/live")
        assert refused.status_code == 405 and refused.json()["code"]

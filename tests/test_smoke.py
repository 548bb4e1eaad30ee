"""The app starts on an empty data directory and answers its health check and OpenAPI document."""

from __future__ import annotations


def test_health_and_openapi(client):
    response = client.get("/api/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    spec = client.get("/api/openapi.json").json()
    assert spec["openapi"].startswith("3.")
    assert "/api/sites/{site_id}/config" in spec["paths"]
    assert client.get("/api/docs").status_code == 200

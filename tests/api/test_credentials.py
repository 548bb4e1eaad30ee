"""Sign-in tokens, the failed-attempt limit and API keys (contract section 2)."""

from __future__ import annotations

from datetime import timedelta

from api_backend.security import hash_token
from api_backend.store.models import ApiKey, LoginToken
from tests.support import PASSWORD


def login(client, email="owner@example.com", password=PASSWORD):
    return client.post("/api/auth/login", json={"email": email, "password": password})


def test_login_token_works_until_logout(client, owner):
    response = login(client)
    assert response.status_code == 200
    body = response.json()
    assert body["token"] and body["expiresAt"].endswith("Z")
    headers = {"Authorization": f"Bearer {body['token']}"}
    assert client.get("/api/auth/me", headers=headers).json()["email"] == "owner@example.com"
    assert client.post("/api/auth/logout", headers=headers).json() == {"success": True}
    response = client.get("/api/auth/me", headers=headers)
    assert response.status_code == 401 and response.json()["code"] == "AUTHENTICATION_REQUIRED"


def test_wrong_email_and_wrong_password_look_the_same(client, owner):
    wrong_password = login(client, password="not the password")
    wrong_email = login(client, email="nobody@example.com")
    assert wrong_password.status_code == wrong_email.status_code == 401
    assert wrong_password.json() == wrong_email.json()


def test_expired_token_is_refused(client, owner, services):
    token = login(client).json()["token"]
    with services.metadata.session() as s:
        row = s.query(LoginToken).filter_by(token_hash=hash_token(token)).one()
        row.expires_at = row.expires_at - timedelta(days=31)
    response = client.get("/api/organizations", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 401


def test_ten_failures_lock_the_email_with_retry_after(client, owner):
    for _ in range(10):
        assert login(client, password="wrong password").status_code == 401
    locked = login(client)
    assert locked.status_code == 429
    assert locked.json()["code"] == "RATE_LIMITED"
    assert int(locked.headers["Retry-After"]) > 0
    assert login(client, email="other@example.com").status_code == 401


def test_malformed_authorization_header_is_401(client, owner):
    for value in ("Basic abc", "Bearer", "Bearer sl_unknown", "Bearer slt_unknown"):
        response = client.get("/api/organizations", headers={"Authorization": value})
        assert response.status_code == 401, value


def test_api_key_is_shown_once_stored_hashed_and_revocable(client, owner, services):
    created = client.post("/api/user/api-keys", json={"name": "CI"}, headers=owner.headers)
    assert created.status_code == 201
    body = created.json()
    raw = body["apiKey"]
    assert raw.startswith("sl_") and len(raw) >= 3 + 43
    assert set(body) >= {"id", "name", "apiKey", "createdAt"}
    with services.metadata.session() as s:
        stored = s.get(ApiKey, body["id"])
        assert stored.key_hash == hash_token(raw) and raw not in (stored.key_hash, stored.start)
    listed = client.get("/api/user/api-keys", headers=owner.headers).json()["data"]
    assert raw not in str(listed) and body["id"] in [k["id"] for k in listed]
    new_headers = {"Authorization": f"Bearer {raw}"}
    assert client.get("/api/organizations", headers=new_headers).status_code == 200
    assert client.delete(f"/api/user/api-keys/{body['id']}", headers=owner.headers).json() == {"success": True}
    assert client.get("/api/organizations", headers=new_headers).status_code == 401
    assert client.delete(f"/api/user/api-keys/{body['id']}", headers=owner.headers).status_code == 404


def test_api_key_routes_validate_and_need_a_user(client, owner):
    assert client.post("/api/user/api-keys", json={"name": ""}, headers=owner.headers).status_code == 400
    assert client.post("/api/user/api-keys", json={"nom": "x"}, headers=owner.headers).status_code == 400
    assert client.post("/api/user/api-keys", json={"name": "x"}).status_code == 401
    assert client.get("/api/user/api-keys").status_code == 401


def test_organizations_list_roles(client, owner, site, services):
    body = client.get("/api/organizations", headers=owner.headers).json()
    assert body["data"][0]["id"] == site.organization_id and body["data"][0]["role"] == "owner"
    assert client.get("/api/organizations").status_code == 401


def test_api_key_use_is_recorded_without_a_write_per_request(client, owner, services):
    with services.metadata.session() as s:
        stored = s.query(ApiKey).filter_by(key_hash=hash_token(owner.api_key)).one()
        stored.last_used_at = None
    client.get("/api/organizations", headers=owner.headers)
    with services.metadata.session() as s:
        first = s.query(ApiKey).filter_by(key_hash=hash_token(owner.api_key)).one().last_used_at
    client.get("/api/organizations", headers=owner.headers)
    with services.metadata.session() as s:
        second = s.query(ApiKey).filter_by(key_hash=hash_token(owner.api_key)).one().last_used_at
    assert first is not None and second == first


def test_string_ids_are_never_mistaken_for_numeric_site_ids(monkeypatch):
    from api_backend import security

    draws = iter(["943944505519", "94394450551a"])
    monkeypatch.setattr(security.secrets, "token_hex", lambda nbytes: next(draws))
    assert security.new_public_id() == "94394450551a"

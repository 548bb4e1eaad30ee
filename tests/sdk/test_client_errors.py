"""Every failure becomes one exception class of ``api_client.errors``: status mapping, bodies, network failures.

Statuses the bundled app produces on request (400, 401, 404, 429) are tested against it; the rest (a 5xx, a
foreign server's bodies, an answer that is not JSON) come from an ``httpx.MockTransport`` standing in for a
remote server, and network failures from real sockets on loopback.
"""

from __future__ import annotations

import socket
import threading

import httpx
import pytest

from api_client import (
    AnalyticsAPI,
    APIConnectionError,
    APIError,
    AuthenticationError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RateLimitError,
    ServerError,
    ValidationError,
)
from api_client.errors import error_from_response
from tests.support import free_port

BASE = "http://testserver/api"


def remote(status: int, body: object = None, *, headers: dict[str, str] | None = None, text: str | None = None):
    """A client on a transport that answers every request with one fixed response."""

    def handler(request: httpx.Request) -> httpx.Response:
        if text is not None:
            return httpx.Response(status, text=text, headers=headers)
        return httpx.Response(status, json=body, headers=headers)

    return AnalyticsAPI("http://remote.example/api", token="t", transport=httpx.MockTransport(handler))


@pytest.mark.parametrize(
    ("status", "cls", "code"),
    [
        (400, ValidationError, "INVALID_REQUEST"),
        (401, AuthenticationError, "AUTHENTICATION_REQUIRED"),
        (403, ForbiddenError, "FORBIDDEN"),
        (404, NotFoundError, "NOT_FOUND"),
        (409, ConflictError, "CONFLICT"),
        (429, RateLimitError, "RATE_LIMITED"),
        (500, ServerError, "INTERNAL_ERROR"),
        (502, ServerError, "BAD_GATEWAY"),
        (503, ServerError, "SERVICE_UNAVAILABLE"),
    ],
)
def test_client_errors001_each_status_has_its_class(status, cls, code):
    body = {"error": "Something readable.", "code": code, "details": [{"field": "x", "message": "is bad"}]}
    with remote(status, body) as api, pytest.raises(cls) as caught:
        api.health()
    error = caught.value
    assert type(error) is cls
    assert isinstance(error, APIError)
    assert (error.status, error.code, error.message) == (status, code, "Something readable.")
    assert error.details == [{"field": "x", "message": "is bad"}]
    assert str(error) == f"{status} {code}: Something readable."


@pytest.mark.parametrize(("status", "code"), [(405, "METHOD_NOT_ALLOWED"), (413, "PAYLOAD_TOO_LARGE"), (415, None)])
def test_client_errors002_other_statuses_raise_the_base_class(status, code):
    body = {"error": "Nope.", "code": code} if code else {"error": "Nope."}
    with remote(status, body) as api, pytest.raises(APIError) as caught:
        api.health()
    assert type(caught.value) is APIError
    assert caught.value.status == status
    assert caught.value.code == (code or f"HTTP_{status}")


def test_client_errors003_server_error_keeps_the_request_id():
    body = {"error": "Internal server error.", "code": "INTERNAL_ERROR", "requestId": "abc123"}
    with remote(500, body) as api, pytest.raises(ServerError) as caught:
        api.overview(1)
    assert caught.value.request_id == "abc123"


def test_client_errors004_peer_bodies_are_understood():
    # A peer's zod validation body: no code, issues with a path list.
    zod = {"error": "Validation error", "details": [{"path": ["config", "pathPattern"], "message": "Required"}]}
    with remote(400, zod) as api, pytest.raises(ValidationError) as caught:
        api.create_goal(1, name="x", goal_type="path", config={})
    assert caught.value.code == "INVALID_REQUEST"
    assert caught.value.details == [{"field": "config.pathPattern", "message": "Required"}]
    # A framework's default 404 with `message` only.
    with remote(404, {"message": "Route GET:/api/x not found", "statusCode": 404}) as api, pytest.raises(NotFoundError):
        api.site(1)
    # 422 from frameworks that validate that way is still a validation error.
    with remote(422, {"detail": []}) as api, pytest.raises(ValidationError) as caught:
        api.site(1)
    assert caught.value.message == "Unprocessable Entity"


def test_client_errors005_error_without_json_body_uses_the_reason_phrase():
    with remote(502, text="<html>bad gateway</html>") as api, pytest.raises(ServerError) as caught:
        api.health()
    assert caught.value.message == "Bad Gateway"
    assert caught.value.code == "INTERNAL_ERROR"


def test_client_errors006_retry_after_seconds_date_and_body():
    with remote(429, {"error": "Slow down.", "code": "RATE_LIMITED"}, headers={"Retry-After": "42"}) as api:
        with pytest.raises(RateLimitError) as caught:
            api.health()
    assert caught.value.retry_after == 42
    with remote(429, {"error": "Slow down."}, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}) as api:
        with pytest.raises(RateLimitError) as caught:
            api.health()
    assert caught.value.retry_after == 0  # a date in the past: retry now
    with remote(429, {"error": "Rate limit exceeded", "retryAfter": 7}) as api, pytest.raises(RateLimitError) as caught:
        api.health()
    assert caught.value.retry_after == 7
    with remote(429, {"error": "Rate limit exceeded"}) as api, pytest.raises(RateLimitError) as caught:
        api.health()
    assert caught.value.retry_after is None


def test_client_errors007_success_that_is_not_json_or_not_the_shape():
    with remote(200, text="hello") as api, pytest.raises(APIError) as caught:
        api.health()
    assert caught.value.code == "INVALID_RESPONSE"
    with remote(200, {"data": {"sessions": "many"}}) as api, pytest.raises(APIError) as caught:
        api.overview(1)
    assert caught.value.code == "INVALID_RESPONSE"
    with remote(200, {"unexpected": True}) as api, pytest.raises(APIError) as caught:
        api.organizations()
    assert caught.value.code == "INVALID_RESPONSE"
    assert "data" in caught.value.message


def test_client_errors008_real_app_rate_limits_sign_in_with_retry_after(client):
    api = AnalyticsAPI(BASE, client=client)
    for _ in range(10):
        with pytest.raises(AuthenticationError):
            api.login("nobody@example.com", "wrong")
    with pytest.raises(RateLimitError) as caught:
        api.login("nobody@example.com", "wrong")
    assert caught.value.status == 429
    assert caught.value.code == "RATE_LIMITED"
    assert 0 < caught.value.retry_after <= 15 * 60 + 1


def test_client_errors009_real_app_bodies_map_to_classes(client, owner, site):
    api = AnalyticsAPI(BASE, client=client, token=owner.api_key)
    with pytest.raises(NotFoundError) as caught:
        api.org_sites("no-such-org")
    assert caught.value.code == "NOT_FOUND" and caught.value.message
    with pytest.raises(ValidationError) as caught:
        api.update_site_config(site.site_id)
    assert caught.value.details == [{"field": "body", "message": "names no configuration field to update"}]
    with pytest.raises(AuthenticationError):
        AnalyticsAPI(BASE, client=client).organizations()


def test_client_errors010_closed_port_is_a_connection_error():
    port = free_port()  # bound then released: nothing listens there
    with AnalyticsAPI(f"http://127.0.0.1:{port}/api", timeout=2) as api, pytest.raises(APIConnectionError) as caught:
        api.health()
    assert caught.value.status is None
    assert isinstance(caught.value, APIError)
    assert isinstance(caught.value.__cause__, httpx.ConnectError)


def test_client_errors011_silent_server_is_a_timeout():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        accepted: list[socket.socket] = []
        thread = threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True)
        thread.start()
        try:
            with AnalyticsAPI(f"http://127.0.0.1:{port}/api", timeout=0.3) as api:
                with pytest.raises(APIConnectionError) as caught:
                    api.health()
            assert caught.value.code == "TIMEOUT"
        finally:
            thread.join(timeout=5)
            for conn in accepted:
                conn.close()


def test_client_errors012_closed_client_refuses_calls(client):
    api = AnalyticsAPI("http://127.0.0.1:9/api")
    api.close()
    with pytest.raises(APIConnectionError) as caught:
        api.health()
    assert caught.value.code == "CLIENT_CLOSED"


def test_client_errors013_bad_construction_fails_fast():
    with pytest.raises(ValueError):
        AnalyticsAPI("127.0.0.1:8000/api")
    with pytest.raises(ValueError):
        AnalyticsAPI(client=httpx.Client(), transport=httpx.MockTransport(lambda r: httpx.Response(200)))
    with pytest.raises(TypeError):
        AnalyticsAPI(transport=httpx.MockTransport(lambda r: httpx.Response(200))).overview(1, {"start_date": "x"})


def test_client_errors014_error_from_response_directly():
    response = httpx.Response(409, json={"error": "Dup.", "code": "CONFLICT"})
    error = error_from_response(response)
    assert isinstance(error, ConflictError)
    assert repr(error) == "ConflictError(status=409, code='CONFLICT', message='Dup.')"
    assert error.field_messages() == {}


def test_client_errors015_malformed_fields_in_success_answers():
    answers = {
        "/api/sites/1/excluded-ips": {"success": True, "excludedIPs": "10.0.0.1"},
        "/api/sites/1/excluded-countries": {"success": True, "excludedCountries": [1, 2]},
        "/api/sites/1/goals": {"success": True, "goalId": "seven"},
        "/api/sites/1/private-link-config": {"success": True, "data": {"privateLinkKey": 12}},
    }

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answers[request.url.path])

    with AnalyticsAPI("http://remote.example/api", transport=httpx.MockTransport(handler)) as api:
        calls = [
            lambda: api.excluded_ips(1),
            lambda: api.excluded_countries(1),
            lambda: api.create_goal(1, name="x", goal_type="path", config={"pathPattern": "/"}),
            lambda: api.private_link_key(1),
            lambda: api.generate_private_link(1),
        ]
        for call in calls:
            with pytest.raises(APIError) as caught:
                call()
            assert type(caught.value) is APIError
            assert caught.value.code == "INVALID_RESPONSE"


def test_client_errors016_url_without_host_is_a_connection_error():
    with AnalyticsAPI("http:///api") as api, pytest.raises(APIConnectionError):
        api.health()

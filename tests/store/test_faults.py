"""An unexpected fault answers the contract's 500 on a connection that stays usable, and logs one line."""

from __future__ import annotations

import http.client
import json
import logging
from urllib.parse import urlsplit

from tests.support import live_server


def _add_fault_route(app) -> None:
    def fault() -> None:
        raise RuntimeError("secret SQL: SELECT password FROM users")

    app.add_api_route("/api/test-fault", fault, include_in_schema=False)
    app.router.routes.insert(0, app.router.routes.pop())


def test_fault001_keep_alive_survives_a_500(app) -> None:
    _add_fault_route(app)
    with live_server(app) as base:
        url = urlsplit(base)
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        try:
            # http.client never retries: a second request on a connection the server dropped would raise.
            for _ in range(2):
                connection.request("GET", "/api/test-fault")
                response = connection.getresponse()
                body = json.loads(response.read())
                assert response.status == 500
                assert body["code"] == "INTERNAL_ERROR" and body["requestId"]
            connection.request("GET", "/api/live")
            assert connection.getresponse().status == 200
        finally:
            connection.close()


def test_fault002_one_line_at_error_the_traceback_at_debug(client, app, caplog) -> None:
    _add_fault_route(app)
    with caplog.at_level(logging.DEBUG, logger="sitelens"):
        response = client.get("/api/test-fault")
    assert response.status_code == 500
    request_id = response.json()["requestId"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert request_id in errors[0].getMessage() and errors[0].exc_info is None
    assert "password" not in errors[0].getMessage()
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info]
    assert len(debug) == 1 and request_id in debug[0].getMessage()

"""The browser tracker served at ``/api/script.js``: how it is served, and what it sends from a real Chromium page."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support import wait_until
from tests.support.browser import page_server

PAGE = """<!doctype html>
<html><head><title>Shop</title>
<script defer src="{api}/api/script.js" data-site-id="{site}"></script></head>
<body>
<a id="out" href="https://docs.example.org/guide" onclick="event.preventDefault()">Guide</a>
<button id="nav" onclick="history.pushState({{}}, '', '/pricing?plan=pro')">Pricing</button>
<button id="fail" onclick="setTimeout(function () {{ throw new TypeError('boom at checkout'); }})">Fail</button>
<button id="custom" onclick="window.sitelens.event('signup', {{plan: 'pro', seats: 3}})">Sign up</button>
</body></html>
"""


def test_script001_served_as_cacheable_javascript(client) -> None:
    response = client.get("/api/script.js")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/javascript"
    assert "max-age" in response.headers["cache-control"] and response.headers["etag"]
    assert "window.sitelens" in response.text and "/site/tracking-config/" in response.text
    again = client.get("/api/script.js", headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    assert "/api/script.js" in client.get("/api/openapi.json").json()["paths"]


def test_script002_tracker_in_chromium_sends_what_the_api_reads_back(dash_duo, api_base, site, owner, tmp_path):
    http = httpx.Client(headers=owner.headers, timeout=30)
    api = f"{api_base}/api/sites/{site.site_id}"
    # Headless Chromium is a bot by its user agent; errors are off by default.
    config = {"blockBots": False, "trackErrors": True}
    assert http.put(f"{api}/config", json=config).status_code == 200
    (tmp_path / "index.html").write_text(PAGE.format(api=api_base, site=site.site_id))

    def timeline() -> list[dict[str, Any]]:
        sessions = http.get(f"{api}/sessions").json()["data"]
        if not sessions:
            return []
        detail = http.get(f"{api}/sessions/{sessions[0]['session_id']}").json()
        return detail["data"]["timeline"]

    def types() -> list[str]:
        return [item["type"] for item in timeline()]

    driver = dash_duo.driver
    with page_server(tmp_path) as page:
        driver.get(page + "/")
        wait_until(lambda: types() == ["pageview"])
        driver.find_element("id", "nav").click()
        wait_until(lambda: types() == ["pageview", "pageview"])
        driver.back()  # popstate
        wait_until(lambda: len(types()) == 3)
        driver.find_element("id", "out").click()
        wait_until(lambda: "outbound" in types())
        driver.find_element("id", "fail").click()
        wait_until(lambda: "error" in types())
        driver.find_element("id", "custom").click()
        items = wait_until(lambda: (lambda t: t if "custom_event" in [i["type"] for i in t] else None)(timeline()))

        views = [i for i in items if i["type"] == "pageview"]
        assert [(v["pathname"], v["querystring"]) for v in views] == [("/", ""), ("/pricing", "?plan=pro"), ("/", "")]
        assert all(v["page_title"] == "Shop" and v["hostname"] == "127.0.0.1" for v in views)
        outbound = next(i for i in items if i["type"] == "outbound")
        assert outbound["url"] == "https://docs.example.org/guide"
        error = next(i for i in items if i["type"] == "error")
        assert error["error_name"] == "TypeError" and error["message"] == "boom at checkout"
        assert "TypeError" in error["stack"]
        custom = next(i for i in items if i["type"] == "custom_event")
        assert custom["event_name"] == "signup" and custom["properties"] == {"plan": "pro", "seats": 3}

        # The site's tracking config is honoured: with outbound tracking off, a click sends nothing.
        config = {"trackOutbound": False}
        assert http.put(f"{api}/config", json=config).status_code == 200
        before = len(items)
        driver.get(page + "/")
        wait_until(lambda: len(types()) == before + 1)
        driver.find_element("id", "out").click()
        driver.find_element("id", "custom").click()
        wait_until(lambda: len(types()) == before + 2)
        assert types()[-2:] == ["pageview", "custom_event"]

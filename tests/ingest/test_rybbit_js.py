"""Compatibility with the published ``@rybbit/js`` browser SDK in Chromium: only its host setting changes.

The package is installed with npm into a cache folder under the system temp directory, so reruns are fast.
The test skips (with the reason) only when npm is missing or the npm registry cannot be reached.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import wait_until
from tests.support.browser import page_server

VERSION = "0.6.2"
CACHE = Path(tempfile.gettempdir()) / "sitelens-test-cache" / f"rybbit-js-{VERSION}"

PAGE = """<!doctype html>
<html><head><title>Docs</title></head><body>
<script type="module">
import rybbit from "/rybbit.js";
await rybbit.init({{ analyticsHost: "{api}/api", siteId: "{site}" }});
window.rybbit = rybbit;
</script>
</body></html>
"""


def _rybbit_js() -> Path:
    """The SDK's browser module (``dist/index.mjs``), installing the package on first use."""
    if not shutil.which("npm"):
        pytest.skip("npm is needed to fetch @rybbit/js")
    package = CACHE / "node_modules" / "@rybbit" / "js"
    manifest = package / "package.json"
    if not manifest.exists() or json.loads(manifest.read_text())["version"] != VERSION:
        CACHE.mkdir(parents=True, exist_ok=True)
        command = ["npm", "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(CACHE)]
        command.append(f"@rybbit/js@{VERSION}")
        try:
            result = subprocess.run(command, capture_output=True, text=True, timeout=180)
        except subprocess.TimeoutExpired:
            pytest.skip("the npm registry did not answer within 180 s")
        if result.returncode != 0 or not manifest.exists():
            pytest.skip(f"npm could not install @rybbit/js@{VERSION}: {result.stderr.strip()[-300:]}")
    return package / "dist" / "index.mjs"


def test_rybbit_js001_browser_sdk_events_are_stored(dash_duo, api_base, site, owner, tmp_path) -> None:
    module = _rybbit_js()
    http = httpx.Client(headers=owner.headers, timeout=30)
    api = f"{api_base}/api/sites/{site.site_id}"
    # Headless Chromium is a bot by its user agent.
    assert http.put(f"{api}/config", json={"blockBots": False}).status_code == 200
    shutil.copy(module, tmp_path / "rybbit.js")
    (tmp_path / "index.html").write_text(PAGE.format(api=api_base, site=site.site_id))

    def timeline() -> list[dict[str, Any]]:
        sessions = http.get(f"{api}/sessions").json()["data"]
        if not sessions:
            return []
        return http.get(f"{api}/sessions/{sessions[0]['session_id']}").json()["data"]["timeline"]

    driver = dash_duo.driver
    with page_server(tmp_path) as page:
        driver.get(page + "/guide")
        wait_until(lambda: [i["type"] for i in timeline()] == ["pageview"])
        wait_until(lambda: driver.execute_script("return !!window.rybbit"))
        driver.execute_script("window.rybbit.event('download', {format: 'pdf', pages: 12})")
        items = wait_until(lambda: (lambda t: t if len(t) == 2 else None)(timeline()))
    view, event = items
    assert (view["pathname"], view["page_title"], view["hostname"]) == ("/guide", "Docs", "127.0.0.1")
    assert event["type"] == "custom_event" and event["event_name"] == "download"
    assert event["properties"] == {"format": "pdf", "pages": 12}

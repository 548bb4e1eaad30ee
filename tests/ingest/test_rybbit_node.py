"""Compatibility with the published ``@rybbit/node`` 1.0.0 SDK: only its host setting changes.

The package is installed with npm into a cache folder under the system temp directory, so reruns are fast.
The test skips (with the reason) only when node/npm are missing or the npm registry cannot be reached.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support import live_server

VERSION = "1.0.0"
CACHE = Path(tempfile.gettempdir()) / "sitelens-test-cache" / f"rybbit-node-{VERSION}"
BROWSER = (
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
    "Version/17.4 Safari/605.1.15"
)

SCRIPT = r"""
const { Rybbit } = require("@rybbit/node");
const [host, siteId, apiKey, ua] = process.argv.slice(2);
(async () => {
  const rybbit = new Rybbit({ analyticsHost: host, siteId, apiKey });
  await rybbit.pageview({ hostname: "shop.example.com", pathname: "/cart", page_title: "Cart",
                          referrer: "https://www.bing.com/", ip_address: "81.2.69.142", user_agent: ua });
  await rybbit.event("checkout", { hostname: "shop.example.com", pathname: "/pay", user_id: "cust-9",
                                   ip_address: "81.2.69.142", user_agent: ua },
                     { amount: 19.99, items: ["a", "b"], express: true });
  await new Rybbit({ analyticsHost: host, siteId, apiKey: "sl_not_valid", debug: true }).pageview({ pathname: "/x" });
  console.log("done");
})();
"""


def _rybbit_node() -> Path:
    """The folder holding ``node_modules/@rybbit/node``, installing it on first use."""
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node and npm are needed to run the @rybbit/node compatibility test")
    package = CACHE / "node_modules" / "@rybbit" / "node" / "package.json"
    if package.exists() and json.loads(package.read_text())["version"] == VERSION:
        return CACHE
    CACHE.mkdir(parents=True, exist_ok=True)
    try:
        result = subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--prefix",
                str(CACHE),
                f"@rybbit/node@{VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=180,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("the npm registry did not answer within 180 s")
    if result.returncode != 0 or not package.exists():
        pytest.skip(f"npm could not install @rybbit/node@{VERSION}: {result.stderr.strip()[-300:]}")
    return CACHE


@pytest.mark.parametrize("id_kind", ["siteId", "id"])
def test_rybbit_node001_sdk_events_are_stored(app, services, owner, site, id_kind):
    folder = _rybbit_node()
    (folder / "send.js").write_text(SCRIPT)
    site_key = str(site.site_id) if id_kind == "siteId" else site.id
    with live_server(app) as base:
        run = subprocess.run(
            ["node", "send.js", f"{base}/api", site_key, owner.api_key, BROWSER],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert run.returncode == 0, run.stderr
    assert "done" in run.stdout
    # The SDK logs the server's answer to the bad key in debug mode: our 401 body.
    assert "401" in run.stderr and "AUTHENTICATION_REQUIRED" in run.stderr

    pageview, event = services.events.query_dicts("SELECT * FROM events ORDER BY timestamp")
    assert (pageview["type"], pageview["pathname"], pageview["page_title"]) == ("pageview", "/cart", "Cart")
    assert (pageview["hostname"], pageview["referrer"], pageview["channel"]) == (
        "shop.example.com",
        "https://www.bing.com/",
        "Organic Search",
    )
    # The key made the request trusted, so the payload's visitor address and browser were used.
    assert (pageview["country"], pageview["browser"], pageview["operating_system"]) == ("GB", "Safari", "Mac OS X")
    assert (event["type"], event["event_name"], event["identified_user_id"]) == ("custom_event", "checkout", "cust-9")
    assert json.loads(event["props"]) == {"amount": 19.99, "items": ["a", "b"], "express": True}
    assert event["session_id"] == pageview["session_id"] and event["user_id"] == pageview["user_id"]

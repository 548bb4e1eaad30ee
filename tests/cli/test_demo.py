"""The demo: account, goals, private link and 200k events on a fresh data folder; later runs reuse them."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from api_backend.demo import DEMO_DOMAIN, DEMO_EMAIL, DEMO_GOALS, DEMO_PASSWORD, format_summary, setup_demo
from api_backend.services import Services
from api_backend.store.events import EVENT_TYPES
from tests.cli.test_cli import SCRIPT, cli_env
from tests.support import free_port, patient


def test_demo001_first_run_builds_everything(services: Services, client: TestClient) -> None:
    committed: list[int] = []
    summary = setup_demo(services, base_url="http://testserver", progress=committed.append)
    assert summary.created
    assert summary.events >= 200_000 and sum(committed) == summary.events
    assert (summary.email, summary.password, summary.domain) == (DEMO_EMAIL, DEMO_PASSWORD, DEMO_DOMAIN)

    # The printed credentials work: sign in, and the API key.
    login = client.post("/api/auth/login", json={"email": DEMO_EMAIL, "password": DEMO_PASSWORD})
    assert login.status_code == 200
    token = {"Authorization": f"Bearer {login.json()['token']}"}
    orgs = client.get("/api/organizations", headers={"Authorization": f"Bearer {summary.api_key}"})
    assert orgs.status_code == 200 and [o["name"] for o in orgs.json()["data"]] == ["Demo"]

    # Goals exist and every one converts some sessions; pro purchases are rarer than signups.
    goals = client.get(f"/api/sites/{summary.site_id}/goals", params={"limit": 100}, headers=token)
    assert goals.status_code == 200
    by_name = {g["name"]: g for g in goals.json()["data"]}
    assert set(by_name) == {g["name"] for g in DEMO_GOALS}
    assert all(g["total_conversions"] > 0 for g in by_name.values())
    assert by_name["Bought Pro"]["total_conversions"] < by_name["Signed up"]["total_conversions"]
    assert by_name["Bought Pro"]["config"] == {
        "eventName": "purchase",
        "eventPropertyKey": "plan",
        "eventPropertyValue": "pro",
    }

    # The private link opens the site read-only; its key travels in the URL fragment.
    url, key = summary.private_link_url.split("#")
    assert url == f"http://testserver/share/{summary.site_id}"
    shared = client.get(f"/api/sites/{summary.site_id}", headers={"X-Private-Key": key})
    assert shared.status_code == 200 and shared.json()["domain"] == DEMO_DOMAIN

    # The traffic: every type, channels with UTM campaigns, errors with stacks, 30 days.
    events = services.events
    site_id = summary.site_id
    types = dict(events.query("SELECT type, count(*) FROM events WHERE site_id = ? GROUP BY type", [site_id]))
    assert set(types) == set(EVENT_TYPES)
    tagged = events.query(
        "SELECT count(DISTINCT channel) FROM events WHERE site_id = ? AND utm_campaign <> ''", [site_id]
    )[0][0]
    assert tagged >= 5
    assert events.query("SELECT count(DISTINCT channel) FROM events WHERE site_id = ?", [site_id])[0][0] >= 9
    stacks = events.query(
        "SELECT count(DISTINCT json_extract_string(props, '$.message')) FROM events "
        "WHERE site_id = ? AND type = 'error' AND json_extract_string(props, '$.stack') LIKE '%\n    at %'",
        [site_id],
    )[0][0]
    assert stacks == 8
    days = events.query(
        "SELECT date_diff('day', min(timestamp), max(timestamp)) FROM events WHERE site_id = ?", [site_id]
    )[0][0]
    assert days >= 29

    text = format_summary(summary)
    for part in ("http://testserver/", DEMO_EMAIL, DEMO_PASSWORD, summary.api_key, summary.private_link_url):
        assert part in text


def test_demo002_second_run_reuses_the_data(services: Services, client: TestClient) -> None:
    first = setup_demo(services, base_url="http://127.0.0.1:8000", events=5_000)
    second = setup_demo(services, base_url="http://127.0.0.1:8000", events=5_000)
    assert not second.created
    assert (second.site_id, second.private_link_url, second.events) == (first.site_id, first.private_link_url, 5_000)
    assert services.events.count() == 5_000
    assert services.metadata.count_goals(second.site_id) == len(DEMO_GOALS)
    assert len(services.metadata.all_sites()) == 1
    # A fresh API key each run (raw keys are never stored); both work.
    assert second.api_key != first.api_key
    for key in (first.api_key, second.api_key):
        assert client.get("/api/organizations", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_demo003_command_prints_the_summary_and_serves(tmp_path: Path) -> None:
    port = free_port()
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "sitelens.cli"]
    demo = subprocess.Popen(
        [*command, "demo", "--port", str(port)],
        env=cli_env(tmp_path / "demo-data"),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = []
        deadline = time.monotonic() + patient(120)
        while not any("serving on" in line for line in lines):
            assert time.monotonic() < deadline and demo.poll() is None, lines
            lines.append(demo.stdout.readline())
        text = "".join(lines)
        assert f"http://127.0.0.1:{port}/" in text
        assert f"{DEMO_EMAIL} / {DEMO_PASSWORD}" in text
        assert f"http://127.0.0.1:{port}/share/1#" in text
        while True:
            try:
                login = httpx.post(
                    f"http://127.0.0.1:{port}/api/auth/login",
                    json={"email": DEMO_EMAIL, "password": DEMO_PASSWORD},
                    timeout=5,
                )
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert login.status_code == 200
    finally:
        demo.terminate()
        demo.wait(timeout=30)

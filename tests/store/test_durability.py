"""A 200 from /api/track means durable: SIGKILL the server right after the last answer, and after a restart every
acknowledged event is there, exactly once. On both event stores: DuckDB, and ClickHouse (embedded chdb), which has
no transactions and relies on its log-position recovery instead."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from api_backend.settings import load_settings
from api_backend.store.metadata import MetadataStore
from tests.support import REPO_ROOT, free_port, patient

ROOT = REPO_ROOT
SECRET = "durability-secret-0123456789"
BROWSER = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
)
SERVER = (
    "import uvicorn\n"
    "from api_backend.app import create_app\n"
    "from api_backend.settings import load_settings\n"
    "uvicorn.run(create_app(load_settings()), host='127.0.0.1', port={port}, log_level='warning')\n"
)
# Restart as the server would (opening the services copies whatever the event log holds beyond the store), read the
# acknowledged events, then open the bare store again to count what it holds by itself. In a process of its own, as
# chdb allows one process per data directory and this test process may run an engine elsewhere.
VERIFY = (
    "import json\n"
    "from api_backend.services import open_services\n"
    "from api_backend.settings import load_settings\n"
    "from api_backend.store.open import open_event_store\n"
    "settings = load_settings()\n"
    "services = open_services(settings)\n"
    "rows = services.events.query(\"SELECT pathname FROM events WHERE event_name = 'durable'\")\n"
    "services.close()\n"
    "store, _ = open_event_store(settings)\n"
    "count = store.count()\n"
    "store.close()\n"
    "print(json.dumps({'paths': [row[0] for row in rows], 'count': count}))\n"
)
EVENTS = 400


async def _send_all(base: str, site_id: int) -> list[str]:
    """Send every event concurrently; return the paths the server acknowledged with 200."""
    limits = httpx.Limits(max_connections=32)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=120, headers={"User-Agent": BROWSER}) as client:

        async def one(i: int) -> str | None:
            body = {"site_id": site_id, "type": "custom_event", "event_name": "durable", "pathname": f"/e{i}"}
            response = await client.post("/api/track", json=body)
            return body["pathname"] if response.status_code == 200 and response.json() == {"success": True} else None

        results = await asyncio.gather(*(one(i) for i in range(EVENTS)))
    return [path for path in results if path]


def _events_url(store: str, tmp_path: Path) -> str | None:
    if store == "duckdb":
        return None  # the default: events.duckdb in the data dir
    pytest.importorskip("chdb")
    return f"chdb://{tmp_path / 'chdb'}?database=durable"


@pytest.mark.parametrize("store", ["duckdb", "chdb"])
def test_durability001_acknowledged_events_survive_kill_9(tmp_path, store):
    data_dir = tmp_path / "data"
    events_url = _events_url(store, tmp_path)
    settings = load_settings({}, data_dir=str(data_dir), secret_key=SECRET)
    metadata = MetadataStore(settings.database_url)  # the event store stays closed: the server process owns it
    try:
        user = metadata.create_user("durable@example.com", "correct horse battery")
        org = metadata.create_organization("Durable", user.id)
        site = metadata.create_site(org.id, user.id, "example.com", "example.com")
    finally:
        metadata.close()

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SITELENS_")}
    env.update({"SITELENS_DATA_DIR": str(data_dir), "SITELENS_SECRET_KEY": SECRET, "PYTHONPATH": str(ROOT)})
    if events_url:
        env["SITELENS_EVENTS_URL"] = events_url
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER.format(port=port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + patient(60)
        while True:
            assert server.poll() is None, server.stderr.read().decode() if server.stderr else "server exited"
            try:
                if httpx.get(base + "/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        acknowledged = asyncio.run(_send_all(base, site.site_id))
        os.kill(server.pid, signal.SIGKILL)  # no shutdown hook, no checkpoint: only committed data survives
        server.wait(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)
    assert server.returncode == -signal.SIGKILL
    assert len(acknowledged) == EVENTS

    verify = subprocess.run(
        [sys.executable, "-c", VERIFY], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert verify.returncode == 0, verify.stderr
    result = json.loads(verify.stdout.splitlines()[-1])
    stored = result["paths"]
    missing = set(acknowledged) - set(stored)
    assert not missing, f"{len(missing)} acknowledged events were lost"
    assert len(stored) == len(set(stored)), "an event was stored twice"
    assert result["count"] == EVENTS  # now in the store itself, not only in the log

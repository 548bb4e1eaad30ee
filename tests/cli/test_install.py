"""The package as a user installs it: a wheel in a fresh virtual environment serves its stylesheet and pages.

Editable installs and the repository on ``sys.path`` hide packaging mistakes (files left out of the wheel, paths
outside the package), so this test builds the wheel, installs it into a new virtual environment without the system's
site packages, runs ``sitelens demo`` from there with the repository out of reach, and talks to it over loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from api_backend.demo import DEMO_EMAIL, DEMO_GOALS, DEMO_PASSWORD
from tests.support import REPO_ROOT, free_port, patient

ROOT = REPO_ROOT
# Building and installing reuse pip's cache; the demo writes 200k events before it serves.
INSTALL_TIMEOUT = 900
SERVE_TIMEOUT = 300
SKIPPED = (".git", ".venv", "build", "data", "test-output", "*.egg-info", "__pycache__", ".*_cache", "node_modules")


def _run(*args: str | Path, cwd: Path) -> None:
    result = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]


def _clean_env(data_dir: Path) -> dict[str, str]:
    """The environment without anything that points Python at the repository or configures sitelens."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SITELENS_", "PYTHON", "VIRTUAL_ENV"))}
    env["SITELENS_DATA_DIR"] = str(data_dir)
    return env


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every component (a dict with ``props``) in a Dash layout as JSON."""
    if isinstance(node, dict):
        if "props" in node:
            yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def _callback(base: str, dependencies: list[dict], output: str, values: dict[str, Any], outputs: list) -> Any:
    """Call the dashboard callback whose output spec is ``output`` the way the browser does; its response JSON."""
    spec = next(d for d in dependencies if d["output"] == output)

    def with_values(items: list[dict]) -> list[dict]:
        return [{**item, "value": values.get(f"{item['id']}.{item['property']}")} for item in items]

    body = {
        "output": output,
        "outputs": outputs,
        "inputs": with_values(spec["inputs"]),
        "state": with_values(spec["state"]),
        "changedPropIds": [f"{item['id']}.{item['property']}" for item in spec["inputs"]],
    }
    response = httpx.post(f"{base}/_dash-update-component", json=body, timeout=60)
    assert response.status_code == 200, response.text[:2000]
    return response.json()["response"]


def _wait_for_server(process: subprocess.Popen[str], base: str) -> str:
    """The demo's output up to the moment its server answers (the process must stay alive meanwhile)."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or []), daemon=True)
    reader.start()
    deadline = time.monotonic() + patient(SERVE_TIMEOUT)
    while True:
        assert process.poll() is None, "".join(lines)
        assert time.monotonic() < deadline, "".join(lines)
        try:
            if httpx.get(f"{base}/api/health", timeout=2).status_code == 200:
                return "".join(lines)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)


def test_install001_wheel_in_a_fresh_venv_serves_assets_and_the_goals_page(tmp_path: Path) -> None:
    source, wheels, venv, data_dir = tmp_path / "source", tmp_path / "wheels", tmp_path / "venv", tmp_path / "data"
    # A copy of the sources, so the build leaves nothing in the checkout and sees no build output of an earlier run.
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*SKIPPED))
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", wheels, source, cwd=tmp_path)
    (wheel,) = wheels.glob("sitelens-*.whl")
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    # Without compiling every dependency's modules to bytecode first (plotly alone has thousands): 54 -> 43 s.
    _run(venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-compile", wheel, cwd=tmp_path)

    # The packages come from the venv, not from the repository.
    where = subprocess.run(
        [
            venv / "bin" / "python",
            "-c",
            "import api_backend, dashboard; print(api_backend.__file__, dashboard.__file__)",
        ],
        cwd=tmp_path,
        env=_clean_env(data_dir),
        capture_output=True,
        text=True,
        check=True,
    )
    assert all(Path(path).is_relative_to(venv) for path in where.stdout.split()), where.stdout

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    demo = subprocess.Popen(
        [venv / "bin" / "sitelens", "demo", "--port", str(port)],
        cwd=tmp_path,
        env=_clean_env(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output = _wait_for_server(demo, base)

        css = httpx.get(f"{base}/assets/sitelens.css", timeout=10)
        assert css.status_code == 200, output
        assert css.headers["content-type"].startswith("text/css") and "--accent" in css.text
        tracker = httpx.get(f"{base}/api/script.js", timeout=10)
        assert tracker.status_code == 200 and "window.sitelens" in tracker.text, output
        page = httpx.get(f"{base}/goals?site=1", timeout=10)
        assert page.status_code == 200 and "/assets/sitelens.css" in page.text and "sitelens.js" in page.text

        login = httpx.post(f"{base}/api/auth/login", json={"email": DEMO_EMAIL, "password": DEMO_PASSWORD}, timeout=10)
        assert login.status_code == 200
        auth = {"token": login.json()["token"], "email": DEMO_EMAIL, "kind": "login"}
        dependencies = httpx.get(f"{base}/_dash-dependencies", timeout=10).json()

        # The page the router draws for a signed-in person: the goals page itself, not the sign-in redirect.
        routed = _callback(
            base,
            dependencies,
            ".._pages_content.children..._pages_store.data..",
            {
                "_pages_location.pathname": "/goals",
                "_pages_location.search": "?site=1&time_zone=UTC",
                "frame-browser-zone.data": "UTC",
                "frame-auth.data": auth,
            },
            [{"id": "_pages_content", "property": "children"}, {"id": "_pages_store", "property": "data"}],
        )
        layout = routed["_pages_content"]["children"]
        text = json.dumps(layout)
        assert "+ New goal" in text and "Sign in to continue" not in text

        # The goals arrive through the page's loading callback, which reads the API over loopback.
        components = list(_walk(layout))
        load = next(c for c in components if c["props"].get("id") == "goals-load")
        after = [
            {"id": c["props"]["id"], "property": "data"}
            for c in components
            if isinstance(c["props"].get("id"), dict) and c["props"]["id"].get("type") == "frame-overview-after"
        ]
        loaded = _callback(
            base,
            dependencies,
            '..goals-body.children...goals-data.data...{"index":["ALL"],"type":"frame-overview-after"}.data..',
            {"goals-load.data": load["props"]["data"], "frame-auth.data": auth},
            [{"id": "goals-body", "property": "children"}, {"id": "goals-data", "property": "data"}, after],
        )
        names = {goal["name"] for goal in loaded["goals-data"]["data"]}
        assert names == {goal["name"] for goal in DEMO_GOALS}
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(timeout=30)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait(timeout=10)

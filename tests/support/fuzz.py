"""Schemathesis against the running app with a seeded site: ``make fuzz`` (long) and a short run in the test suite.

The app is served on a loopback port from a fresh data directory holding an owner, a site with events and a
goal, so generated requests carry a real credential and the seeded ids reach the query code instead of
stopping at a 404. Every phase runs and every check is on; the exit status is schemathesis's own.

    python -m tests.support.fuzz [--max-examples N] [--seed N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from api_backend.app import create_app
from api_backend.services import open_services
from api_backend.settings import load_settings
from api_backend.store.events import rows_to_table
from tests.support import live_server, make_account, make_site


def _events(site_id: int) -> list[dict]:
    start = datetime.now().replace(microsecond=0) - timedelta(days=2)
    return [
        {
            "site_id": site_id,
            "timestamp": start + timedelta(minutes=i),
            "session_id": f"s{i % 7}",
            "type": ("pageview", "custom_event", "error")[i % 3],
            "pathname": f"/p{i % 5}",
            "event_name": "signup" if i % 3 == 1 else ("TypeError" if i % 3 == 2 else ""),
        }
        for i in range(60)
    ]


def _seed(services, owner) -> dict[str, int | str]:
    """A site with events and a goal for every operation, and a second site for the one that deletes sites."""
    site = make_site(services, owner)
    doomed = services.metadata.create_site(site.organization_id, owner.user.id, "doomed.example.com", "doomed")
    services.events.append(rows_to_table(_events(site.site_id) + _events(doomed.site_id)))
    goal = services.metadata.create_goal(site.site_id, "Pricing", "path", {"pathPattern": "/p1"})
    return {
        "site_id": str(site.site_id),
        "goal_id": goal.goal_id,
        "organization_id": site.organization_id,
        "doomed_site_id": str(doomed.site_id),
    }


def _config(path: Path, ids: dict[str, int | str]) -> None:
    def value(v: int | str) -> str:
        return str(v) if isinstance(v, int) else f'"{v}"'

    doomed = ids.pop("doomed_site_id")
    lines = [
        # Each run starts from a fresh app: nothing learnt in an earlier run applies (and nothing lands in the tree).
        "cache.enabled = false",
        "",
        # Public sites and private links read without the caller's credential by design; and the document
        # types dates, filters and ids as strings, which the strict parsers still refuse when malformed.
        "[checks]",
        "ignored_auth.enabled = false",
        "positive_data_acceptance.enabled = false",
        "",
        "[parameters]",
        *(f'"path.{name}" = {value(v)}' for name, v in ids.items()),
        "",
        # Deleting the seeded site would leave every later request a 404: that operation gets its own site.
        "[[operations]]",
        'include-name = "DELETE /api/sites/{site_id}"',
        f'parameters = {{ "path.site_id" = "{doomed}" }}',
        "",
        # A batch answers 200 and lists each bad event under "rejected": the good ones of a batch are not lost.
        "[[operations]]",
        'include-path = "/api/track/batch"',
        "checks.negative_data_rejection.enabled = false",
    ]
    path.write_text("\n".join(lines) + "\n")


def run_fuzz(max_examples: int, seed: int, workdir: Path) -> subprocess.CompletedProcess[str]:
    """Serve a seeded app on loopback and run schemathesis against it; the completed process is returned."""
    settings = load_settings({}, data_dir=str(workdir / "data"), secret_key="fuzz-secret-key-0123456789")
    services = open_services(settings)
    try:
        owner = make_account(services, "owner@example.com")
        ids = _seed(services, owner)
        config = workdir / "schemathesis.toml"
        _config(config, ids)
        with live_server(create_app(settings, services)) as base:
            command = [
                str(Path(sys.executable).with_name("schemathesis")),
                "--config-file",
                str(config),
                "run",
                f"{base}/api/openapi.json",
                "--header",
                f"Authorization: Bearer {owner.api_key}",
                "--phases",
                "examples,coverage,fuzzing,stateful",
                "--max-examples",
                str(max_examples),
                "--seed",
                str(seed),
                "--workers",
                "1",
                "--no-shrink",
                "--generation-database",
                ":memory:",
                "--report-dir",
                str(workdir / "reports"),
            ]
            return subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False)
    finally:
        services.close()


def main() -> int:
    """``make fuzz``: a long run, its report printed; the exit status says whether anything failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        result = run_fuzz(args.max_examples, args.seed, Path(tmp))
    print(result.stdout)
    print(result.stderr, file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())

"""The ``sitelens`` command: serve the API and dashboard, run the demo, administer accounts, seed traffic.

    sitelens serve [--host H] [--port P] [--data-dir DIR]
    sitelens demo [--host H] [--port P] [--data-dir DIR]
    sitelens dashboard [--host H] [--port P]                    (needs SITELENS_API_URL; port 8050)
    sitelens admin ...                                          (see ``api_backend.cli``)
    sitelens seed ...

The serving commands are defined here because they need both the API and the dashboard; ``admin`` and ``seed``
belong to ``api_backend.cli``, whose parser this module extends.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from api_backend import cli as backend_cli
from api_backend.cli import CommandError, add_server_flags, display_host, env_setting, parse_port
from api_backend.settings import Settings

__all__ = ["DASHBOARD_PORT", "build_parser", "main"]

# The dashboard alone defaults to another port than the API so both can run on one machine.
DASHBOARD_PORT = 8050


def _run_server(settings: Settings, host: str, port: int) -> None:
    import uvicorn

    from api_backend.serving import server_config, set_start_up_heap_aside
    from sitelens.mount import create_combined_app

    # Opened here rather than by the app, so a damaged or missing store is one line on stderr, not a traceback.
    services = backend_cli.open_event_services(settings, serving=True)
    try:
        app = create_combined_app(settings, services)
        shown = f"http://{display_host(host)}:{port}"
        print(f"sitelens is serving on {shown}/ (API under {shown}/api)", flush=True)
        # Errors are logged either way; a line per request is opt-in, as it costs the busiest route a third of its
        # speed. One worker, with deadlines for slow clients (``api_backend.serving``).
        config = server_config(app, settings, host, port)
        set_start_up_heap_aside()
        uvicorn.Server(config).run()
    finally:
        services.close()


def serve_command(args: argparse.Namespace) -> None:
    """Serve the API under /api and the dashboard at / in one process."""
    settings = backend_cli.server_settings(args)
    _run_server(settings, settings.host, settings.port)


def demo_command(args: argparse.Namespace) -> None:
    """Create (first run) or reuse the demo account and traffic, print how to sign in, then serve."""
    settings = backend_cli.prepare_demo(args)
    _run_server(settings, settings.host, settings.port)


def dashboard_command(args: argparse.Namespace) -> None:
    """Serve only the dashboard, talking to the API at ``SITELENS_API_URL`` (no data folder needed)."""
    api_url = env_setting("api_url")
    if not api_url:
        raise CommandError("SITELENS_API_URL must be set to the API root, e.g. http://127.0.0.1:8000/api")
    host = env_setting("host", args.host)
    port = args.port or DASHBOARD_PORT
    from dashboard.app import serve_dashboard
    from dashboard.settings import DashboardSettings

    settings = DashboardSettings(api_url=api_url, api_timeout=env_setting("dashboard_api_timeout"))
    print(f"sitelens dashboard on http://{display_host(host)}:{port}/ using {api_url}", flush=True)
    serve_dashboard(settings, host=host, port=port)


def _add_serving_commands(commands: Any) -> None:
    serve = commands.add_parser("serve", help="serve the API under /api and the dashboard at /")
    add_server_flags(serve)
    serve.set_defaults(handler=serve_command)

    demo = commands.add_parser("demo", help="create a demo account with 60 days of traffic (first run), then serve")
    add_server_flags(demo)
    demo.set_defaults(handler=demo_command)

    dashboard = commands.add_parser("dashboard", help="serve only the dashboard against $SITELENS_API_URL")
    dashboard.add_argument("--host", help="address to listen on (default: $SITELENS_HOST or 127.0.0.1)")
    dashboard.add_argument("--port", type=parse_port, help=f"port to listen on (default: {DASHBOARD_PORT})")
    dashboard.set_defaults(handler=dashboard_command)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``sitelens`` command: the serving commands, then admin and seed."""
    return backend_cli.build_parser(_add_serving_commands)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sitelens`` console script; returns the exit status."""
    return backend_cli.main(argv, build_parser())


if __name__ == "__main__":
    sys.exit(main())

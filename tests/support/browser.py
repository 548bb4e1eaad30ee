"""Helpers for browser tests of the trackers: a loopback server for a test page, and waiting on a condition."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support import free_port

__all__ = ["page_server"]


@contextmanager
def page_server(root: Path) -> Iterator[str]:
    """Serve the files of ``root`` on a loopback port; any other path answers ``index.html`` (a single-page app)."""

    class Handler(SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def translate_path(self, path: str) -> str:
            name = path.split("?", 1)[0].lstrip("/")
            target = root / name
            return str(target if name and target.is_file() else root / "index.html")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()

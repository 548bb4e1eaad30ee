"""``sitelens serve`` closes connections whose request trickles in, and still serves the ones that don't."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import replace

import httpx
import pytest

from api_backend.app import create_app
from api_backend.services import Services
from api_backend.settings import Settings
from tests.support import served_as_in_production

# The trickler sends one byte per step; the server must cut it off long before it runs out of bytes.
MAX_BYTES = 400
STEP_SECONDS = 0.05


@pytest.fixture
def served(settings: Settings, services: Services) -> Iterator[tuple[str, int]]:
    """The app served the way ``sitelens serve`` serves it, with a one-second request deadline."""
    fast = replace(settings, request_timeout=1, keep_alive_timeout=1)
    with served_as_in_production(create_app(fast, services), fast) as address:
        yield address


def _trickle(address: tuple[str, int], head: bytes) -> int:
    """Send ``head`` then filler header bytes one at a time; return how many bytes went out before the close."""
    sent = 0
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(head)
        sock.settimeout(STEP_SECONDS)
        for _ in range(MAX_BYTES):
            try:
                if sock.recv(1) == b"":
                    return sent
            except TimeoutError:
                pass
            except ConnectionResetError:
                return sent
            try:
                sock.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                return sent
            sent += 1
    return sent


def test_slow001_trickled_headers_are_cut_off(served) -> None:
    sent = _trickle(served, b"GET /api/live HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    assert sent < MAX_BYTES


def test_slow002_trickled_body_is_cut_off(served) -> None:
    head = b"POST /api/track HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    sent = _trickle(served, head)
    assert sent < MAX_BYTES


def test_slow003_silent_connection_is_closed(served) -> None:
    with socket.create_connection(served, timeout=30) as sock:
        assert sock.recv(1) == b""


def test_slow004_prompt_requests_on_one_connection_still_work(served) -> None:
    host, port = served
    with httpx.Client(base_url=f"http://{host}:{port}") as client:
        for _ in range(3):
            assert client.get("/api/live").status_code == 200

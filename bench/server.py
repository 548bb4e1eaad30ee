"""The server under test: ``sitelens serve`` in a subprocess on loopback, and a sampler of its resident memory."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil

__all__ = ["RSSSampler", "ServerProcess", "free_port", "sitelens_command"]


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def sitelens_command() -> list[str]:
    """The ``sitelens`` console script of this interpreter's environment (module form as a fallback)."""
    script = Path(sys.executable).with_name("sitelens")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from sitelens.cli import main; raise SystemExit(main())"]


class RSSSampler:
    """Samples the resident set size of a process tree every ``interval`` seconds in a daemon thread.

    ``peak`` is the highest sum seen since the last ``reset`` (the process plus its children, so a
    subprocess-based server or seeder is measured whole).
    """

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self._proc = psutil.Process(pid)
        self._interval = interval
        self._peak = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._thread.start()

    def _sample(self) -> int:
        try:
            procs = [self._proc, *self._proc.children(recursive=True)]
        except psutil.Error:
            return 0
        total = 0
        for proc in procs:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = self._sample()
            with self._lock:
                self._peak = max(self._peak, rss)
            self._stop.wait(self._interval)

    @property
    def peak(self) -> int:
        """Peak RSS in bytes since the last reset."""
        rss = self._sample()
        with self._lock:
            self._peak = max(self._peak, rss)
            return self._peak

    def reset(self) -> None:
        """Start a new block: the peak becomes the current RSS."""
        with self._lock:
            self._peak = self._sample()

    @contextmanager
    def block(self, into: dict[str, int], name: str) -> Iterator[None]:
        """Record the peak RSS (bytes) reached while the ``with`` body runs as ``into[name]``."""
        self.reset()
        try:
            yield
        finally:
            into[name] = self.peak

    def stop(self) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join(timeout=2)


class ServerProcess:
    """``sitelens serve`` (API and dashboard in one process, its production configuration) on a free port."""

    def __init__(self, data_dir: Path, *, env: Mapping[str, str] | None = None, log_path: Path | None = None) -> None:
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.api_url = self.base_url + "/api"
        self._env = dict(env or {})
        self._log_path = log_path or self.data_dir / "server.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self.sampler: RSSSampler | None = None

    @property
    def pid(self) -> int:
        """Process id of the running server."""
        assert self._proc is not None, "server not started"
        return self._proc.pid

    def start(self, timeout: float = 60.0) -> ServerProcess:
        """Start the server and wait until ``GET /api/health`` answers 200."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SITELENS_")}
        env.update(self._env)
        env["SITELENS_DATA_DIR"] = str(self.data_dir)
        env["SITELENS_HOST"] = "127.0.0.1"
        env["SITELENS_PORT"] = str(self.port)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self._log_path, "ab")  # noqa: SIM115 (kept open for the server's lifetime)
        self._proc = subprocess.Popen([*sitelens_command(), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"sitelens serve exited with {self._proc.returncode}; see {self._log_path}")
            try:
                if httpx.get(self.api_url + "/health", timeout=2).status_code == 200:
                    self.sampler = RSSSampler(self._proc.pid)
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"sitelens serve did not answer within {timeout:.0f} s; see {self._log_path}")

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 30 s) so its DuckDB file is released."""
        if self.sampler is not None:
            self.sampler.stop()
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait(timeout=10)

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

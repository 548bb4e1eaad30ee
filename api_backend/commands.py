"""What ``sitelens`` commands share: the error type, settings, opening the stores, a progress bar, and (for bulk
jobs) turning transparent huge pages off.

Kept apart from ``cli.py`` (the parser and the admin and seed commands) so command modules such as
``clickhouse_admin`` can use these without importing the parser that registers them.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from api_backend.settings import ENV_PREFIX, Settings, SettingsError, load_settings

if TYPE_CHECKING:
    from api_backend.services import Services

__all__ = ["CommandError", "ProgressBar", "command_settings", "open_event_services", "without_huge_pages"]

# prctl(2): the calling process gets no transparent huge pages, whatever its allocators ask for.
_PR_SET_THP_DISABLE = 41


class CommandError(Exception):
    """A command failed in a way the user can fix; the message is printed as one line on stderr."""


def command_settings(args: argparse.Namespace, **overrides: Any) -> Settings:
    """Settings from the environment; ``--data-dir`` and other flags override only when given."""
    data_dir = getattr(args, "data_dir", None)
    try:
        return load_settings(data_dir=data_dir, **overrides)
    except SettingsError as exc:
        raise CommandError(str(exc)) from None


class ProgressBar:
    """A one-line progress bar redrawn in place on a terminal (or printed every 10% to a file)."""

    def __init__(self, total: int, stream: TextIO | None = None, label: str = "seeding") -> None:
        self.total = max(total, 1)
        self.stream = stream or sys.stderr
        self.label = label
        self.done = 0
        self.started = time.monotonic()
        self._tty = self.stream.isatty()
        self._last_tenth = -1

    def update(self, count: int) -> None:
        """Record ``count`` more finished rows and redraw."""
        self.done += count
        fraction = min(self.done / self.total, 1.0)
        if not self._tty:
            tenth = int(fraction * 10)
            if tenth == self._last_tenth:
                return
            self._last_tenth = tenth
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        filled = int(fraction * 30)
        line = (
            f"{self.label} [{'#' * filled}{'.' * (30 - filled)}] {fraction * 100:5.1f}% "
            f"{self.done:,}/{self.total:,} rows, {rate:,.0f} rows/s"
        )
        self.stream.write(("\r" + line) if self._tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the line."""
        if self._tty:
            self.stream.write("\n")
            self.stream.flush()


def open_event_services(settings: Settings, *, serving: bool = False) -> Services:
    """Open the stores, turning a damaged, missing or locked store into one clear ``CommandError`` line.

    ``serving`` is for ``sitelens serve`` and ``demo``: only a server runs the daily merge and the seals of a
    ClickHouse store; a command opens the stores for its own job."""
    import duckdb

    from api_backend.services import open_services
    from api_backend.store.eventlog import LogCorruptError
    from api_backend.store.startup import StoreStartupError

    try:
        if not serving:
            settings = dataclasses.replace(settings, clickhouse_merge_hour=None, clickhouse_seal_seconds=None)
        return open_services(settings)
    except ValueError as exc:  # an events URL this build cannot open
        raise CommandError(str(exc)) from None
    except (StoreStartupError, LogCorruptError) as exc:  # a damaged or missing store: the message says what to do
        raise CommandError(str(exc)) from None
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise CommandError(
                f"the event store {settings.events_path} is locked by another process; "
                "stop the running sitelens server before seeding"
            ) from None
        raise CommandError(f"cannot open the event store {settings.events_path}: {str(exc).splitlines()[0]}") from None


def without_huge_pages() -> bool:
    """Keep transparent huge pages out of this process for the rest of its life (Linux); whether that took effect.

    For bulk jobs such as ``sitelens seed``, which allocate and drop large buffers all the time. numpy and DuckDB ask
    the kernel for huge pages for such buffers, and where its THP defrag setting is ``madvise`` (Debian's default)
    a fault on one may first compact memory. Seeding 10M events spent 27-28 s of system CPU that way against
    12 s without, and took 72.9 s against 60.4-63.0 s (``bench/analysis.md``).
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return False
    return bool(prctl(_PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0)


# A bulk job's DuckDB memory: a quarter of what the process may use, between the server's default and 4GB.
_BULK_MEMORY_SHARE = 4
_BULK_MEMORY_FLOOR = 1000**3
_BULK_MEMORY_CAP = 4 * 1000**3
_CGROUP_LIMITS = (Path("/sys/fs/cgroup/memory.max"), Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))


def usable_memory(cgroup_limits: Sequence[Path] = _CGROUP_LIMITS) -> int | None:
    """The bytes of memory this process may use: the machine's, or its control group's limit when lower (a
    container's: the least number among ``cgroup_limits``, cgroup v2's file and v1's); ``None`` where none can be
    read."""
    sizes: list[int] = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        pass
    for path in cgroup_limits:
        try:
            raw = path.read_text().strip()
        except OSError:
            continue
        if raw.isdigit():  # "max" (cgroup v2) means no limit
            sizes.append(int(raw))
    return min(sizes) if sizes else None


def bulk_memory_limit(env: Mapping[str, str], memory: int | None) -> str | None:
    """The DuckDB memory limit of a bulk job such as ``sitelens seed``, which runs with the server stopped.

    ``SITELENS_DUCKDB_MEMORY_LIMIT`` when set; otherwise a quarter of ``memory`` (``usable_memory``), between 1GB
    and 4GB, so a large machine seeds faster and a small one keeps the server's limit. With 4GB rather than 1GB,
    DuckDB keeps more of the file in its own memory instead of reading it again: seeding 100M events took 582
    against 611 s, and 682 against 742 s on a slower day (``bench/analysis.md``). ``None``: the setting as it is.
    """
    if f"{ENV_PREFIX}DUCKDB_MEMORY_LIMIT" in env or memory is None:
        return None
    share = min(max(memory // _BULK_MEMORY_SHARE, _BULK_MEMORY_FLOOR), _BULK_MEMORY_CAP)
    return f"{share // 1000**2}MB"

"""Wire formats shared by every route: timestamps as ISO 8601 UTC with milliseconds and ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload

__all__ = ["iso_utc", "naive_utc"]


@overload
def iso_utc(value: datetime) -> str: ...
@overload
def iso_utc(value: None) -> None: ...
def iso_utc(value: datetime | None) -> str | None:
    """``2026-03-01T09:30:00.000Z`` for a naive-UTC or aware datetime; ``None`` stays ``None``."""
    if value is None:
        return None
    value = naive_utc(value)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def naive_utc(value: datetime) -> datetime:
    """``value`` as a naive UTC datetime (an aware one converted; a naive one is taken as UTC already)."""
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value

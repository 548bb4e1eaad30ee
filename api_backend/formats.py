"""Wire formats shared by every route: timestamps as ISO 8601 UTC with milliseconds and ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload

__all__ = ["iso_utc"]


@overload
def iso_utc(value: datetime) -> str: ...
@overload
def iso_utc(value: None) -> None: ...
def iso_utc(value: datetime | None) -> str | None:
    """``2026-03-01T09:30:00.000Z`` for a naive-UTC or aware datetime; ``None`` stays ``None``."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"

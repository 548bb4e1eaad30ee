"""``page`` and ``limit`` query values: validated integers, 400 with a clear message otherwise."""

from __future__ import annotations

import re
from dataclasses import dataclass

from api_backend.errors import InvalidRequestError

__all__ = ["Page", "parse_int", "parse_page"]

_INT = re.compile(r"^\s*\d{1,9}\s*$")


@dataclass(frozen=True)
class Page:
    """1-based page number and page size."""

    page: int
    limit: int

    @property
    def offset(self) -> int:
        """Rows to skip before this page."""
        return (self.page - 1) * self.limit


def parse_int(value: str | None, name: str, default: int, low: int, high: int | None) -> int:
    """An integer within ``low..high`` (empty means ``default``), else 400 naming the parameter."""
    if value is None or value == "":
        return default
    bound = f"between {low} and {high}" if high is not None else f"at least {low}"
    if not _INT.match(value) or not (low <= int(value) and (high is None or int(value) <= high)):
        raise InvalidRequestError.for_field(name, f"must be an integer {bound}")
    return int(value)


def parse_page(
    page: str | None, limit: str | None, default_limit: int, max_limit: int, limit_name: str = "limit"
) -> Page:
    """``page`` (>= 1, default 1) and the page size (``1..max_limit``)."""
    return Page(parse_int(page, "page", 1, 1, 100_000_000), parse_int(limit, limit_name, default_limit, 1, max_limit))

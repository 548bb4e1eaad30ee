"""What the metadata repository raises when a request about stored records cannot be carried out.

The store speaks of records, not of HTTP: the app turns these into the contract's error body (``app.py``), the
``sitelens`` command into a one-line message. ``field`` names the input at fault when there is one.
"""

from __future__ import annotations

__all__ = ["RecordConflictError", "RecordError", "RecordInvalidError", "RecordNotFoundError"]


class RecordError(Exception):
    """A request about stored records that cannot be carried out, with a sentence for the person who asked."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class RecordNotFoundError(RecordError):
    """The record (user, organization, site, goal...) does not exist."""


class RecordConflictError(RecordError):
    """The record would clash with one that exists (an email or a domain taken)."""


class RecordInvalidError(RecordError):
    """A value the repository refuses: ``field`` names it, ``reason`` says what it must be."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}", field)
        self.reason = reason

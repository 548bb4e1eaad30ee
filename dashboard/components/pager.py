"""The dashboard's one pager: "‹ Previous", "Page x of y", "Next ›", in a ``div.pager``.

Two ways to move, same markup and rules:

- ``link_pager``: a list paged through the URL (``href(page)`` gives a page's address), so a page can be shared.
- ``button_pager``: a list paged by a callback (buttons with ids), for a part of a page whose URL stays put.

An end that goes nowhere is disabled: a plain span marked ``aria-disabled`` (links) or a disabled button. On the first
page nothing goes back; on the last page (or past it) nothing goes forward, and past the last page Previous leads to
the last page. The label never reads "of 0": an empty list has one (empty) page.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dash import dcc, html

from dashboard.components.common import attrs

__all__ = ["LINK_CLASS", "SMALL_LINKS", "button_pager", "link_pager", "page_label", "total_pages"]

LINK_CLASS = "button button-ghost"
# The smaller, boxed look of the pagers under a table (goals, sessions).
SMALL_LINKS = "button button-secondary button-small"


def total_pages(total: int, page_size: int) -> int:
    """Number of pages needed for ``total`` rows (at least one)."""
    return max(1, math.ceil(total / page_size))


def page_label(page: int, pages: int | None) -> str:
    """``Page 2 of 3`` (``Page 2`` when the number of pages is unknown)."""
    return f"Page {page:,}" + (f" of {max(pages, 1):,}" if pages is not None else "")


def _count(total: int, noun: str) -> html.Span:
    # The pager row is right-aligned; the count takes the free space on the left.
    text = f"{total:,} {noun}{'' if total == 1 else 's'}"
    return html.Span(text, className="pager-total muted", style={"marginRight": "auto"})


def link_pager(
    page: int,
    pages: int | None,
    href: Callable[[int], str],
    *,
    has_next: bool | None = None,
    total: int | None = None,
    noun: str = "item",
    link_class: str = LINK_CLASS,
) -> html.Div:
    """Previous / next links around the page label; ``total`` items counted on the left when given.

    With ``pages`` unknown (None), ``has_next`` says whether a next page exists.
    """
    more = bool(has_next) if pages is None else page < pages
    back_to = page - 1 if pages is None else min(page - 1, max(pages, 1))
    previous: Any = (
        dcc.Link("‹ Previous", href=href(back_to), className=f"{link_class} pager-prev")
        if page > 1
        else html.Span("‹ Previous", className=f"{link_class} pager-prev disabled", **attrs({"aria-disabled": "true"}))
    )
    following: Any = (
        dcc.Link("Next ›", href=href(page + 1), className=f"{link_class} pager-next")
        if more
        else html.Span("Next ›", className=f"{link_class} pager-next disabled", **attrs({"aria-disabled": "true"}))
    )
    parts: list[Any] = [_count(total, noun)] if total is not None else []
    parts += [previous, html.Span(page_label(page, pages), className="pager-label"), following]
    return html.Div(parts, className="pager")


def button_pager(page: int, pages: int, *, prev_id: Any, next_id: Any, label_id: Any | None = None) -> html.Div:
    """Previous / next buttons (``n_clicks`` for a callback) around the page label, disabled at the ends."""
    label = html.Span(page_label(page, pages), className="pager-label", **({"id": label_id} if label_id else {}))
    return html.Div(
        [
            html.Button("‹ Previous", id=prev_id, n_clicks=0, disabled=page <= 1, className=f"{LINK_CLASS} pager-prev"),
            label,
            html.Button(
                "Next ›", id=next_id, n_clicks=0, disabled=page >= max(pages, 1), className=f"{LINK_CLASS} pager-next"
            ),
        ],
        className="pager",
    )

"""The one shape of a callback that reads through the API: load, draw, and show a failure where the person looked.

A callback hands over two functions, ``load`` (the API calls) and ``draw`` (plain data in, components out), and gets
back what to put on the page. An ``APIError`` never turns into a silent ``PreventUpdate``:

- ``shown``: a page part (a card body, a table) gets ``error_view`` in its place; an ended sign-in opens sign-in,
  which comes back to the page afterwards.
- ``downloaded``: a CSV button gets its file, or no file and a one-line reason beside the button.
- ``charted``: a chart gets its figure, or an empty chart saying why it is empty.

Only ``APIError`` (every failure of the API or of reaching it, see ``api_client.errors``) is caught; a bug in the
dashboard stays a bug and reaches the log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from dash import no_update

from dashboard.components.common import error_view, failure_figure, failure_note

__all__ = ["charted", "downloaded", "shown"]

T = TypeVar("T")


def shown(load: Callable[[], T], draw: Callable[[T], Any], *, shared: bool = False) -> Any:
    """``draw(load())``, or the failure view in its place (a private-link view says when its link no longer works)."""
    from api_client import APIError

    try:
        data = load()
    except APIError as exc:
        return error_view(exc, shared=shared)
    return draw(data)


def downloaded(load: Callable[[], T], build: Callable[[T], dict[str, Any]]) -> tuple[Any, Any]:
    """``(file, status)`` for a CSV button's ``dcc.Download`` and its status: the file and an empty status, or no
    file and why not."""
    from api_client import APIError

    try:
        data = load()
    except APIError as exc:
        return no_update, failure_note(exc)
    return build(data), None


def charted(load: Callable[[], T], draw: Callable[[T], Any]) -> Any:
    """``draw(load())``, or an empty figure that says why the chart could not be drawn."""
    from api_client import APIError

    try:
        data = load()
    except APIError as exc:
        return failure_figure(exc)
    return draw(data)

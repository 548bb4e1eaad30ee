"""Parts of a page drawn straight into its layout from answers the response cache already holds.

A page opened again (or with a view someone just looked at) then shows its data with the layout itself, without a
callback round trip per part. Each function returns None when an answer is missing: the page keeps its loading state
and the part's callback runs the call (and reports any failure) as usual. Nothing here calls a data route of the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard import session
from dashboard.components import frame
from dashboard.state import ViewState

__all__ = ["overview"]


def overview(auth: Mapping[str, Any] | None, view: ViewState) -> Any | None:
    """The overview strip of ``view`` (this range against the previous one) when its answer is cached."""
    if view.site_id is None or not session.is_signed_in(auth):
        return None
    both = session.peek(session.api_for(auth), "overview_compared", view.site_id, view.query())
    if both is None:
        return None
    return frame.overview_strip(both.current, both.previous)

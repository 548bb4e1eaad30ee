"""``GET /api/script.js``: the browser tracker sitelens ships (``api_backend/static/script.js``)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from importlib import resources
from typing import Annotated

from fastapi import APIRouter, Header, Response

router = APIRouter(tags=["tracking"])

# An hour: a new release reaches visitors the same day, and the ETag makes revalidation a 304.
CACHE_CONTROL = "public, max-age=3600"


@lru_cache(maxsize=1)
def tracker_script() -> tuple[bytes, str]:
    """The tracker's bytes and their ETag (read once from the installed package)."""
    body = resources.files("api_backend").joinpath("static", "script.js").read_bytes()
    return body, '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


@router.get(
    "/script.js",
    response_class=Response,
    responses={200: {"content": {"application/javascript": {}}, "description": "The tracker"}},
)
def script_js(if_none_match: Annotated[str | None, Header(include_in_schema=False)] = None) -> Response:
    """The tracker: ``<script defer src="https://HOST/api/script.js" data-site-id="1"></script>``."""
    body, etag = tracker_script()
    headers = {"Cache-Control": CACHE_CONTROL, "ETag": etag}
    if if_none_match and etag in [tag.strip() for tag in if_none_match.split(",")]:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/javascript", headers=headers)

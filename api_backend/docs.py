"""The interactive API documentation at ``/api/docs``, served entirely from this server.

Swagger UI's files come from the ``swagger-ui-bundle-v2`` package instead of a CDN, so the page works offline
and under a CSP that allows only this origin: the page has no inline script (its set-up is ``/api/docs/init.js``).
"""

from __future__ import annotations

from pathlib import Path

import swagger_ui_bundle
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

__all__ = ["DOCS_CSP", "install_docs"]

DOCS_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"
)
_STATIC = "/api/docs/static"
_PAGE = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{title}}</title>
<link rel="stylesheet" href="{_STATIC}/swagger-ui.css">
<link rel="icon" type="image/png" href="{_STATIC}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{_STATIC}/swagger-ui-bundle.js"></script>
<script src="/api/docs/init.js"></script>
</body>
</html>
"""
# validatorUrl: null keeps Swagger UI from asking an outside validator for a badge.
_INIT = """window.ui = SwaggerUIBundle({
  url: "%s",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout"
});
"""


def install_docs(app: FastAPI, openapi_url: str) -> None:
    """Serve the docs page, its set-up script and Swagger UI's files under ``/api/docs``."""
    page = _PAGE.replace("{title}", f"{app.title} - docs")
    init = _INIT % openapi_url
    headers = {"Content-Security-Policy": DOCS_CSP}

    async def docs() -> HTMLResponse:
        return HTMLResponse(page, headers=headers)

    async def docs_init() -> Response:
        return Response(init, media_type="text/javascript", headers=headers)

    app.add_api_route("/api/docs", docs, methods=["GET"], include_in_schema=False)
    app.add_api_route("/api/docs/init.js", docs_init, methods=["GET"], include_in_schema=False)
    app.mount(_STATIC, StaticFiles(directory=Path(swagger_ui_bundle.swagger_ui_path)), name="swagger-ui")

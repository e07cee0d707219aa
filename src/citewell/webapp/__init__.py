"""The web app at ``/``: a single page, plain HTML, CSS and ES modules shipped as package data.

:func:`install` adds to a FastAPI app (outside the OpenAPI document, no key needed to load
the page; every API call the page makes carries the key the user signs in with):

- ``GET /`` — ``static/index.html``;
- ``GET /app/{path}`` — the app's files (``static/``): ``app.css``, ``js/*.js``.

Nothing is fetched from anywhere else and nothing is built at install time. Every answer
carries :data:`APP_HEADERS`: a Content-Security-Policy that allows only this server's own
scripts, styles and connections (no inline script, no ``eval``), page images from this
server or ``blob:`` URLs the app made from them, and media from ``http(s)`` (a transcript's
recording is named by the URL given at upload); no framing; no referrer.

The app never renders text from sources or users as HTML: it builds DOM nodes and sets
``textContent`` (``js/dom.js``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response

from ..errors import NotFoundError

#: The folder of the app's files inside the installed package.
STATIC = Path(str(resources.files(__package__) / "static"))

#: Headers of the page and of each of its files.
APP_HEADERS: dict[str, str] = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob:; "
                               "media-src 'self' blob: http: https:; connect-src 'self'; base-uri 'none'; "
                               "form-action 'none'; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}

_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}


def app_file(path: str) -> Path:
    """The file ``path`` (relative, ``/``-separated) of the app; ``NotFoundError`` for
    anything that is not one of its files (``..``, absolute paths, folders, unknown types)."""
    target = (STATIC / path).resolve()
    if STATIC.resolve() not in target.parents or not target.is_file() or target.suffix not in _TYPES:
        raise NotFoundError(f"no app file {path}")
    return target


def install(app: FastAPI) -> None:
    """Add ``GET /`` and ``GET /app/{path}`` to ``app`` (see the module docstring)."""

    @app.get("/", include_in_schema=False)
    def index() -> Response:
        """The web app's page."""
        return FileResponse(app_file("index.html"), media_type=_TYPES[".html"], headers=APP_HEADERS)

    @app.get("/app/{path:path}", include_in_schema=False, name="webapp_file")
    def asset(path: str) -> Response:
        """One of the app's files."""
        target = app_file(path)
        return FileResponse(target, media_type=_TYPES[target.suffix], headers=APP_HEADERS)


__all__ = ["APP_HEADERS", "STATIC", "app_file", "install"]

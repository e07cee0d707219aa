"""The citewell HTTP API (FastAPI on uvicorn): ``citewell serve`` or :func:`create_app`.

Modules, one job each: :mod:`.app` (the application), :mod:`.auth` (keys → principal),
:mod:`.deps` (per-request engine), :mod:`.errors` (the one error → HTTP mapping),
:mod:`.requestid` (request ids and the access log), :mod:`.schemas` (the OpenAPI
models), :mod:`.uploads` (streamed multipart with a size cap), :mod:`.images`
(``image_url``), :mod:`.routes` (the routers). The background work (extraction,
embedding, turns) is :mod:`citewell.jobs`.
"""

from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]

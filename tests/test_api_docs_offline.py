"""The API docs work without internet (issue 15): /docs (Swagger UI) and /redoc (ReDoc) load
every script, style and icon from this server, and name no other host."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from urllib.parse import urljoin

import pytest

from citewell.web import create_app

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

#: Attributes and Swagger UI options that name a URL the page loads or calls.
_ASSETS = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']""")
_SPEC = re.compile(r"""(?:url\s*:|spec-url\s*=)\s*["']([^"']+)["']""")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    with TestClient(create_app(tmp_path_factory.mktemp("docs") / "s.sqlite")) as c:
        yield c


@pytest.mark.parametrize(("page", "assets"), [
    ("/docs", {"swagger-ui-bundle.js": "javascript", "swagger-ui.css": "css", "favicon.png": "image/png"}),
    ("/redoc", {"redoc.standalone.js": "javascript", "favicon.png": "image/png"}),
])
def test_docs_page_loads_everything_from_this_server(client: TestClient, page: str, assets: dict[str, str]) -> None:
    r = client.get(page, headers={"X-API-KEY": ""})  # public: no key
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    html = r.text
    assert "http://" not in html and "https://" not in html and "//cdn" not in html  # no other host at all
    urls = _ASSETS.findall(html)
    loaded = {Path(u).name: u for u in urls}
    assert set(assets) <= set(loaded), urls
    for name, kind in assets.items():
        url = loaded[name]
        assert url.startswith("/static-offline-docs/"), url
        asset = client.get(urljoin("http://testserver" + page, url))
        assert asset.status_code == 200 and kind in asset.headers["content-type"], (name, asset.headers)
        assert len(asset.content) > 1000  # the real bundle, not a stub
    # and the OpenAPI document the page reads is this server's
    (spec,) = _SPEC.findall(html)
    assert spec == "/openapi.json"
    assert client.get(spec).json()["info"]["title"] == "citewell"


def test_swagger_ui_asks_no_validator(client: TestClient) -> None:
    """Swagger UI would fetch a validity badge from validator.swagger.io for the spec."""
    assert '"validatorUrl": null' in client.get("/docs").text

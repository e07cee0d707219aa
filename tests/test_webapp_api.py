"""The routes the web app needs beyond the API it reuses (issue 16), and the app's files.

- ``GET /rms/viewer/data``: a citation as data; for a PDF the cited sentence's own line
  boxes, checked against pdfium's character boxes of that sentence and against the
  passage's ``offset[]`` boxes; a transcript's quoted cues and times; a post's quoted span;
- :func:`citewell.cite.quote.quoted_span` (where the sentence lies in the passage);
- ``GET /v1/resources/{id}/pages/{n}``, ``PATCH /v1/sessions/{id}``, ``GET /v1/workspace``;
- ``/`` and ``/app/…``: the app's files with their Content-Security-Policy, nothing else.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pytest

from citewell.cite.quote import quoted_span
from citewell.ingest.pdf_lines import span_line_boxes
from citewell.webapp import STATIC

from .test_api_viewer import (NO_KEY, PDF, PDF_QUESTION, POSTS, TRANSCRIPT, TRANSCRIPT_QUESTION, Api,  # noqa: F401
                              analytics_error, api, png)

SENTENCE = "However OTSL yields a 2x speed up in the inference runtime over HTML"


def viewer_data(api: Api, message_id: str, citation: str = "1", headers: dict[str, str] | None = None,
                params: dict[str, str] | None = None) -> dict[str, Any]:
    r = api.client.get("/rms/viewer/data", params=params or {"chat_message_id": message_id, "citation_idx": citation},
                       headers=headers)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["error"] is None
    return body["payload"]


def inside(box: dict[str, float], outer: dict[str, float], slack: float = 0.003) -> bool:
    return (box["left"] >= outer["left"] - slack and box["top"] >= outer["top"] - slack
            and box["left"] + box["width"] <= outer["left"] + outer["width"] + slack
            and box["top"] + box["height"] <= outer["top"] + outer["height"] + slack)


def char_boxes(path: Path, page: int, text: str) -> list[tuple[float, float, float, float]]:
    """pdfium's own boxes (display fractions: left, top, right, bottom) of the characters of
    the first match of ``text`` on ``page`` (an unrotated page), found by pdfium's search."""
    doc = pdfium.PdfDocument(path)
    try:
        p = doc[page - 1]
        assert p.get_rotation() == 0
        left, bottom, right, top = p.get_bbox()
        width, height = right - left, top - bottom
        textpage = p.get_textpage()
        searcher = textpage.search(text.split(" ")[0] + " " + text.split(" ")[1])
        found = searcher.get_next()
        assert found is not None
        start, _ = found
        out = []
        i = start
        while len(out) < len(text.replace(" ", "")):
            ch = textpage.get_text_range(i, 1)
            if ch.strip() and ch not in "-\x02":
                l, b, r, t = textpage.get_charbox(i, loose=True)
                out.append(((l - left) / width, (top - t) / height, (r - left) / width, (top - b) / height))
            i += 1
        searcher.close()
        textpage.close()
        return out
    finally:
        doc.close()


# -- where the sentence lies in the passage -----------------------------------------------------

def test_quoted_span_finds_a_quote_across_a_line_break() -> None:
    passage = "It is evident.\nHowever OTSL yields a 2x speed\nup in the inference runtime over HTML. Next."
    span = quoted_span(SENTENCE + ".", passage)
    assert span.how == "verbatim"
    assert passage[span.start:span.end] == "However OTSL yields a 2x speed\nup in the inference runtime over HTML"


def test_quoted_span_of_a_cut_quote_and_of_a_statement_row() -> None:
    passage = "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu."
    span = quoted_span("Alpha beta gamma delta epsilon …", passage)
    assert (span.how, passage[span.start:span.end]) == ("verbatim", "Alpha beta gamma delta epsilon")
    table = ("Years ended December 31 (Millions) 2022 2021\nNet sales 34,229 35,355\n"
             "Purchases of property, plant and equipment (PP&E) (1,749) (1,603)\nOther 12 13")
    row = quoted_span("Purchases of property, plant and equipment (PP&E): (1,749) (2022), (1,603) (2021).", table,
                      "table")
    assert row.how == "unit" and table[row.start:row.end] == \
        "Purchases of property, plant and equipment (PP&E) (1,749) (1,603)"
    nothing = quoted_span("Zebras yodel.", "Ledgers balance nightly.")
    assert (nothing.start, nothing.end, nothing.how) == (0, len("Ledgers balance nightly."), "passage")


# -- line boxes from the page's characters ------------------------------------------------------

def test_line_boxes_are_the_sentence_lines_as_pdfium_places_its_characters() -> None:
    passage_box = {"page": 1, "top": 0.1155, "left": 0.2202, "width": 0.5659, "height": 0.2986}
    text = "better mAP scores in comparison to HTML. " + SENTENCE.replace("speed up", "speed\nup") + "."
    start = text.index("However")
    end = text.index(" HTML.", start) + len(" HTML")
    boxes = span_line_boxes(str(PDF), 1, text, start, end, [passage_box])
    assert len(boxes) == 2 and all(b["page"] == 1 and inside(b, passage_box) for b in boxes)
    first, second = boxes
    assert second["top"] > first["top"] + first["height"] * 0.5  # the second line is below the first
    chars = char_boxes(PDF, 1, SENTENCE)
    line1 = [c for c in chars if abs(c[1] - chars[0][1]) < 0.005]
    line2 = [c for c in chars if c not in line1]
    for box, line in ((first, line1), (second, line2)):
        assert abs(box["left"] - min(c[0] for c in line)) < 0.002
        assert abs(box["left"] + box["width"] - max(c[2] for c in line)) < 0.002
        assert abs(box["top"] - min(c[1] for c in line)) < 0.002
        assert abs(box["top"] + box["height"] - max(c[3] for c in line)) < 0.002
    # text the page does not have gives no boxes, never someone else's line
    assert span_line_boxes(str(PDF), 1, "Zebras yodel at dawn", 0, 20, [passage_box]) == []


# -- /rms/viewer/data --------------------------------------------------------------------------

def test_pdf_citation_data_has_the_sentence_line_boxes(api: Api) -> None:
    doc = api.upload("otsl-page9.pdf", PDF.read_bytes(), {"title": "OTSL page 9"})
    sid, mid = api.ask(PDF_QUESTION, doc["id"])
    ref = api.references(mid)[0]
    data = viewer_data(api, mid, ref["citation_idx"])
    assert data["kind"] == "pdf" and data["title"] == "OTSL page 9" and data["resource"]["id"] == doc["id"]
    assert data["passage"]["text"] == ref["text"] and data["passage"]["metadata"]["offset"] == ref["metadata"]["offset"]
    text = api.client.get("/v1/references", params={"chat_message_id": mid}).json()["text"]
    page = ref["metadata"]["offset"][0]["page"]
    assert data["pages"]["cited"] == [page] and data["pages"]["count"] == 1
    passage_area = sum(p["width"] * p["height"] for p in ref["metadata"]["offset"])
    assert len(data["quotes"]) == len(ref["occurrences"])
    for quote in data["quotes"]:  # one per [N] of the answer, each with its own sentence
        assert text[quote["start_index"]:quote["end_index"]] == f"[{ref['citation_idx']}]"
        cited = data["passage"]["text"][quote["passage_start"]:quote["passage_end"]]
        assert quote["how"] == "verbatim" and " ".join(cited.split()) in quote["sentence"]
        assert quote["boxes"] and all(b["page"] == page for b in quote["boxes"])
        assert all(any(inside(b, p) for p in ref["metadata"]["offset"]) for b in quote["boxes"])
        # a line box per line of the quoted span in the passage (not the whole passage)
        assert len(quote["boxes"]) == len(cited.split("\n"))
        assert sum(b["width"] * b["height"] for b in quote["boxes"]) < passage_area / 4
    # the page image of the data is the plain page, through a signed link that needs no key
    image = api.client.get(data["pages"]["images"][str(page)], headers=NO_KEY)
    assert image.status_code == 200 and image.headers["content-type"] == "image/png"
    assert "boxes=false" in data["pages"]["images"][str(page)]
    # the signed viewer_url's fields open the same data without a key
    signed = dict(re.findall(r"[?&]([^=&]+)=([^&]*)", ref["viewer_url"]))
    assert viewer_data(api, mid, params=signed, headers=NO_KEY)["quotes"] == data["quotes"]
    analytics_error(api.client.get("/rms/viewer/data", params={"chat_message_id": mid, "citation_idx": "1"},
                                   headers=NO_KEY), 401, "API_KEY_MISSING")
    analytics_error(api.client.get("/rms/viewer/data", params={"chat_message_id": mid, "citation_idx": "9"}),
                    404, "NOT_FOUND")
    analytics_error(api.client.get("/rms/viewer/data", params={"chat_message_id": mid, "citation_idx": "1"},
                                   headers=api.other), 404, "NOT_FOUND")
    # every page of the document is an image for a key holder; a page it lacks is 404
    plain = api.client.get(f"/v1/resources/{doc['id']}/pages/{page}")
    assert plain.status_code == 200 and plain.headers["content-type"] == "image/png"
    assert png(plain.content).size == png(image.content).size
    missing = api.client.get(f"/v1/resources/{doc['id']}/pages/{page + 1}")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    assert api.client.get(f"/v1/resources/{doc['id']}/pages/1", headers=api.other).status_code == 404


def test_transcript_citation_data_marks_the_quoted_cues(api: Api) -> None:
    talk = api.upload("ocr-talk.vtt", TRANSCRIPT.read_bytes(), {"media_url": "https://media.example/ocr.mp3"})
    _, mid = api.ask(TRANSCRIPT_QUESTION, talk["id"])
    ref = api.references(mid)[0]
    data = viewer_data(api, mid, ref["citation_idx"])
    assert data["kind"] == "transcript"
    assert data["media"] == {"url": "https://media.example/ocr.mp3", "type": "audio"}
    meta = ref["metadata"]
    assert data["passage"]["start_time"] == pytest.approx(meta["start_time"])
    quoted = [c for c in data["cues"] if c["role"] == "quoted"]
    assert quoted and all(meta["start_time"] - 1e-6 <= c["start"] <= c["end"] <= meta["end_time"] + 1e-6
                          for c in quoted)
    (quote,) = data["quotes"][:1]
    span = data["passage"]["text"][quote["passage_start"]:quote["passage_end"]]
    assert all(c["text"] in data["passage"]["text"] for c in quoted)
    assert any(c["text"] in span or span in c["text"] for c in quoted)  # the quoted cues hold the quote
    assert [c["role"] for c in data["cues"]].count("context") >= 1


def test_post_citation_data_has_the_quoted_span(api: Api) -> None:
    import json

    posts = api.upload("posts.jsonl", "\n".join(json.dumps(p) for p in POSTS).encode())
    _, mid = api.ask("What about puts on Zorblax Corp before earnings?", posts["id"])
    ref = api.references(mid)[0]
    data = viewer_data(api, mid, ref["citation_idx"])
    post = data["post"]
    assert data["kind"] == "post" and post["id"] == "t3_evil" and post["author"] == "<b>bob</b>"
    assert post["text"] == POSTS[0]["text"]  # as given: the app shows it as text
    assert post["text"][post["quote_start"]:post["quote_end"]].startswith("Puts on Zorblax Corp")
    assert post["links"] == ["https://www.reddit.com/r/wallstreetbets/comments/evil/"]  # never javascript:
    assert ["score", 42] in post["engagement"]


# -- sessions, workspace, the app's files -----------------------------------------------------

def test_rename_a_session_and_whoami(api: Api) -> None:
    sid = api.client.post("/v1/sessions", json={}).json()["data"]["session"]["id"]
    r = api.client.patch(f"/v1/sessions/{sid}", json={"title": "Capex questions"})
    assert r.status_code == 200 and r.json()["data"]["session"]["title"] == "Capex questions"
    assert api.client.get(f"/v1/chats/{sid}").json()["title"] == "Capex questions"
    bad = api.client.patch(f"/v1/sessions/{sid}", json={"title": "two\nlines"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_REQUEST_BODY"
    other = api.client.patch(f"/v1/sessions/{sid}", json={"title": "mine"}, headers=api.other)
    assert other.status_code == 404 and api.client.get(f"/v1/chats/{sid}").json()["title"] == "Capex questions"
    me = api.client.get("/v1/workspace").json()["data"]
    assert me == {"workspace": {"id": api.workspace_id, "name": "acme"}, "key": {"id": api.key_id, "platform": False},
                  "user_id": None}
    assert api.client.get("/v1/workspace", headers={"X-API-KEY": "cw_nope"}).json()["error"]["code"] == \
        "INVALID_API_KEY"


def test_the_app_is_served_with_a_strict_policy(api: Api) -> None:
    page = api.client.get("/", headers=NO_KEY)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert csp.startswith("default-src 'none'") and "script-src 'self';" in csp and "unsafe" not in csp
    assert "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith(("/app/", "#", "/docs")) for a in assets)  # this server's files, fragments
    files = sorted(p.relative_to(STATIC).as_posix() for p in STATIC.rglob("*") if p.is_file())
    assert {"index.html", "app.css", "js/main.js", "js/viewer.js", "js/viewer-main.js"} <= set(files)
    for name in files:
        r = api.client.get(f"/app/{name}", headers=NO_KEY)
        assert r.status_code == 200 and r.headers["content-security-policy"] == csp, name
        urls = set(re.findall(r"https?://[^\s\"'`)]+", r.text)) - {"http://www.w3.org/2000/svg"}  # a namespace
        assert not urls, (name, urls)  # no other host, no CDN
        assert "innerHTML" not in r.text and "insertAdjacentHTML" not in r.text and "eval(" not in r.text, name
        for imported in re.findall(r'from "\./([^"]+)"', r.text):
            assert f"js/{imported}" in files, (name, imported)
    for bad in ("/app/../../pyproject.toml", "/app/%2e%2e/__init__.py", "/app/js", "/app/nope.js"):
        assert api.client.get(bad, headers=NO_KEY).status_code == 404, bad

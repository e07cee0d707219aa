"""The web app in a real browser (issue 16): headless Chromium from Debian's package
(``/usr/bin/chromium``) driven by Playwright for Python, against ``citewell serve`` on
127.0.0.1 with a temporary store.

Covered: a bad key and a revoked key; signing in; uploading a PDF, a transcript, a posts
file and a file that fails (with its code) in one pick; asking with a streamed answer and
``[N]`` chips; following a chip to the PDF page with the cited sentence's own boxes (their
position checked against the reference's ``offset[]`` and pdfium's line boxes), previous
and next page, keyboard use; a transcript citation with its cue times and the recording
seeking to the cited time; a post card; a flagged citation (an LLM answer, from a scripted
OpenAI-compatible server on 127.0.0.1, stating a number the passage lacks); follow-ups in
one session, renaming and reopening it; a signed ``/rms/viewer`` link opening the same
view without a key; a narrow window; and that no request leaves 127.0.0.1 (every request
is intercepted and recorded).

Screenshots are saved under ``$CITEWELL_SCREENSHOTS`` (default: the test's temporary
folder); ``docs/screenshots/`` holds three of them for the README.

Skipped only when Chromium is not installed here (``apt-get install chromium``); under CI
(``CI`` set) a missing Chromium fails instead, since ``.ci/run`` installs it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from citewell import Engine

from .conftest import CORPUS
from .llm_server import LLMServer, Stream
from .servers import free_port, running

CHROMIUM = Path("/usr/bin/chromium")
if not CHROMIUM.exists():
    if os.environ.get("CI"):
        raise RuntimeError("CI must install Debian's chromium (apt-get install -y chromium): .ci/run does")
    pytest.skip("Debian's Chromium (/usr/bin/chromium) is not installed: apt-get install chromium",
                allow_module_level=True)

from playwright.sync_api import Page, Route, expect, sync_playwright  # noqa: E402

expect.set_options(timeout=20_000)  # a loaded CI machine: assertions wait up to 20 s for the page to get there

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]
PDF = CORPUS / "pdf" / "FOOTLOCKER_2022_8K_dated-2022-05-20.pdf"
PDF_QUESTION = "Who did the Board designate as the audit committee financial expert?"
TRANSCRIPT = CORPUS / "transcripts" / "twiml-409_deep-learning-ocr_cha-zhang.vtt"
TRANSCRIPT_QUESTION = "What makes OCR of text in photos in the wild hard?"
POSTS = [
    {"source": "reddit", "id": "t3_evil", "title": "Zorblax puts",
     "text": "Puts on Zorblax Corp <script>window.__owned = 1</script> look great before earnings. Not advice.",
     "author": "<b>bob</b>", "community": "r/wallstreetbets", "created_at": "2022-01-05T10:00:00Z",
     "score": 42, "num_comments": 7, "url": "javascript:alert(3)",
     "permalink": "https://www.reddit.com/r/wallstreetbets/comments/evil/"},
    {"source": "reddit", "id": "t3_ship", "text": "The lighthouse keeper logs every passing ship.",
     "created_at": "2022-01-06T10:00:00Z", "score": 1},
]
POST_QUESTION = "What about puts on Zorblax Corp before earnings?"
#: The scripted model's answer: a number the cited passage does not state (flagged).
FLAGGED_ANSWER = "Foot Locker had 55,555,555 shares of common stock outstanding [S1]."
#: Seconds of silence in the recording the transcript names (long enough for any cue).
MEDIA_SECONDS = 3800
MEDIA_RATE = 4000


def _wav(seconds: int, rate: int) -> bytes:
    """A silent 8-bit mono PCM WAV."""
    data = bytes([128]) * (seconds * rate)
    header = (b"RIFF" + (36 + len(data)).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
              + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + rate.to_bytes(4, "little")
              + rate.to_bytes(4, "little") + (1).to_bytes(2, "little") + (8).to_bytes(2, "little")
              + b"data" + len(data).to_bytes(4, "little"))
    return header + data


class _Media(BaseHTTPRequestHandler):
    """Serves the recording with byte ranges (what a media element needs to seek)."""

    body = b""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        size = len(self.body)
        start, end = 0, size - 1
        ranged = re.match(r"bytes=(\d*)-(\d*)", self.headers.get("Range") or "")
        if ranged:
            start = int(ranged.group(1) or 0)
            end = min(int(ranged.group(2)) if ranged.group(2) else size - 1, size - 1)
        self.send_response(206 if ranged else 200)
        self.send_header("Content-Type", "audio/wav")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        try:
            self.wfile.write(self.body[start:end + 1])
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: Any) -> None:
        pass


class Site:
    """The running server, its keys, the scripted model, and the browser's request log."""

    def __init__(self, base: str, key: str, key_id: str, spare_key: str, spare_key_id: str, env: dict[str, str],
                 llm: Any, media_url: str, shots: Path) -> None:
        self.base, self.key, self.key_id = base, key, key_id
        self.spare_key, self.spare_key_id = spare_key, spare_key_id
        self.env, self.llm, self.media_url, self.shots = env, llm, media_url, shots
        self.requests: list[str] = []
        self.foreign: list[str] = []
        self.asks: list[dict[str, Any]] = []
        self.api = httpx.Client(base_url=base, headers={"X-API-KEY": key}, timeout=60.0)

    def shot(self, page: Page, name: str) -> None:
        page.screenshot(path=str(self.shots / f"{name}.png"))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, module_store_location: str | Path) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("webapp")
    store = module_store_location
    with Engine(store, workspace="acme") as engine:
        key, record = engine.create_key()
        spare, spare_record = engine.create_key()
    shots = Path(os.environ.get("CITEWELL_SCREENSHOTS") or tmp / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    _Media.body = _wav(MEDIA_SECONDS, MEDIA_RATE)
    media = ThreadingHTTPServer(("127.0.0.1", 0), _Media)
    media.daemon_threads = True
    threading.Thread(target=media.serve_forever, daemon=True).start()
    media_url = f"http://127.0.0.1:{media.server_address[1]}/talk.wav"
    port = free_port()
    env = {**os.environ, "CITEWELL_STORE": str(store), "XDG_CONFIG_HOME": str(tmp / "cfg")}
    try:
        with LLMServer() as llm:
            command = [sys.executable, "-m", "citewell", "serve", "--host", "127.0.0.1", "--port", str(port),
                       "--mode", "lexical", "--generator", "extractive", "--llm-base-url", llm.base_url,
                       "--llm-model", "fake-model"]
            with running(command, port, tmp / "serve.log", env) as base:
                yield Site(base, key, record.id, spare, spare_record.id, env, llm, media_url, shots)
    finally:
        media.shutdown()
        media.server_close()


@pytest.fixture(scope="module")
def browser_context(site: Site) -> Iterator[Any]:
    profile = tempfile.mkdtemp(prefix="citewell-chromium-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 900}, service_workers="block")

        def guard(route: Route) -> None:
            request = route.request
            url = request.url
            site.requests.append(url)
            host = urlsplit(url).hostname
            if url.startswith(("data:", "blob:")) or host == "127.0.0.1":
                if request.method == "POST" and urlsplit(url).path == "/v2/analytics/sse":
                    site.asks.append(json.loads(request.post_data or "{}"))
                route.continue_()
            else:
                site.foreign.append(url)
                route.abort()

        context.route("**/*", guard)
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser_context: Any) -> Iterator[Page]:
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: d.accept())
    yield page
    page.close()
    assert not errors, errors  # no script error on any page


def sign_in(page: Page, site: Site, key: str | None = None) -> None:
    page.goto(site.base + "/")
    page.fill("#api-key", key or site.key)
    page.click("form.signin button[type=submit]")
    expect(page.locator("#workspace-name")).to_have_text("acme")


def ask(page: Page, question: str, *, kind: str = "", writer: str = "extractive") -> Any:
    """Ask in the open session: the settled answer's article."""
    if not page.locator("#generator").is_visible():
        page.click("details.filters summary")
    page.select_option("#filter-kind", kind)
    page.select_option("#generator", writer)
    before = page.locator("article.turn.assistant").count()
    page.fill("#question", question)
    page.press("#question", "Enter")
    answer = page.locator("article.turn.assistant").nth(before)
    expect(answer).to_have_attribute("data-status", "settled", timeout=60_000)
    return answer


def references(site: Site, message_id: str) -> list[dict[str, Any]]:
    r = site.api.get("/v1/references", params={"chat_message_id": message_id})
    assert r.status_code == 200, r.text
    return r.json()["references"]


def fractions(page: Page, selector: str) -> list[dict[str, float]]:
    """The boxes of ``selector`` as fractions of the page image, as the browser lays them out."""
    return page.evaluate("""(sel) => {
        const img = document.querySelector('.page-image').getBoundingClientRect();
        return [...document.querySelectorAll(sel)].map((el) => {
            const r = el.getBoundingClientRect();
            return {left: (r.left - img.left) / img.width, top: (r.top - img.top) / img.height,
                    width: r.width / img.width, height: r.height / img.height};
        });
    }""", selector)


def inside(box: dict[str, float], outer: dict[str, float], slack: float = 0.004) -> bool:
    return (box["left"] >= outer["left"] - slack and box["top"] >= outer["top"] - slack
            and box["left"] + box["width"] <= outer["left"] + outer["width"] + slack
            and box["top"] + box["height"] <= outer["top"] + outer["height"] + slack)


# -- the tests (in order: the uploads come first) ---------------------------------------------

def test_a_bad_key_is_refused_and_a_revoked_key_signs_out(page: Page, site: Site) -> None:
    page.goto(site.base + "/")
    page.fill("#api-key", "cw_not_a_key")
    page.click("form.signin button[type=submit]")
    expect(page.locator("#signin-error")).to_contain_text("INVALID_API_KEY")
    expect(page.locator("#nav")).to_be_hidden()
    site.shot(page, "bad-key")
    sign_in(page, site, site.spare_key)
    revoked = subprocess.run([sys.executable, "-m", "citewell", "keys", "revoke", site.spare_key_id],
                             env=site.env, capture_output=True, text=True, timeout=60)
    assert revoked.returncode == 0, revoked.stderr
    # A server may take a moment to see the revocation. The app signs out either when it loads
    # (GET /v1/workspace refused) or as soon as a later call is refused; reloading after that
    # would show a plain sign-in form, so reload only while the app is still signed in.
    for _ in range(20):
        page.reload()
        page.wait_for_selector("form.signin, #workspace-name")
        try:
            expect(page.locator("form.signin")).to_be_visible(timeout=1_000)
            break
        except AssertionError:
            continue
    expect(page.locator("#signin-error")).to_contain_text("no longer works (INVALID_API_KEY)")
    assert page.evaluate("sessionStorage.getItem('citewell.key')") is None


def test_upload_several_files_and_see_them_ready_or_failed(page: Page, site: Site, tmp_path: Path) -> None:
    posts = tmp_path / "zorblax.jsonl"
    posts.write_text("\n".join(json.dumps(p) for p in POSTS), encoding="utf-8")
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.7\nthis is not a PDF at all\n")
    talk = tmp_path / "ocr-talk.vtt"
    talk.write_bytes(TRANSCRIPT.read_bytes())
    sign_in(page, site)
    page.click("#nav-sources")
    page.click("details.upload-options summary")
    page.fill("#upload-media-url", site.media_url)
    page.set_input_files("#file-input", [str(PDF), str(talk), str(posts), str(broken)])
    uploads = page.locator("#uploads li.upload")
    expect(uploads).to_have_count(4)
    for name in (PDF.name, "ocr-talk.vtt", "zorblax.jsonl"):
        item = page.locator(f'#uploads li[data-name="{name}"]')
        expect(item).to_have_attribute("data-status", "ready", timeout=90_000)
        expect(item.locator("progress")).to_have_attribute("value", "100")
    failed = page.locator('#uploads li[data-name="broken.pdf"]')
    expect(failed).to_have_attribute("data-status", "failed", timeout=60_000)
    expect(failed.locator(".code")).to_have_text("PDF_CORRUPT")
    # and a drop on the page (a real DragEvent carrying a file)
    page.evaluate("""() => {
        const dt = new DataTransfer();
        dt.items.add(new File(['Acme opened a factory in Ohio in 2022.'], 'notes.txt', {type: 'text/plain'}));
        document.getElementById('drop').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true,
                                                                              cancelable: true}));
    }""")
    expect(page.locator('#uploads li[data-name="notes.txt"]')).to_have_attribute("data-status", "ready",
                                                                                 timeout=60_000)
    rows = page.locator("#resource-rows tr")
    expect(rows).to_have_count(5)
    pdf_row = page.locator("#resource-rows tr", has_text=PDF.stem)
    expect(pdf_row.locator("td").nth(1)).to_have_text("pdf")
    expect(pdf_row.locator("td").nth(2)).to_have_text("4 pages")
    expect(page.locator("#resource-rows tr", has_text="zorblax").locator("td").nth(2)).to_have_text("2 posts")
    expect(page.locator("#resource-rows tr", has_text="ocr-talk").locator("td").nth(2)).to_have_text(re.compile(r"\d+:\d\d"))
    expect(page.locator("#resource-rows tr", has_text="broken")).to_contain_text("PDF_CORRUPT")
    site.shot(page, "sources")
    # delete the failed one
    page.locator("#resource-rows tr", has_text="broken").get_by_role("button", name=re.compile("Delete")).click()
    expect(rows).to_have_count(4)


def test_ask_streams_an_answer_and_a_chip_opens_the_cited_sentence_on_its_page(page: Page, site: Site) -> None:
    sign_in(page, site)
    page.click("#new-session")
    page.evaluate("""() => {
        window.__seen = [];
        new MutationObserver((records) => {
            for (const r of records) {  // each replacement's nodes: the text as shown at that moment
                const t = r.target.classList && r.target.classList.contains('answer-text') ? r.target : null;
                if (t && t.closest('.turn.streaming') && r.addedNodes.length) {
                    window.__seen.push([...r.addedNodes].map((n) => n.textContent).join(''));
                }
            }
        }).observe(document.getElementById('main'), {childList: true, subtree: true, characterData: true});
    }""")
    answer = ask(page, PDF_QUESTION)
    final = answer.locator(".answer-text").text_content() or ""
    seen = page.evaluate("window.__seen")
    assert len(seen) >= 2 and seen[0] != seen[-1] and final.startswith(seen[0][:20])  # shown while it was written
    chips = answer.locator(".answer-text .chip")
    expect(chips.first).to_be_visible()
    message_id = answer.get_attribute("data-message-id")
    refs = references(site, message_id)
    ref = next(r for r in refs if r["citation_idx"] == chips.first.get_attribute("data-citation"))
    assert "Nicosia" in final and ref["document_name"] == PDF.stem
    assert site.asks[-1]["query"] == PDF_QUESTION and site.asks[-1]["offsets"] == "utf16"
    # the sources under the answer: one per resource, with the generator
    expect(answer.locator(".sources-list > li")).to_have_count(len({r["document_id"] for r in refs}))
    expect(answer.locator(".generator")).to_contain_text("extractive")

    # keyboard: focus the chip, Enter opens the citation beside the answer
    chips.first.focus()
    page.keyboard.press("Enter")
    viewer = page.locator("#viewer")
    expect(viewer).to_be_visible()
    expect(viewer.locator(".page-frame.loaded")).to_be_visible(timeout=30_000)
    cited_page = ref["metadata"]["offset"][0]["page"]
    assert cited_page > 1
    expect(viewer.locator(".page-frame")).to_have_attribute("data-page", str(cited_page))
    expect(viewer.locator("#page-status")).to_contain_text(f"Page {cited_page} of 4")
    # the highlight: the cited sentence's own lines, inside the reference's offset[] boxes
    data = site.api.get("/rms/viewer/data", params={"chat_message_id": message_id,
                                                    "citation_idx": ref["citation_idx"]}).json()["payload"]
    quote = data["quotes"][0]
    lines = fractions(page, ".hl-line")
    assert lines and len(lines) == len(quote["boxes"])
    for drawn, box in zip(lines, quote["boxes"]):
        assert box["page"] == cited_page
        for side in ("left", "top", "width", "height"):
            assert abs(drawn[side] - box[side]) < 0.002, (side, drawn, box)
        assert any(inside(drawn, outer) for outer in ref["metadata"]["offset"]), (drawn, ref["metadata"]["offset"])
    passage_area = sum(b["width"] * b["height"] for b in ref["metadata"]["offset"])
    assert sum(b["width"] * b["height"] for b in lines) < passage_area  # the sentence, not the whole passage
    sentence = data["passage"]["text"][quote["passage_start"]:quote["passage_end"]]
    assert "Nicosia" in sentence and " ".join(sentence.split()) in " ".join(final.split())
    expect(viewer.locator("#cited-sentence")).to_have_text(quote["sentence"])
    # scrolled to it: the first highlighted line is within the visible part of the page
    visible = page.evaluate("""() => {
        const s = document.querySelector('.page-scroll').getBoundingClientRect();
        const h = document.querySelector('.hl-line').getBoundingClientRect();
        return h.top >= s.top - 1 && h.bottom <= s.bottom + 1;
    }""")
    assert visible
    site.shot(page, "ask-pdf")
    # previous and next page (buttons and arrow keys)
    page.click("#prev-page")
    expect(viewer.locator(".page-frame")).to_have_attribute("data-page", str(cited_page - 1))
    expect(viewer.locator(".hl-line")).to_have_count(0)
    viewer.focus()
    page.keyboard.press("ArrowRight")
    expect(viewer.locator(".page-frame")).to_have_attribute("data-page", str(cited_page))
    expect(viewer.locator(".hl-line")).to_have_count(len(lines))
    # Escape closes the viewer and gives the focus back to the chip
    page.keyboard.press("Escape")
    expect(viewer).to_be_hidden()


def test_a_transcript_citation_shows_its_cues_and_seeks_the_recording(page: Page, site: Site) -> None:
    sign_in(page, site)
    page.click("#new-session")
    answer = ask(page, TRANSCRIPT_QUESTION, kind="transcript")
    chip = answer.locator(".answer-text .chip").first
    refs = references(site, answer.get_attribute("data-message-id"))
    ref = next(r for r in refs if r["citation_idx"] == chip.get_attribute("data-citation"))
    start, end = ref["metadata"]["start_time"], ref["metadata"]["end_time"]
    chip.click()
    viewer = page.locator("#viewer")
    quoted = viewer.locator("li.cue.quoted")
    expect(quoted.first).to_be_visible()
    for i in range(quoted.count()):
        cue_start = float(quoted.nth(i).get_attribute("data-start"))
        cue_end = float(quoted.nth(i).get_attribute("data-end"))
        assert start - 1e-3 <= cue_start <= cue_end <= end + 1e-3
    minutes, seconds = divmod(start, 60)
    expect(viewer.locator("#cite-start")).to_have_text(f"{int(minutes)}:{seconds:06.3f}")
    expect(viewer.locator("li.cue.context").first).to_be_attached()
    expect(quoted.first.locator("time")).to_have_text(re.compile(r"^\d+:\d\d\.\d{3}$"))
    player = viewer.locator("#player")
    expect(player).to_have_attribute("src", site.media_url)
    try:
        page.wait_for_function("() => { const p = document.getElementById('player'); "
                               "return p && p.readyState >= 1 && p.currentTime > 0; }", timeout=30_000)
    except Exception:
        raise AssertionError(page.evaluate("(() => { const p = document.getElementById('player'); return "
                                           "[p.readyState, p.networkState, p.error && p.error.message, p.currentTime,"
                                           " p.duration]; })()"))
    assert abs(page.evaluate("document.getElementById('player').currentTime") - start) < 0.05
    site.shot(page, "ask-transcript")


def test_a_post_citation_is_a_card_with_the_quoted_sentence(page: Page, site: Site) -> None:
    sign_in(page, site)
    page.click("#new-session")
    answer = ask(page, POST_QUESTION, kind="post")
    answer.locator(".answer-text .chip").first.click()
    card = page.locator("#post-card")
    expect(card).to_be_visible()
    expect(card.locator(".author")).to_have_text("<b>bob</b>")  # text, never markup
    expect(card.locator("mark.quote")).to_contain_text("Puts on Zorblax Corp")
    expect(card.locator(".post-text")).to_contain_text("<script>window.__owned = 1</script>")
    assert page.evaluate("window.__owned") is None and card.locator("script, b").count() == 0
    links = card.locator("a")
    expect(links).to_have_count(1)
    expect(links.first).to_have_attribute("href", "https://www.reddit.com/r/wallstreetbets/comments/evil/")
    expect(card.locator("dl.engagement")).to_contain_text("score42")
    expect(card).to_contain_text("2022-01-05T10:00:00Z")
    site.shot(page, "ask-post")


def test_a_flagged_citation_is_marked_with_its_reason(page: Page, site: Site) -> None:
    site.llm.script(Stream([FLAGGED_ANSWER[:30], FLAGGED_ANSWER[30:]]))
    sign_in(page, site)
    page.click("#new-session")
    answer = ask(page, "How many shares of common stock were outstanding?", writer="llm")
    chip = answer.locator(".answer-text .chip.flagged")
    expect(chip).to_have_count(1)
    expect(chip).to_have_attribute("aria-label", re.compile(r"flagged unsupported: .*number_not_found"))
    expect(answer.locator(".flag-note")).to_contain_text("flagged unsupported")
    expect(answer.locator(".generator")).to_contain_text("llm")
    chip.click()
    expect(page.locator("#viewer .cited-sentence.flagged .flag-note")).to_contain_text("number_not_found")
    site.shot(page, "ask-flagged")


def test_follow_ups_keep_the_session_which_can_be_renamed_and_reopened(page: Page, site: Site) -> None:
    sign_in(page, site)
    page.click("#new-session")
    ask(page, PDF_QUESTION)
    session_id = site.asks[-1].get("conversation_id")
    assert session_id and page.url.endswith(f"#/ask/{session_id}")
    ask(page, "And when was that designation made?")
    assert site.asks[-1]["conversation_id"] == session_id  # the follow-up is in the same conversation
    history = site.api.get(f"/v1/chats/{session_id}/messages").json()["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    item = page.locator(f'#session-list li[data-id="{session_id}"]')
    item.locator(".rename").click()
    page.fill(".rename-input", "Foot Locker board")
    page.press(".rename-input", "Enter")
    expect(page.locator(f'#session-list li[data-id="{session_id}"] .session')).to_have_text("Foot Locker board")
    assert site.api.get(f"/v1/chats/{session_id}").json()["title"] == "Foot Locker board"
    # reopen: a new tab of the app (same browser session) shows the history with its chips
    page.goto(site.base + "/#/ask")
    page.locator(f'#session-list li[data-id="{session_id}"] .session').click()
    expect(page.locator("#chat-title")).to_have_text("Foot Locker board")
    expect(page.locator("article.turn.assistant")).to_have_count(2)
    expect(page.locator("article.turn.assistant .answer-text .chip").first).to_be_visible()


def test_a_signed_viewer_link_opens_the_same_view_without_a_key(page: Page, site: Site) -> None:
    sid = site.api.post("/v1/sessions", json={"title": "link"}).json()["data"]["session"]["id"]
    resources = site.api.get("/v1/resources").json()["data"]["resources"]
    pdf = next(r for r in resources if r["kind"] == "pdf")
    turn = site.api.post(f"/v1/sessions/{sid}/messages",
                         json={"content": PDF_QUESTION, "resource_ids": [pdf["id"]]}).json()["data"]
    ref = references(site, turn["assistant_message"]["id"])[0]
    page.goto(ref["viewer_url"])  # no key in this tab's storage is needed
    assert page.evaluate("sessionStorage.getItem('citewell.key')") is None
    expect(page.locator("#viewer .page-frame.loaded")).to_be_visible(timeout=30_000)
    expect(page.locator("#viewer .page-frame")).to_have_attribute("data-page", str(ref["metadata"]["page"]))
    expect(page.locator("#viewer .hl-line").first).to_be_visible()
    expect(page.locator("#viewer-title")).to_contain_text(PDF.stem)


def test_a_narrow_window_stacks_the_layout(page: Page, site: Site) -> None:
    page.set_viewport_size({"width": 420, "height": 860})
    sign_in(page, site)
    page.click("#new-session")
    answer = ask(page, PDF_QUESTION)
    answer.locator(".answer-text .chip").first.click()
    viewer = page.locator("#viewer")
    expect(viewer.locator(".page-frame.loaded")).to_be_visible(timeout=30_000)
    box = viewer.bounding_box()
    assert box is not None and box["x"] <= 1 and box["width"] >= 410  # the citation covers the narrow window
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 421  # nothing overflows sideways
    site.shot(page, "narrow")
    page.click("#close-viewer")
    expect(viewer).to_be_hidden()


def test_no_request_left_127_0_0_1(site: Site) -> None:
    assert site.requests and any("/v2/analytics/sse" in u for u in site.requests)
    assert site.foreign == []

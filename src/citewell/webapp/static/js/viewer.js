// The citation viewer: one reference where it lives (GET /rms/viewer/data). A PDF page
// image with the cited sentence's own line boxes, scrolled to them, with previous/next
// page; a transcript's cues with the quoted ones and their times, and the recording
// seeking to the cited time; a post card with the quoted sentence; a text passage.
import {call, imageUrl} from "./api.js";
import {clock, h, marked, replace, utf16Index} from "./dom.js";
import {flagOf} from "./answer.js";

function box(b, cls, label) {
  const el = h("div", {class: cls, "aria-hidden": "true", title: label || null,
                       dataset: {page: String(b.page), top: String(b.top), left: String(b.left),
                                 width: String(b.width), height: String(b.height)}});
  el.style.top = `${b.top * 100}%`;
  el.style.left = `${b.left * 100}%`;
  el.style.width = `${b.width * 100}%`;
  el.style.height = `${b.height * 100}%`;
  return el;
}

function facts(data) {
  const items = [];
  const add = (label, value) => {
    if (value !== null && value !== undefined && value !== "" && !(Array.isArray(value) && !value.length)) {
      items.push(h("div", {}, h("dt", {}, label), h("dd", {}, Array.isArray(value) ? value.join(", ") : String(value))));
    }
  };
  const res = data.resource;
  if (res && res.file_name !== res.title) add("File", res.file_name);
  const meta = data.passage.metadata || {};
  if (data.kind === "pdf") {
    add(data.pages.cited.length === 1 ? "Page" : "Pages", data.pages.cited);
    add("Printed page", meta.page_label);
  }
  if (data.kind === "transcript" && data.passage.start_time !== null && data.passage.start_time !== undefined) {
    add("Time", `${clock(data.passage.start_time, true)} – ${clock(data.passage.end_time, true)}`);
    add("Speakers", meta.speakers);
  }
  const typed = res ? res.metadata || {} : {};
  add("Publisher", typed.publisher);
  add("Date", typed.calendar_date);
  add("Fiscal year", typed.fiscal_year);
  add("Tickers", typed.tickers);
  return h("dl", {class: "facts"}, items);
}

function quoteBlock(data, quote) {
  if (!quote) return null;
  const flag = flagOf(quote.support);
  return h("div", {class: flag ? "cited-sentence flagged" : "cited-sentence"},
    h("p", {class: "label"}, "The answer's sentence"),
    h("blockquote", {id: "cited-sentence"}, quote.sentence),
    flag ? h("p", {class: "flag-note", role: "note"}, `Flagged ${flag.verdict}: ${flag.reason}. `,
      "The passage may not say this; check it below.") : null,
    quote.how !== "verbatim" ? h("p", {class: "note"},
      quote.how === "unit" ? "Marked: the passage's sentence or row closest to it." : "Marked: the whole passage.") : null);
}

/** A PDF: the page image, the quote's line boxes drawn over it, previous/next page. */
function pdfBody(data, quote, keyed, handle) {
  const cited = data.pages.cited;
  const count = data.pages.count;
  const resourceId = data.resource ? data.resource.id : null;
  const signedImages = data.pages.images || {};
  const canBrowse = keyed && resourceId && count;
  let page = cited[0];
  const status = h("span", {class: "page-status", id: "page-status", "aria-live": "polite"});
  const prev = h("button", {type: "button", id: "prev-page", "aria-label": "Previous page"}, "‹ Previous");
  const next = h("button", {type: "button", id: "next-page", "aria-label": "Next page"}, "Next ›");
  const img = h("img", {class: "page-image", alt: ""});
  const overlay = h("div", {class: "overlay"});
  const frame = h("div", {class: "page-frame"}, img, overlay);
  const scroller = h("div", {class: "page-scroll", tabindex: "0", "aria-label": "Page image"}, frame);
  const note = h("p", {class: "note"});
  let objectUrl = null;

  function pages() {
    if (canBrowse) return Array.from({length: count}, (_, i) => i + 1);
    return cited.filter((p) => signedImages[String(p)] || keyed);
  }

  async function show(p) {
    page = p;
    const all = pages();
    const i = all.indexOf(page);
    prev.disabled = i <= 0;
    next.disabled = i < 0 || i >= all.length - 1;
    status.textContent = `Page ${page}${count ? ` of ${count}` : ""}${cited.includes(page) ? " · cited" : ""}`;
    frame.dataset.page = String(page);
    const lines = (quote && quote.boxes || []).filter((b) => b.page === page);
    const passage = ((data.passage.metadata || {}).offset || []).filter((b) => b.page === page);
    replace(overlay,
      passage.map((b) => box(b, "hl-passage", "The cited passage")),
      (lines.length ? lines : passage).map((b) => box(b, "hl-line", "The cited sentence")));
    img.alt = `Page ${page} of ${data.title}${cited.includes(page) ? ", the cited sentence highlighted" : ""}`;
    note.textContent = "";
    let src = null;
    try {
      if (keyed && resourceId) {
        if (objectUrl) URL.revokeObjectURL(objectUrl);
        objectUrl = await imageUrl(`/v1/resources/${encodeURIComponent(resourceId)}/pages/${page}`);
        src = objectUrl;
      } else {
        src = signedImages[String(page)] || null;
      }
    } catch (e) {
      note.textContent = `The page image is not available (${e.code}); the cited text is below.`;
    }
    if (!src) {
      img.removeAttribute("src");
      if (!note.textContent) note.textContent = "The original document is not stored: only the cited text is shown.";
      return;
    }
    img.addEventListener("load", () => {
      frame.classList.add("loaded");
      const first = overlay.querySelector(".hl-line");
      if (first) first.scrollIntoView({block: "center", inline: "nearest"});
    }, {once: true});
    img.src = src;
  }

  const move = (step) => {
    const all = pages();
    const i = all.indexOf(page);
    if (i + step >= 0 && i + step < all.length) show(all[i + step]);
  };
  prev.addEventListener("click", () => move(-1));
  next.addEventListener("click", () => move(1));
  handle.keys = (e) => {
    if (e.key === "ArrowLeft" || e.key === "PageUp") { move(-1); return true; }
    if (e.key === "ArrowRight" || e.key === "PageDown") { move(1); return true; }
    return false;
  };
  handle.cleanup = () => { if (objectUrl) URL.revokeObjectURL(objectUrl); };
  show(page);
  return [h("div", {class: "page-nav", role: "toolbar", "aria-label": "Pages"}, prev, status, next), scroller, note];
}

/** A transcript: its cues with times, the quoted ones marked; the recording seeks to the start. */
function transcriptBody(data) {
  const start = data.passage.start_time;
  let player = null;
  if (data.media) {
    player = h(data.media.type, {controls: true, preload: "metadata", src: data.media.url, class: "player", id: "player"});
    player.addEventListener("loadedmetadata", () => {
      if (start !== null && start !== undefined) player.currentTime = start;
    }, {once: true});
  }
  const seek = (t) => {
    if (player && t !== null && t !== undefined) {
      player.currentTime = t;
      player.play().catch(() => {});
    }
  };
  const items = data.cues.map((cue) => h("li", {class: `cue ${cue.role}`, dataset: {start: String(cue.start), end: String(cue.end)}},
    player ? h("button", {type: "button", class: "time", "aria-label": `Play from ${clock(cue.start)}`,
                          onclick: () => seek(cue.start)}, h("time", {}, clock(cue.start, true)))
      : h("time", {class: "time"}, clock(cue.start, true)),
    cue.role === "quoted" ? h("mark", {class: "quote"}, cue.text) : h("span", {}, cue.text)));
  const list = h("ol", {class: "cues", id: "cues", "aria-label": "Transcript cues"}, items);
  setTimeout(() => list.querySelector(".cue.quoted")?.scrollIntoView({block: "center"}), 0);
  return [
    h("p", {class: "when"}, "Cited from ", h("time", {id: "cite-start"}, clock(start, true)), " to ",
      h("time", {id: "cite-end"}, clock(data.passage.end_time, true))),
    player ? h("div", {class: "media"}, player,
      h("button", {type: "button", id: "play-cited", onclick: () => seek(start)}, `Play from ${clock(start)}`)) : null,
    list];
}

/** A post: author, time, source link, engagement, the quoted sentence highlighted. */
function postBody(data) {
  const p = data.post;
  const text = p.text || "";
  const a = p.quote_start === null ? null : utf16Index(text, p.quote_start);
  const b = p.quote_end === null ? null : utf16Index(text, p.quote_end);
  return [h("article", {class: "post-card", id: "post-card"},
    h("p", {class: "byline"}, h("strong", {class: "author"}, p.author || "unknown author"), " · ",
      h("span", {class: "source"}, p.source || ""), p.community ? [" · ", h("span", {}, p.community)] : null,
      p.created_at ? [" · ", h("time", {datetime: p.created_at}, p.created_at)] : null),
    p.title && p.title.trim() !== text.trim() ? h("h3", {}, p.title) : null,
    h("p", {class: "post-text"}, marked(text, a, b)),
    p.engagement.length ? h("dl", {class: "engagement"},
      p.engagement.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, String(v))))) : null,
    p.links.map((u) => h("p", {}, h("a", {href: u, rel: "noopener noreferrer nofollow", target: "_blank"}, u))),
    h("p", {class: "note"}, `Post ${p.id}`))];
}

function textBody(data, quote) {
  const text = data.passage.text;
  const a = quote ? utf16Index(text, quote.passage_start) : null;
  const b = quote ? utf16Index(text, quote.passage_end) : null;
  const ctx = data.context || {};
  return [ctx.before ? h("p", {class: "context-text"}, ctx.before) : null,
    h("blockquote", {class: "passage"}, marked(text, a, b)),
    ctx.after ? h("p", {class: "context-text"}, ctx.after) : null];
}

/**
 * Show citation `query` ({chat_message_id | conversation_id, citation_idx}, plus a signed
 * link's fields) in `container`. options: occurrence (which [N] of the answer was
 * clicked), keyed (API calls carry the key: every page can be browsed), onClose.
 */
export function citationView(container, query, {occurrence = 0, keyed = false, onClose = null} = {}) {
  const handle = {keys: null, cleanup: null, closed: false};
  replace(container, h("p", {class: "status-line", role: "status"}, "Opening the citation…"));
  const onKey = (e) => {
    if (e.target.closest && e.target.closest("input, textarea, select, audio, video")) return;
    if (handle.keys && handle.keys(e)) e.preventDefault();
  };
  container.addEventListener("keydown", onKey);
  (async () => {
    let data;
    try {
      data = (await call("GET", "/rms/viewer/data", {params: query, key: keyed ? undefined : null})).payload;
    } catch (e) {
      if (!handle.closed) replace(container, h("p", {class: "error", role: "alert"}, `Could not open the citation: ${e.code}: ${e.detail}`));
      return;
    }
    if (handle.closed) return;
    const quote = data.quotes[Math.min(occurrence, data.quotes.length - 1)] || null;
    const head = h("header", {class: "viewer-head"},
      h("h2", {id: "viewer-title"}, h("span", {class: "num"}, `[${data.citation}]`), " ", data.title),
      onClose ? h("button", {type: "button", class: "close", id: "close-viewer", "aria-label": "Close the citation",
                             onclick: onClose}, "×") : null);
    let body;
    if (data.kind === "pdf") body = pdfBody(data, quote, keyed, handle);
    else if (data.kind === "transcript") body = transcriptBody(data);
    else if (data.kind === "post") body = postBody(data);
    else body = textBody(data, quote);
    const passage = data.kind === "pdf" ? h("details", {class: "passage-text"}, h("summary", {}, "Passage text"),
      h("blockquote", {}, marked(data.passage.text, quote ? utf16Index(data.passage.text, quote.passage_start) : null,
        quote ? utf16Index(data.passage.text, quote.passage_end) : null))) : null;
    const links = data.download_url ? h("p", {class: "note"},
      h("a", {href: data.download_url, rel: "noopener noreferrer", target: "_blank"}, "Open the original file")) : null;
    container.dataset.kind = data.kind;
    replace(container, head, facts(data), quoteBlock(data, quote), h("div", {class: `viewer-body ${data.kind}`}, body), passage, links);
  })();
  return {close() {
    handle.closed = true;
    container.removeEventListener("keydown", onKey);
    handle.cleanup?.();
  }};
}

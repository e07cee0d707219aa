// Ask: sessions in a sidebar (new, rename, reopen), the conversation with streamed answers,
// filters as controls, and the citation viewer beside the answer.
import {call, stream} from "./api.js";
import {h, replace} from "./dom.js";
import {answerText, generatorOf, sourceList, streamingText} from "./answer.js";
import {citationView} from "./viewer.js";

const KINDS = ["", "pdf", "transcript", "post", "text"];

function sessionIdOf(hash) {
  const m = /^#\/ask\/([^/?#]+)/.exec(hash || "");
  return m ? decodeURIComponent(m[1]) : null;
}

export function askScreen(hash) {
  let sessionId = sessionIdOf(hash);
  let busy = false;
  const list = h("ul", {class: "session-list", id: "session-list", "aria-label": "Sessions"});
  const newButton = h("button", {type: "button", id: "new-session", class: "primary"}, "New session");
  const sidebar = h("nav", {class: "sessions", "aria-label": "Sessions"}, newButton, list);
  const title = h("h1", {id: "chat-title", class: "chat-title"}, "New session");
  const log = h("div", {id: "conversation", class: "conversation", role: "log", "aria-live": "polite",
                        "aria-relevant": "additions text", "aria-labelledby": "chat-title"});

  // filters as controls
  const documentSelect = h("select", {id: "filter-document", name: "document"}, h("option", {value: ""}, "All documents"));
  const kindSelect = h("select", {id: "filter-kind", name: "kind"},
    KINDS.map((k) => h("option", {value: k}, k || "Any kind")));
  const ticker = h("input", {id: "filter-ticker", name: "ticker", type: "text", size: "8", placeholder: "MMM", autocomplete: "off"});
  const year = h("input", {id: "filter-year", name: "fiscal_year", type: "number", min: "1900", max: "2100", placeholder: "2022"});
  const writer = h("select", {id: "generator", name: "generator"},
    h("option", {value: ""}, "Server default"), h("option", {value: "extractive"}, "extractive (quotes)"),
    h("option", {value: "llm"}, "llm (the server's model)"));
  const filters = h("details", {class: "filters"},
    h("summary", {}, "Filters and writer"),
    h("div", {class: "filter-grid"},
      h("label", {for: "filter-document"}, "Document"), documentSelect,
      h("label", {for: "filter-kind"}, "Kind"), kindSelect,
      h("label", {for: "filter-ticker"}, "Ticker"), ticker,
      h("label", {for: "filter-year"}, "Fiscal year"), year,
      h("label", {for: "generator"}, "Answer writer"), writer));
  const question = h("textarea", {id: "question", name: "question", rows: "2", required: true, maxlength: "8000",
                                  placeholder: "Ask a question about your sources…", "aria-label": "Question"});
  const send = h("button", {type: "submit", class: "primary", id: "ask-button"}, "Ask");
  const formError = h("p", {class: "error", role: "alert", id: "ask-error"});
  const form = h("form", {class: "ask-form", id: "ask-form"}, filters,
    h("div", {class: "ask-row"}, question, send), formError);
  const chat = h("section", {class: "chat", "aria-labelledby": "chat-title"}, title, log, form);
  const viewer = h("section", {class: "viewer", id: "viewer", role: "region", "aria-label": "Citation", tabindex: "-1", hidden: true});
  const element = h("div", {class: "ask-layout"}, sidebar, chat, viewer);
  let viewerHandle = null;

  function closeViewer() {
    viewerHandle?.close();
    viewerHandle = null;
    viewer.hidden = true;
    element.classList.remove("viewing");
    replace(viewer);
  }

  async function openCitation(messageId, ref, occurrence, opener) {
    viewerHandle?.close();
    viewer.hidden = false;
    element.classList.add("viewing");
    viewerHandle = citationView(viewer, {chat_message_id: messageId, citation_idx: String(ref.citation)},
      {occurrence, keyed: true, onClose: () => { closeViewer(); opener?.focus(); }});
    viewer.focus();
  }

  function filterBody() {
    const f = {};
    if (documentSelect.value) f.resource_id = [documentSelect.value];
    if (kindSelect.value) f.kind = kindSelect.value;
    if (ticker.value.trim()) f.tickers = [ticker.value.trim().toUpperCase()];
    if (year.value) f.fiscal_year = Number(year.value);
    return Object.keys(f).length ? f : null;
  }

  async function loadDocuments() {
    try {
      const body = await call("GET", "/v1/resources", {params: {limit: 1000, status: "ready"}});
      replace(documentSelect, h("option", {value: ""}, "All documents"),
        body.data.resources.map((r) => h("option", {value: r.id}, r.title)));
    } catch (_) { /* the list stays as it was */ }
  }

  async function loadSessions() {
    const body = await call("GET", "/v1/chats");
    const chats = body.chats.slice().reverse();  // newest first
    replace(list, chats.map((c) => sessionItem(c)));
  }

  function sessionItem(chat) {
    const open = h("button", {type: "button", class: "session", "aria-current": chat.id === sessionId ? "true" : null,
                              dataset: {id: chat.id}}, chat.title || "Untitled session");
    open.addEventListener("click", () => { location.hash = `#/ask/${encodeURIComponent(chat.id)}`; });
    const rename = h("button", {type: "button", class: "rename", "aria-label": `Rename ${chat.title || "session"}`,
                                title: "Rename"}, "✎");
    rename.addEventListener("click", () => startRename(item, chat));
    const item = h("li", {dataset: {id: chat.id}}, open, rename);
    return item;
  }

  function startRename(item, chat) {
    const input = h("input", {type: "text", value: chat.title || "", "aria-label": "New session title", maxlength: "1000",
                              class: "rename-input"});
    let done = false;
    const save = async () => {
      if (done) return;
      done = true;
      const value = input.value.trim();
      if (value && value !== chat.title) {
        try {
          const body = await call("PATCH", `/v1/sessions/${encodeURIComponent(chat.id)}`, {body: {title: value}});
          chat.title = body.data.session.title;
          if (chat.id === sessionId) title.textContent = chat.title;
        } catch (e) {
          formError.textContent = `Could not rename: ${e.code}: ${e.detail}`;
        }
      }
      item.replaceWith(sessionItem(chat));
      list.querySelector(`li[data-id="${CSS.escape(chat.id)}"] .session`)?.focus();
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); save(); }
      if (e.key === "Escape" && !done) { done = true; item.replaceWith(sessionItem(chat)); }
    });
    input.addEventListener("blur", save, {once: true});
    replace(item, input);
    input.focus();
    input.select();
  }

  function userTurn(text) {
    return h("div", {class: "turn user"}, h("p", {class: "who"}, "You"), h("p", {class: "text"}, text));
  }

  function renderAssistant(box, message) {
    const refs = (message.references || []).filter((r) => r.citation !== undefined && r.citation !== null);
    const cite = (ref, occurrence) => openCitation(message.id, ref, occurrence, document.activeElement);
    const body = [];
    if (message.status === "failed") {
      body.push(h("p", {class: "error"}, `The answer failed: ${message.error?.code || ""}: ${message.error?.message || ""}`));
    } else {
      body.push(h("p", {class: "text answer-text"}, answerText(message.text || "", refs, cite)));
    }
    const meta = [];
    const gen = generatorOf(message);
    if (gen) meta.push(h("span", {class: "generator"}, "Written by ", h("strong", {}, gen)));
    if (message.warnings && message.warnings.length) {
      meta.push(h("ul", {class: "warnings"}, message.warnings.map((w) => h("li", {}, h("code", {}, w.code), " ", w.message))));
    }
    replace(box, h("p", {class: "who"}, "citewell"), body, sourceList(refs, cite), h("div", {class: "meta"}, meta));
    box.dataset.messageId = message.id;
    box.dataset.status = message.status;
  }

  async function loadHistory() {
    closeViewer();
    replace(log);
    if (!sessionId) {
      title.textContent = "New session";
      return;
    }
    try {
      const chatInfo = await call("GET", `/v1/chats/${encodeURIComponent(sessionId)}`);
      title.textContent = chatInfo.title || "Untitled session";
      const body = await call("GET", `/v1/chats/${encodeURIComponent(sessionId)}/messages`, {params: {limit: 200, offsets: "utf16"}});
      for (const message of body.messages) {
        if (message.role === "user") log.append(userTurn(message.text));
        else if (message.role === "assistant") {
          const box = h("article", {class: "turn assistant", "aria-label": "Answer"});
          renderAssistant(box, message);
          log.append(box);
        }
      }
    } catch (e) {
      log.append(h("p", {class: "error"}, `Could not open the session: ${e.code}: ${e.detail}`));
    }
  }

  async function ask(questionText) {
    busy = true;
    send.disabled = true;
    formError.textContent = "";
    log.append(userTurn(questionText));
    const box = h("article", {class: "turn assistant streaming", "aria-label": "Answer", "aria-busy": "true"},
      h("p", {class: "who"}, "citewell"), h("p", {class: "status-line", role: "status"}, "Searching…"));
    log.append(box);
    box.scrollIntoView({block: "end"});
    const textEl = h("p", {class: "text answer-text"});
    const known = new Map();
    let text = "";
    let messageId = null;
    let chatId = sessionId;
    const cite = (ref, occurrence) => openCitation(messageId, ref, occurrence, document.activeElement);
    const body = {query: questionText, offsets: "utf16"};
    if (sessionId) body.conversation_id = sessionId;
    const f = filterBody();
    if (f) body.filters = f;
    if (writer.value) body.generator = writer.value;
    let ended = null;
    try {
      await stream(body, (name, data) => {
        if (name === "conversation") {
          messageId = data.chat_message_id;
          chatId = data.conversation_id;
          box.dataset.messageId = messageId;
        } else if (name === "search_results") {
          box.querySelector(".status-line").textContent = `Found ${data.results.length} passages; writing…`;
          box.insertBefore(textEl, box.querySelector(".status-line"));
        } else if (name === "citation") {
          known.set(data.citation, {...data, type: data.chunk_text_type === "post" ? "post" : "chunk",
                                    resource_title: data.document_name, supports: []});
        } else if (name === "answer") {
          if (!textEl.isConnected) box.insertBefore(textEl, box.querySelector(".status-line"));
          text += data.delta;
          replace(textEl, streamingText(text, known, cite));
        } else if (name === "reset") {
          text = data.text;
          replace(textEl, streamingText(text, known, cite));
        } else if (name === "support") {
          const ref = known.get(data.citation);
          if (ref) ref.supports.push(data.support);
          replace(textEl, streamingText(text, known, cite));
        } else if (name === "done" || name === "error") {
          ended = {name, data};
        }
      });
    } catch (e) {
      box.querySelector(".status-line").textContent = "";
      box.append(h("p", {class: "error"}, `${e.code}: ${e.detail}`));
      box.removeAttribute("aria-busy");
      box.classList.remove("streaming");
      busy = false;
      send.disabled = false;
      return;
    }
    box.removeAttribute("aria-busy");
    box.classList.remove("streaming");
    if (chatId && chatId !== sessionId) {
      sessionId = chatId;
      history.replaceState(null, "", `#/ask/${encodeURIComponent(chatId)}`);
    }
    if (messageId && chatId) {
      try {
        const settled = await call("GET", `/v1/chats/${encodeURIComponent(chatId)}/messages/${encodeURIComponent(messageId)}`,
          {params: {offsets: "utf16"}});
        renderAssistant(box, settled);
      } catch (e) {
        box.append(h("p", {class: "error"}, `${e.code}: ${e.detail}`));
      }
    } else if (ended && ended.name === "error") {
      box.append(h("p", {class: "error"}, `${ended.data.code}: ${ended.data.message}`));
    }
    // the answer is settled: the next question may go now, while the sidebar refreshes
    // (a question sent meanwhile was dropped by the busy check)
    busy = false;
    send.disabled = false;
    question.focus();
    try {
      await loadSessions();
      const info = await call("GET", `/v1/chats/${encodeURIComponent(sessionId)}`);
      title.textContent = info.title || "Untitled session";
    } catch (_) { /* the sidebar stays */ }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (!text || busy) return;
    question.value = "";
    ask(text);
  });
  question.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  newButton.addEventListener("click", async () => {
    try {
      const body = await call("POST", "/v1/sessions", {body: {}});
      location.hash = `#/ask/${encodeURIComponent(body.data.session.id)}`;
      await loadSessions();
    } catch (e) {
      formError.textContent = `Could not make a session: ${e.code}: ${e.detail}`;
    }
  });
  element.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !viewer.hidden) closeViewer();
  });

  loadSessions().catch(() => {});
  loadDocuments();
  loadHistory();
  return {
    element,
    route(newHash) {
      const id = sessionIdOf(newHash);
      if (id === sessionId) return;
      sessionId = id;
      for (const b of list.querySelectorAll(".session")) {
        if (b.dataset.id === sessionId) b.setAttribute("aria-current", "true");
        else b.removeAttribute("aria-current");
      }
      loadHistory();
    },
    close() { closeViewer(); },
  };
}

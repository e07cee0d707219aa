// Sources: upload several files at once (drag and drop or a picker) with per-file progress
// and status, and the workspace's resources with kind, size in pages/time/posts, status, delete.
import {call, upload} from "./api.js";
import {clock, h, replace} from "./dom.js";

const ACCEPT = ".pdf,.vtt,.srt,.jsonl,.txt,.md,.markdown";
const POLL_MS = 500;

function extent(resource) {
  const m = resource.metadata || {};
  if (resource.kind === "pdf" && m.page_count) return `${m.page_count} page${m.page_count === 1 ? "" : "s"}`;
  if (resource.kind === "transcript" && m.duration !== undefined && m.duration !== null) return clock(m.duration);
  if (resource.kind === "post" && m.post_count !== undefined) return `${m.post_count} post${m.post_count === 1 ? "" : "s"}`;
  return "";
}

function statusCell(resource) {
  if (resource.status === "failed" && resource.error) {
    return h("span", {class: "status failed"}, "failed ",
      h("code", {class: "code"}, resource.error.code), " ", resource.error.message);
  }
  return h("span", {class: `status ${resource.status}`}, resource.status);
}

export function sourcesScreen() {
  const input = h("input", {type: "file", id: "file-input", multiple: true, accept: ACCEPT, class: "visually-hidden"});
  const drop = h("div", {class: "drop", id: "drop", tabindex: "0", role: "button",
                         "aria-describedby": "drop-help", "aria-label": "Upload files: drop them here or press Enter to choose"},
    h("strong", {}, "Drop files here"), " or ", h("span", {class: "linkish"}, "choose files"),
    h("p", {class: "note", id: "drop-help"}, "PDF, VTT/SRT transcripts, posts (JSONL), text or Markdown; several at once."));
  const metaInput = h("textarea", {id: "upload-metadata", rows: "2", spellcheck: "false",
                                   placeholder: '{"tickers": ["MMM"], "fiscal_year": 2022}'});
  const mediaInput = h("input", {id: "upload-media-url", type: "url", placeholder: "the URL of the recording (audio or video)"});
  const optionError = h("p", {class: "error", role: "alert", id: "upload-options-error"});
  const options = h("details", {class: "upload-options"}, h("summary", {}, "Metadata for the next uploads"),
    h("div", {class: "filter-grid"},
      h("label", {for: "upload-metadata"}, "Metadata (JSON object)"), metaInput,
      h("label", {for: "upload-media-url"}, "Recording of a transcript (URL)"), mediaInput),
    optionError);
  const uploads = h("ul", {class: "uploads", id: "uploads", "aria-label": "Uploads", "aria-live": "polite"});
  const tbody = h("tbody", {id: "resource-rows"});
  const table = h("table", {class: "resources", id: "resources"},
    h("caption", {}, "Resources of this workspace"),
    h("thead", {}, h("tr", {}, ...["Title", "Kind", "Extent", "Status", ""].map((t) => h("th", {scope: "col"}, t)))),
    tbody);
  const listError = h("p", {class: "error", role: "alert"});
  let closed = false;
  const element = h("section", {class: "sources", "aria-labelledby": "sources-title"},
    h("h1", {id: "sources-title"}, "Sources"), drop, input, options, uploads, listError, table);

  async function refresh() {
    try {
      const all = [];
      for (let offset = 0; ; offset += 200) {
        const body = await call("GET", "/v1/resources", {params: {limit: 200, offset}});
        all.push(...body.data.resources);
        if (all.length >= body.data.total || !body.data.resources.length) break;
      }
      replace(tbody, all.length ? all.map(row) : h("tr", {}, h("td", {colspan: "5", class: "note"}, "No sources yet.")));
      listError.textContent = "";
    } catch (e) {
      listError.textContent = `Could not list the resources: ${e.code}: ${e.detail}`;
    }
  }

  function row(resource) {
    const del = h("button", {type: "button", class: "danger", "aria-label": `Delete ${resource.title}`}, "Delete");
    del.addEventListener("click", async () => {
      if (!window.confirm(`Delete "${resource.title}" and its passages? Stored answers keep their citations.`)) return;
      del.disabled = true;
      try {
        await call("DELETE", `/v1/resources/${encodeURIComponent(resource.id)}`);
      } catch (e) {
        listError.textContent = `Could not delete: ${e.code}: ${e.detail}`;
      }
      refresh();
    });
    return h("tr", {dataset: {id: resource.id, status: resource.status}},
      h("td", {}, h("span", {class: "title"}, resource.title),
        resource.file_name !== resource.title ? h("span", {class: "note"}, ` ${resource.file_name}`) : null),
      h("td", {}, resource.kind || ""), h("td", {}, extent(resource)), h("td", {}, statusCell(resource)), h("td", {}, del));
  }

  /** The metadata of one upload from the options (null: none); throws on bad JSON. */
  function metadataFor(file) {
    let meta = null;
    if (metaInput.value.trim()) {
      meta = JSON.parse(metaInput.value);
      if (!meta || typeof meta !== "object" || Array.isArray(meta)) throw new Error("metadata must be a JSON object");
    }
    if (mediaInput.value.trim() && /\.(vtt|srt)$/i.test(file.name)) meta = {...(meta || {}), media_url: mediaInput.value.trim()};
    return meta;
  }

  async function send(file, metadata) {
    const bar = h("progress", {max: "100", value: "0", "aria-label": `Upload of ${file.name}`});
    const state = h("span", {class: "status processing", role: "status"}, "uploading");
    const item = h("li", {class: "upload", dataset: {name: file.name}}, h("span", {class: "title"}, file.name), bar, state);
    uploads.prepend(item);
    let resource;
    try {
      resource = await upload(file, (f) => { bar.value = Math.round(f * 100); }, metadata);
    } catch (e) {
      item.dataset.status = "failed";
      replace(state, "failed ", h("code", {class: "code"}, e.code), " ", e.detail);
      state.className = "status failed";
      return;
    }
    item.dataset.id = resource.id;
    state.textContent = resource.status;
    refresh();
    while (resource.status === "processing" && !closed) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      try {
        resource = (await call("GET", `/v1/resources/${encodeURIComponent(resource.id)}`)).data.resource;
      } catch (e) {
        replace(state, "failed ", h("code", {class: "code"}, e.code), " ", e.detail);
        state.className = "status failed";
        item.dataset.status = "failed";
        return;
      }
    }
    item.dataset.status = resource.status;
    replace(state, statusCell(resource));
    state.className = `status ${resource.status}`;
    refresh();
  }

  function sendAll(files) {
    let metas;
    try {
      metas = files.map(metadataFor);
      optionError.textContent = "";
    } catch (e) {
      optionError.textContent = `The metadata is not valid: ${e.message}`;
      return;
    }
    files.forEach((file, i) => send(file, metas[i]));
  }

  drop.addEventListener("click", () => input.click());
  drop.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      input.click();
    }
  });
  drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    sendAll([...e.dataTransfer.files]);
  });
  input.addEventListener("change", () => {
    sendAll([...input.files]);
    input.value = "";
  });
  refresh();
  return {element, close() { closed = true; }};
}

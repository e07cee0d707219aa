// Building DOM nodes from data: text is always set as textContent, never parsed as HTML.

/**
 * h("button", {class: "chip", onclick: fn, "aria-label": "…"}, "text", child, …) -> Element.
 * Attributes starting with "on" become listeners; `dataset` sets data-* values; children
 * that are strings or numbers become text nodes; null/undefined/false are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name === "class") {
      el.className = value;
    } else if (name === "text") {
      el.textContent = String(value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

/** Append children (strings become text nodes, arrays are flattened). */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Remove every child of `el`, then append `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** Seconds as m:ss (h:mm:ss past an hour), with milliseconds when `ms`. */
export function clock(seconds, ms = false) {
  if (seconds === null || seconds === undefined || !Number.isFinite(Number(seconds))) return "";
  const total = Math.max(0, Number(seconds));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const sec = ms ? s.toFixed(3).padStart(6, "0") : String(Math.floor(s)).padStart(2, "0");
  return h ? `${h}:${String(m).padStart(2, "0")}:${sec}` : `${m}:${sec}`;
}

/** Code-point offset -> UTF-16 index of the same string (the server counts code points). */
export function utf16Index(text, codepoint) {
  let i = 0;
  let cp = 0;
  while (cp < codepoint && i < text.length) {
    const c = text.charCodeAt(i);
    i += c >= 0xd800 && c <= 0xdbff && i + 1 < text.length ? 2 : 1;
    cp += 1;
  }
  return i;
}

/** `text` split around [start, end) (UTF-16): the middle part wrapped in a <mark>. */
export function marked(text, start, end, cls = "quote") {
  if (start === null || start === undefined || end === null || end === undefined || end <= start) return [text];
  return [text.slice(0, start), h("mark", {class: cls}, text.slice(start, end)), text.slice(end)];
}

/** Undo the rule-5 escapes of an answer's text (a backslash before ASCII punctuation). */
export function unescapeMarkdown(text) {
  return text.replace(/\\([!-\/:-@\[-`{-~])/g, "$1");
}

// One answer: its text with [N] chips, the flagged marks, the generator, the sources
// deduplicated by resource (each post its own source).
import {clock, h, unescapeMarkdown} from "./dom.js";

const FLAGGED = new Set(["unsupported", "uncertain"]);

/** The flag of one occurrence's support ({verdict, reasons}) or null when not flagged. */
export function flagOf(support) {
  if (!support || !FLAGGED.has(support.verdict)) return null;
  const reasons = (support.reasons || []).join(", ");
  return {verdict: support.verdict, reason: reasons || support.verdict};
}

/** Where a reference lies: "p. 52", "2:07–2:20", "reddit/t3_x" … */
export function whereOf(ref) {
  const m = ref.metadata || {};
  if (ref.type === "post") return `${ref.source}/${ref.id}`;
  if (m.page !== undefined && m.page !== null) return `p. ${m.page}`;
  if (m.start_time !== undefined && m.start_time !== null) return `${clock(m.start_time)}–${clock(m.end_time)}`;
  return "";
}

function chip(ref, occurrence, index, onCite) {
  const flag = flagOf(occurrence ? occurrence.support : null);
  const label = `Citation ${ref.citation}: ${ref.resource_title || ref.source || ""} ${whereOf(ref)}`.trim()
    + (flag ? ` (flagged ${flag.verdict}: ${flag.reason})` : "");
  const button = h("button", {type: "button", class: flag ? "chip flagged" : "chip", "aria-label": label,
                              title: flag ? `Flagged ${flag.verdict}: ${flag.reason}` : label,
                              dataset: {citation: String(ref.citation), occurrence: String(index)}},
    String(ref.citation), flag ? h("span", {class: "flag", "aria-hidden": "true"}, "!") : null);
  button.addEventListener("click", () => onCite(ref, index));
  return button;
}

/**
 * The answer text as nodes: markers at the references' occurrences (UTF-16 offsets) become
 * chips; the rest is text with its escapes undone.
 */
export function answerText(text, refs, onCite) {
  const marks = [];
  for (const ref of refs) {
    if (ref.citation === undefined || ref.citation === null) continue;
    const occ = ref.occurrences && ref.occurrences.length ? ref.occurrences
      : [{start_index: ref.start_index, end_index: ref.end_index}];
    occ.forEach((o, i) => {
      if (o.start_index !== undefined && o.start_index !== null) marks.push({at: o.start_index, end: o.end_index, ref, o, i});
    });
  }
  marks.sort((a, b) => a.at - b.at);
  const nodes = [];
  let pos = 0;
  for (const m of marks) {
    if (m.at < pos) continue;
    nodes.push(unescapeMarkdown(text.slice(pos, m.at)));
    nodes.push(chip(m.ref, m.o, m.i, onCite));
    pos = m.end;
  }
  nodes.push(unescapeMarkdown(text.slice(pos)));
  return nodes;
}

/** While streaming: [N] of a known citation becomes a chip (no offsets yet). */
export function streamingText(text, known, onCite) {
  const nodes = [];
  let pos = 0;
  const seen = {};
  for (const m of text.matchAll(/(?<!\\)\[(\d+)\]/g)) {
    const ref = known.get(Number(m[1]));
    if (!ref) continue;
    nodes.push(unescapeMarkdown(text.slice(pos, m.index)));
    const index = seen[m[1]] = (seen[m[1]] ?? -1) + 1;
    nodes.push(chip(ref, ref.supports ? {support: ref.supports[index]} : null, index, onCite));
    pos = m.index + m[0].length;
  }
  nodes.push(unescapeMarkdown(text.slice(pos)));
  return nodes;
}

/** The sources under an answer: one entry per resource (per post), its citations as chips. */
export function sourceList(refs, onCite) {
  const groups = new Map();
  for (const ref of refs) {
    if (ref.citation === undefined || ref.citation === null) continue;
    const key = ref.type === "post" ? `post:${ref.source}:${ref.id}` : (ref.resource_id || ref.chunk_id);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(ref);
  }
  const items = [];
  for (const group of groups.values()) {
    const first = group[0];
    const kind = first.type === "post" ? "post" : (first.metadata && first.metadata.source_type) || "";
    const flags = [];
    const chips = group.map((ref) => {
      const occ = ref.occurrences || [];
      occ.forEach((o) => {
        const flag = flagOf(o.support);
        if (flag) flags.push(h("li", {class: "flag-note"}, `[${ref.citation}] flagged ${flag.verdict}: ${flag.reason}`));
      });
      return h("span", {class: "source-cite"}, chip(ref, occ[0] || null, 0, onCite), " ", whereOf(ref));
    });
    items.push(h("li", {class: "source", dataset: {kind}},
      h("span", {class: "source-title"}, first.type === "post" ? (first.metadata?.author || first.source) : (first.resource_title || "")),
      first.type === "post" ? h("span", {class: "note"}, ` ${first.source}/${first.id}`) : null,
      h("span", {class: "kind"}, kind), h("span", {class: "cites"}, chips),
      flags.length ? h("ul", {class: "flags"}, flags) : null));
  }
  return items.length ? h("ol", {class: "sources-list", "aria-label": "Sources"}, items) : null;
}

/** Who wrote the answer: "extractive", "llm (model)" … from the message's `generation`. */
export function generatorOf(message) {
  const g = message.generation;
  if (!g) return null;
  if (typeof g === "string") return g;
  const name = g.generator || g.name || g.kind || "";
  return g.model ? `${name} (${g.model})` : name;
}

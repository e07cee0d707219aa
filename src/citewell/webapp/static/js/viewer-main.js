// /rms/viewer?…: the server-rendered page becomes the app's citation view (same module),
// read through the same query (a signed viewer_url needs no key).
import {citationView} from "./viewer.js";
import {storedKey} from "./api.js";

const link = document.createElement("link");
link.rel = "stylesheet";
link.href = "/app/app.css";
document.head.append(link);
const query = Object.fromEntries(new URLSearchParams(location.search));
const root = document.createElement("main");
root.className = "viewer standalone";
root.id = "viewer";
root.setAttribute("role", "main");
root.setAttribute("aria-label", "Citation");
root.tabIndex = -1;
const signed = "signature" in query;
link.addEventListener("load", () => {
  document.body.replaceChildren(root);
  document.body.classList.add("app-viewer");
  citationView(root, query, {keyed: !signed && Boolean(storedKey())});
  root.focus();
}, {once: true});

// The web app's entry: sign-in, then the Ask and Sources sections (hash routes).
import {call, forgetKey, setScope, storedKey, whenUnauthorized} from "./api.js";
import {h, replace} from "./dom.js";
import {signInScreen} from "./signin.js";
import {sourcesScreen} from "./sources.js";
import {askScreen} from "./ask.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const who = document.getElementById("who");
const signout = document.getElementById("signout");
let workspace = null;
let current = null;  // {name, screen}

function signedOut(reason) {
  forgetKey();
  workspace = null;
  nav.hidden = true;
  signout.hidden = true;
  who.textContent = "";
  current = null;
  replace(main, signInScreen(reason, signedIn));
  main.querySelector("input")?.focus();
}

async function signedIn(info) {
  workspace = info;
  setScope(info.key.platform ? {organization_id: info.workspace.id} : {});
  nav.hidden = false;
  signout.hidden = false;
  replace(who, "Workspace ", h("strong", {id: "workspace-name"}, info.workspace.name));
  route();
}

function route() {
  if (!workspace) return;
  const hash = location.hash || "#/ask";
  const name = hash.startsWith("#/sources") ? "sources" : "ask";
  for (const link of nav.querySelectorAll("a")) {
    if (link.id === `nav-${name}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (current?.name === name) {
    current.screen.route?.(hash);
    return;
  }
  current?.screen.close?.();
  const screen = name === "sources" ? sourcesScreen() : askScreen(hash);
  current = {name, screen};
  replace(main, screen.element);
}

whenUnauthorized((error) => {
  if (workspace) signedOut(`Your API key no longer works (${error.code}). Sign in again.`);
});
window.addEventListener("hashchange", route);
signout.addEventListener("click", () => signedOut(null));

async function start() {
  const key = storedKey();
  if (!key) {
    signedOut(null);
    return;
  }
  try {
    const body = await call("GET", "/v1/workspace");
    await signedIn(body.data);
  } catch (error) {
    signedOut(`Your API key no longer works (${error.code}). Sign in again.`);
  }
}

start();

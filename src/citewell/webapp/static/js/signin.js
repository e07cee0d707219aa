// The sign-in screen: an API key, checked with GET /v1/workspace, kept for this tab only.
import {call, storeKey} from "./api.js";
import {h} from "./dom.js";

/** The sign-in form; `reason` (or null) explains why it is shown; onSignedIn(workspace info). */
export function signInScreen(reason, onSignedIn) {
  const input = h("input", {id: "api-key", type: "password", name: "api-key", autocomplete: "off", required: true,
                            spellcheck: "false", "aria-describedby": "key-help"});
  const error = h("p", {class: "error", id: "signin-error", role: "alert"}, reason || "");
  const button = h("button", {type: "submit"}, "Sign in");
  const form = h("form", {class: "signin", "aria-labelledby": "signin-title"},
    h("h1", {id: "signin-title"}, "Sign in to citewell"),
    h("label", {for: "api-key"}, "API key"),
    input,
    h("p", {class: "note", id: "key-help"},
      "Make one with ", h("code", {}, "citewell keys create --workspace NAME"),
      ". It is kept only for this browser tab."),
    button, error);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    button.disabled = true;
    error.textContent = "";
    try {
      const body = await call("GET", "/v1/workspace", {key});
      storeKey(key);
      await onSignedIn(body.data);
    } catch (e) {
      error.textContent = e.code === "INVALID_API_KEY" || e.code === "API_KEY_MISSING"
        ? `This API key is not valid (${e.code}): it was mistyped, or it has been revoked.`
        : `Could not sign in: ${e.code}: ${e.detail}`;
      input.focus();
      input.select();
    } finally {
      button.disabled = false;
    }
  });
  return form;
}

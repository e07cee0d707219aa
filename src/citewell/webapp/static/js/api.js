// The API client of the web app: every call carries the signed-in key; errors of the three
// envelopes become ApiError {status, code, message}.

const KEY = "citewell.key";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.detail = message;
  }
}

/** The key kept for this browser tab (sessionStorage), or null. */
export function storedKey() {
  return sessionStorage.getItem(KEY);
}

export function storeKey(key) {
  sessionStorage.setItem(KEY, key);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY);
}

/** Listeners told when the key stops working (401): the app shows the sign-in screen. */
const onUnauthorized = new Set();
export function whenUnauthorized(fn) {
  onUnauthorized.add(fn);
}

/** Extra query parameters every call adds (a platform key names its organization). */
let scope = {};
export function setScope(params) {
  scope = {...params};
}

export function url(path, params = {}) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries({...scope, ...params})) {
    if (v === null || v === undefined) continue;
    for (const one of Array.isArray(v) ? v : [v]) u.searchParams.append(k, String(one));
  }
  return u.pathname + u.search;
}

export function headers(extra = {}, key = storedKey()) {
  return key ? {"X-API-KEY": key, ...extra} : {...extra};
}

/** The {code, message} of an error body of any profile. */
export function errorOf(status, body) {
  const err = body && typeof body === "object" ? body.error : null;
  if (err && typeof err === "object") {
    return new ApiError(status, err.code || "SERVER_ERROR", err.message || err.msg || "");
  }
  return new ApiError(status, status === 401 ? "INVALID_API_KEY" : "SERVER_ERROR", `HTTP ${status}`);
}

async function fail(response, key) {
  let body = null;
  try {
    body = await response.json();
  } catch (_) {
    body = null;
  }
  const error = errorOf(response.status, body);
  if (response.status === 401 && key) onUnauthorized.forEach((fn) => fn(error));
  throw error;
}

/** JSON call: the parsed body, or throws ApiError. `key` overrides the stored key (sign-in). */
export async function call(method, path, {params, body, key} = {}) {
  const useKey = key === undefined ? storedKey() : key;
  const init = {method, headers: headers(body === undefined ? {} : {"Content-Type": "application/json"}, useKey)};
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(url(path, params), init);
  if (!response.ok) await fail(response, useKey);
  return response.status === 204 ? null : response.json();
}

/** An image the API serves behind the key, as a blob: URL (revoke it when done). */
export async function imageUrl(path, params = {}) {
  const key = storedKey();
  const response = await fetch(url(path, params), {headers: headers({}, key)});
  if (!response.ok) await fail(response, key);
  return URL.createObjectURL(await response.blob());
}

/**
 * Upload one file with progress: onProgress(fraction 0..1). Resolves to the resource JSON
 * (202), rejects with ApiError. XMLHttpRequest: fetch reports no upload progress.
 */
export function upload(file, onProgress, metadata = null) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const key = storedKey();
    xhr.open("POST", url("/v1/resources"));
    if (key) xhr.setRequestHeader("X-API-KEY", key);
    xhr.responseType = "json";
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable) onProgress(e.loaded / e.total);
    });
    xhr.addEventListener("load", () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(1);
        resolve(xhr.response.data.resource);
      } else {
        const error = errorOf(xhr.status, xhr.response);
        if (xhr.status === 401) onUnauthorized.forEach((fn) => fn(error));
        reject(error);
      }
    });
    xhr.addEventListener("error", () => reject(new ApiError(0, "NETWORK_ERROR", "the upload did not reach the server")));
    const form = new FormData();
    form.append("file", file, file.name);
    if (metadata) form.append("metadata", JSON.stringify(metadata));
    xhr.send(form);
  });
}

/**
 * Ask over Server-Sent Events (POST /v2/analytics/sse): onEvent(name, data) for each event
 * as it arrives. Resolves when the stream ends; rejects with ApiError for an error answered
 * before the stream (400/401/404).
 */
export async function stream(body, onEvent, signal) {
  const key = storedKey();
  const response = await fetch(url("/v2/analytics/sse"), {
    method: "POST",
    headers: headers({"Content-Type": "application/json", Accept: "text/event-stream"}, key),
    body: JSON.stringify(body),
    signal,
  });
  if (!response.ok) await fail(response, key);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") name = val;
        else if (field === "data") data.push(val);
      }
      if (data.length) onEvent(name, JSON.parse(data.join("\n")));
    }
  }
}

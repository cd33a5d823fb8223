// The console's one way to the server: same origin, the session cookie (sent by the browser, never
// read by this code: it is HttpOnly) and the CSRF token of the session on every call.

let csrfToken = '';
let onSignedOut = () => {};

export function setCsrfToken(token) {
  csrfToken = token || '';
}

// whenSignedOut registers what to do when the server says the session is over (401).
export function whenSignedOut(fn) {
  onSignedOut = fn;
}

// ApiError is an error answer in the API's envelope: {error: {type, code, message, details?, request_id}}.
export class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || `The server answered ${status}.`);
    this.status = status;
    this.code = e.code || '';
    this.details = e.details || {};
    this.requestId = e.request_id || '';
  }

  // fieldErrors are details.errors: [{field, code, message}] (a 422 validation_failed, a 400 invalid_request).
  get fieldErrors() {
    return Array.isArray(this.details.errors) ? this.details.errors : [];
  }
}

// api sends one request and answers the decoded JSON body (null when empty); an error answer throws
// ApiError. A 401 also tells the app the session is gone.
export async function api(method, path, body, { quiet401 = false } = {}) {
  const headers = { Accept: 'application/json' };
  if (csrfToken) headers['X-CSRF-Token'] = csrfToken;
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store', redirect: 'error' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, { error: { message: 'The server could not be reached. Check the connection and try again.' } });
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch (err) {
      data = null;
    }
  }
  if (!res.ok) {
    const e = new ApiError(res.status, data);
    if (res.status === 401 && !quiet401) onSignedOut(e);
    throw e;
  }
  return data;
}

// download fetches a file (a GET that, like every console request, carries the CSRF token, so a plain
// link cannot) and hands it to the browser as a download named filename; it answers the file's size.
// An error answer throws ApiError.
export async function download(path, filename) {
  const headers = {};
  if (csrfToken) headers['X-CSRF-Token'] = csrfToken;
  let res;
  try {
    res = await fetch(path, { headers, credentials: 'same-origin', cache: 'no-store', redirect: 'error' });
  } catch (err) {
    throw new ApiError(0, { error: { message: 'The server could not be reached. Check the connection and try again.' } });
  }
  if (!res.ok) {
    let body = null;
    try {
      body = await res.json();
    } catch (err) {
      body = null;
    }
    const e = new ApiError(res.status, body);
    if (res.status === 401) onSignedOut(e);
    throw e;
  }
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 60000);
  return blob.size;
}

// query builds ?a=b&… from the set members of params.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '' && v !== false) q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// The console session (docs/issue-24.md, "Sign-in and sessions").
export const session = {
  signIn: (token) => api('POST', '/console/session', { token }, { quiet401: true }),
  current: () => api('GET', '/console/session', undefined, { quiet401: true }),
  signOut: () => api('DELETE', '/console/session', undefined, { quiet401: true }),
};

// data unwraps {data: …}.
export function data(body) {
  return body && 'data' in body ? body.data : body;
}

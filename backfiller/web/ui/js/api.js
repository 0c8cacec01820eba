// Every call to the API goes through `graphql()` below: one place adds the token, reads the
// answer, and tells the rest of the UI about lost connections and missing sign-in.

export const API_PATH = "/graphql/v1";
const OPERATIONS_PATH = "/ui/operations.graphql";
const TOKEN_KEY = "backfiller.token";

/** The API answered 401: the user must sign in (see pages/signin.js). */
export class AuthRequired extends Error {
  constructor() {
    super("Sign-in required");
    this.name = "AuthRequired";
  }
}

/** The server could not be reached, or answered with a server error. */
export class ConnectionLost extends Error {
  constructor(message) {
    super(message);
    this.name = "ConnectionLost";
  }
}

/** GraphQL answered with top-level errors (a bug or a bad argument, never a userError). */
export class GraphQLFailure extends Error {
  constructor(errors) {
    super(errors.map((e) => e.message).join("; "));
    this.name = "GraphQLFailure";
    this.errors = errors;
  }
}

// --- the token -------------------------------------------------------------------------------

export function getToken() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || null;
  } catch {
    return null;
  }
}

export function setToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
  events.dispatchEvent(new Event("token"));
}

// --- the single sign-on session (web/sessions.py) -------------------------------------------
//
// A person signed in with the identity provider has an HttpOnly session cookie that this code
// never sees; it reads who is signed in, and the session's CSRF token, from /auth/session and
// sends that token with every API call (a header, or the WebSocket's `csrf` parameter).

let session = { sso: false, signedIn: false };
let sessionPromise = null;

/** {sso, signedIn, name, role, team, csrfToken, expiresAt}, asked once (see refreshSession). */
export function loadSession() {
  if (!sessionPromise) sessionPromise = refreshSession();
  return sessionPromise;
}

export async function refreshSession() {
  try {
    const response = await fetch("/auth/session", { cache: "no-store", credentials: "same-origin" });
    session = response.ok ? await response.json() : { sso: false, signedIn: false };
  } catch {
    session = { sso: false, signedIn: false };
  }
  sessionPromise = Promise.resolve(session);
  events.dispatchEvent(new Event("token"));
  return session;
}

export function currentSession() {
  return session;
}

/** Sign out of the session: ends it on the server; returns where the browser goes next. */
export async function signOutOfSession() {
  events.dispatchEvent(new Event("signing-out")); // live updates stop first (live.js)
  const response = await fetch("/auth/logout", {
    method: "POST",
    credentials: "same-origin",
    headers: { "X-CSRF-Token": session.csrfToken || "", "Content-Type": "application/json" },
    body: "{}",
  });
  const body = await response.json().catch(() => ({}));
  session = { sso: session.sso, signedIn: false };
  sessionPromise = Promise.resolve(session);
  events.dispatchEvent(new Event("token"));
  return body.next || "#/signin";
}

/** The WebSocket URL's query: the session's CSRF token when signed in with a session. */
export function socketQuery() {
  if (getToken() || !session.signedIn || !session.csrfToken) return "";
  return `?csrf=${encodeURIComponent(session.csrfToken)}`;
}

// --- connection state, for the banner ------------------------------------------------------

/** Fires "connection" (detail: {online}), "unauthorized", "token" (signed in or out) and
 * "signing-out" (before the session ends) events. */
export const events = new EventTarget();
let online = true;

function setOnline(value, reason) {
  if (value === online) return;
  online = value;
  events.dispatchEvent(new CustomEvent("connection", { detail: { online, reason } }));
}

export function isOnline() {
  return online;
}

// --- operation documents --------------------------------------------------------------------

let documentPromise = null;

/** Split a GraphQL document into its top-level definitions, keyed by name. */
export function splitDefinitions(text) {
  const definitions = new Map();
  let i = 0;
  const n = text.length;
  while (i < n) {
    const ch = text[i];
    if (ch === "#") {
      while (i < n && text[i] !== "\n") i++;
      continue;
    }
    if (/\s|,/.test(ch)) {
      i++;
      continue;
    }
    const start = i;
    let depth = 0;
    let seenBrace = false;
    while (i < n) {
      const c = text[i];
      if (c === "#") {
        while (i < n && text[i] !== "\n") i++;
        continue;
      }
      if (c === '"') {
        const block = text.startsWith('"""', i);
        const close = block ? '"""' : '"';
        i += close.length;
        while (i < n && !text.startsWith(close, i)) i += text[i] === "\\" && !block ? 2 : 1;
        i += close.length;
        continue;
      }
      if (c === "{") {
        depth++;
        seenBrace = true;
      } else if (c === "}") {
        depth--;
        if (seenBrace && depth === 0) {
          i++;
          break;
        }
      }
      i++;
    }
    const body = text.slice(start, i);
    const match = /^(query|mutation|subscription|fragment)\s+([_A-Za-z][_0-9A-Za-z]*)/.exec(body);
    if (match) definitions.set(match[2], { kind: match[1], body });
  }
  return definitions;
}

/** The named operation and the fragments it uses, as one document to send. */
export function documentFor(definitions, operationName) {
  const operation = definitions.get(operationName);
  if (!operation || operation.kind === "fragment") {
    throw new Error(`unknown operation ${operationName}`);
  }
  const parts = [operation.body];
  const seen = new Set();
  const queue = [operation.body];
  while (queue.length) {
    const body = queue.pop();
    for (const m of body.matchAll(/\.\.\.\s*([_A-Za-z][_0-9A-Za-z]*)/g)) {
      const name = m[1];
      if (name === "on" || seen.has(name)) continue;
      seen.add(name);
      const fragment = definitions.get(name);
      if (fragment && fragment.kind === "fragment") {
        parts.push(fragment.body);
        queue.push(fragment.body);
      }
    }
  }
  return parts.join("\n\n");
}

async function operationDefinitions() {
  if (!documentPromise) {
    documentPromise = (async () => {
      let response;
      try {
        response = await fetch(OPERATIONS_PATH, { cache: "no-cache" });
      } catch (error) {
        throw new ConnectionLost(`cannot load ${OPERATIONS_PATH}: ${error.message}`);
      }
      if (!response.ok) throw new ConnectionLost(`${OPERATIONS_PATH}: HTTP ${response.status}`);
      return splitDefinitions(await response.text());
    })();
    documentPromise.catch(() => {
      documentPromise = null;
    });
  }
  return documentPromise;
}

/** Whether the operations file has this operation (the UI grows with the schema). */
export async function hasOperation(name) {
  const definitions = await operationDefinitions();
  return definitions.has(name);
}

export async function operationText(name) {
  return documentFor(await operationDefinitions(), name);
}

// --- the one fetch wrapper ------------------------------------------------------------------

/** Headers for every API call: the only place that knows about the token. */
export function authHeaders() {
  const token = getToken();
  if (token) return { Authorization: `Bearer ${token}` };
  return session.signedIn && session.csrfToken ? { "X-CSRF-Token": session.csrfToken } : {};
}

/**
 * Run a named operation of operations.graphql and return its `data`.
 * Throws AuthRequired (401), ConnectionLost (network, 5xx) or GraphQLFailure.
 */
export async function graphql(operationName, variables = {}, { signal } = {}) {
  const [query] = await Promise.all([operationText(operationName), loadSession()]);
  let response;
  try {
    response = await fetch(API_PATH, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json", ...authHeaders() },
      body: JSON.stringify({ query, operationName, variables }),
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    setOnline(false, "the server cannot be reached");
    throw new ConnectionLost("The server cannot be reached.");
  }
  if (response.status === 401) {
    setOnline(true);
    if (session.signedIn) {
      session = { sso: session.sso, signedIn: false, ended: true }; // expired or ended
      sessionPromise = Promise.resolve(session);
    }
    events.dispatchEvent(new Event("unauthorized"));
    throw new AuthRequired();
  }
  if (response.status >= 500) {
    setOnline(false, `the server answered HTTP ${response.status}`);
    throw new ConnectionLost(`The server answered HTTP ${response.status}.`);
  }
  let body;
  try {
    body = await response.json();
  } catch {
    throw new ConnectionLost(`Unexpected answer (HTTP ${response.status}).`);
  }
  setOnline(true);
  if (body.errors && body.errors.length) {
    const unauthenticated = body.errors.some((e) => e.extensions?.code === "UNAUTHENTICATED");
    if (unauthenticated) {
      events.dispatchEvent(new Event("unauthorized"));
      throw new AuthRequired();
    }
    throw new GraphQLFailure(body.errors);
  }
  return body.data;
}

/** A random id for idempotency keys; works outside secure contexts too. */
export function randomId() {
  if (globalThis.crypto?.randomUUID) {
    try {
      return crypto.randomUUID();
    } catch {
      /* not a secure context */
    }
  }
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

// Small DOM and formatting helpers. Text always goes through textContent: no HTML injection.
import { displayZone } from "./prefs.js";

/**
 * Create an element: h("a", {href: "#/x", class: "link", onclick: fn}, "text", child, ...).
 * Attributes: `class`, `dataset`, `on<event>`, booleans (true sets, false omits), others as-is.
 */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") element.className = value;
    else if (name === "dataset") Object.assign(element.dataset, value);
    else if (name === "style") Object.assign(element.style, value);
    else if (name.startsWith("on") && typeof value === "function") {
      element.addEventListener(name.slice(2), value);
    } else if (name in element && typeof value !== "string") element[name] = value;
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace an element's children. */
export function replace(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

const numberFormat = new Intl.NumberFormat();
export function formatNumber(n) {
  return n === null || n === undefined ? "–" : numberFormat.format(n);
}

export function formatPercent(p) {
  if (p === null || p === undefined) return "–";
  if (p > 0 && p < 0.1) return "<0.1%";
  if (p < 100 && p > 99.9) return ">99.9%";
  return `${p.toFixed(p === 100 || p === 0 ? 0 : 1)}%`;
}

// Every timestamp says its zone: UTC or the browser's, as chosen in the top bar (prefs.js).
const formats = new Map();

function formatFor(kind) {
  const zone = displayZone();
  const key = `${kind}|${zone}`;
  if (!formats.has(key)) {
    const options = { timeZone: zone, timeZoneName: "short", hourCycle: "h23", hour: "2-digit", minute: "2-digit", second: "2-digit" };
    if (kind === "full") Object.assign(options, { year: "numeric", month: "short", day: "numeric" });
    formats.set(key, new Intl.DateTimeFormat(undefined, options));
  }
  return formats.get(key);
}

/** "Dec 3, 2026, 15:56:57 UTC" (or in the browser's zone, named). */
export function formatTime(iso) {
  if (!iso) return "–";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : formatFor("full").format(date);
}

/** "15:56:57 UTC": a time of day, with its zone. */
export function formatClock(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : formatFor("clock").format(date);
}

/** "3 min ago", with the exact time in the element's title. */
export function timeAgo(iso) {
  if (!iso) return h("span", { class: "muted" }, "–");
  const date = new Date(iso);
  const seconds = Math.round((Date.now() - date.getTime()) / 1000);
  let text;
  if (seconds < 5) text = "just now";
  else if (seconds < 60) text = `${seconds} s ago`;
  else if (seconds < 3600) text = `${Math.floor(seconds / 60)} min ago`;
  else if (seconds < 86400) text = `${Math.floor(seconds / 3600)} h ago`;
  else text = formatTime(iso);
  return h("time", { datetime: iso, title: formatTime(iso) }, text);
}

export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds % 60);
  if (m < 60) return s ? `${m} min ${s} s` : `${m} min`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** The route's query string as an object, and back. */
export function parseQuery(text) {
  return Object.fromEntries(new URLSearchParams(text || ""));
}

export function buildHash(path, params = {}) {
  const query = new URLSearchParams(
    Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""),
  ).toString();
  return `#${path}${query ? `?${query}` : ""}`;
}

/** Call fn at most once per `wait` ms, the last call winning. */
export function throttle(fn, wait) {
  let timer = null;
  let last = 0;
  return (...args) => {
    const now = Date.now();
    const run = () => {
      last = Date.now();
      timer = null;
      fn(...args);
    };
    if (timer) return;
    if (now - last >= wait) run();
    else timer = setTimeout(run, wait - (now - last));
  };
}

// One call at a time: a call made while one runs waits for it, and the calls made meanwhile share
// one more run after it. For loaders that page on from a cursor, which two at once would repeat.
export function serialized(fn) {
  let running = null;
  let queued = null;
  return () => {
    if (queued) return queued;
    if (running) {
      queued = running.catch(() => {}).then(() => {
        queued = null;
        return start();
      });
      return queued;
    }
    return start();
  };
  function start() {
    running = Promise.resolve().then(fn).finally(() => {
      running = null;
    });
    return running;
  }
}

export function debounce(fn, wait) {
  let timer = null;
  const debounced = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), wait);
  };
  debounced.cancel = () => clearTimeout(timer);
  return debounced;
}

/** A message for any error thrown by api.graphql. */
export function errorMessage(error) {
  if (!error) return "";
  return error.message || String(error);
}

/** An inline error box. */
export function errorBox(error, title = "Something went wrong") {
  return h(
    "div",
    { class: "alert alert-error", role: "alert" },
    h("strong", {}, title),
    " ",
    errorMessage(error),
  );
}

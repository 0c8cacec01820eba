// Keyboard shortcuts: global ones (go to a page, switch the time zone or the theme, this help)
// and those a page adds while it is shown (pause, cancel, focus the search...). "?" lists them
// all in a dialog. Keys typed into a field never trigger a shortcut.
import { h, replace } from "./dom.js";

const GLOBAL = [];
const pageKeys = new Map(); // key -> {description, run}
let pending = null; // the first key of a two-key sequence ("g", then "b")

/** A global shortcut: `keys` like "g b" (a sequence) or "t". */
export function globalShortcut(keys, description, run) {
  GLOBAL.push({ keys, description, run });
}

/** Shortcuts of the page being shown; returns a function that removes them. */
export function pageShortcuts(list) {
  for (const item of list) pageKeys.set(item.keys, item);
  return () => {
    for (const item of list) if (pageKeys.get(item.keys) === item) pageKeys.delete(item.keys);
  };
}

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
}

function all() {
  return [...GLOBAL, ...pageKeys.values()];
}

function find(keys) {
  return all().find((item) => item.keys === keys);
}

document.addEventListener("keydown", (event) => {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  if (typing(event.target) || document.querySelector("dialog[open]:not(.shortcuts-dialog)")) return;
  const key = event.key;
  if (pending) {
    const item = find(`${pending} ${key}`);
    pending = null;
    if (item) {
      event.preventDefault();
      item.run();
    }
    return;
  }
  if (all().some((item) => item.keys.startsWith(`${key} `))) {
    pending = key;
    setTimeout(() => {
      pending = null;
    }, 1500);
    event.preventDefault();
    return;
  }
  const item = find(key);
  if (item) {
    event.preventDefault();
    item.run();
  }
});

function keyLabel(keys) {
  return keys.split(" ").flatMap((k, i) => [i ? " then " : null, h("kbd", {}, k)]);
}

/** The "?" overlay: every shortcut that works here. */
export function showShortcuts() {
  const open = document.querySelector(".shortcuts-dialog");
  if (open) {
    open.close();
    return;
  }
  const close = h("button", { type: "button", class: "btn btn-secondary", onclick: () => dialog.close() }, "Close");
  const rows = (list) =>
    list.map((item) => h("tr", { dataset: { shortcut: item.keys } }, h("td", {}, keyLabel(item.keys)), h("td", {}, item.description)));
  const dialog = h(
    "dialog",
    { class: "shortcuts-dialog", "aria-labelledby": "shortcuts-title" },
    h("h2", { id: "shortcuts-title" }, "Keyboard shortcuts"),
    h("table", {}, h("caption", { class: "visually-hidden" }, "Shortcuts on every page"), h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Keys"), h("th", { scope: "col" }, "Everywhere"))), h("tbody", {}, rows(GLOBAL))),
    pageKeys.size
      ? h("table", {}, h("caption", { class: "visually-hidden" }, "Shortcuts on this page"), h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Keys"), h("th", { scope: "col" }, "On this page"))), h("tbody", {}, rows([...pageKeys.values()])))
      : null,
    h("div", { class: "form-actions" }, close),
  );
  dialog.addEventListener("close", () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  close.focus();
}

export function renderHelpButton(holder) {
  replace(holder, h("button", { type: "button", class: "btn-pref", id: "shortcuts-button", "aria-label": "Keyboard shortcuts", "aria-keyshortcuts": "?", onclick: showShortcuts }, "?"));
}

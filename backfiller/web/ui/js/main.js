// The shell: a hash router, the connection banner, and the sign-in redirect.
import { AuthRequired, currentSession, events, getToken, graphql, isOnline, loadSession, setToken, signOutOfSession } from "./api.js";
import { buildHash, errorBox, formatTime, h, parseQuery, replace } from "./dom.js";
import { displayZone, effectiveTheme, prefs, setThemeChoice, setTimeZoneChoice, timeZoneChoice } from "./prefs.js";
import { globalShortcut, renderHelpButton, showShortcuts } from "./shortcuts.js";
import * as assetsPage from "./pages/assets.js";
import * as backfillPage from "./pages/backfill.js";
import * as backfillsPage from "./pages/backfills.js";
import * as jobsPage from "./pages/jobs.js";
import * as launchPage from "./pages/launch.js";
import * as signinPage from "./pages/signin.js";
import * as triggersPage from "./pages/triggers.js";

const ROUTES = [
  { pattern: /^\/?$/, page: backfillsPage, nav: "backfills" },
  { pattern: /^\/backfills$/, page: backfillsPage, nav: "backfills" },
  { pattern: /^\/backfills\/([^/]+)$/, page: backfillPage, nav: "backfills" },
  { pattern: /^\/launch$/, page: launchPage, nav: "launch" },
  { pattern: /^\/jobs$/, page: jobsPage, nav: "jobs" },
  { pattern: /^\/assets$/, page: assetsPage, nav: "assets" },
  { pattern: /^\/triggers$/, page: triggersPage, nav: "triggers" },
  { pattern: /^\/signin$/, page: signinPage, nav: null },
];

const main = document.getElementById("main");
const banner = document.getElementById("banner");
const session = document.getElementById("session");
let cleanup = null;
let renderCount = 0;

function currentRoute() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, query = ""] = raw.split("?");
  for (const route of ROUTES) {
    const match = route.pattern.exec(path);
    if (match) return { route, params: match.slice(1).map(decodeURIComponent), query: parseQuery(query), path };
  }
  return { route: null, params: [], query: {}, path };
}

async function render() {
  const generation = ++renderCount;
  if (cleanup) {
    try {
      cleanup();
    } catch {
      /* a page's cleanup must not stop the next page */
    }
    cleanup = null;
  }
  const { route, params, query, path } = currentRoute();
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (route && link.dataset.nav === route.nav) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const root = h("div", { class: "page-body" });
  replace(main, root);
  if (!route) {
    document.title = "Not found · Backfiller";
    replace(root, h("h1", {}, "Page not found"), h("p", {}, "No page at ", h("code", {}, path), ". ", h("a", { href: "#/backfills" }, "Go to backfills"), "."));
    return;
  }
  document.title = `${route.page.title} · Backfiller`;
  try {
    const result = await route.page.render(root, { params, query });
    if (generation !== renderCount) {
      if (typeof result === "function") result();
      return;
    }
    cleanup = typeof result === "function" ? result : null;
  } catch (error) {
    if (generation !== renderCount) return;
    if (error instanceof AuthRequired) return; // the sign-in redirect is on its way
    root.append(errorBox(error, "This page could not load."));
  }
}

function navigated() {
  render().then(() => {
    // To the new page's content, unless the page gave focus back to a field of its own (a
    // filter being typed in, whose value changed the URL).
    if (renderCount > 1 && !main.contains(document.activeElement)) main.focus({ preventScroll: true });
  });
}

// --- the connection banner: shown while the server is unreachable ----------------------------

let healthTimer = null;
let hideTimer = null;

function showBanner(text, tone) {
  clearTimeout(hideTimer);
  banner.className = `banner banner-${tone}`;
  banner.textContent = text;
  banner.hidden = false;
}

function checkHealth() {
  clearTimeout(healthTimer);
  healthTimer = setTimeout(async () => {
    try {
      await graphql("UiApiVersion");
    } catch {
      /* still down: the next check is scheduled below */
    }
    if (!isOnline()) checkHealth();
  }, 2000);
}

events.addEventListener("connection", (event) => {
  if (!event.detail.online) {
    showBanner(`Connection lost: ${event.detail.reason}. Retrying…`, "warning");
    checkHealth();
  } else {
    clearTimeout(healthTimer);
    showBanner("Reconnected.", "success");
    hideTimer = setTimeout(() => {
      banner.hidden = true;
    }, 2500);
  }
});

// --- sign-in: the API answered 401 ----------------------------------------------------------

events.addEventListener("unauthorized", () => {
  const { route } = currentRoute();
  if (route && route.page === signinPage) return;
  const next = location.hash || "#/backfills";
  location.hash = buildHash("/signin", { next });
});

function renderSession() {
  const person = currentSession();
  if (!getToken() && person.signedIn) {
    replace(
      session,
      h(
        "span",
        { class: "session-person", id: "session-person", title: person.expiresAt ? `Signed in until ${formatTime(person.expiresAt)}` : undefined },
        h("span", { class: "session-name" }, person.name),
        " ",
        h("span", { class: "badge badge-plain", dataset: { role: person.role } }, person.role),
        person.team ? h("span", { class: "muted small" }, ` · ${person.team}`) : null,
      ),
      h(
        "button",
        {
          type: "button",
          class: "btn btn-ghost btn-small",
          id: "sign-out",
          onclick: async () => {
            const next = await signOutOfSession();
            if (next.startsWith("#")) location.hash = next;
            else location.assign(next);
          },
        },
        "Sign out",
      ),
    );
    return;
  }
  if (getToken()) {
    replace(
      session,
      h(
        "button",
        {
          type: "button",
          class: "btn btn-ghost btn-small",
          onclick: () => {
            setToken(null);
            location.hash = "#/backfills";
          },
        },
        "Sign out",
      ),
    );
  } else {
    replace(session);
  }
}

// --- display preferences and shortcuts ------------------------------------------------------

const prefsHolder = document.getElementById("prefs");

function renderPrefs() {
  const zone = timeZoneChoice();
  const theme = effectiveTheme();
  const helpHolder = h("span");
  renderHelpButton(helpHolder);
  replace(
    prefsHolder,
    h(
      "button",
      {
        type: "button",
        class: "btn-pref",
        id: "zone-switch",
        "aria-pressed": String(zone === "utc"),
        title: `Times are shown in ${displayZone()}; switch with T`,
        onclick: toggleZone,
      },
      zone === "utc" ? "UTC" : "Local time",
    ),
    h(
      "button",
      { type: "button", class: "btn-pref", id: "theme-switch", "aria-pressed": String(theme === "dark"), title: "Dark mode; switch with D", onclick: toggleTheme },
      theme === "dark" ? "Dark" : "Light",
    ),
    helpHolder,
  );
}

function toggleZone() {
  setTimeZoneChoice(timeZoneChoice() === "utc" ? "local" : "utc");
}

function toggleTheme() {
  setThemeChoice(effectiveTheme() === "dark" ? "light" : "dark");
}

prefs.addEventListener("change", (event) => {
  renderPrefs();
  if (event.detail.what === "timeZone") navigated(); // every timestamp on the page, in the new zone
});

globalShortcut("?", "Show these shortcuts", showShortcuts);
globalShortcut("g b", "Go to backfills", () => (location.hash = "#/backfills"));
globalShortcut("g l", "Go to launch", () => (location.hash = "#/launch"));
globalShortcut("g j", "Go to jobs", () => (location.hash = "#/jobs"));
globalShortcut("g a", "Go to assets", () => (location.hash = "#/assets"));
globalShortcut("g t", "Go to triggers", () => (location.hash = "#/triggers"));
globalShortcut("t", "Switch times between UTC and local time", toggleZone);
globalShortcut("d", "Switch between light and dark", toggleTheme);
renderPrefs();

events.addEventListener("token", renderSession);
window.addEventListener("hashchange", navigated);
loadSession().then(renderSession);
navigated();

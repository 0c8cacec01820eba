// Preferences kept in this browser (localStorage): the time zone timestamps are shown in (UTC
// or the browser's own), and the colour theme (following the system, or light, or dark).
// Changing one fires "change" on `prefs`, and the page redraws what depends on it.

const ZONE_KEY = "backfiller.timeZone";
const THEME_KEY = "backfiller.theme";

export const prefs = new EventTarget();

function read(key, allowed, fallback) {
  try {
    const value = localStorage.getItem(key);
    return allowed.includes(value) ? value : fallback;
  } catch {
    return fallback;
  }
}

function write(key, value) {
  try {
    localStorage.setItem(key, value);
  } catch {
    /* private mode: the choice lasts for this page only */
  }
}

/** "utc" or "local" (the default: the browser's zone). */
export function timeZoneChoice() {
  return read(ZONE_KEY, ["utc", "local"], "local");
}

/** The IANA name of the zone timestamps are shown in. */
export function displayZone() {
  return timeZoneChoice() === "utc" ? "UTC" : Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

export function setTimeZoneChoice(value) {
  write(ZONE_KEY, value);
  prefs.dispatchEvent(new CustomEvent("change", { detail: { what: "timeZone" } }));
}

/** "system", "light" or "dark". */
export function themeChoice() {
  return read(THEME_KEY, ["system", "light", "dark"], "system");
}

const darkQuery = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;

/** The theme in force: "light" or "dark". */
export function effectiveTheme() {
  const choice = themeChoice();
  if (choice !== "system") return choice;
  return darkQuery && darkQuery.matches ? "dark" : "light";
}

export function applyTheme() {
  document.documentElement.dataset.theme = effectiveTheme();
}

export function setThemeChoice(value) {
  write(THEME_KEY, value);
  applyTheme();
  prefs.dispatchEvent(new CustomEvent("change", { detail: { what: "theme" } }));
}

darkQuery?.addEventListener("change", () => {
  if (themeChoice() !== "system") return;
  applyTheme();
  prefs.dispatchEvent(new CustomEvent("change", { detail: { what: "theme" } }));
});

/** A CSS custom property of the page (canvas drawings follow the theme through these). */
export function cssColor(name, fallback) {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

applyTheme();

// Backfills: every backfill, newest first, with filters by status and job, and cursor pages.
import { graphql } from "../api.js";
import { selectionLabel } from "../assets.js";
import { buildHash, debounce, errorBox, h, replace, timeAgo } from "../dom.js";
import { watch } from "../live.js";
import { displayZone } from "../prefs.js";
import { pageShortcuts } from "../shortcuts.js";
import { ACTIVE_STATUSES, BACKFILL_STATUSES, backfillBadge, backfillStatusLabel, progressBar } from "../status.js";

export const title = "Backfills";
const PAGE_SIZE = 20;

// The cursors of the pages before this one, per filter: "Newer" walks back through them.
const trails = new Map();

export function backfillName(backfill) {
  if (backfill.title) return backfill.title;
  const assets = backfill.target.assets;
  if (assets) return `Backfill of ${selectionLabel(assets)}`;
  return `Backfill of ${backfill.target.job ?? "?"}`;
}

function targetCell(target) {
  if (target.assets) {
    return h("a", { href: "#/assets", class: "mono", title: `Assets: ${target.assets.assets.join(", ")}` }, selectionLabel(target.assets));
  }
  return h("a", { href: buildHash("/backfills", { target: target.job }), class: "mono" }, target.job ?? "–");
}

// The filters, all in the URL (deep links; the back button walks through them). Text fields
// apply as you type (after a pause) or on Enter.
const FILTER_KEYS = ["status", "target", "creator", "team", "tag", "search", "from", "to"];
let refocus = null; // the field being typed in when the URL changed, to give it back its caret

function filtersOf(query) {
  const out = {};
  for (const key of FILTER_KEYS) if (query[key]) out[key] = String(query[key]);
  if (query.job && !out.target) out.target = String(query.job); // links of earlier versions
  if (out.status && !BACKFILL_STATUSES.includes(out.status)) delete out.status;
  return out;
}

/** The start of a day ("2026-12-03") in the zone times are shown in, as an instant. */
export function dayStart(day, zone = displayZone()) {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) return null;
  if (zone === "UTC") return `${day}T00:00:00Z`;
  const local = new Date(`${day}T00:00:00`);
  return Number.isNaN(local.getTime()) ? null : local.toISOString();
}

function nextDay(day) {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

/** The API's BackfillFilter of the page's filters. */
export function apiFilter(filters, assetNames) {
  const filter = {};
  if (filters.status) filter.statuses = [filters.status];
  if (filters.target) {
    if (assetNames.has(filters.target)) filter.asset = filters.target;
    else filter.job = filters.target;
  }
  if (filters.creator) filter.creator = filters.creator;
  if (filters.team) filter.team = filters.team;
  if (filters.search) filter.search = filters.search;
  if (filters.tag) {
    filter.tags = filters.tag
      .split(",")
      .map((pair) => pair.trim())
      .filter(Boolean)
      .map((pair) => {
        const at = pair.indexOf("=");
        return at < 0 ? { key: pair, value: "" } : { key: pair.slice(0, at).trim(), value: pair.slice(at + 1).trim() };
      });
  }
  const after = filters.from ? dayStart(filters.from) : null;
  const before = filters.to ? dayStart(nextDay(filters.to)) : null;
  if (after) filter.createdAfter = after;
  if (before) filter.createdBefore = before;
  return filter;
}

let targetNames = null; // {jobs, assets}, loaded once per page load

async function loadTargetNames() {
  if (!targetNames) {
    targetNames = Promise.all([graphql("UiJobNames"), graphql("UiAssets").catch(() => ({ assets: [] }))]).then(([j, a]) => ({
      jobs: j.jobs.map((x) => x.name).sort(),
      assets: a.assets.map((x) => x.name).sort(),
    }));
    targetNames.catch(() => {
      targetNames = null;
    });
  }
  return targetNames;
}

export async function render(root, { query }) {
  const filters = filtersOf(query);
  const after = query.after || null;
  const filterKey = JSON.stringify(filters);
  const trail = trails.get(filterKey) || [];
  trails.set(filterKey, trail);
  const filtered = Object.keys(filters).length > 0;
  const names = await loadTargetNames().catch(() => ({ jobs: [], assets: [] }));
  const assetNames = new Set(names.assets);

  const go = (changes, { keepTrail = false } = {}) => {
    const next = { ...filters, ...changes };
    for (const key of Object.keys(next)) if (!next[key]) delete next[key];
    if (!keepTrail) trails.delete(JSON.stringify(filtersOf(next)));
    location.hash = buildHash("/backfills", next);
  };

  const field = (id, label, control, help) =>
    h("div", { class: "field" }, h("label", { for: id }, label), control, help ? h("p", { class: "help" }, help) : null);

  function textInput(id, key, attributes = {}) {
    const input = h("input", { id, name: key, type: "search", value: filters[key] || "", autocomplete: "off", ...attributes });
    const apply = () => {
      if ((input.value.trim() || "") === (filters[key] || "")) return;
      refocus = { id, start: input.selectionStart, end: input.selectionEnd };
      go({ [key]: input.value.trim() });
    };
    const later = debounce(apply, 600);
    input.addEventListener("input", later);
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        later.cancel();
        apply();
      }
    });
    input.addEventListener("change", () => {
      later.cancel();
      apply();
    });
    return input;
  }

  const statusSelect = h(
    "select",
    { id: "filter-status", name: "status", onchange: (e) => go({ status: e.target.value }) },
    h("option", { value: "" }, "All statuses"),
    BACKFILL_STATUSES.map((s) => h("option", { value: s, selected: s === filters.status }, backfillStatusLabel(s))),
  );
  const known = names.jobs.includes(filters.target) || assetNames.has(filters.target);
  const targetSelect = h(
    "select",
    { id: "filter-target", name: "target", onchange: (e) => go({ target: e.target.value }) },
    h("option", { value: "" }, "All jobs and assets"),
    names.jobs.length ? h("optgroup", { label: "Jobs" }, names.jobs.map((n) => h("option", { value: n, selected: n === filters.target }, n))) : null,
    names.assets.length ? h("optgroup", { label: "Assets" }, names.assets.map((n) => h("option", { value: n, selected: n === filters.target }, n))) : null,
    filters.target && !known ? h("option", { value: filters.target, selected: true }, filters.target) : null,
  );
  const dateInput = (id, key) => {
    const input = h("input", { id, name: key, type: "date", value: filters[key] || "" });
    input.addEventListener("change", () => go({ [key]: input.value }));
    return input;
  };
  const zone = displayZone();

  const tableBody = h("tbody");
  const pager = h("nav", { class: "pager", "aria-label": "Pages" });
  const content = h("div", { class: "card card-flush" });

  replace(
    root,
    h(
      "div",
      { class: "page-header" },
      h("div", {}, h("h1", {}, "Backfills"), h("p", { class: "lede" }, "Every backfill of every job, newest first.")),
      h("a", { class: "btn btn-primary", href: "#/launch" }, "Launch a backfill"),
    ),
    h(
      "form",
      { class: "filters-grid", id: "backfill-filters", role: "search", "aria-label": "Filter backfills", onsubmit: (e) => e.preventDefault() },
      field("filter-search", "Title contains", textInput("filter-search", "search", { placeholder: "text in the title", "aria-keyshortcuts": "/" })),
      field("filter-target", "Job or asset", targetSelect),
      field("filter-status", "Status", statusSelect),
      field("filter-creator", "Creator", textInput("filter-creator", "creator", { placeholder: "name or email" })),
      field("filter-team", "Team", textInput("filter-team", "team", { placeholder: "team name" })),
      field("filter-tag", "Tags", textInput("filter-tag", "tag", { placeholder: "key=value, key=value" })),
      field("filter-from", `Created from (${zone})`, dateInput("filter-from", "from")),
      field("filter-to", `Created to (${zone})`, dateInput("filter-to", "to")),
      filtered ? h("div", { class: "field" }, h("a", { class: "btn btn-ghost btn-small", href: "#/backfills", id: "filters-clear" }, "Clear filters")) : null,
    ),
    content,
    pager,
  );

  if (refocus) {
    const again = document.getElementById(refocus.id);
    if (again) {
      again.focus();
      try {
        again.setSelectionRange(refocus.start, refocus.end);
      } catch {
        /* not a text field */
      }
    }
    refocus = null;
  }
  const stopKeys = pageShortcuts([{ keys: "/", description: "Search the backfills' titles", run: () => document.getElementById("filter-search")?.focus() }]);

  let lastJson = "";
  let hasActive = true;

  function renderRows(nodes) {
    const focusedId = document.activeElement?.closest?.("tr")?.dataset.id;
    replace(
      tableBody,
      nodes.map((b) =>
        h(
          "tr",
          { dataset: { id: b.id, status: b.status } },
          h(
            "td",
            { "data-label": "Backfill" },
            h("a", { class: "row-title", href: `#/backfills/${encodeURIComponent(b.id)}` }, backfillName(b)),
            h("div", { class: "mono muted small" }, b.id),
          ),
          h("td", { "data-label": "Status" }, backfillBadge(b.status)),
          h(
            "td",
            { "data-label": "Target" },
            targetCell(b.target),
          ),
          h("td", { "data-label": "Progress", class: "cell-progress" }, progressBar(b.counts, { compact: true, status: b.status })),
          h("td", { "data-label": "Created" }, timeAgo(b.createdAt)),
          h("td", { "data-label": "Creator" }, b.creator ? b.creator : h("span", { class: "muted" }, "–")),
        ),
      ),
    );
    if (focusedId) tableBody.querySelector(`tr[data-id="${CSS.escape(focusedId)}"] a`)?.focus();
  }

  async function refresh() {
    const filter = apiFilter(filters, assetNames);
    const data = await graphql("UiBackfills", { first: PAGE_SIZE, after, filter });
    const { nodes, pageInfo } = data.backfills;
    hasActive = nodes.some((b) => ACTIVE_STATUSES.has(b.status));
    const json = JSON.stringify(data);
    if (json === lastJson) return;
    const firstRender = lastJson === "";
    lastJson = json;
    if (!nodes.length) {
      replace(
        content,
        h(
          "div",
          { class: "empty" },
          h("p", {}, filtered ? "No backfill matches these filters." : "No backfill yet."),
          h("a", { class: "btn btn-primary", href: "#/launch" }, "Launch a backfill"),
        ),
      );
    } else {
      if (firstRender || !content.contains(tableBody)) {
        replace(
          content,
          h(
            "table",
            { class: "table table-responsive" },
            h("caption", { class: "visually-hidden" }, "Backfills"),
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                h("th", { scope: "col" }, "Backfill"),
                h("th", { scope: "col" }, "Status"),
                h("th", { scope: "col" }, "Target"),
                h("th", { scope: "col" }, "Progress"),
                h("th", { scope: "col" }, "Created"),
                h("th", { scope: "col" }, "Creator"),
              ),
            ),
            tableBody,
          ),
        );
      }
      renderRows(nodes);
    }
    const newer = after
      ? h(
          "button",
          {
            type: "button",
            class: "btn btn-secondary btn-small",
            onclick: () => {
              const previous = trail.pop();
              go({ after: previous || "" }, { keepTrail: true });
            },
          },
          trail.length ? "← Newer" : "← First page",
        )
      : null;
    const older = pageInfo.hasNextPage
      ? h(
          "button",
          {
            type: "button",
            class: "btn btn-secondary btn-small",
            onclick: () => {
              trail.push(after || "");
              go({ after: pageInfo.endCursor }, { keepTrail: true });
            },
          },
          "Older →",
        )
      : null;
    replace(pager, newer, older);
  }

  try {
    await refresh();
  } catch (error) {
    replace(content, errorBox(error, "Could not load backfills."));
  }
  const stopWatch = watch({ refresh: () => refresh(), interval: hasActive ? 2000 : 5000 });
  return () => {
    stopWatch();
    stopKeys();
  };
}

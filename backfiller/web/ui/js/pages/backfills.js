// Backfills: every backfill, newest first, with filters by status and job, and cursor pages.
import { graphql } from "../api.js";
import { selectionLabel } from "../assets.js";
import { buildHash, errorBox, h, replace, timeAgo } from "../dom.js";
import { watch } from "../live.js";
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
  return h("a", { href: buildHash("/backfills", { job: target.job }), class: "mono" }, target.job ?? "–");
}

export async function render(root, { query }) {
  const status = BACKFILL_STATUSES.includes(query.status) ? query.status : "";
  const job = query.job || "";
  const after = query.after || null;
  const filterKey = `${status}|${job}`;
  const trail = trails.get(filterKey) || [];
  trails.set(filterKey, trail);

  const go = (params) => {
    location.hash = buildHash("/backfills", params);
  };

  const statusSelect = h(
    "select",
    {
      id: "filter-status",
      name: "status",
      onchange: (e) => {
        trails.delete(`${e.target.value}|${job}`);
        go({ status: e.target.value, job });
      },
    },
    h("option", { value: "" }, "All statuses"),
    BACKFILL_STATUSES.map((s) => h("option", { value: s, selected: s === status }, backfillStatusLabel(s))),
  );
  const jobSelect = h(
    "select",
    {
      id: "filter-job",
      name: "job",
      onchange: (e) => {
        trails.delete(`${status}|${e.target.value}`);
        go({ status, job: e.target.value });
      },
    },
    h("option", { value: "" }, "All jobs"),
    job ? h("option", { value: job, selected: true }, job) : null,
  );

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
      { class: "filters", role: "search", "aria-label": "Filter backfills", onsubmit: (e) => e.preventDefault() },
      h("div", { class: "field field-inline" }, h("label", { for: "filter-status" }, "Status"), statusSelect),
      h("div", { class: "field field-inline" }, h("label", { for: "filter-job" }, "Job"), jobSelect),
      status || job ? h("a", { class: "btn btn-ghost btn-small", href: "#/backfills" }, "Clear filters") : null,
    ),
    content,
    pager,
  );

  graphql("UiJobNames")
    .then((data) => {
      const names = data.jobs.map((j) => j.name).sort();
      replace(
        jobSelect,
        h("option", { value: "" }, "All jobs"),
        names.map((name) => h("option", { value: name, selected: name === job }, name)),
        job && !names.includes(job) ? h("option", { value: job, selected: true }, job) : null,
      );
    })
    .catch(() => {});

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
          h("td", { "data-label": "Progress", class: "cell-progress" }, progressBar(b.counts, { compact: true })),
          h("td", { "data-label": "Created" }, timeAgo(b.createdAt)),
          h("td", { "data-label": "Creator" }, b.creator ? b.creator : h("span", { class: "muted" }, "–")),
        ),
      ),
    );
    if (focusedId) tableBody.querySelector(`tr[data-id="${CSS.escape(focusedId)}"] a`)?.focus();
  }

  async function refresh() {
    const filter = {};
    if (status) filter.statuses = [status];
    if (job) filter.job = job;
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
          h("p", {}, status || job ? "No backfill matches these filters." : "No backfill yet."),
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
              go({ status, job, after: previous || undefined });
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
              go({ status, job, after: pageInfo.endCursor });
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
  return watch({ refresh: () => refresh(), interval: hasActive ? 2000 : 5000 });
}

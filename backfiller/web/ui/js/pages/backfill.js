// One backfill: progress, the partition strip, steering buttons, runs, logs and events.
import { graphql, randomId } from "../api.js";
import { assetKeyResolver, figures, loadAssetGraph, selectionLabel } from "../assets.js";
import { buildHash, errorBox, formatNumber, formatTime, h, replace, serialized, throttle, timeAgo } from "../dom.js";
import { displayZone } from "../prefs.js";
import { pageShortcuts } from "../shortcuts.js";
import { RunTimeline, timelineSection } from "../timeline.js";
import { AssetGraph } from "../graph.js";
import { liveState, watch } from "../live.js";
import { jobKeyResolver, openLogs, runsTable, showPartition } from "../runs.js";
import { TERMINAL_STATUSES, backfillBadge, backfillStatusLabel, countChips, progressBar } from "../status.js";
import { PartitionStrip } from "../strip.js";
import { backfillName } from "./backfills.js";

const UPDATABLE_STATUSES = new Set(["REQUESTED", "RUNNING", "PAUSED"]);

export const title = "Backfill";

const RUN_STATUSES = ["QUEUED", "RUNNING", "SUCCESS", "FAILED", "CANCELED"];
const RETRY_CHOICES = [
  { value: "FAILED", label: "failed partitions", include: ["FAILED"] },
  { value: "FAILED_CANCELED", label: "failed and canceled", include: ["FAILED", "CANCELED"] },
  { value: "ALL", label: "everything not succeeded", include: ["FAILED", "CANCELED", "NOT_RUN"] },
];

function selectionText(selection) {
  if (selection.all) return "All partitions";
  if (selection.range) return `${selection.range.start} → ${selection.range.end}`;
  if (selection.keys) {
    const shown = selection.keys.slice(0, 5).join(", ");
    return selection.keys.length > 5 ? `${shown} … (${formatNumber(selection.keys.length)} keys)` : shown;
  }
  return "–";
}

function fact(label, value) {
  return h("div", {}, h("dt", {}, label), h("dd", {}, value ?? h("span", { class: "muted" }, "–")));
}

const EVENT_TONES = {
  LAUNCHED: "info",
  STARTED: "running",
  PAUSED: "warning",
  RESUMED: "running",
  CANCEL_REQUESTED: "warning",
  CANCELED: "neutral",
  RUN_FAILED: "danger",
  RETRIED: "info",
  COMPLETED: "success",
  FAILED: "danger",
};

export async function render(root, { params }) {
  const id = params[0];
  let backfill = null;
  let stripLoadedAfterEnd = false;
  let runFilter = "";
  let runsPaged = false;
  let eventsCursor = null;

  const header = h("div", { class: "page-header" });
  const alertArea = h("div");
  const actions = h("div", { class: "actions", role: "group", "aria-label": "Steer this backfill" });
  const progressCard = h("section", { class: "card", "aria-labelledby": "progress-title" });
  const detailsCard = h("section", { class: "card", "aria-labelledby": "details-title" });
  const partitionPanel = h("div", { class: "partition-panel", hidden: true, "aria-live": "polite" });
  const runsBody = h("div");
  const runsMore = h("div", { class: "table-footer" });
  const eventsList = h("ol", { class: "timeline" });
  const eventsMore = h("div", { class: "table-footer" });
  const liveIndicator = h("span", { class: "live-indicator", dataset: { mode: "polling" } }, "Updating");

  let strip = null;
  const stripHolder = h("div", { class: "strip-holder" }, h("p", { class: "muted" }, "Loading partitions…"));
  const stripTiming = h("p", { class: "muted small strip-timing" });
  const stripZone = h("p", { class: "muted small zone-note", id: "strip-zone" });
  const stripTitle = h("h2", { id: "partitions-title" }, "Partitions");
  // An asset backfill: the graph of its assets with their progress, and the strip of one asset.
  const assetsCard = h("section", { class: "card", id: "backfill-assets", "aria-labelledby": "assets-title", hidden: true });
  let graph = null;
  let assetProgress = new Map();
  let stripAsset = null;

  // The run timeline (js/timeline.js): a bar per run, grouped, zoomable; a click opens the run.
  const timeline = new RunTimeline({ onOpen: (runId) => openLogs(runId) });
  const { card: timelineCard, timing: timelineTiming } = timelineSection(timeline);

  const runStatusSelect = h(
    "select",
    {
      id: "runs-status",
      onchange: (e) => {
        runFilter = e.target.value;
        if (!runFilter && !runsPaged && view) showViewRuns();
        else loadRuns();
      },
    },
    h("option", { value: "" }, "All statuses"),
    RUN_STATUSES.map((s) => h("option", { value: s }, s === "SUCCESS" ? "Success" : s[0] + s.slice(1).toLowerCase())),
  );

  replace(
    root,
    h("nav", { class: "breadcrumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/backfills" }, "Backfills"), h("span", { "aria-hidden": "true" }, "/"), h("span", { class: "mono" }, id)),
    header,
    alertArea,
    actions,
    h("div", { class: "grid grid-2" }, progressCard, detailsCard),
    assetsCard,
    h(
      "section",
      { class: "card", "aria-labelledby": "partitions-title" },
      h("div", { class: "card-header" }, stripTitle, stripTiming),
      stripHolder,
      partitionPanel,
    ),
    timelineCard,
    h(
      "div",
      { class: "grid grid-wide-narrow" },
      h(
        "section",
        { class: "card card-flush", "aria-labelledby": "runs-title" },
        h(
          "div",
          { class: "card-header card-header-padded" },
          h("h2", { id: "runs-title" }, "Runs"),
          h("div", { class: "field field-inline" }, h("label", { for: "runs-status" }, "Status"), runStatusSelect),
        ),
        runsBody,
        runsMore,
      ),
      h(
        "section",
        { class: "card", "aria-labelledby": "events-title" },
        h("div", { class: "card-header" }, h("h2", { id: "events-title" }, "Events")),
        eventsList,
        eventsMore,
      ),
    ),
  );

  // --- steering buttons ----------------------------------------------------------------------

  function actionButton({ name, label, busyLabel, variant, run, enabled, confirmLabel }) {
    const error = h("span", { class: "action-error", role: "alert", id: `${name}-error` });
    const button = h("button", {
      type: "button",
      class: `btn ${variant}`,
      dataset: { action: name },
      "aria-describedby": `${name}-error`,
    }, label);
    let armed = false;
    let disarmTimer = null;
    button.disabled = !enabled;
    button.addEventListener("click", async () => {
      if (confirmLabel && !armed) {
        armed = true;
        button.textContent = confirmLabel;
        button.classList.add("btn-armed");
        disarmTimer = setTimeout(() => {
          armed = false;
          button.textContent = label;
          button.classList.remove("btn-armed");
        }, 5000);
        return;
      }
      clearTimeout(disarmTimer);
      armed = false;
      button.classList.remove("btn-armed");
      button.disabled = true;
      button.setAttribute("aria-busy", "true");
      button.textContent = busyLabel;
      error.textContent = "";
      try {
        const userErrors = await run();
        if (userErrors.length) error.textContent = userErrors.map((e) => e.message).join(" ");
      } catch (e) {
        error.textContent = e.message;
      } finally {
        button.removeAttribute("aria-busy");
        button.textContent = label;
        button.disabled = false;
        await refresh().catch(() => {});
      }
    });
    return { element: h("div", { class: "action" }, button, error), button };
  }

  async function steer(operation, field) {
    const data = await graphql(operation, { id });
    return data[field].userErrors;
  }

  const retryChoice = h(
    "select",
    { id: "retry-include", "aria-label": "Which partitions to retry" },
    RETRY_CHOICES.map((c) => h("option", { value: c.value }, c.label)),
  );
  const retryKey = randomId();
  let buttons = null;

  function retryable() {
    const c = backfill.counts;
    return TERMINAL_STATUSES.has(backfill.status) && c.failed + c.canceled + c.pending + c.queued > 0;
  }

  let retryTouched = false;
  retryChoice.addEventListener("change", () => {
    retryTouched = true;
  });
  function suggestRetry() {
    const c = backfill.counts;
    if (!retryTouched) retryChoice.value = c.failed ? "FAILED" : c.canceled ? "FAILED_CANCELED" : "ALL";
  }

  function renderActions() {
    const status = backfill.status;
    suggestRetry();
    const terminal = TERMINAL_STATUSES.has(status);
    const pause = actionButton({
      name: "pause",
      label: "Pause",
      busyLabel: "Pausing…",
      variant: "btn-secondary",
      enabled: status === "REQUESTED" || status === "RUNNING",
      run: () => steer("UiPauseBackfill", "pauseBackfill"),
    });
    const resume = actionButton({
      name: "resume",
      label: "Resume",
      busyLabel: "Resuming…",
      variant: "btn-secondary",
      enabled: status === "PAUSED",
      run: () => steer("UiResumeBackfill", "resumeBackfill"),
    });
    const cancel = actionButton({
      name: "cancel",
      label: "Cancel",
      busyLabel: "Canceling…",
      confirmLabel: "Confirm cancel",
      variant: "btn-danger",
      enabled: !terminal && status !== "CANCELING",
      run: () => steer("UiCancelBackfill", "cancelBackfill"),
    });
    const retry = actionButton({
      name: "retry",
      label: "Retry",
      busyLabel: "Retrying…",
      variant: "btn-primary",
      enabled: retryable(),
      run: async () => {
        const choice = RETRY_CHOICES.find((c) => c.value === retryChoice.value) || RETRY_CHOICES[0];
        const data = await graphql("UiRetryBackfill", {
          id,
          include: choice.include,
          idempotencyKey: `${retryKey}-${choice.value}`,
        });
        const payload = data.retryBackfill;
        if (payload.backfill) location.hash = `#/backfills/${encodeURIComponent(payload.backfill.id)}`;
        return payload.userErrors;
      },
    });
    const updatable = () => UPDATABLE_STATUSES.has(backfill.status);
    const capInput = h("input", {
      type: "number",
      min: "1",
      id: "update-max-concurrent",
      class: "input input-small",
      placeholder: "no limit",
      "aria-label": "Max concurrent runs (empty: no limit of its own)",
      value: backfill.maxConcurrentRuns ? String(backfill.maxConcurrentRuns) : "",
    });
    const priorityInput = h("input", {
      type: "number",
      id: "update-priority",
      class: "input input-small",
      "aria-label": "Priority",
      value: String(backfill.priority),
    });
    const update = actionButton({
      name: "update",
      label: "Apply",
      busyLabel: "Applying…",
      variant: "btn-secondary",
      enabled: updatable(),
      run: async () => {
        const input = { id };
        const cap = capInput.value.trim() === "" ? null : Number(capInput.value);
        if (cap !== (backfill.maxConcurrentRuns ?? null)) input.maxConcurrentRuns = cap;
        const priority = Number(priorityInput.value);
        if (priorityInput.value.trim() !== "" && priority !== backfill.priority) input.priority = priority;
        if (Object.keys(input).length === 1) return [];
        const data = await graphql("UiUpdateBackfill", { input });
        return data.updateBackfill.userErrors;
      },
    });
    buttons = { pause, resume, cancel, retry, update };
    replace(
      actions,
      pause.element,
      resume.element,
      cancel.element,
      h(
        "div",
        { class: "action action-update" },
        h("label", { for: "update-max-concurrent" }, "Max runs"),
        capInput,
        h("label", { for: "update-priority" }, "Priority"),
        priorityInput,
        update.button,
        update.element.querySelector(".action-error"),
      ),
      h("div", { class: "action action-retry" }, retry.button, retryChoice, retry.element.querySelector(".action-error")),
      h("div", { class: "actions-end" }, liveIndicator),
    );
  }

  function updateActionStates() {
    if (!buttons) return renderActions();
    suggestRetry();
    const status = backfill.status;
    const terminal = TERMINAL_STATUSES.has(status);
    const wanted = {
      pause: status === "REQUESTED" || status === "RUNNING",
      resume: status === "PAUSED",
      cancel: !terminal && status !== "CANCELING",
      retry: retryable(),
      update: UPDATABLE_STATUSES.has(status),
    };
    for (const [name, enabled] of Object.entries(wanted)) {
      const button = buttons[name].button;
      if (button.getAttribute("aria-busy") === "true") continue;
      button.disabled = !enabled;
    }
  }

  // --- header, progress, details -------------------------------------------------------------

  function renderHeader() {
    const b = backfill;
    document.title = `${backfillName(b)} · Backfiller`;
    replace(
      header,
      h(
        "div",
        {},
        h("h1", {}, backfillName(b), " ", backfillBadge(b.status)),
        h(
          "p",
          { class: "lede" },
          b.target.assets
            ? ["Assets ", h("a", { href: "#/assets", class: "mono" }, selectionLabel(b.target.assets)), ` (${b.target.assets.assets.length} in all)`]
            : ["Job ", h("a", { href: buildHash("/backfills", { target: b.target.job }), class: "mono" }, b.target.job ?? "?")],
          " · created ",
          timeAgo(b.createdAt),
          b.creator ? ` by ${b.creator}` : "",
        ),
      ),
    );
    replace(alertArea, b.error ? h("div", { class: "alert alert-error", role: "alert" }, h("strong", {}, "Failed: "), b.error) : null);
    replace(
      progressCard,
      h("div", { class: "card-header" }, h("h2", { id: "progress-title" }, "Progress")),
      progressBar(b.counts, { status: b.status }),
      countChips(b.counts),
    );
    replace(
      detailsCard,
      h("div", { class: "card-header" }, h("h2", { id: "details-title" }, "Details")),
      h(
        "dl",
        { class: "facts" },
        fact("Status", backfillStatusLabel(b.status)),
        fact("Selection", selectionText(b.partitionSelection)),
        fact("Reprocess", b.reprocess.replaceAll("_", " ").toLowerCase()),
        fact("Order", b.order === "NEWEST_FIRST" ? "newest first" : "oldest first"),
        fact("Max concurrent runs", b.maxConcurrentRuns ? String(b.maxConcurrentRuns) : "job default"),
        fact("Priority", String(b.priority)),
        fact("Team", b.team),
        fact("Created", formatTime(b.createdAt)),
        fact("Started", b.startedAt ? formatTime(b.startedAt) : null),
        fact("Ended", b.endedAt ? formatTime(b.endedAt) : null),
        fact("Creator", b.creator),
        fact("Tags", b.tags.length ? h("span", { class: "tags" }, b.tags.map((t) => h("span", { class: "tag" }, `${t.key}=${t.value}`))) : null),
        b.parent ? fact("Retry of", h("a", { href: `#/backfills/${encodeURIComponent(b.parent.id)}` }, backfillName({ ...b.parent, target: b.target }))) : null,
        b.retries.length
          ? fact("Retried as", h("span", { class: "tags" }, b.retries.map((r) => h("a", { href: `#/backfills/${encodeURIComponent(r.id)}` }, r.title || r.id))))
          : null,
        b.description ? fact("Description", b.description) : null,
        b.runConfig ? fact("Run config", h("pre", { class: "code" }, JSON.stringify(b.runConfig, null, 2))) : null,
      ),
    );
    updateActionStates();
  }

  async function refreshHeader() {
    const data = await graphql("UiBackfill", { id });
    if (!data.backfill) throw new Error(`No backfill ${id}.`);
    // Status and counts come from the page's one consistent read (loadView), not from here.
    backfill = view ? { ...data.backfill, status: view.status, counts: view.counts } : data.backfill;
    renderHeader();
  }

  // --- the strip -----------------------------------------------------------------------------

  // --- the assets of an asset backfill --------------------------------------------------------

  function assetNode(asset) {
    const progress = assetProgress.get(asset.name);
    if (!progress) return h("p", { class: "muted" }, "Not in this backfill any more.");
    const c = progress.counts;
    return [
      progressBar(c, { compact: true }),
      figures([
        ["RUNNING", c.running, "running"],
        ["QUEUED", c.queued, "queued"],
        ["FAILED", c.failed, "failed"],
        ["SKIPPED", c.skipped, "skipped"],
        ["CANCELED", c.canceled, "canceled"],
      ]),
    ];
  }

  function showAssetStrip(name) {
    const progress = assetProgress.get(name);
    if (!progress) return;
    if (stripAsset !== name || !strip) {
      stripAsset = name;
      if (strip) strip.destroy();
      partitionPanel.hidden = true;
      strip = new PartitionStrip({
        label: `Status of the ${formatNumber(progress.counts.total)} partitions of ${name} in this backfill`,
        resolveKey: assetKeyResolver(name),
        onSelect: (selection) => showPartition(partitionPanel, name, selection, { currentBackfill: id }),
      });
      replace(stripHolder, strip.element);
      replace(stripTitle, "Partitions of ", h("span", { class: "mono" }, name));
    }
    strip.setRanges(progress.partitionStatusRanges, progress.counts.total);
    stripTiming.textContent = `${formatNumber(progress.counts.total)} partitions of this asset · choose another asset in the graph`;
  }

  async function loadAssetProgress() {
    const data = await graphql("UiBackfillAssets", { id });
    const assets = data.backfill?.assets;
    if (!assets) return;
    assetProgress = new Map(assets.map((a) => [a.name, a]));
    if (!graph && assets.length) {
      let definitions = [];
      try {
        definitions = await loadAssetGraph();
      } catch {
        /* no edges, the levels still show the order */
      }
      const upstream = new Map(definitions.map((d) => [d.name, d.upstream]));
      graph = new AssetGraph({
        label: "Assets of this backfill by dependency level, with their progress",
        assets: assets.map((a) => ({ name: a.name, level: a.level, upstream: upstream.get(a.name) || [] })),
        renderNode: assetNode,
        onSelect: (name) => {
          showAssetStrip(name);
          partitionPanel.hidden = true;
        },
      });
      replace(
        assetsCard,
        h("div", { class: "card-header" }, h("h2", { id: "assets-title" }, "Assets"), h("p", { class: "muted small" }, "Each asset's partitions in this backfill. Choose one to see its partitions below.")),
        graph.element,
      );
      assetsCard.hidden = false;
      graph.select(assets[0].name, { notify: false });
    } else if (graph) {
      for (const a of assets) graph.update(a.name);
    }
    showAssetStrip(stripAsset || assets[0]?.name);
    stripHolder.dataset.ready = "true";
    if (backfill && TERMINAL_STATUSES.has(backfill.status)) stripLoadedAfterEnd = true;
  }

  /** The strip of a job backfill, from the view's ranges (one read with the counts). */
  function showStrip(timing) {
    if (backfill?.target.assets) {
      loadAssetProgress().catch(() => {});
      return;
    }
    const data = { backfill: { counts: view.counts, partitionStatusRanges: view.partitionStatusRanges } };
    const { started, fetched } = timing;
    if (!strip) {
      strip = new PartitionStrip({
        label: `Status of the ${formatNumber(data.backfill.counts.total)} partitions of this backfill`,
        resolveKey: jobKeyResolver(backfill.target.job),
        onSelect: (selection) =>
          showPartition(partitionPanel, backfill.target.job, selection, {
            currentBackfill: id,
            onUnknownKey: (runStatus) => {
              runStatusSelect.value = runStatus;
              runFilter = runStatus;
              loadRuns();
              runsBody.scrollIntoView({ block: "start" });
            },
          }),
      });
      replace(stripHolder, strip.element, stripZone);
      graphql("UiJobPartitions", { name: backfill.target.job })
        .then((d) => {
          const p = d.job?.partitions;
          if (p?.kind === "TIME") stripZone.textContent = `Partition keys are in the job's time zone, ${p.timezone || "UTC"} (timestamps on this page are in ${displayZone()}).`;
        })
        .catch(() => {});
    }
    strip.setRanges(data.backfill.partitionStatusRanges, data.backfill.counts.total);
    const drawn = performance.now();
    stripTiming.textContent = `${formatNumber(data.backfill.counts.total)} partitions in ${formatNumber(data.backfill.partitionStatusRanges.length)} range${data.backfill.partitionStatusRanges.length === 1 ? "" : "s"} · loaded in ${Math.round(fetched - started)} ms, drawn in ${Math.round(drawn - fetched)} ms`;
    stripHolder.dataset.ready = "true";
    if (backfill && TERMINAL_STATUSES.has(backfill.status)) stripLoadedAfterEnd = true;
  }

  // --- the one consistent read: progress, strip, runs table and timeline ---------------------

  let view = null;
  const TIMELINE_RUNS = 10000;

  let viewTiming = null;

  async function loadView() {
    const started = performance.now();
    const data = await graphql("UiBackfillTimeline", { id, lastRuns: TIMELINE_RUNS });
    const fetched = performance.now();
    if (!data.backfill) return;
    view = data.backfill.timeline;
    viewTiming = { started, fetched };
    if (backfill) applyView();
  }

  /** Draw everything the view holds: one read, so the numbers agree with each other. */
  function applyView() {
    backfill = { ...backfill, status: view.status, counts: view.counts };
    renderHeader();
    showStrip(viewTiming);
    if (!runFilter && !runsPaged) showViewRuns();
    const drawStarted = performance.now();
    timeline.setRuns(view.runs);
    timelineTiming.textContent = `${formatNumber(view.runs.ids.length)} run${view.runs.ids.length === 1 ? "" : "s"}${view.truncated ? ` (the newest, of ${formatNumber(view.totalRuns)})` : ""} · drawn in ${Math.round(performance.now() - drawStarted)} ms · read at ${formatTime(view.readAt)}`;
    timelineCard.dataset.ready = "true";
    timelineCard.dataset.readAt = view.readAt;
    if (TERMINAL_STATUSES.has(view.status)) stripLoadedAfterEnd = true;
  }

  /** The newest runs of the view, as the runs table shows them (first page). */
  function showViewRuns() {
    const r = view.runs;
    const rows = [];
    const now = Date.now();
    for (let k = 0; k < Math.min(25, r.ids.length); k++) {
      const end = r.endedAt[k] ?? (r.startedAt[k] != null ? now / 1000 : null);
      rows.push({
        id: r.ids[k],
        job: r.jobs[k],
        asset: backfill?.target.assets ? r.jobs[k] : null,
        partitionKey: r.partitionKeys[k],
        attempt: r.attempts[k],
        status: r.statuses[k],
        failureReason: r.failureReasons[k],
        errorMessage: r.errorMessages[k],
        queuedAt: new Date(r.queuedAt[k] * 1000).toISOString(),
        startedAt: r.startedAt[k] != null ? new Date(r.startedAt[k] * 1000).toISOString() : null,
        endedAt: r.endedAt[k] != null ? new Date(r.endedAt[k] * 1000).toISOString() : null,
        durationSeconds: r.startedAt[k] != null ? end - r.startedAt[k] : null,
        backfillId: id,
      });
    }
    if (rows.length) replace(runsBody, runsTable(rows, { caption: "Runs of this backfill" }));
    else replace(runsBody, h("p", { class: "empty-inline muted" }, "No run yet."));
    replace(
      runsMore,
      r.ids.length > 25
        ? h("button", { type: "button", class: "btn btn-secondary btn-small", onclick: () => {
            runsPaged = true;
            loadRuns({ more: false }).then(() => loadRuns({ more: true }));
          } }, "Load more runs")
        : null,
    );
  }

  // --- runs and events -----------------------------------------------------------------------

  let runsAfter = null;
  async function loadRuns({ more = false } = {}) {
    if (!more) {
      runsAfter = null;
      runsPaged = false;
    }
    const data = await graphql("UiBackfillRuns", {
      id,
      first: 25,
      after: runsAfter,
      statuses: runFilter ? [runFilter] : null,
    });
    const connection = data.backfill?.runs;
    if (!connection) return;
    const rows = connection.nodes;
    if (more) {
      const table = runsBody.querySelector("tbody");
      const fresh = runsTable(rows).querySelector("tbody");
      if (table) table.append(...fresh.children);
    } else if (rows.length) {
      replace(runsBody, runsTable(rows, { caption: "Runs of this backfill" }));
    } else {
      replace(runsBody, h("p", { class: "empty-inline muted" }, runFilter ? "No run in this status." : "No run yet."));
    }
    runsAfter = connection.pageInfo.endCursor;
    replace(
      runsMore,
      connection.pageInfo.hasNextPage
        ? h(
            "button",
            {
              type: "button",
              class: "btn btn-secondary btn-small",
              onclick: () => {
                runsPaged = true;
                loadRuns({ more: true });
              },
            },
            "Load more runs",
          )
        : null,
    );
  }

  // The subscription, the polling fallback and the first load all ask for events: one at a time,
  // or two would page on from the same cursor and show every new event twice.
  const loadEvents = serialized(async () => {
    for (let page = 0; page < 10; page++) {
      const data = await graphql("UiBackfillEvents", { id, first: 50, after: eventsCursor });
      const connection = data.backfill?.events;
      if (!connection) return;
      for (const event of connection.nodes) {
        eventsList.append(
          h(
            "li",
            { class: `timeline-item tone-${EVENT_TONES[event.kind] || "neutral"}`, dataset: { kind: event.kind } },
            h("span", { class: "timeline-dot", "aria-hidden": "true" }),
            h(
              "div",
              { class: "timeline-content" },
              h("div", { class: "timeline-title" }, h("strong", {}, event.kind.replaceAll("_", " ").toLowerCase()), event.actor ? h("span", { class: "muted" }, ` by ${event.actor}`) : null),
              event.message ? h("div", { class: "timeline-message" }, event.message) : null,
              h("div", { class: "muted small" }, formatTime(event.at)),
            ),
          ),
        );
      }
      if (connection.pageInfo.endCursor) eventsCursor = connection.pageInfo.endCursor;
      if (!connection.pageInfo.hasNextPage) break;
    }
    replace(eventsMore, eventsList.children.length ? null : h("p", { class: "muted" }, "No event yet."));
  });

  // --- first load and live updates -----------------------------------------------------------

  // The view (with the strip) is the slowest answer on a large backfill: ask for it at once,
  // beside the details.
  const viewRequest = loadView();
  viewRequest.catch(() => {});
  try {
    await refreshHeader();
  } catch (error) {
    replace(root, h("nav", { class: "breadcrumbs" }, h("a", { href: "#/backfills" }, "Backfills")), errorBox(error, "Could not load this backfill."));
    return undefined;
  }
  // refreshHeader has rendered the actions (renderHeader, then updateActionStates).
  const press = (name) => () => buttons?.[name]?.button.click();
  const stopKeys = pageShortcuts([
    { keys: "p", description: "Pause this backfill", run: press("pause") },
    { keys: "r", description: "Resume this backfill", run: press("resume") },
    { keys: "c", description: "Cancel this backfill (press twice to confirm)", run: press("cancel") },
    { keys: "l", description: "Go to the run timeline", run: () => timeline.canvas.focus() },
  ]);
  await Promise.all([
    viewRequest.then(() => view && applyView()).catch((error) => replace(stripHolder, errorBox(error, "Could not load partitions."))),
    loadEvents().catch((error) => replace(eventsList, errorBox(error, "Could not load events."))),
  ]);

  // Runs paged or filtered by status come from their own query, and say so.
  const refreshDetails = throttle(() => {
    Promise.all([loadView(), runsPaged || runFilter ? loadRuns() : null, loadEvents()]).catch(() => {});
  }, 1000);

  async function refresh() {
    await loadView();
    await refreshHeader();
    await Promise.all([runsPaged || runFilter ? loadRuns() : null, loadEvents()]);
  }

  const onMode = (event) => {
    liveIndicator.dataset.mode = event.detail.mode;
    liveIndicator.textContent = event.detail.mode === "live" ? "Live" : "Updating";
    liveIndicator.title = event.detail.mode === "live" ? "Updates arrive through a subscription" : "Updates by polling";
  };
  liveState.addEventListener("mode", onMode);

  const stop = watch({
    subscription: "UiBackfillProgress",
    variables: { id },
    interval: 1500,
    refresh,
    until: () => TERMINAL_STATUSES.has(backfill.status) && stripLoadedAfterEnd,
    // An event says something changed; what the page shows comes from one read of the view,
    // so that the counts, the strip, the runs and the timeline agree.
    onEvent: (data) => {
      const progress = data && Object.values(data)[0];
      refreshDetails();
      if (progress && TERMINAL_STATUSES.has(progress.status)) refreshHeader().catch(() => {});
    },
  });

  return () => {
    stop();
    liveState.removeEventListener("mode", onMode);
    if (strip) strip.destroy();
    if (graph) graph.destroy();
    timeline.destroy();
    stopKeys();
  };
}

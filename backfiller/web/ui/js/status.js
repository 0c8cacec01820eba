// Statuses: labels, colours (shared by CSS classes and the canvas strip), badges, progress bar.
import { formatNumber, formatPercent, h } from "./dom.js";
import { cssColor } from "./prefs.js";

export const BACKFILL_STATUSES = [
  "REQUESTED",
  "RUNNING",
  "PAUSED",
  "CANCELING",
  "CANCELED",
  "COMPLETED_SUCCESS",
  "COMPLETED_FAILED",
  "FAILED",
];

const BACKFILL_LABELS = {
  REQUESTED: "Requested",
  RUNNING: "Running",
  PAUSED: "Paused",
  CANCELING: "Canceling",
  CANCELED: "Canceled",
  COMPLETED_SUCCESS: "Succeeded",
  COMPLETED_FAILED: "Completed with failures",
  FAILED: "Failed",
};

const BACKFILL_TONES = {
  REQUESTED: "info",
  RUNNING: "running",
  PAUSED: "warning",
  CANCELING: "warning",
  CANCELED: "neutral",
  COMPLETED_SUCCESS: "success",
  COMPLETED_FAILED: "danger",
  FAILED: "danger",
};

export const ACTIVE_STATUSES = new Set(["REQUESTED", "RUNNING", "PAUSED", "CANCELING"]);
export const TERMINAL_STATUSES = new Set([
  "CANCELED",
  "COMPLETED_SUCCESS",
  "COMPLETED_FAILED",
  "FAILED",
]);

// Enum values added to the API after this UI was written are shown as "Unknown" in a neutral
// look of their own (the raw value in the tooltip), never as a broken badge or a crash.
export const UNKNOWN_LABEL = "Unknown";

export function backfillStatusLabel(status) {
  return BACKFILL_LABELS[status] || UNKNOWN_LABEL;
}

/** A badge for a value this UI does not know. */
export function unknownBadge(value, dataset = {}) {
  return h(
    "span",
    { class: "badge badge-unknown", title: `Not known to this page: ${value}`, dataset: { unknown: String(value), ...dataset } },
    UNKNOWN_LABEL,
  );
}

export function backfillBadge(status) {
  if (!(status in BACKFILL_LABELS)) return unknownBadge(status, { status });
  return h("span", { class: `badge badge-${BACKFILL_TONES[status]}`, dataset: { status } }, backfillStatusLabel(status));
}

// Partition statuses, in the order they are shown; colours must match app.css (--st-*).
export const PARTITION_STATUSES = [
  "SUCCEEDED",
  "FAILED",
  "RUNNING",
  "QUEUED",
  "CANCELED",
  "SKIPPED",
  "PENDING",
  "UNKNOWN",
];

/** A partition status this UI knows, or "UNKNOWN". */
export function partitionStatusOf(status) {
  return PARTITION_STATUSES.includes(status) ? status : "UNKNOWN";
}

export const PARTITION_COLORS = {
  SUCCEEDED: "#1f9d55",
  FAILED: "#d64545",
  RUNNING: "#2f6fde",
  QUEUED: "#8fb3f0",
  CANCELED: "#7b8494",
  SKIPPED: "#c4cbd6",
  PENDING: "#e6e9ef",
  UNKNOWN: "#a78bfa",
};

/** The colours of the theme in force (app.css --st-*), for canvases. */
export function partitionColors() {
  const colors = {};
  for (const status of PARTITION_STATUSES) colors[status] = cssColor(`--st-${status.toLowerCase()}`, PARTITION_COLORS[status]);
  return colors;
}

export const PARTITION_LABELS = {
  SUCCEEDED: "Succeeded",
  FAILED: "Failed",
  RUNNING: "Running",
  QUEUED: "Queued",
  CANCELED: "Canceled",
  SKIPPED: "Skipped",
  PENDING: "Pending",
  UNKNOWN: UNKNOWN_LABEL,
};

const RUN_TONES = {
  QUEUED: "info",
  RUNNING: "running",
  SUCCESS: "success",
  FAILED: "danger",
  CANCELED: "neutral",
};

export const RUN_LABELS = {
  QUEUED: "Queued",
  RUNNING: "Running",
  SUCCESS: "Success",
  FAILED: "Failed",
  CANCELED: "Canceled",
};

export function runBadge(status) {
  if (!(status in RUN_LABELS)) return unknownBadge(status, { runStatus: status });
  return h("span", { class: `badge badge-${RUN_TONES[status]}`, dataset: { runStatus: status } }, RUN_LABELS[status]);
}

export function partitionBadge(status) {
  const known = partitionStatusOf(status);
  return h(
    "span",
    { class: "badge badge-plain", title: known === "UNKNOWN" ? `Not known to this page: ${status}` : undefined },
    h("span", { class: `swatch st-${known.toLowerCase()}`, "aria-hidden": "true" }),
    PARTITION_LABELS[known],
  );
}

const COUNT_KEYS = [
  ["succeeded", "SUCCEEDED"],
  ["failed", "FAILED"],
  ["canceled", "CANCELED"],
  ["skipped", "SKIPPED"],
  ["running", "RUNNING"],
  ["queued", "QUEUED"],
  ["pending", "PENDING"],
];

/**
 * A progress bar that says how far along it is: stacked segments per status, the percentage
 * done, and "done / total" counts.
 */
export function progressBar(counts, { compact = false, status = null } = {}) {
  const total = counts.total || 0;
  // A canceled backfill is not "done": it shows what actually completed, and says canceled.
  const stopped = status === "CANCELED" || status === "CANCELING";
  const track = h("div", { class: "progress-track", "aria-hidden": "true" });
  if (total > 0) {
    for (const [key, status] of COUNT_KEYS) {
      const value = counts[key] || 0;
      if (!value || status === "PENDING") continue;
      track.append(
        h("span", {
          class: `progress-seg st-${status.toLowerCase()}`,
          style: { width: `${(100 * value) / total}%` },
        }),
      );
    }
  }
  const completed = stopped ? counts.succeeded + counts.skipped : counts.done;
  const percentValue = stopped ? (total ? (100 * completed) / total : 0) : counts.percentDone;
  const percent = formatPercent(percentValue);
  const word = stopped ? "completed before the cancel" : "done";
  const summary = `${percent} · ${formatNumber(completed)} of ${formatNumber(total)} ${word}`;
  const details = COUNT_KEYS.filter(([key]) => counts[key])
    .map(([key]) => `${formatNumber(counts[key])} ${key}`)
    .join(", ");
  return h(
    "div",
    {
      class: compact ? "progress progress-compact" : "progress",
      role: "progressbar",
      "aria-label": "Progress",
      "aria-valuemin": "0",
      "aria-valuemax": "100",
      "aria-valuenow": String(Math.round(percentValue || 0)),
      dataset: { percent: String(Math.round(percentValue || 0)) },
      "aria-valuetext": `${summary}${details ? ` (${details})` : ""}`,
    },
    h(
      "div",
      { class: "progress-label" },
      h("span", { class: "progress-percent" }, percent, stopped ? " completed · canceled" : ""),
      h("span", { class: "progress-counts" }, `${formatNumber(completed)} / ${formatNumber(total)}`),
    ),
    track,
    compact ? null : h("div", { class: "progress-details" }, details || "nothing planned yet"),
  );
}

/** A row of count chips, one per partition status. */
export function countChips(counts) {
  return h(
    "dl",
    { class: "count-chips" },
    COUNT_KEYS.map(([key, status]) =>
      h(
        "div",
        { class: "count-chip", dataset: { count: key } },
        h("dt", {}, h("span", { class: `swatch st-${status.toLowerCase()}`, "aria-hidden": "true" }), PARTITION_LABELS[status]),
        h("dd", {}, formatNumber(counts[key] || 0)),
      ),
    ),
  );
}

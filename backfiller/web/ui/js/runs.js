// Runs: the runs table, the log viewer dialog, the runs of one partition, and key resolution.
import { graphql } from "./api.js";
import { errorBox, formatClock, formatDuration, formatNumber, formatTime, h, replace, serialized, timeAgo } from "./dom.js";
import { keyResolver } from "./keys.js";
import { PARTITION_LABELS, partitionBadge, runBadge } from "./status.js";

const MAX_KEYS_TO_LOAD = 5000;

/** A key resolver for a job's partitions (see keys.js), loading what it needs lazily. */
export function jobKeyResolver(jobName) {
  let resolver = null;
  const load = async () => {
    const data = await graphql("UiJobPartitions", { name: jobName });
    const definition = data.job?.partitions ?? null;
    return keyResolver(definition, async () => {
      if (!definition || definition.count > MAX_KEYS_TO_LOAD) return null;
      const keys = [];
      let after = null;
      for (;;) {
        const page = await graphql("UiJobKeys", { name: jobName, first: 100, after });
        const connection = page.job?.partitions.keys;
        if (!connection) return null;
        keys.push(...connection.nodes);
        if (!connection.pageInfo.hasNextPage) return keys;
        after = connection.pageInfo.endCursor;
      }
    });
  };
  return async (range, index) => {
    if (!resolver) resolver = load();
    try {
      return await (await resolver)(range, index);
    } catch {
      resolver = null;
      return null;
    }
  };
}

function failureText(run) {
  if (!run.failureReason && !run.errorMessage) return null;
  const reason = run.failureReason ? run.failureReason.replace("_", " ").toLowerCase() : "";
  return [reason, run.errorMessage].filter(Boolean).join(": ");
}

/** A table of runs, with a "Logs" button per run. */
export function runsTable(runs, { showBackfill = false, currentBackfill = null, caption = "Runs" } = {}) {
  return h(
    "table",
    { class: "table table-responsive runs-table" },
    h("caption", { class: "visually-hidden" }, caption),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "Partition"),
        h("th", { scope: "col" }, "Attempt"),
        h("th", { scope: "col" }, "Status"),
        h("th", { scope: "col" }, "Started"),
        h("th", { scope: "col" }, "Duration"),
        showBackfill ? h("th", { scope: "col" }, "Backfill") : null,
        h("th", { scope: "col" }, "Error"),
        h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Logs")),
      ),
    ),
    h(
      "tbody",
      {},
      runs.map((run) =>
        h(
          "tr",
          { dataset: { runId: run.id, status: run.status } },
          h("td", { "data-label": "Partition", class: "mono" }, run.asset ? h("span", { class: "muted" }, `${run.asset} · `) : null, run.partitionKey),
          h("td", { "data-label": "Attempt" }, String(run.attempt)),
          h("td", { "data-label": "Status" }, runBadge(run.status)),
          h("td", { "data-label": "Started" }, run.startedAt ? timeAgo(run.startedAt) : h("span", { class: "muted" }, `queued ${formatTime(run.queuedAt)}`)),
          h("td", { "data-label": "Duration" }, formatDuration(run.durationSeconds)),
          showBackfill
            ? h(
                "td",
                { "data-label": "Backfill" },
                run.backfillId === currentBackfill
                  ? h("span", { class: "muted" }, "this one")
                  : h("a", { href: `#/backfills/${encodeURIComponent(run.backfillId)}`, class: "mono small" }, run.backfillId),
              )
            : null,
          h("td", { "data-label": "Error", class: "cell-error" }, failureText(run) ?? h("span", { class: "muted" }, "–")),
          h(
            "td",
            { "data-label": "Logs" },
            h(
              "button",
              {
                type: "button",
                class: "btn btn-secondary btn-small",
                "aria-label": `Logs of ${run.partitionKey}, attempt ${run.attempt}`,
                onclick: () => openLogs(run.id),
              },
              "Logs",
            ),
          ),
        ),
      ),
    ),
  );
}

/** The log viewer: a modal dialog with the run's lines, paged, refreshed while it runs. */
export function openLogs(runId) {
  const body = h("div", { class: "log-body", tabindex: "0", "aria-label": "Log lines" });
  const header = h("div", { class: "log-header" });
  const more = h("div", { class: "log-more" });
  const closeButton = h("button", { type: "button", class: "btn btn-secondary", onclick: () => dialog.close() }, "Close");
  const dialog = h(
    "dialog",
    { class: "log-dialog", "aria-labelledby": "log-title" },
    h(
      "div",
      { class: "log-title-row" },
      h("h2", { id: "log-title" }, "Run logs"),
      closeButton,
    ),
    header,
    body,
    more,
  );
  document.body.append(dialog);
  let after = null;
  let timer = null;
  let open = true;
  const list = h("ol", { class: "log-lines" });
  replace(body, h("p", { class: "muted" }, "Loading…"));

  // The 2 s refresh and "Load more lines" both page on from `after`: one at a time.
  const load = serialized(async () => {
    try {
      const data = await graphql("UiRunLogs", { id: runId, first: 100, after });
      const run = data.run;
      if (!run) {
        replace(body, errorBox(new Error("No such run."), "Cannot show logs."));
        return;
      }
      replace(
        header,
        h(
          "dl",
          { class: "facts facts-inline" },
          h("div", {}, h("dt", {}, "Partition"), h("dd", { class: "mono" }, run.partitionKey)),
          h("div", {}, h("dt", {}, "Attempt"), h("dd", {}, String(run.attempt))),
          h("div", {}, h("dt", {}, "Status"), h("dd", {}, runBadge(run.status))),
          h("div", {}, h("dt", {}, "Duration"), h("dd", {}, formatDuration(run.durationSeconds))),
        ),
        failureText(run) ? h("p", { class: "alert alert-error" }, failureText(run)) : null,
      );
      if (!body.contains(list)) replace(body, list);
      for (const line of run.logs.nodes) {
        list.append(
          h(
            "li",
            { class: `log-line log-${line.level.toLowerCase()}` },
            h("time", { datetime: line.at }, formatClock(line.at)),
            h("span", { class: "log-level" }, line.level),
            h("span", { class: "log-message" }, line.message),
          ),
        );
      }
      if (run.logs.pageInfo.endCursor) after = run.logs.pageInfo.endCursor;
      if (!list.children.length) replace(body, h("p", { class: "muted" }, "This run logged nothing (yet)."));
      replace(
        more,
        run.logs.pageInfo.hasNextPage
          ? h("button", { type: "button", class: "btn btn-secondary btn-small", onclick: () => load() }, "Load more lines")
          : null,
      );
      clearTimeout(timer);
      if (open && (run.status === "RUNNING" || run.status === "QUEUED" || run.logs.pageInfo.hasNextPage)) {
        timer = setTimeout(load, 2000);
      }
    } catch (error) {
      replace(body, errorBox(error, "Could not load logs."));
    }
  });

  dialog.addEventListener("close", () => {
    open = false;
    clearTimeout(timer);
    dialog.remove();
  });
  dialog.showModal();
  closeButton.focus();
  load();
  return dialog;
}

const RUN_STATUS_OF_PARTITION = {
  SUCCEEDED: "SUCCESS",
  FAILED: "FAILED",
  RUNNING: "RUNNING",
  QUEUED: "QUEUED",
  CANCELED: "CANCELED",
};

/**
 * The panel under a strip: the clicked partition and its runs (across backfills).
 * `selection` is {index, key, status, range} from the strip.
 */
export async function showPartition(panel, job, selection, { currentBackfill = null, onUnknownKey } = {}) {
  const heading = h("h3", { tabindex: "-1" }, selection.key ? `Partition ${selection.key}` : `Partition #${formatNumber(selection.index + 1)}`);
  replace(panel, heading, h("p", {}, partitionBadge(selection.status)), h("p", { class: "muted" }, "Loading runs…"));
  panel.hidden = false;
  if (!selection.key) {
    replace(
      panel,
      heading,
      h("p", {}, partitionBadge(selection.status)),
      h(
        "p",
        { class: "muted" },
        `Its key cannot be named from the folded ranges (${formatNumber(selection.range.count)} ${PARTITION_LABELS[selection.status].toLowerCase()} partitions from ${selection.range.startKey} to ${selection.range.endKey}).`,
      ),
      RUN_STATUS_OF_PARTITION[selection.status] && onUnknownKey
        ? h(
            "button",
            { type: "button", class: "btn btn-secondary btn-small", onclick: () => onUnknownKey(RUN_STATUS_OF_PARTITION[selection.status]) },
            `Show ${PARTITION_LABELS[selection.status].toLowerCase()} runs`,
          )
        : null,
    );
    return;
  }
  try {
    const data = await graphql("UiPartitionRuns", { job, partitionKey: selection.key, first: 20 });
    const runs = data.runs.nodes;
    replace(
      panel,
      heading,
      h("p", {}, partitionBadge(selection.status), " ", h("span", { class: "muted" }, `#${formatNumber(selection.index + 1)} · job ${job}`)),
      runs.length
        ? runsTable(runs, { showBackfill: true, currentBackfill, caption: `Runs of partition ${selection.key}` })
        : h("p", { class: "muted" }, "No run of this partition yet."),
    );
  } catch (error) {
    replace(panel, heading, errorBox(error, "Could not load the runs of this partition."));
  }
}

// Assets: the graph of every asset, each with the latest status of its partitions (across all
// backfills), and links that open the launch form on an asset (and what depends on it).
import { graphql } from "../api.js";
import { figures, loadAssetGraph } from "../assets.js";
import { buildHash, errorBox, formatNumber, h, replace } from "../dom.js";
import { AssetGraph } from "../graph.js";
import { watch } from "../live.js";
import { partitionsSummary } from "./launch.js";

export const title = "Assets";

// The latest status of a partition (across all backfills) -> the run status it stands for.
const FROM_PARTITION = { SUCCEEDED: "SUCCESS", FAILED: "FAILED", RUNNING: "RUNNING", QUEUED: "QUEUED", CANCELED: "CANCELED" };

// The latest run status of a partition -> the colour of the partition status it leads to.
const SHOWN = [
  ["SUCCESS", "SUCCEEDED", "succeeded"],
  ["FAILED", "FAILED", "failed"],
  ["RUNNING", "RUNNING", "running"],
  ["QUEUED", "QUEUED", "queued"],
  ["CANCELED", "CANCELED", "canceled"],
  ["UNKNOWN", "UNKNOWN", "unknown"],
];

/** Count an asset's partitions by the status of their latest run: one request, whatever the
 * number of partitions (the API folds them into ranges; PENDING ones never ran). */
async function latestSummary(asset) {
  const data = await graphql("UiAssetStatuses", { name: asset.name });
  const sums = {};
  let total = 0;
  let never = 0;
  for (const range of data.asset?.partitionStatusRanges ?? []) {
    total += range.count;
    if (range.status === "PENDING" || range.status === "SKIPPED") {
      never += range.count;
      continue;
    }
    const status = FROM_PARTITION[range.status] ?? "UNKNOWN";
    sums[status] = (sums[status] || 0) + range.count;
  }
  return { sums, total, never };
}

function statusBar(summary) {
  const { sums, total, never } = summary;
  const track = h("div", { class: "progress-track", "aria-hidden": "true" });
  for (const [status, colour] of SHOWN) {
    if (!sums[status] || !total) continue;
    track.append(h("span", { class: `progress-seg st-${colour.toLowerCase()}`, style: { width: `${(100 * sums[status]) / total}%` } }));
  }
  const succeeded = sums.SUCCESS || 0;
  const percent = total ? Math.round((100 * succeeded) / total) : 0;
  const text = `${formatNumber(succeeded)} of ${formatNumber(total)} partitions succeeded last`;
  const neverText = `; ${formatNumber(never)} never ran`;
  return h(
    "div",
    { class: "progress progress-compact", role: "img", "aria-label": `${text}${neverText}` },
    h(
      "div",
      { class: "progress-label" },
      h("span", { class: "progress-percent" }, `${percent}%`),
      h("span", { class: "progress-counts" }, `${formatNumber(succeeded)} / ${formatNumber(total)}`),
    ),
    track,
  );
}

function launchLinks(asset) {
  return h(
    "p",
    { class: "asset-links" },
    h("a", { class: "btn btn-secondary btn-small", href: buildHash("/launch", { assets: asset.name }), dataset: { launch: "asset" }, "aria-label": `Backfill ${asset.name}` }, "Backfill…"),
    asset.downstream.length
      ? h(
          "a",
          { class: "btn btn-primary btn-small", href: buildHash("/launch", { assets: asset.name, downstream: "1" }), dataset: { launch: "downstream" }, "aria-label": `With downstream: backfill ${asset.name} and everything downstream` },
          "With downstream…",
        )
      : null,
  );
}

export async function render(root) {
  const holder = h("div", { class: "card" }, h("p", { class: "muted" }, "Loading assets…"));
  replace(
    root,
    h("div", { class: "page-header" }, h("div", {}, h("h1", {}, "Assets"), h("p", { class: "lede" }, "Every asset by dependency level, with the latest status of its partitions across all backfills."))),
    holder,
  );
  const summaries = new Map();
  let graph = null;

  function node(asset) {
    const summary = summaries.get(asset.name);
    return [
      asset.description ? h("p", { class: "muted" }, asset.description) : null,
      h("p", { class: "small" }, asset.partitions ? partitionsSummary(asset.partitions) : "unpartitioned"),
      summary ? statusBar(summary) : h("p", { class: "muted small" }, "Loading statuses…"),
      summary
        ? figures([
            ...SHOWN.filter(([status]) => status !== "SUCCESS").map(([status, colour, label]) => [colour, summary.sums[status] || 0, label]),
            ["PENDING", summary.never ?? 0, "never ran"],
          ])
        : null,
      launchLinks(asset),
    ];
  }

  let assets;
  try {
    assets = await loadAssetGraph();
  } catch (error) {
    replace(holder, errorBox(error, "Could not load assets."));
    return undefined;
  }
  if (!assets.length) {
    replace(holder, h("p", { class: "empty" }, "No asset is defined."));
    return undefined;
  }
  graph = new AssetGraph({
    label: "Every asset by dependency level, with the latest status of its partitions",
    assets: assets.map((a) => ({ ...a })),
    renderNode: node,
  });
  replace(holder, graph.element);

  let lastJson = "";
  async function refresh() {
    const results = await Promise.all(assets.map((a) => latestSummary(a)));
    const json = JSON.stringify(results);
    if (json === lastJson) return;
    lastJson = json;
    assets.forEach((a, i) => {
      summaries.set(a.name, results[i]);
      graph.update(a.name);
    });
    holder.dataset.ready = "true";
  }
  try {
    await refresh();
  } catch (error) {
    holder.append(errorBox(error, "Could not load the statuses of the assets."));
  }
  const stop = watch({ refresh, interval: 10000 });
  return () => {
    stop();
    graph.destroy();
  };
}

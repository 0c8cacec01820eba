// Jobs: each job with its partitions definition, a strip of every partition's latest status
// across all backfills, and shortcuts that prefill the launch form.
import { graphql } from "../api.js";
import { buildHash, errorBox, formatNumber, h, replace } from "../dom.js";
import { watch } from "../live.js";
import { appendPartitionMarks, markForm } from "../marks.js";
import { jobKeyResolver, showPartition } from "../runs.js";
import { PartitionStrip } from "../strip.js";
import { partitionsSummary } from "./launch.js";

export const title = "Jobs";

function totals(ranges) {
  const sums = {};
  for (const r of ranges) sums[r.status] = (sums[r.status] || 0) + r.count;
  return sums;
}

/** The launch-form link that backfills the failed partitions of a job, as precisely as the
 * folded ranges allow: one failed range is a range; single failed partitions are a key list;
 * otherwise the span from the first to the last failure, reprocessing failed and missing ones
 * (the preview then says how many of them run). */
export function failedShortcut(job, ranges) {
  const failed = ranges.filter((r) => r.status === "FAILED");
  const base = { job: job.name, reprocess: "FAILED_AND_MISSING", title: `Rerun failed partitions of ${job.name}` };
  if (!failed.length) return null;
  if (failed.length === 1) return buildHash("/launch", { ...base, mode: "range", start: failed[0].startKey, end: failed[0].endKey });
  if (failed.every((r) => r.count <= 2)) {
    const keys = failed.flatMap((r) => (r.count === 1 ? [r.startKey] : [r.startKey, r.endKey]));
    return buildHash("/launch", { ...base, mode: "keys", keys: keys.join(",") });
  }
  return buildHash("/launch", { ...base, mode: "range", start: failed[0].startKey, end: failed[failed.length - 1].endKey });
}

export async function render(root) {
  const list = h("div", { class: "job-list" }, h("p", { class: "muted" }, "Loading jobs…"));
  replace(
    root,
    h("div", { class: "page-header" }, h("div", {}, h("h1", {}, "Jobs"), h("p", { class: "lede" }, "Every partition's latest status, across all backfills."))),
    list,
  );
  const strips = new Map();

  function jobCard(job) {
    const sums = totals(job.partitionStatusRanges);
    const missing = sums.PENDING || 0;
    const failed = sums.FAILED || 0;
    const panel = h("div", { class: "partition-panel", hidden: true, "aria-live": "polite" });
    const strip = new PartitionStrip({
      label: `Latest status of the ${formatNumber(job.partitions.count)} partitions of ${job.name}`,
      resolveKey: jobKeyResolver(job.name),
      onSelect: async (selection) => {
        await showPartition(panel, job.name, selection);
        await appendPartitionMarks(panel, job.name, selection.key);
      },
    });
    strips.set(job.name, strip);
    const headingId = `job-${job.name}`;
    const failedLink = failedShortcut(job, job.partitionStatusRanges);
    const card = h(
      "section",
      { class: "card job-card", "aria-labelledby": headingId, dataset: { job: job.name } },
      h(
        "div",
        { class: "card-header" },
        h("div", {}, h("h2", { id: headingId, class: "mono" }, job.name), job.description ? h("p", { class: "lede" }, job.description) : null),
        h(
          "div",
          { class: "button-row" },
          h(
            "a",
            {
              class: `btn btn-secondary btn-small${missing ? "" : " is-disabled"}`,
              href: missing ? buildHash("/launch", { job: job.name, mode: "all", reprocess: "MISSING", title: `Backfill missing partitions of ${job.name}` }) : undefined,
              "aria-disabled": missing ? undefined : "true",
              dataset: { shortcut: "missing" },
            },
            `Backfill missing (${formatNumber(missing)})`,
          ),
          h(
            "a",
            {
              class: `btn btn-secondary btn-small${failedLink ? "" : " is-disabled"}`,
              href: failedLink || undefined,
              "aria-disabled": failedLink ? undefined : "true",
              dataset: { shortcut: "failed" },
            },
            `Backfill failed (${formatNumber(failed)})`,
          ),
          h("a", { class: "btn btn-primary btn-small", href: buildHash("/launch", { job: job.name }) }, "Launch…"),
        ),
      ),
      h(
        "dl",
        { class: "facts facts-inline" },
        h("div", {}, h("dt", {}, "Partitions"), h("dd", {}, partitionsSummary(job.partitions))),
        job.partitions.keyFormat ? h("div", {}, h("dt", {}, "Key format"), h("dd", { class: "mono" }, job.partitions.keyFormat)) : null,
        h("div", {}, h("dt", {}, "Retries"), h("dd", {}, job.retryPolicy.maxRetries ? `${job.retryPolicy.maxRetries} after ${job.retryPolicy.delaySeconds} s` : "none")),
        h("div", {}, h("dt", {}, "Max concurrent runs"), h("dd", {}, job.maxConcurrentRuns ? String(job.maxConcurrentRuns) : "no limit")),
        job.timeoutSeconds ? h("div", {}, h("dt", {}, "Timeout"), h("dd", {}, `${job.timeoutSeconds} s`)) : null,
        job.tags.length ? h("div", {}, h("dt", {}, "Tags"), h("dd", {}, h("span", { class: "tags" }, job.tags.map((t) => h("span", { class: "tag" }, `${t.key}=${t.value}`))))) : null,
      ),
      strip.element,
      panel,
      markForm(job.name, () => refresh()),
    );
    strip.setRanges(job.partitionStatusRanges, job.partitions.count);
    return card;
  }

  let lastJson = "";
  async function refresh() {
    const data = await graphql("UiJobs");
    const json = JSON.stringify(data);
    if (json === lastJson) return;
    const first = !lastJson;
    lastJson = json;
    if (first) {
      replace(list, data.jobs.length ? data.jobs.map(jobCard) : h("p", { class: "empty" }, "No job is defined."));
      return;
    }
    for (const job of data.jobs) strips.get(job.name)?.setRanges(job.partitionStatusRanges, job.partitions.count);
  }

  try {
    await refresh();
  } catch (error) {
    replace(list, errorBox(error, "Could not load jobs."));
  }
  const stop = watch({ refresh, interval: 5000 });
  return () => {
    stop();
    for (const strip of strips.values()) strip.destroy();
  };
}

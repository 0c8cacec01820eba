// Marking partitions by hand (markPartitions): a small form on a job's card, and the job's
// latest marks. A marked success counts as a success in the strip; a skipped one shows SKIPPED.
import { graphql } from "./api.js";
import { errorBox, formatTime, h, replace } from "./dom.js";

function selectionOf(keys, start, end) {
  const list = keys.split(",").map((k) => k.trim()).filter(Boolean);
  if (list.length) return { keys: list };
  return { range: { start: start.trim(), end: end.trim() } };
}

function marksList(marks) {
  if (!marks.length) return h("p", { class: "muted" }, "No partition of this job was marked by hand.");
  return h(
    "ul",
    { class: "mark-list" },
    marks.map((m) =>
      h("li", { dataset: { mark: m.id } }, h("span", { class: "mono" }, m.partitionKey), ` ${m.status.toLowerCase()} by ${m.actor || "someone"} ${formatTime(m.markedAt)}: `, h("q", {}, m.reason)),
    ),
  );
}

/** A collapsed "Mark partitions…" form for `job`; `onMarked` is called after a mark. */
export function markForm(job, onMarked) {
  const id = (name) => `mark-${job}-${name}`;
  const input = (name, label, placeholder) =>
    h("div", { class: "field" }, h("label", { for: id(name) }, label), h("input", { id: id(name), name, type: "text", placeholder, autocomplete: "off" }));
  const status = h("select", { id: id("status"), name: "status" }, h("option", { value: "SUCCEEDED" }, "Succeeded (produced out of band)"), h("option", { value: "SKIPPED" }, "Skipped (must not run)"));
  const result = h("div", { class: "mark-result", "aria-live": "polite" });
  const history = h("div", { class: "mark-history" });

  async function loadHistory() {
    try {
      const data = await graphql("UiPartitionMarks", { job, first: 10 });
      replace(history, h("h3", {}, "Marked by hand"), marksList(data.partitionMarks));
    } catch (error) {
      replace(history, errorBox(error, "Could not load the marks."));
    }
  }

  async function submit(event) {
    event.preventDefault();
    const form = event.target;
    const variables = {
      input: {
        target: { job },
        partitions: selectionOf(form.keys.value, form.start.value, form.end.value),
        status: form.status.value,
        reason: form.reason.value,
      },
    };
    replace(result);
    try {
      const data = await graphql("UiMarkPartitions", variables);
      const payload = data.markPartitions;
      if (payload.userErrors.length) {
        replace(result, h("div", { class: "alert alert-error", role: "alert" }, payload.userErrors.map((e) => h("p", {}, h("strong", {}, e.code), " ", e.message))));
        return;
      }
      replace(result, h("p", { class: "muted" }, `Marked ${payload.marked} partitions ${form.status.value.toLowerCase()}.`));
      form.reason.value = "";
      await loadHistory();
      if (onMarked) await onMarked();
    } catch (error) {
      replace(result, errorBox(error, "Could not mark."));
    }
  }

  const details = h(
    "details",
    { class: "mark-panel", ontoggle: (event) => event.target.open && loadHistory() },
    h("summary", {}, "Mark partitions…"),
    h(
      "form",
      { class: "mark-form", onsubmit: submit, dataset: { job } },
      h("p", { class: "muted" }, "Record partitions as succeeded or skipped without running them: keys, or a range. A partition that a backfill runs now is refused."),
      input("keys", "Keys (comma-separated)", "2024-01-01,2024-01-02"),
      input("start", "or from", "2024-01-01"),
      input("end", "to", "2024-01-31"),
      h("div", { class: "field" }, h("label", { for: id("status") }, "Mark as"), status),
      h("div", { class: "field" }, h("label", { for: id("reason") }, "Reason"), h("input", { id: id("reason"), name: "reason", type: "text", required: true, placeholder: "why (kept in the audit log)" })),
      h("button", { class: "btn btn-secondary btn-small", type: "submit" }, "Mark"),
      result,
    ),
    history,
  );
  return details;
}

/** Under a partition's runs (the strip's panel): how it was marked by hand, if it was. */
export async function appendPartitionMarks(panel, job, key) {
  if (!key) return;
  try {
    const data = await graphql("UiPartitionMarks", { job, first: 5, partitionKey: key });
    if (data.partitionMarks.length) panel.append(h("div", { class: "mark-history" }, h("h4", {}, "Marked by hand"), marksList(data.partitionMarks)));
  } catch (error) {
    panel.append(errorBox(error, "Could not load the marks of this partition."));
  }
}

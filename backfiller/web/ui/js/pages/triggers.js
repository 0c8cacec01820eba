// Triggers: each trigger with its last evaluations, and buttons that evaluate it now.
import { graphql } from "../api.js";
import { selectionLabel } from "../assets.js";
import { errorBox, formatDuration, formatNumber, formatTime, h, replace, timeAgo } from "../dom.js";
import { watch } from "../live.js";
import { unknownBadge } from "../status.js";

export const title = "Triggers";

const OUTCOME_TONES = { LAUNCHED: "success", SKIPPED: "neutral", FAILED: "danger" };
const OUTCOME_LABELS = { LAUNCHED: "Launched", SKIPPED: "Skipped", FAILED: "Failed" };

// A dry run launches nothing: its outcome says what a real evaluation would have done.
const DRY_RUN_LABELS = { LAUNCHED: "Would launch", SKIPPED: "Would skip", FAILED: "Failed" };

function outcomeBadge(outcome, dryRun = false) {
  if (!(outcome in OUTCOME_LABELS)) return unknownBadge(outcome, { outcome });
  const label = dryRun ? DRY_RUN_LABELS[outcome] : OUTCOME_LABELS[outcome];
  const tone = dryRun && outcome === "LAUNCHED" ? "info" : OUTCOME_TONES[outcome];
  return h("span", { class: `badge badge-${tone}`, dataset: { outcome, dryRun: String(dryRun) } }, label);
}

function intervalText(seconds) {
  if (!seconds) return "on demand only";
  if (seconds < 60) return `every ${formatNumber(seconds)} s`;
  if (seconds < 3600) return `every ${formatNumber(seconds / 60)} min`;
  return `every ${formatNumber(seconds / 3600)} h`;
}

const CATCH_UP_LABELS = { LATEST: "catch up: latest missed tick", ALL: "catch up: every missed tick", NONE: "catch up: none" };

/** How the daemon evaluates a trigger: on a cron schedule, an interval, or only on demand. */
function scheduleText(t) {
  if (!t.cron) return intervalText(t.intervalSeconds);
  const catchUp = CATCH_UP_LABELS[t.catchUp] || `catch up: ${String(t.catchUp).toLowerCase()}`;
  return `cron ${t.cron} (${t.timezone}), ${catchUp}`;
}

/** A time on the wall clock of a trigger's zone ("Mar 29, 2026, 03:00 AM GMT+2"). */
function zoneTime(iso, zone) {
  if (!zone) return formatTime(iso);
  try {
    return new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZone: zone, timeZoneName: "short" }).format(new Date(iso));
  } catch {
    return formatTime(iso);
  }
}

function fireTimesList(t) {
  if (!t.nextFireTimes || !t.nextFireTimes.length) return "–";
  return h(
    "ol",
    { class: "fire-times" },
    t.nextFireTimes.map((at) => h("li", { title: formatTime(at) }, h("time", { datetime: at }, zoneTime(at, t.timezone)))),
  );
}

function selectionText(selection) {
  if (selection.all) return "all partitions";
  if (selection.range) return `${selection.range.start} → ${selection.range.end}`;
  if (selection.keys) return selection.keys.length > 3 ? `${selection.keys.slice(0, 3).join(", ")} … (${selection.keys.length} keys)` : selection.keys.join(", ");
  return "–";
}

function evaluationDetail(evaluation) {
  if (evaluation.outcome === "SKIPPED") return evaluation.skipReason || "no reason given";
  if (evaluation.outcome === "FAILED") return evaluation.errorMessage || "failed";
  if (evaluation.backfills.length) {
    return h(
      "span",
      { class: "tags" },
      evaluation.backfills.map((b) => h("a", { href: `#/backfills/${encodeURIComponent(b.id)}` }, b.title || b.id)),
    );
  }
  if (evaluation.dryRun) {
    const runs = evaluation.requests.reduce((sum, r) => sum + (r.preview?.runs || 0), 0);
    return `would launch ${evaluation.requests.length} backfill${evaluation.requests.length === 1 ? "" : "s"}, ${formatNumber(runs)} runs`;
  }
  return "–";
}

/** What one evaluation did, in full: shown after pressing a button. */
function outcomePanel(evaluation) {
  const requests = evaluation.requests;
  return h(
    "div",
    { class: "outcome-body", dataset: { outcome: evaluation.outcome } },
    h(
      "p",
      {},
      outcomeBadge(evaluation.outcome, evaluation.dryRun),
      evaluation.dryRun ? h("span", { class: "badge badge-plain" }, "Dry run") : null,
      " ",
      h("span", { class: "muted" }, `in ${formatDuration(evaluation.durationSeconds)}`),
    ),
    evaluation.outcome === "SKIPPED" ? h("p", {}, evaluation.skipReason || "The trigger launched nothing.") : null,
    evaluation.outcome === "FAILED" && evaluation.errorMessage ? h("p", { class: "alert alert-error" }, evaluation.errorMessage) : null,
    requests.length
      ? h(
          "table",
          { class: "table table-responsive" },
          h("caption", { class: "visually-hidden" }, "Requests the trigger returned"),
          h(
            "thead",
            {},
            h("tr", {}, h("th", { scope: "col" }, "Target"), h("th", { scope: "col" }, "Partitions"), h("th", { scope: "col" }, "Title"), h("th", { scope: "col" }, "Result")),
          ),
          h(
            "tbody",
            {},
            requests.map((r) =>
              h(
                "tr",
                {},
                h("td", { "data-label": "Target", class: "mono" }, r.target.assets ? selectionLabel(r.target.assets) : (r.target.job ?? "–")),
                h("td", { "data-label": "Partitions", class: "mono" }, selectionText(r.partitionSelection)),
                h("td", { "data-label": "Title" }, r.title || h("span", { class: "muted" }, "–")),
                h(
                  "td",
                  { "data-label": "Result" },
                  r.userErrors.length
                    ? h("span", { class: "field-error" }, r.userErrors.map((e) => e.message).join(" "))
                    : r.backfill
                      ? h("a", { href: `#/backfills/${encodeURIComponent(r.backfill.id)}` }, "Open backfill")
                      : r.preview
                        ? `${formatNumber(r.preview.runs)} runs, ${formatNumber(r.preview.skipped)} skipped`
                        : "–",
                ),
              ),
            ),
          ),
        )
      : null,
  );
}

function evaluationsTable(evaluations, zone) {
  if (!evaluations.length) return h("p", { class: "muted" }, "Never evaluated.");
  return h(
    "table",
    { class: "table table-responsive evaluations" },
    h("caption", { class: "visually-hidden" }, "Last evaluations"),
    h(
      "thead",
      {},
      h(
        "tr",
        {},
        h("th", { scope: "col" }, "When"),
        h("th", { scope: "col" }, "Outcome"),
        h("th", { scope: "col" }, "By"),
        h("th", { scope: "col" }, "Duration"),
        h("th", { scope: "col" }, "Details"),
      ),
    ),
    h(
      "tbody",
      {},
      evaluations.map((e) =>
        h(
          "tr",
          { dataset: { evaluationId: e.id } },
          h(
            "td",
            { "data-label": "When" },
            timeAgo(e.evaluatedAt),
            e.scheduledAt ? h("div", { class: "muted", dataset: { scheduledAt: e.scheduledAt } }, `for ${zoneTime(e.scheduledAt, zone)}`) : null,
          ),
          h("td", { "data-label": "Outcome" }, outcomeBadge(e.outcome, e.dryRun), e.dryRun ? h("span", { class: "badge badge-plain" }, " Dry run") : null),
          h("td", { "data-label": "By" }, e.actor || h("span", { class: "muted" }, "–")),
          h("td", { "data-label": "Duration" }, formatDuration(e.durationSeconds)),
          h("td", { "data-label": "Details", class: "cell-wrap" }, evaluationDetail(e)),
        ),
      ),
    ),
  );
}

export async function render(root) {
  const list = h("div", { class: "trigger-list" }, h("p", { class: "muted" }, "Loading triggers…"));
  replace(
    root,
    h(
      "div",
      { class: "page-header" },
      h("div", {}, h("h1", {}, "Triggers"), h("p", { class: "lede" }, "Functions that decide whether to launch a backfill. Evaluate one now, or test it with a dry run.")),
    ),
    list,
  );
  const parts = new Map(); // name -> {evaluations, facts, toggle}

  function triggerCard(t) {
    const evaluations = h("div", { class: "evaluations-holder" });
    const facts = h("dl", { class: "facts facts-inline" });
    const outcome = h("div", { class: "outcome", "aria-live": "polite", id: `outcome-${t.name}` });
    const error = h("span", { class: "action-error", role: "alert" });
    const toggleId = `trigger-enabled-${t.name}`;
    const scheduled = Boolean(t.intervalSeconds || t.cron);
    const toggle = h("input", { type: "checkbox", id: toggleId, checked: t.enabled, disabled: !scheduled });
    toggle.addEventListener("change", async () => {
      toggle.disabled = true;
      error.textContent = "";
      try {
        const data = await graphql("UiSetTriggerEnabled", { name: t.name, enabled: toggle.checked });
        const payload = data.setTriggerEnabled;
        if (payload.userErrors.length) {
          error.textContent = payload.userErrors.map((e) => e.message).join(" ");
          toggle.checked = !toggle.checked;
        }
      } catch (e) {
        error.textContent = e.message;
        toggle.checked = !toggle.checked;
      } finally {
        toggle.disabled = !scheduled;
        refresh().catch(() => {});
      }
    });

    function evaluateButton(label, dryRun, variant) {
      const button = h("button", { type: "button", class: `btn ${variant}`, dataset: { evaluate: dryRun ? "dry-run" : "launch" } }, label);
      button.addEventListener("click", async () => {
        const buttons = card.querySelectorAll("[data-evaluate]");
        for (const b of buttons) b.disabled = true;
        button.setAttribute("aria-busy", "true");
        button.textContent = dryRun ? "Evaluating…" : "Evaluating and launching…";
        error.textContent = "";
        try {
          const data = await graphql("UiEvaluateTrigger", { name: t.name, dryRun });
          const payload = data.evaluateTrigger;
          if (payload.userErrors.length) error.textContent = payload.userErrors.map((e) => e.message).join(" ");
          if (payload.evaluation) {
            replace(outcome, h("h3", {}, dryRun ? "Dry run result" : "Evaluation result"), outcomePanel(payload.evaluation));
          }
        } catch (e) {
          error.textContent = e.message;
        } finally {
          for (const b of buttons) b.disabled = false;
          button.removeAttribute("aria-busy");
          button.textContent = label;
          refresh().catch(() => {});
        }
      });
      return button;
    }

    const card = h(
      "section",
      { class: "card trigger-card", "aria-labelledby": `trigger-${t.name}`, dataset: { trigger: t.name } },
      h(
        "div",
        { class: "card-header" },
        h("div", {}, h("h2", { id: `trigger-${t.name}`, class: "mono" }, t.name), t.description ? h("p", { class: "lede" }, t.description) : null),
        h(
          "div",
          { class: "button-row" },
          evaluateButton("Evaluate (dry run)", true, "btn-secondary"),
          evaluateButton("Evaluate and launch", false, "btn-primary"),
        ),
      ),
      facts,
      h(
        "div",
        { class: "trigger-toggle" },
        scheduled ? h("label", { class: "choice", for: toggleId }, toggle, t.cron ? `Evaluate on ${scheduleText(t)}` : `Evaluate ${intervalText(t.intervalSeconds)}`) : null,
        error,
      ),
      outcome,
      h("h3", {}, "Last evaluations"),
      evaluations,
    );
    parts.set(t.name, { evaluations, facts, toggle });
    return card;
  }

  function update(t) {
    const part = parts.get(t.name);
    if (!part) return;
    replace(
      part.facts,
      h("div", {}, h("dt", {}, "Schedule"), h("dd", { class: t.cron ? "mono" : null }, scheduleText(t))),
      h("div", {}, h("dt", {}, "Next evaluation"), h("dd", {}, t.nextEvaluationAt ? formatTime(t.nextEvaluationAt) : "–")),
      t.cron ? h("div", { dataset: { fireTimes: t.name } }, h("dt", {}, `Next fire times (${t.timezone})`), h("dd", {}, fireTimesList(t))) : null,
      h("div", {}, h("dt", {}, "Time limit"), h("dd", {}, formatDuration(t.timeoutSeconds))),
      h("div", {}, h("dt", {}, "Last outcome"), h("dd", {}, t.evaluations.nodes[0] ? outcomeBadge(t.evaluations.nodes[0].outcome, t.evaluations.nodes[0].dryRun) : "never evaluated")),
    );
    if (!part.toggle.disabled || !(t.intervalSeconds || t.cron)) part.toggle.checked = t.enabled;
    replace(part.evaluations, evaluationsTable(t.evaluations.nodes, t.timezone));
  }

  let lastJson = "";
  async function refresh() {
    const data = await graphql("UiTriggers");
    const json = JSON.stringify(data);
    if (json === lastJson) return;
    const first = !lastJson;
    lastJson = json;
    if (first) {
      replace(list, data.triggers.length ? data.triggers.map(triggerCard) : h("div", { class: "card empty" }, h("p", {}, "No trigger is defined."), h("p", { class: "muted" }, "Declare one with @trigger in your definitions.")));
    }
    for (const t of data.triggers) update(t);
  }

  try {
    await refresh();
  } catch (error) {
    replace(list, errorBox(error, "Could not load triggers."));
  }
  return watch({ refresh, interval: 5000 });
}

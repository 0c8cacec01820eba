// Launch: the form, a live preview from previewBackfill, and one idempotency key per form load
// so that a double click (or a retried request) launches exactly one backfill.
import { graphql, randomId } from "../api.js";
import { closure, loadAssetGraph, rootsOf } from "../assets.js";
import { debounce, errorBox, formatNumber, h, replace } from "../dom.js";

export const title = "Launch a backfill";

// How many waiting partitions the preview names (the server sends up to 20).
const WAITING_SHOWN = 5;

const REPROCESS = [
  { value: "MISSING", label: "Missing only", help: "Partitions that never ran. Anything that succeeded or failed before is skipped." },
  { value: "FAILED_AND_MISSING", label: "Failed and missing", help: "Partitions that never ran or whose latest run failed." },
  { value: "ALL", label: "Everything", help: "Every selected partition runs again, whatever ran before." },
];

const SKIP_REASONS = {
  ALREADY_SUCCEEDED: "already succeeded",
  ALREADY_FAILED: "already failed (choose “Failed and missing” to run them)",
  UPSTREAM_FAILED: "an upstream partition failed",
};

export function partitionsSummary(p) {
  if (!p) return "";
  const count = `${formatNumber(p.count)} partition${p.count === 1 ? "" : "s"}`;
  if (p.kind === "TIME") {
    const cadence = p.cadence === "cron" ? `cron ${p.cron}` : p.cadence;
    const from = p.start ? ` from ${p.start.slice(0, 16).replace("T", " ")}` : "";
    const to = p.end ? ` to ${p.end.slice(0, 16).replace("T", " ")}` : "";
    return `${cadence}${from}${to} (${p.timezone}) · ${count}`;
  }
  if (p.kind === "STATIC") return `static list · ${count}`;
  return `dynamic “${p.dynamicName}” · ${count}`;
}

function field(id, label, control, { help, optional } = {}) {
  return h(
    "div",
    { class: "field", dataset: { field: id } },
    h("label", { for: id }, label, optional ? h("span", { class: "optional" }, " (optional)") : null),
    control,
    help ? h("p", { class: "help", id: `${id}-help` }, help) : null,
    h("p", { class: "field-error", id: `${id}-error`, hidden: true }),
  );
}

export async function render(root, { query }) {
  const idempotencyKey = randomId();
  let jobs = [];
  let job = null; // UiJobForLaunch
  let assets = []; // UiAssets: the whole graph
  let rootKeysFor = "";
  let inFlight = false;
  let previewSeq = 0;
  let lastPreview = null;
  // The controls the user has typed into since the job was chosen.
  const typed = new Set();

  // --- controls ------------------------------------------------------------------------------
  const jobSelect = h("select", { id: "launch-job", name: "job", required: true }, h("option", { value: "" }, "Loading jobs…"));
  const jobInfo = h("p", { class: "help", id: "launch-job-help" });
  jobSelect.setAttribute("aria-describedby", "launch-job-help launch-job-error");

  // What to run: a job, or assets (the chosen ones, and maybe what is up- or downstream).
  const targetChoice = (value, label) =>
    h("label", { class: "choice" }, h("input", { type: "radio", name: "target", value, id: `launch-target-${value}` }), label);
  const targetGroup = h(
    "fieldset",
    { class: "fieldset", id: "launch-target" },
    h("legend", {}, "What to backfill"),
    h("div", { class: "choices" }, targetChoice("job", "A job"), targetChoice("assets", "Assets")),
  );
  const assetPicker = h("div", { class: "asset-picker", id: "launch-assets", role: "group", "aria-label": "Assets", "aria-describedby": "launch-assets-help launch-assets-error" });
  const upstreamBox = h("input", { type: "checkbox", id: "launch-upstream", name: "upstream" });
  const downstreamBox = h("input", { type: "checkbox", id: "launch-downstream", name: "downstream" });
  const assetsInfo = h("p", { class: "help", id: "launch-assets-help" }, "Choose the assets to rebuild.");
  const assetsGroup = h(
    "fieldset",
    { class: "fieldset", id: "launch-assets-group", dataset: { target: "assets" } },
    h("legend", {}, "Assets"),
    assetPicker,
    h(
      "div",
      { class: "choices" },
      h("label", { class: "choice" }, upstreamBox, "Also everything upstream"),
      h("label", { class: "choice" }, downstreamBox, "Also everything downstream"),
    ),
    assetsInfo,
    h("p", { class: "field-error", id: "launch-assets-error", hidden: true }),
  );
  const jobGroup = h("div", { dataset: { target: "job" } });

  const mode = (value, label) =>
    h(
      "label",
      { class: "choice" },
      h("input", { type: "radio", name: "mode", value, id: `launch-mode-${value}` }),
      label,
    );
  const modeGroup = h(
    "fieldset",
    { class: "fieldset", id: "launch-partitions" },
    h("legend", {}, "Partitions"),
    h("div", { class: "choices", role: "presentation" }, mode("range", "A range"), mode("keys", "A list of keys"), mode("all", "All partitions")),
  );
  const keysList = h("datalist", { id: "launch-key-options" });
  const startInput = h("input", { id: "launch-start", name: "start", list: "launch-key-options", autocomplete: "off", spellcheck: "false", class: "mono" });
  const endInput = h("input", { id: "launch-end", name: "end", list: "launch-key-options", autocomplete: "off", spellcheck: "false", class: "mono" });
  const rangeFields = h(
    "div",
    { class: "row", dataset: { mode: "range" } },
    field("launch-start", "First partition", startInput),
    field("launch-end", "Last partition (included)", endInput),
    keysList,
  );
  const keysInput = h("textarea", { id: "launch-keys", name: "keys", rows: "4", spellcheck: "false", class: "mono", placeholder: "one key per line, or separated by commas" });
  const keysFields = h("div", { dataset: { mode: "keys" } }, field("launch-keys", "Partition keys", keysInput));
  const allNote = h("p", { class: "help", dataset: { mode: "all" } }, "Every partition there is now (of the root assets, for assets).");
  const partitionsError = h("p", { class: "field-error", id: "launch-partitions-error", hidden: true });
  modeGroup.append(rangeFields, keysFields, allNote, partitionsError);

  const reprocessGroup = h(
    "fieldset",
    { class: "fieldset", id: "launch-reprocess" },
    h("legend", {}, "Reprocess"),
    h(
      "div",
      { class: "choices choices-stacked" },
      REPROCESS.map((r) =>
        h(
          "label",
          { class: "choice choice-described" },
          h("input", { type: "radio", name: "reprocess", value: r.value, id: `launch-reprocess-${r.value}` }),
          h("span", {}, h("strong", {}, r.label), h("span", { class: "help" }, r.help)),
        ),
      ),
    ),
    h("p", { class: "field-error", id: "launch-reprocess-error", hidden: true }),
  );

  const orderSelect = h(
    "select",
    { id: "launch-order", name: "order" },
    h("option", { value: "OLDEST_FIRST" }, "Oldest first"),
    h("option", { value: "NEWEST_FIRST" }, "Newest first"),
  );
  const maxInput = h("input", { id: "launch-max-concurrent", name: "maxConcurrentRuns", type: "number", min: "1", max: "10000", step: "1", inputmode: "numeric" });
  const titleInput = h("input", { id: "launch-title", name: "title", maxlength: "500" });
  const descriptionInput = h("textarea", { id: "launch-description", name: "description", rows: "2" });
  const configInput = h("textarea", { id: "launch-run-config", name: "runConfig", rows: "4", spellcheck: "false", class: "mono", placeholder: "{}" });
  const configSchema = h("details", { class: "schema", hidden: true }, h("summary", {}, "Config schema of this job"), h("pre", { class: "code" }));

  const tagRows = h("div", { class: "tag-rows" });
  let tagCount = 0;
  function addTag(key = "", value = "") {
    tagCount += 1;
    const n = tagCount;
    const keyInput = h("input", { id: `launch-tag-key-${n}`, class: "tag-key", value: key, "aria-label": `Tag ${n} key`, placeholder: "key" });
    const valueInput = h("input", { id: `launch-tag-value-${n}`, class: "tag-value", value, "aria-label": `Tag ${n} value`, placeholder: "value" });
    const row = h(
      "div",
      { class: "tag-row" },
      keyInput,
      h("span", { "aria-hidden": "true" }, "="),
      valueInput,
      h(
        "button",
        {
          type: "button",
          class: "btn btn-ghost btn-small",
          "aria-label": `Remove tag ${n}`,
          onclick: () => {
            row.remove();
            schedulePreview();
          },
        },
        "Remove",
      ),
    );
    tagRows.append(row);
    return keyInput;
  }
  const tagsGroup = h(
    "fieldset",
    { class: "fieldset", id: "launch-tags" },
    h("legend", {}, "Tags ", h("span", { class: "optional" }, "(optional)")),
    tagRows,
    h("button", { type: "button", class: "btn btn-secondary btn-small", onclick: () => addTag().focus() }, "Add a tag"),
    h("p", { class: "field-error", id: "launch-tags-error", hidden: true }),
  );

  const submit = h("button", { type: "submit", class: "btn btn-primary btn-large", id: "launch-submit" }, "Launch backfill");
  const formError = h("div", { id: "launch-form-error", role: "alert" });
  const preview = h("div", { class: "preview", id: "launch-preview", "aria-live": "polite", "aria-atomic": "true" }, h("p", { class: "muted" }, "Choose a job and partitions to see what would run."));

  const form = h(
    "form",
    { class: "form", id: "launch-form", novalidate: true, "aria-labelledby": "launch-title-h" },
    targetGroup,
    jobGroup,
    assetsGroup,
    modeGroup,
    reprocessGroup,
    h(
      "div",
      { class: "row" },
      field("launch-order", "Order", orderSelect),
      field("launch-max-concurrent", "Max concurrent runs", maxInput, { optional: true }),
    ),
    field("launch-title", "Title", titleInput, { optional: true }),
    field("launch-description", "Description", descriptionInput, { optional: true }),
    tagsGroup,
    field("launch-run-config", "Run config (JSON)", configInput, { optional: true, help: "Given to every run, checked against the job's config schema." }),
    configSchema,
    formError,
    h("div", { class: "form-actions" }, submit, h("span", { class: "muted small" }, "Launching twice from this form creates one backfill.")),
  );

  replace(
    root,
    h("div", { class: "page-header" }, h("div", {}, h("h1", { id: "launch-title-h" }, "Launch a backfill"), h("p", { class: "lede" }, "See exactly what will run before you press the button."))),
    h(
      "div",
      { class: "launch-layout" },
      h("section", { class: "card" }, form),
      h("aside", { class: "card preview-card", "aria-labelledby": "preview-title" }, h("h2", { id: "preview-title" }, "Preview"), preview),
    ),
  );

  jobGroup.append(field("launch-job", "Job", jobSelect), jobInfo);

  // --- state -> input ------------------------------------------------------------------------

  const selectedTarget = () => form.querySelector("input[name=target]:checked")?.value || "job";
  const chosenAssets = () => [...assetPicker.querySelectorAll("input:checked")].map((el) => el.value);

  function showTarget() {
    const current = selectedTarget();
    for (const el of form.querySelectorAll("[data-target]")) el.hidden = el.dataset.target !== current;
    configSchema.hidden = current !== "job" || !job?.configSchema;
  }

  /** The assets the selection covers, its roots, and their key suggestions. */
  async function describeAssets() {
    const names = chosenAssets();
    if (!names.length) {
      replace(assetsInfo, "Choose the assets to rebuild.");
      return;
    }
    const covered = closure(assets, names, { upstream: upstreamBox.checked, downstream: downstreamBox.checked });
    const roots = rootsOf(assets, covered);
    const root = assets.find((a) => a.name === roots[0]);
    replace(
      assetsInfo,
      `${covered.length} asset${covered.length === 1 ? "" : "s"}: ${covered.join(", ")}. `,
      root ? h("span", { class: "muted" }, `Partitions are those of ${roots.join(", ")}${root.partitions ? `: ${partitionsSummary(root.partitions)}` : " (unpartitioned)"}.`) : null,
    );
    if (root && root.name !== rootKeysFor) {
      rootKeysFor = root.name;
      const data = await graphql("UiAssetKeys", { name: root.name, first: 100, after: null });
      const nodes = data.asset?.partitions?.keys.nodes ?? [];
      replace(keysList, nodes.map((k) => h("option", { value: k })));
      if (!startInput.value && nodes.length) startInput.placeholder = `e.g. ${nodes[0]}`;
    }
  }

  const selectedMode = () => form.querySelector("input[name=mode]:checked")?.value || "range";
  const selectedReprocess = () => form.querySelector("input[name=reprocess]:checked")?.value || "MISSING";

  function showMode() {
    const current = selectedMode();
    for (const el of modeGroup.querySelectorAll("[data-mode]")) el.hidden = el.dataset.mode !== current;
  }

  function clearErrors() {
    for (const el of form.querySelectorAll(".field-error")) {
      el.hidden = true;
      el.textContent = "";
    }
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    replace(formError);
  }

  function showError(controlId, message) {
    const error = document.getElementById(`${controlId}-error`);
    const control = document.getElementById(controlId);
    if (control) {
      control.setAttribute("aria-invalid", "true");
      const describedBy = new Set((control.getAttribute("aria-describedby") || "").split(" ").filter(Boolean));
      describedBy.add(`${controlId}-error`);
      control.setAttribute("aria-describedby", [...describedBy].join(" "));
    }
    if (error) {
      error.textContent = error.textContent ? `${error.textContent} ${message}` : message;
      error.hidden = false;
    } else {
      formError.append(h("div", { class: "alert alert-error" }, message));
    }
  }

  /** Where a userError's `field` path points in this form. */
  function controlOf(path) {
    if (!path || !path.length) return null;
    const [head, second] = path;
    switch (head) {
      case "target":
        return selectedTarget() === "assets" ? "launch-assets" : "launch-job";
      case "partitions":
        if (second === "range") return path[2] === "end" ? "launch-end" : "launch-start";
        if (second === "keys") return "launch-keys";
        return "launch-partitions";
      case "reprocess":
        return "launch-reprocess";
      case "order":
        return "launch-order";
      case "maxConcurrentRuns":
        return "launch-max-concurrent";
      case "runConfig":
        return "launch-run-config";
      case "tags":
        return "launch-tags";
      case "title":
        return "launch-title";
      case "description":
        return "launch-description";
      default:
        return null;
    }
  }

  function showUserErrors(userErrors) {
    for (const e of userErrors) {
      const control = controlOf(e.field);
      if (control) showError(control, e.message);
      else formError.append(h("div", { class: "alert alert-error", dataset: { code: e.code } }, e.message));
    }
  }

  /** The LaunchBackfillInput of the form, or null with errors shown. */
  function buildInput() {
    const problems = [];
    let input;
    if (selectedTarget() === "assets") {
      const names = chosenAssets();
      input = { target: { assets: { names, upstream: upstreamBox.checked, downstream: downstreamBox.checked } } };
      if (!names.length) problems.push(["launch-assets", "Choose at least one asset."]);
    } else {
      input = { target: { job: jobSelect.value } };
      if (!jobSelect.value) problems.push(["launch-job", "Choose a job."]);
    }
    const m = selectedMode();
    if (m === "range") {
      const start = startInput.value.trim();
      const end = endInput.value.trim();
      if (!start) problems.push(["launch-start", "Give the first partition."]);
      if (!end) problems.push(["launch-end", "Give the last partition."]);
      input.partitions = { range: { start, end } };
    } else if (m === "keys") {
      const keys = keysInput.value
        .split(/[\n,]/)
        .map((k) => k.trim())
        .filter(Boolean);
      if (!keys.length) problems.push(["launch-keys", "Give at least one key."]);
      input.partitions = { keys };
    } else {
      input.partitions = { all: true };
    }
    input.reprocess = selectedReprocess();
    input.order = orderSelect.value;
    if (maxInput.value.trim()) {
      const value = Number(maxInput.value);
      if (!Number.isInteger(value) || value < 1 || value > 10000) problems.push(["launch-max-concurrent", "A whole number from 1 to 10,000."]);
      else input.maxConcurrentRuns = value;
    }
    const tags = [];
    for (const row of tagRows.querySelectorAll(".tag-row")) {
      const key = row.querySelector(".tag-key").value.trim();
      const value = row.querySelector(".tag-value").value.trim();
      if (!key && !value) continue;
      if (!key) problems.push(["launch-tags", "Every tag needs a key."]);
      tags.push({ key, value });
    }
    if (tags.length) input.tags = tags;
    if (titleInput.value.trim()) input.title = titleInput.value.trim();
    if (descriptionInput.value.trim()) input.description = descriptionInput.value.trim();
    const config = configInput.value.trim();
    if (config) {
      try {
        input.runConfig = JSON.parse(config);
      } catch (error) {
        problems.push(["launch-run-config", `Not valid JSON: ${error.message}`]);
      }
    }
    return { input, problems };
  }

  // --- preview -------------------------------------------------------------------------------

  function renderPreview(result) {
    const p = result.preview;
    lastPreview = p;
    if (!p) {
      submit.textContent = "Launch backfill";
      replace(preview, h("p", { class: "muted" }, "Fix the highlighted fields to see a preview."));
      return;
    }
    const reasons = {};
    for (const s of p.skippedPartitions) reasons[s.reason] = (reasons[s.reason] || 0) + 1;
    const reasonText = Object.keys(reasons).map((r) => SKIP_REASONS[r] || r.toLowerCase());
    const headline = `${formatNumber(p.runs)} run${p.runs === 1 ? "" : "s"}`;
    const skipped = p.skipped
      ? `, ${formatNumber(p.skipped)} skipped because ${reasonText.length ? reasonText.join(" or ") : "they ran before"}`
      : ", nothing skipped";
    submit.textContent = p.runs ? `Launch ${headline}` : "Launch backfill";
    const perAsset = p.assets ? assetPreview(p.assets) : null;
    replace(
      preview,
      h("p", { class: "preview-headline", id: "preview-summary" }, h("strong", {}, headline), skipped, "."),
      waitingLine(p),
      h(
        "dl",
        { class: "facts facts-inline" },
        h("div", {}, h("dt", {}, "Selected"), h("dd", {}, formatNumber(p.total))),
        h("div", {}, h("dt", {}, "Will run"), h("dd", { dataset: { previewRuns: String(p.runs) } }, formatNumber(p.runs))),
        h("div", {}, h("dt", {}, "Skipped"), h("dd", {}, formatNumber(p.skipped))),
      ),
      perAsset,
      p.firstPartitions.length
        ? h(
            "div",
            {},
            // For assets, the server's list is of the selection (asset/key), skipped ones included.
            h("h3", {}, p.assets ? `First ${p.firstPartitions.length} in the selection` : p.runs > p.firstPartitions.length ? `First ${p.firstPartitions.length} to run` : "Will run"),
            h("ul", { class: "key-list", tabindex: "0", "aria-label": "Partitions that would run" }, p.firstPartitions.map((k) => h("li", { class: "mono" }, k))),
          )
        : null,
      p.skippedPartitions.length
        ? h(
            "div",
            {},
            h("h3", {}, p.skipped > p.skippedPartitions.length ? `First ${p.skippedPartitions.length} skipped` : "Skipped"),
            h(
              "ul",
              { class: "key-list", tabindex: "0", "aria-label": "Partitions skipped" },
              p.skippedPartitions.map((s) => h("li", {}, h("span", { class: "mono" }, s.key), h("span", { class: "muted" }, ` ${SKIP_REASONS[s.reason] ? s.reason.replace("ALREADY_", "already ").toLowerCase() : s.reason}`))),
            ),
          )
        : null,
    );
  }

  /** Partitions another backfill is running now: they would wait for its run (first few, linked). */
  function waitingLine(p) {
    if (!p.waiting) return null;
    const shown = (p.waitingPartitions || []).slice(0, WAITING_SHOWN);
    const items = [];
    shown.forEach((w, i) => {
      if (i) items.push(", ");
      items.push(
        h("span", { class: "mono" }, w.key),
        " (",
        h("a", { href: `#/backfills/${encodeURIComponent(w.waitingFor.backfillId)}`, dataset: { waitingBackfill: w.waitingFor.backfillId } }, w.waitingFor.backfillId),
        ")",
      );
    });
    const more = p.waiting > shown.length ? ", …" : "";
    return h(
      "p",
      { class: "preview-waiting", id: "preview-waiting", dataset: { waiting: String(p.waiting) } },
      h("strong", {}, formatNumber(p.waiting)),
      " would wait for another backfill's run: ",
      ...items,
      more,
    );
  }

  /** Per asset: its level, how many partitions run and how many are skipped. */
  function assetPreview(rows) {
    const sorted = [...rows].sort((a, b) => a.level - b.level);
    return h(
      "div",
      {},
      h("h3", {}, `${rows.length} asset${rows.length === 1 ? "" : "s"}, by dependency level`),
      h(
        "table",
        { class: "table preview-assets", id: "preview-assets" },
        h("caption", { class: "visually-hidden" }, "What would run, per asset"),
        h(
          "thead",
          {},
          h("tr", {}, h("th", { scope: "col", class: "num" }, "Level"), h("th", { scope: "col" }, "Asset"), h("th", { scope: "col", class: "num" }, "Runs"), h("th", { scope: "col", class: "num" }, "Skipped")),
        ),
        h(
          "tbody",
          {},
          sorted.map((a) =>
            h(
              "tr",
              { dataset: { previewAsset: a.name, level: String(a.level), runs: String(a.runs), skipped: String(a.skipped), total: String(a.total) } },
              h("td", { class: "num" }, String(a.level)),
              h("td", { class: "mono" }, a.name),
              h("td", { class: "num" }, formatNumber(a.runs)),
              h("td", { class: "num" }, formatNumber(a.skipped)),
            ),
          ),
        ),
      ),
    );
  }

  async function runPreview() {
    clearErrors();
    const { input, problems } = buildInput();
    if (problems.length) {
      for (const [control, message] of problems) showError(control, message);
      renderPreview({ preview: null });
      return;
    }
    const seq = ++previewSeq;
    preview.setAttribute("aria-busy", "true");
    try {
      const data = await graphql("UiPreviewBackfill", { input });
      if (seq !== previewSeq) return;
      const result = data.previewBackfill;
      showUserErrors(result.userErrors);
      renderPreview(result);
    } catch (error) {
      if (seq !== previewSeq) return;
      replace(preview, errorBox(error, "No preview."));
    } finally {
      if (seq === previewSeq) preview.removeAttribute("aria-busy");
    }
  }
  const schedulePreview = debounce(runPreview, 300);

  // --- job choice ----------------------------------------------------------------------------

  async function chooseJob(name, { keepValues = false } = {}) {
    job = null;
    replace(jobInfo);
    configSchema.hidden = true;
    if (!name || selectedTarget() !== "job") return;
    const data = await graphql("UiJobForLaunch", { name });
    job = data.job;
    if (!job) {
      showError("launch-job", `No job named ${name}.`);
      return;
    }
    const p = job.partitions;
    replace(jobInfo, job.description ? `${job.description} ` : "", h("span", { class: "muted" }, partitionsSummary(p)));
    replace(keysList, p.keys.nodes.map((k) => h("option", { value: k })));
    const ranges = job.partitionStatusRanges;
    // Suggest the job's whole range, but never over what the user typed while the job loaded.
    if (!keepValues && ranges.length) {
      if (!typed.has(startInput)) startInput.value = ranges[0].startKey;
      if (!typed.has(endInput)) endInput.value = ranges[ranges.length - 1].endKey;
    }
    maxInput.placeholder = job.maxConcurrentRuns ? `job default: ${job.maxConcurrentRuns}` : "no limit";
    if (job.configSchema) {
      configSchema.hidden = false;
      configSchema.querySelector("pre").textContent = JSON.stringify(job.configSchema, null, 2);
    }
  }

  // --- events --------------------------------------------------------------------------------

  form.addEventListener("input", (event) => {
    if (event.target === jobSelect) return;
    if (event.target.name === "target") {
      targetChanged();
      return;
    }
    typed.add(event.target);
    if (event.target.name === "mode") showMode();
    if (event.target.closest("#launch-assets-group")) assetsChanged();
    schedulePreview();
  });

  function assetsChanged() {
    const names = chosenAssets();
    const params = new URLSearchParams({ assets: names.join(",") });
    if (upstreamBox.checked) params.set("upstream", "1");
    if (downstreamBox.checked) params.set("downstream", "1");
    history.replaceState(null, "", `#/launch?${params}`);
    describeAssets().catch((error) => replace(assetsInfo, errorBox(error, "Could not load the assets' partitions.")));
  }

  async function targetChanged() {
    showTarget();
    if (selectedTarget() === "assets") assetsChanged();
    else if (jobSelect.value && !job) {
      try {
        await chooseJob(jobSelect.value);
      } catch (error) {
        replace(jobInfo, errorBox(error, "Could not load the job."));
      }
    }
    schedulePreview();
  }
  form.addEventListener("change", (event) => {
    if (event.target.name === "mode") showMode();
  });
  jobSelect.addEventListener("change", async () => {
    history.replaceState(null, "", `#/launch?job=${encodeURIComponent(jobSelect.value)}`);
    typed.clear(); // another job: its own range replaces the previous job's
    try {
      await chooseJob(jobSelect.value);
    } catch (error) {
      replace(jobInfo, errorBox(error, "Could not load the job."));
    }
    schedulePreview();
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (inFlight) return;
    schedulePreview.cancel();
    clearErrors();
    const { input, problems } = buildInput();
    if (problems.length) {
      for (const [control, message] of problems) showError(control, message);
      const control = document.getElementById(problems[0][0]);
      (control?.matches("input, select, textarea") ? control : (control?.querySelector("input") ?? control))?.focus();
      return;
    }
    inFlight = true;
    submit.disabled = true;
    submit.setAttribute("aria-busy", "true");
    const label = submit.textContent;
    submit.textContent = "Launching…";
    try {
      const data = await graphql("UiLaunchBackfill", { input: { ...input, idempotencyKey } });
      const payload = data.launchBackfill;
      if (payload.backfill) {
        location.hash = `#/backfills/${encodeURIComponent(payload.backfill.id)}`;
        return;
      }
      showUserErrors(payload.userErrors);
      const firstInvalid = form.querySelector("[aria-invalid=true]");
      if (firstInvalid) firstInvalid.focus();
    } catch (error) {
      formError.append(errorBox(error, "The backfill was not launched."));
    } finally {
      inFlight = false;
      submit.disabled = false;
      submit.removeAttribute("aria-busy");
      if (submit.textContent === "Launching…") submit.textContent = label;
    }
  });

  // --- initial values ------------------------------------------------------------------------

  const initialMode = ["range", "keys", "all"].includes(query.mode) ? query.mode : "range";
  form.querySelector(`#launch-mode-${initialMode}`).checked = true;
  const initialReprocess = REPROCESS.some((r) => r.value === query.reprocess) ? query.reprocess : "MISSING";
  form.querySelector(`#launch-reprocess-${initialReprocess}`).checked = true;
  if (query.order === "NEWEST_FIRST") orderSelect.value = "NEWEST_FIRST";
  if (query.title) titleInput.value = query.title;
  if (query.keys) keysInput.value = query.keys.split(",").join("\n");
  showMode();

  const wantsAssets = Boolean(query.assets) || query.target === "assets";
  form.querySelector(`#launch-target-${wantsAssets ? "assets" : "job"}`).checked = true;
  if (query.upstream === "1") upstreamBox.checked = true;
  if (query.downstream === "1") downstreamBox.checked = true;
  showTarget();
  const assetsRequest = loadAssetGraph().catch(() => []);
  try {
    const data = await graphql("UiJobNames");
    jobs = data.jobs.map((j) => j.name).sort();
  } catch (error) {
    replace(preview, errorBox(error, "Could not load jobs."));
    return undefined;
  }
  assets = await assetsRequest;
  const wanted = new Set((query.assets || "").split(",").filter(Boolean));
  replace(
    assetPicker,
    assets.length
      ? [...assets]
          .sort((a, b) => a.level - b.level || a.name.localeCompare(b.name))
          .map((a) =>
            h(
              "label",
              { class: "choice" },
              h("input", { type: "checkbox", name: "asset", value: a.name, id: `launch-asset-${a.name}`, checked: wanted.has(a.name) }),
              h("span", { class: "mono" }, a.name),
            ),
          )
      : h("p", { class: "muted" }, "No asset is defined."),
  );
  if (wantsAssets) {
    await describeAssets().catch((error) => replace(assetsInfo, errorBox(error, "Could not load the assets' partitions.")));
    if (query.start) startInput.value = query.start;
    if (query.end) endInput.value = query.end;
    if (wanted.size) runPreview();
  }
  replace(
    jobSelect,
    h("option", { value: "" }, "Choose a job…"),
    jobs.map((name) => h("option", { value: name }, name)),
  );
  if (!wantsAssets && query.job && jobs.includes(query.job)) {
    jobSelect.value = query.job;
    try {
      await chooseJob(query.job);
    } catch (error) {
      replace(jobInfo, errorBox(error, "Could not load the job."));
    }
    if (query.start) startInput.value = query.start;
    if (query.end) endInput.value = query.end;
    runPreview();
  }
  return () => schedulePreview.cancel();
}

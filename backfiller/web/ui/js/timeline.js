// The run timeline: one bar per run on a <canvas>, from queued (pale) to started to ended (its
// status's colour), grouped in rows by partition, job or asset, or worker; the attempts of one
// partition are linked by a line. Zoom with the wheel, +/- or the buttons; pan by dragging or
// with the arrow keys; Home resets. Up/Down walk from run to run, Enter (or a click) opens the
// run and its logs. Cost is O(runs) per draw: 10,000 runs draw in milliseconds; with more rows
// than pixels, several rows share a pixel row (aggregated), so it stays responsive.
import { formatDuration, formatNumber, h } from "./dom.js";
import { cssColor, displayZone, prefs } from "./prefs.js";
import { RUN_LABELS } from "./status.js";

const RUN_COLORS = { SUCCESS: "--st-succeeded", FAILED: "--st-failed", RUNNING: "--st-running", QUEUED: "--st-queued", CANCELED: "--st-canceled" };
const AXIS = 22; // px of the time axis, at the top
const MAX_ROW = 18;
export const GROUPINGS = { partition: "Partition", job: "Job or asset", worker: "Worker" };

export class RunTimeline {
  /**
   * @param {object} options
   * @param {(runId: string) => void} options.onOpen called with a run's id (click or Enter)
   */
  constructor({ onOpen }) {
    this.onOpen = onOpen;
    this.runs = null; // columns, as the API sends them
    this.grouping = "partition";
    this.view = null; // {start, end} in ms: the visible window of time
    this.offsetY = 0; // first visible row (fractional)
    this.focus = -1; // position in `order` of the run the keyboard is on
    this.lastDrawMs = 0;
    this.canvas = h("canvas", {
      class: "timeline-canvas",
      tabindex: "0",
      role: "img",
      "aria-label": "Run timeline",
      "aria-describedby": "timeline-help",
      onwheel: (e) => this.wheel(e),
      onpointerdown: (e) => this.pointerDown(e),
      onpointermove: (e) => this.pointerMove(e),
      onpointerup: (e) => this.pointerUp(e),
      onpointerleave: () => this.hideTip(),
      onkeydown: (e) => this.key(e),
    });
    this.canvas.timeline = this; // for the browser tests and the console
    this.tip = h("div", { class: "timeline-tooltip", role: "tooltip", hidden: true });
    this.live = h("div", { class: "visually-hidden", "aria-live": "polite" });
    this.element = h("div", { class: "timeline-frame" }, this.canvas, this.tip, this.live);
    this.resizeObserver = new ResizeObserver(() => this.draw());
    this.resizeObserver.observe(this.canvas);
    this.onPrefs = () => this.draw();
    prefs.addEventListener("change", this.onPrefs);
    this.ticker = setInterval(() => {
      if (this.active) this.draw(); // running bars grow with the clock
    }, 1000);
  }

  destroy() {
    this.resizeObserver.disconnect();
    prefs.removeEventListener("change", this.onPrefs);
    clearInterval(this.ticker);
  }

  /** New runs (columns of Backfill.timeline.runs, newest first). Keeps the zoom unless asked. */
  setRuns(runs, { now = Date.now() } = {}) {
    this.runs = runs;
    this.now = now;
    this.layout();
    if (!this.view) this.resetView();
    this.draw();
  }

  setGrouping(grouping) {
    this.grouping = grouping;
    this.offsetY = 0;
    this.focus = -1;
    this.layout();
    this.draw();
  }

  /** Rows and bars from the columns: O(runs). */
  layout() {
    const r = this.runs;
    const n = r ? r.ids.length : 0;
    const rowOf = new Map();
    const labels = [];
    const row = new Int32Array(n);
    const q = new Float64Array(n);
    const s = new Float64Array(n);
    const e = new Float64Array(n);
    let min = Infinity;
    let max = -Infinity;
    this.active = false;
    // Oldest first, so rows appear in the order their first run was queued.
    for (let k = n - 1; k >= 0; k--) {
      const key = this.grouping === "job" ? r.jobs[k] : this.grouping === "worker" ? r.workers[k] || "not started" : `${r.jobs[k]} · ${r.partitionKeys[k]}`;
      let index = rowOf.get(key);
      if (index === undefined) {
        index = labels.length;
        rowOf.set(key, index);
        labels.push(key);
      }
      row[k] = index;
      q[k] = r.queuedAt[k] * 1000;
      s[k] = r.startedAt[k] == null ? NaN : r.startedAt[k] * 1000;
      e[k] = r.endedAt[k] == null ? NaN : r.endedAt[k] * 1000;
      if (Number.isNaN(e[k])) this.active = true;
      min = Math.min(min, q[k]);
      max = Math.max(max, Number.isNaN(e[k]) ? this.now : e[k]);
    }
    // The order the keyboard walks: by row, then by time.
    const order = Array.from({ length: n }, (_, k) => k).sort((a, b) => row[a] - row[b] || q[a] - q[b]);
    // Attempts of one partition, in order: each links to the next.
    const next = new Int32Array(n).fill(-1);
    const lastOf = new Map();
    for (let k = n - 1; k >= 0; k--) {
      const key = `${r.jobs[k]}|${r.partitionKeys[k]}`;
      const before = lastOf.get(key);
      if (before !== undefined) next[before] = k;
      lastOf.set(key, k);
    }
    this.bars = { n, row, q, s, e, next, order, labels, min, max };
  }

  resetView() {
    const b = this.bars;
    if (!b || !b.n) {
      this.view = null;
      return;
    }
    const span = Math.max(1000, b.max - b.min);
    this.view = { start: b.min - span * 0.02, end: b.max + span * 0.02 };
    this.offsetY = 0;
  }

  geometry() {
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
    const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
    const rows = this.bars ? this.bars.labels.length : 0;
    const plot = Math.max(1, height - AXIS * ratio);
    // Rows share pixel rows when there are more rows than pixels (aggregated), else each gets
    // up to MAX_ROW px.
    const rowHeight = rows ? Math.min(MAX_ROW * ratio, plot / Math.min(rows, plot)) : MAX_ROW * ratio;
    const visibleRows = plot / rowHeight;
    return { ratio, width, height, plot, rowHeight, visibleRows, rows };
  }

  draw() {
    const started = performance.now();
    const canvas = this.canvas;
    const g = this.geometry();
    if (canvas.width !== g.width) canvas.width = g.width;
    if (canvas.height !== g.height) canvas.height = g.height;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = cssColor("--surface-2", "#f9fafb");
    ctx.fillRect(0, 0, g.width, g.height);
    const b = this.bars;
    if (!b || !b.n || !this.view) {
      ctx.fillStyle = cssColor("--muted", "#667085");
      ctx.font = `${14 * g.ratio}px system-ui, sans-serif`;
      ctx.fillText("No run yet: runs appear here as they are queued.", 16 * g.ratio, 40 * g.ratio);
      this.lastDrawMs = performance.now() - started;
      canvas.dataset.runs = "0";
      return;
    }
    const now = Date.now();
    const { start, end } = this.view;
    const scale = g.width / (end - start);
    const x = (t) => (t - start) * scale;
    const top = AXIS * g.ratio;
    this.drawAxis(ctx, g, start, end, x);
    const colors = {};
    for (const [status, name] of Object.entries(RUN_COLORS)) colors[status] = cssColor(name, "#888");
    const queuedColor = cssColor("--st-queued", "#8fb3f0");
    const rowH = g.rowHeight;
    const barH = Math.max(1, rowH >= 4 * g.ratio ? rowH - 2 * g.ratio : rowH);
    const first = Math.floor(this.offsetY);
    const last = first + Math.ceil(g.visibleRows) + 1;
    const statuses = this.runs.statuses;
    let drawn = 0;
    for (let k = 0; k < b.n; k++) {
      const r = b.row[k];
      if (r < first || r > last) continue;
      const y = top + (r - this.offsetY) * rowH;
      const endT = Number.isNaN(b.e[k]) ? now : b.e[k];
      const x0 = x(b.q[k]);
      const x2 = x(endT);
      if (x2 < 0 || x0 > g.width) continue;
      const x1 = Number.isNaN(b.s[k]) ? x2 : x(b.s[k]);
      ctx.globalAlpha = 0.45;
      ctx.fillStyle = queuedColor;
      if (x1 > x0) ctx.fillRect(x0, y, Math.max(1, x1 - x0), barH);
      ctx.globalAlpha = 1;
      ctx.fillStyle = colors[statuses[k]] || "#888";
      if (!Number.isNaN(b.s[k])) ctx.fillRect(x1, y, Math.max(g.ratio, x2 - x1), barH);
      drawn++;
    }
    this.drawRetryLinks(ctx, g, x, top, first, last);
    this.drawFocus(ctx, g, x, top, now);
    this.lastDrawMs = performance.now() - started;
    canvas.dataset.runs = String(b.n);
    canvas.dataset.rows = String(b.labels.length);
    canvas.dataset.drawn = String(drawn);
    canvas.dataset.drawMs = this.lastDrawMs.toFixed(1);
    canvas.setAttribute("aria-label", `Run timeline: ${formatNumber(b.n)} runs in ${formatNumber(b.labels.length)} rows by ${GROUPINGS[this.grouping].toLowerCase()}, times in ${displayZone()}`);
  }

  drawAxis(ctx, g, start, end, x) {
    const zone = displayZone();
    const span = end - start;
    const steps = [1e3, 5e3, 15e3, 60e3, 300e3, 900e3, 3600e3, 6 * 3600e3, 86400e3, 7 * 86400e3, 30 * 86400e3];
    const step = steps.find((s) => span / s <= g.width / (110 * g.ratio)) || steps[steps.length - 1];
    const format = new Intl.DateTimeFormat(undefined, step >= 86400e3 ? { timeZone: zone, month: "short", day: "numeric" } : { timeZone: zone, hour: "2-digit", minute: "2-digit", second: step < 60e3 ? "2-digit" : undefined, hourCycle: "h23" });
    ctx.fillStyle = cssColor("--muted", "#667085");
    ctx.strokeStyle = cssColor("--border", "#e3e7ee");
    ctx.font = `${11 * g.ratio}px system-ui, sans-serif`;
    ctx.lineWidth = g.ratio;
    for (let t = Math.ceil(start / step) * step; t <= end; t += step) {
      const px = Math.round(x(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(px, AXIS * g.ratio - 4 * g.ratio);
      ctx.lineTo(px, g.height);
      ctx.stroke();
      ctx.fillText(format.format(new Date(t)), px + 3 * g.ratio, 14 * g.ratio);
    }
  }

  drawRetryLinks(ctx, g, x, top, first, last) {
    const b = this.bars;
    if (g.rowHeight < 3 * g.ratio) return; // aggregated: the links would be noise
    ctx.strokeStyle = cssColor("--text-2", "#4a5568");
    ctx.lineWidth = g.ratio;
    ctx.setLineDash([3 * g.ratio, 2 * g.ratio]);
    ctx.beginPath();
    for (let k = 0; k < b.n; k++) {
      const j = b.next[k];
      if (j < 0) continue;
      const ra = b.row[k];
      const rb = b.row[j];
      if ((ra < first && rb < first) || (ra > last && rb > last)) continue;
      const ya = top + (ra - this.offsetY + 0.5) * g.rowHeight;
      const yb = top + (rb - this.offsetY + 0.5) * g.rowHeight;
      ctx.moveTo(x(Number.isNaN(b.e[k]) ? Date.now() : b.e[k]), ya);
      ctx.lineTo(x(b.q[j]), yb);
    }
    ctx.stroke();
    ctx.setLineDash([]);
  }

  drawFocus(ctx, g, x, top, now) {
    const k = this.focusedRun();
    if (k < 0) return;
    const b = this.bars;
    const y = top + (b.row[k] - this.offsetY) * g.rowHeight;
    const x0 = x(b.q[k]);
    const x2 = x(Number.isNaN(b.e[k]) ? now : b.e[k]);
    ctx.strokeStyle = cssColor("--focus", "#2454c5");
    ctx.lineWidth = 2 * g.ratio;
    ctx.strokeRect(x0 - 2 * g.ratio, y - g.ratio, Math.max(4 * g.ratio, x2 - x0 + 4 * g.ratio), Math.max(3 * g.ratio, g.rowHeight));
  }

  focusedRun() {
    return this.focus >= 0 && this.bars && this.focus < this.bars.n ? this.bars.order[this.focus] : -1;
  }

  /** The run under a point of the canvas, or -1. */
  runAt(clientX, clientY) {
    const b = this.bars;
    if (!b || !b.n || !this.view) return -1;
    const rect = this.canvas.getBoundingClientRect();
    const g = this.geometry();
    const px = (clientX - rect.left) * g.ratio;
    const py = (clientY - rect.top) * g.ratio - AXIS * g.ratio;
    if (py < 0) return -1;
    const row = Math.floor(py / g.rowHeight + this.offsetY);
    const t = this.view.start + (px / g.width) * (this.view.end - this.view.start);
    const slack = (4 * g.ratio * (this.view.end - this.view.start)) / g.width;
    let best = -1;
    for (let k = 0; k < b.n; k++) {
      if (b.row[k] !== row) continue;
      const end = Number.isNaN(b.e[k]) ? Date.now() : b.e[k];
      if (t >= b.q[k] - slack && t <= end + slack) best = k;
    }
    return best;
  }

  describe(k) {
    const r = this.runs;
    const b = this.bars;
    const wait = (Number.isNaN(b.s[k]) ? Date.now() : b.s[k]) - b.q[k];
    const ran = Number.isNaN(b.s[k]) ? null : (Number.isNaN(b.e[k]) ? Date.now() : b.e[k]) - b.s[k];
    return [
      `${r.jobs[k]} ${r.partitionKeys[k]}, attempt ${r.attempts[k]}`,
      `${RUN_LABELS[r.statuses[k]] || r.statuses[k]}; queued ${formatDuration(wait / 1000)}${ran === null ? "" : `, ran ${formatDuration(ran / 1000)}`}`,
      r.workers[k] ? `on ${r.workers[k]}` : "not started",
    ];
  }

  showTip(k, clientX) {
    if (k < 0) {
      this.hideTip();
      return;
    }
    const lines = this.describe(k);
    this.tip.replaceChildren(h("strong", {}, lines[0]), h("span", {}, lines[1]), h("span", { class: "muted" }, lines[2]));
    this.tip.hidden = false;
    const frame = this.canvas.getBoundingClientRect();
    const left = clientX === undefined ? 8 : clientX - frame.left + 12;
    this.tip.style.left = `${Math.min(left, Math.max(0, frame.width - this.tip.offsetWidth - 4))}px`;
  }

  hideTip() {
    this.tip.hidden = true;
  }

  // --- zoom and pan --------------------------------------------------------------------

  zoom(factor, anchorFraction = 0.5) {
    if (!this.view) return;
    const { start, end } = this.view;
    const anchor = start + (end - start) * anchorFraction;
    const span = Math.max(200, (end - start) * factor);
    this.view = { start: anchor - span * anchorFraction, end: anchor + span * (1 - anchorFraction) };
    this.draw();
  }

  pan(fraction, rows = 0) {
    if (!this.view) return;
    const span = this.view.end - this.view.start;
    this.view = { start: this.view.start + span * fraction, end: this.view.end + span * fraction };
    const g = this.geometry();
    this.offsetY = Math.min(Math.max(0, this.offsetY + rows), Math.max(0, g.rows - g.visibleRows));
    this.draw();
  }

  wheel(event) {
    if (!this.view) return;
    event.preventDefault();
    const rect = this.canvas.getBoundingClientRect();
    if (event.shiftKey) {
      this.pan(0, event.deltaY / 20);
      return;
    }
    this.zoom(event.deltaY > 0 ? 1.25 : 0.8, (event.clientX - rect.left) / rect.width);
  }

  pointerDown(event) {
    this.drag = { x: event.clientX, y: event.clientY, moved: false };
    this.canvas.setPointerCapture?.(event.pointerId);
  }

  pointerMove(event) {
    if (this.drag) {
      const dx = event.clientX - this.drag.x;
      const dy = event.clientY - this.drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) this.drag.moved = true;
      if (this.drag.moved) {
        const g = this.geometry();
        this.drag.x = event.clientX;
        this.drag.y = event.clientY;
        this.pan(-dx / this.canvas.clientWidth, (-dy * g.ratio) / g.rowHeight);
      }
      return;
    }
    this.showTip(this.runAt(event.clientX, event.clientY), event.clientX);
  }

  pointerUp(event) {
    const drag = this.drag;
    this.drag = null;
    if (drag && !drag.moved) {
      const k = this.runAt(event.clientX, event.clientY);
      if (k >= 0) {
        this.focus = this.bars.order.indexOf(k);
        this.draw();
        this.onOpen(this.runs.ids[k]);
      }
    }
  }

  key(event) {
    const b = this.bars;
    if (!b || !b.n) return;
    const moves = { ArrowDown: 1, ArrowUp: -1 };
    let handled = true;
    if (event.key in moves) {
      this.focus = Math.min(b.n - 1, Math.max(0, (this.focus < 0 ? -1 : this.focus) + moves[event.key]));
      this.reveal(this.focusedRun());
    } else if (event.key === "Enter" || event.key === " ") {
      const k = this.focusedRun();
      if (k >= 0) this.onOpen(this.runs.ids[k]);
    } else if (event.key === "ArrowLeft") this.pan(-0.1);
    else if (event.key === "ArrowRight") this.pan(0.1);
    else if (event.key === "+" || event.key === "=") this.zoom(0.8);
    else if (event.key === "-") this.zoom(1.25);
    else if (event.key === "Home") {
      this.resetView();
      this.draw();
    } else handled = false;
    if (handled) event.preventDefault();
  }

  /** Scroll so that run k shows, describe it, and draw. */
  reveal(k) {
    if (k < 0) return;
    const b = this.bars;
    const g = this.geometry();
    const row = b.row[k];
    if (row < this.offsetY || row >= this.offsetY + g.visibleRows - 1) this.offsetY = Math.max(0, row - g.visibleRows / 2);
    const end = Number.isNaN(b.e[k]) ? Date.now() : b.e[k];
    if (this.view && (end < this.view.start || b.q[k] > this.view.end)) {
      const span = this.view.end - this.view.start;
      this.view = { start: b.q[k] - span * 0.1, end: b.q[k] + span * 0.9 };
    }
    this.live.textContent = this.describe(k).join("; ");
    this.draw();
  }
}

/** The timeline's card on the backfill page: its controls, the canvas and how to use it. */
export function timelineSection(timeline) {
  const timing = h("p", { class: "muted small", id: "timeline-timing" });
  const groupSelect = h(
    "select",
    { id: "timeline-group", onchange: (e) => timeline.setGrouping(e.target.value) },
    Object.entries(GROUPINGS).map(([value, label]) => h("option", { value }, label)),
  );
  const zoomButton = (label, text, run) => h("button", { type: "button", class: "btn btn-secondary btn-small", "aria-label": label, onclick: run }, text);
  const card = h(
    "section",
    { class: "card", id: "timeline-card", "aria-labelledby": "timeline-title" },
    h("div", { class: "card-header" }, h("h2", { id: "timeline-title" }, "Timeline"), timing),
    h(
      "div",
      { class: "timeline-controls" },
      h("div", { class: "field field-inline" }, h("label", { for: "timeline-group" }, "One row per"), groupSelect),
      h(
        "div",
        { class: "button-row", role: "group", "aria-label": "Zoom" },
        zoomButton("Zoom in", "+", () => timeline.zoom(0.5)),
        zoomButton("Zoom out", "−", () => timeline.zoom(2)),
        zoomButton("Fit every run in view", "Fit", () => {
          timeline.resetView();
          timeline.draw();
        }),
      ),
      h("span", { class: "muted small zone-note" }, `Times in ${displayZone()}.`),
    ),
    timeline.element,
    h(
      "p",
      { class: "muted small", id: "timeline-help" },
      "Pale: queued; solid: running, in its status's colour; dashed lines link a partition's attempts. Drag or use the arrow keys to pan, the wheel or +/− to zoom, Up/Down to go from run to run, Enter or a click to open a run and its logs.",
    ),
  );
  return { card, timing };
}

// The partition status strip: folded status ranges drawn on one <canvas>.
//
// Cost is O(ranges + pixels), whatever the number of partitions: a 100,000-partition backfill
// is one small answer and one paint. With more partitions than pixels, each pixel column shows
// the statuses it covers in proportion, and the ones that matter (failed, running) keep a
// visible minimum so they never vanish between neighbours. Mouse and keyboard both work:
// hover or arrow keys describe a partition, click or Enter opens its runs.
import { formatNumber, h } from "./dom.js";
import { cssColor, prefs } from "./prefs.js";
import { PARTITION_LABELS, PARTITION_STATUSES, partitionColors, partitionStatusOf } from "./status.js";

const EMPHASIS = ["FAILED", "RUNNING", "QUEUED"]; // kept visible, stacked above the rest
const BASE = ["SUCCEEDED", "SKIPPED", "CANCELED", "UNKNOWN", "PENDING"];

export class PartitionStrip {
  /**
   * @param {object} options
   * @param {string} options.label accessible name of the strip
   * @param {(range, index) => Promise<string|null>} [options.resolveKey]
   * @param {(selection) => void} [options.onSelect] called with {index, key, status, range}
   */
  constructor({ label, resolveKey, onSelect }) {
    this.ranges = [];
    this.starts = new Float64Array(0);
    this.total = 0;
    this.resolveKey = resolveKey || (async () => null);
    this.onSelect = onSelect || (() => {});
    this.focusIndex = null;
    this.hoverIndex = null;
    this.lastDrawMs = 0;

    this.canvas = h("canvas", {
      class: "strip-canvas",
      tabindex: "0",
      role: "img",
      "aria-label": `${label}. Use arrow keys to move between partitions and Enter to open one.`,
      onmousemove: (e) => this.hover(e),
      onmouseleave: () => this.unhover(),
      onclick: (e) => this.click(e),
      onkeydown: (e) => this.key(e),
      onfocus: () => this.focus(),
      onblur: () => this.unhover(),
    });
    this.tooltip = h("div", { class: "strip-tooltip", role: "tooltip", hidden: true });
    this.live = h("div", { class: "visually-hidden", "aria-live": "polite" });
    this.legend = h("ul", { class: "legend" });
    this.element = h(
      "div",
      { class: "strip" },
      h("div", { class: "strip-frame" }, this.canvas, this.tooltip),
      this.legend,
      this.live,
    );
    this.resizeObserver = new ResizeObserver(() => this.draw());
    this.resizeObserver.observe(this.canvas);
    this.onPrefs = () => this.draw(); // the theme's colours
    prefs.addEventListener("change", this.onPrefs);
  }

  destroy() {
    this.resizeObserver.disconnect();
    prefs.removeEventListener("change", this.onPrefs);
  }

  /** Show these ranges (sorted by startIndex) out of `total` partitions. */
  setRanges(ranges, total) {
    // A status added to the API later is drawn (and named) as "Unknown", never dropped.
    this.ranges = ranges.map((r) => ({ ...r, status: partitionStatusOf(r.status) })).sort((a, b) => a.startIndex - b.startIndex);
    this.starts = Float64Array.from(this.ranges, (r) => r.startIndex);
    this.total = total ?? this.ranges.reduce((sum, r) => Math.max(sum, r.startIndex + r.count), 0);
    this.updateLegend();
    this.draw();
  }

  updateLegend() {
    const totals = {};
    for (const r of this.ranges) totals[r.status] = (totals[r.status] || 0) + r.count;
    this.legend.replaceChildren(
      ...PARTITION_STATUSES.filter((s) => totals[s]).map((s) =>
        h(
          "li",
          { dataset: { status: s } },
          h("span", { class: `swatch st-${s.toLowerCase()}`, "aria-hidden": "true" }),
          `${PARTITION_LABELS[s]} `,
          h("strong", {}, formatNumber(totals[s])),
        ),
      ),
    );
  }

  draw() {
    const started = performance.now();
    const canvas = this.canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = Math.max(1, Math.round(canvas.clientWidth * ratio));
    const height = Math.max(1, Math.round(canvas.clientHeight * ratio));
    if (canvas.width !== width) canvas.width = width;
    if (canvas.height !== height) canvas.height = height;
    const ctx = canvas.getContext("2d");
    const PARTITION_COLORS = partitionColors();
    this.colors = PARTITION_COLORS;
    ctx.fillStyle = PARTITION_COLORS.PENDING;
    ctx.fillRect(0, 0, width, height);
    if (this.total > 0) {
      if (this.total <= width) this.drawCells(ctx, width, height, ratio);
      else this.drawColumns(ctx, width, height, ratio);
      const marked = this.hoverIndex ?? this.focusIndex;
      if (marked !== null && marked < this.total) {
        const scale = width / this.total;
        const x0 = Math.floor(marked * scale);
        const w = Math.max(2 * ratio, Math.ceil(scale));
        ctx.strokeStyle = cssColor("--text", "#111827");
        ctx.lineWidth = 2 * ratio;
        ctx.strokeRect(x0 + ratio, ratio, w - ratio, height - 2 * ratio);
      }
    }
    this.lastDrawMs = performance.now() - started;
    canvas.dataset.drawnRanges = String(this.ranges.length);
    canvas.dataset.total = String(this.total);
  }

  /** At least one pixel per partition: each range is one rectangle. */
  drawCells(ctx, width, height, ratio) {
    const scale = width / this.total;
    for (const r of this.ranges) {
      ctx.fillStyle = this.colors[r.status] || "#999";
      const x0 = Math.floor(r.startIndex * scale);
      const x1 = Math.ceil((r.startIndex + r.count) * scale);
      ctx.fillRect(x0, 0, Math.max(1, x1 - x0), height);
    }
    if (scale >= 6 * ratio) {
      ctx.fillStyle = cssColor("--surface", "#ffffff"); // a gap between wide cells
      for (let i = 1; i < this.total; i++) ctx.fillRect(Math.round(i * scale) - ratio / 2, 0, ratio, height);
    }
  }

  /**
   * More partitions than pixels: each pixel column is a small stacked bar of the statuses it
   * covers, in proportion; failed, running and queued keep a visible minimum so that one
   * failure among hundreds of successes still shows, without painting the column red.
   */
  drawColumns(ctx, width, height, ratio) {
    const scale = width / this.total;
    const shares = {};
    for (const status of PARTITION_STATUSES) shares[status] = new Float32Array(width);
    for (const r of this.ranges) {
      const share = shares[r.status];
      if (!share) continue;
      const x0 = r.startIndex * scale;
      const x1 = (r.startIndex + r.count) * scale;
      const first = Math.floor(x0);
      const last = Math.min(width - 1, Math.ceil(x1) - 1);
      for (let col = first; col <= last; col++) share[col] += Math.min(x1, col + 1) - Math.max(x0, col);
    }
    const minimum = Math.max(3 * ratio, Math.round(height * 0.18));
    for (let col = 0; col < width; col++) {
      let covered = 0;
      for (const status of PARTITION_STATUSES) covered += shares[status][col];
      if (covered <= 0) continue;
      let y = height;
      let reserved = 0;
      const tops = [];
      for (const status of EMPHASIS) {
        const part = shares[status][col] / covered;
        if (part <= 0) continue;
        const h = Math.max(minimum, Math.round(part * height));
        tops.push([status, h]);
        reserved += h;
      }
      const rest = Math.max(0, height - reserved);
      let restCovered = 0;
      for (const status of BASE) restCovered += shares[status][col];
      for (const status of BASE) {
        const part = shares[status][col];
        if (part <= 0 || restCovered <= 0) continue;
        const h = (part / restCovered) * rest;
        ctx.fillStyle = this.colors[status];
        ctx.fillRect(col, y - h, 1, h);
        y -= h;
      }
      for (const [status, h] of tops) {
        ctx.fillStyle = this.colors[status];
        ctx.fillRect(col, Math.max(0, y - h), 1, h);
        y -= h;
      }
    }
  }

  rangeAt(index) {
    let lo = 0;
    let hi = this.starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.starts[mid] <= index) lo = mid;
      else hi = mid - 1;
    }
    const r = this.ranges[lo];
    return r && index >= r.startIndex && index < r.startIndex + r.count ? r : null;
  }

  indexAtEvent(event) {
    const rect = this.canvas.getBoundingClientRect();
    const x = Math.min(Math.max(event.clientX - rect.left, 0), rect.width - 0.001);
    return Math.floor((x / rect.width) * this.total);
  }

  /** Describe the partition at `index`: {index, status, range, key (maybe null)}. */
  async describe(index) {
    const range = this.rangeAt(index);
    if (!range) return null;
    const key = await this.resolveKey(range, index);
    return { index, status: range.status, range, key };
  }

  async showTooltip(index, clientX) {
    const info = await this.describe(index);
    if (!info || (this.hoverIndex ?? this.focusIndex) !== index) return;
    const { range } = info;
    const lines = [
      h("strong", {}, info.key ?? `Partition #${formatNumber(index + 1)}`),
      h(
        "span",
        { class: "strip-tooltip-status" },
        h("span", { class: `swatch st-${info.status.toLowerCase()}`, "aria-hidden": "true" }),
        PARTITION_LABELS[info.status],
      ),
      h("span", { class: "muted" }, `#${formatNumber(index + 1)} of ${formatNumber(this.total)}`),
    ];
    if (range.count > 1) {
      lines.push(
        h(
          "span",
          { class: "muted" },
          `${formatNumber(range.count)} ${PARTITION_LABELS[range.status].toLowerCase()} in a row: ${range.startKey} … ${range.endKey}`,
        ),
      );
    }
    this.tooltip.replaceChildren(...lines);
    this.tooltip.hidden = false;
    const frame = this.canvas.getBoundingClientRect();
    const x = clientX !== undefined ? clientX - frame.left : ((index + 0.5) / this.total) * frame.width;
    const tipWidth = this.tooltip.offsetWidth;
    this.tooltip.style.left = `${Math.min(Math.max(0, x - tipWidth / 2), Math.max(0, frame.width - tipWidth))}px`;
    this.live.textContent = `${info.key ?? `Partition ${index + 1}`}: ${PARTITION_LABELS[info.status]}`;
  }

  hover(event) {
    if (!this.total) return;
    const index = this.indexAtEvent(event);
    if (index === this.hoverIndex) return;
    this.hoverIndex = index;
    this.draw();
    this.showTooltip(index, event.clientX);
  }

  unhover() {
    this.hoverIndex = null;
    this.tooltip.hidden = true;
    this.draw();
  }

  async select(index) {
    const info = await this.describe(index);
    if (info) this.onSelect(info);
  }

  click(event) {
    if (!this.total) return;
    const index = this.indexAtEvent(event);
    this.focusIndex = index;
    this.select(index);
  }

  focus() {
    if (!this.total) return;
    if (this.focusIndex === null) this.focusIndex = 0;
    this.draw();
    this.showTooltip(this.focusIndex);
  }

  key(event) {
    if (!this.total) return;
    const page = Math.max(1, Math.round(this.total / 100));
    const moves = {
      ArrowRight: 1,
      ArrowLeft: -1,
      PageDown: page,
      PageUp: -page,
      Home: -Infinity,
      End: Infinity,
    };
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      if (this.focusIndex !== null) this.select(this.focusIndex);
      return;
    }
    if (!(event.key in moves)) return;
    event.preventDefault();
    let step = moves[event.key];
    if (event.shiftKey && Math.abs(step) === 1) step *= page;
    const current = this.focusIndex ?? 0;
    this.focusIndex = Math.min(this.total - 1, Math.max(0, current + step));
    this.hoverIndex = null;
    this.draw();
    this.showTooltip(this.focusIndex);
  }
}

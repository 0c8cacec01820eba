// The partition status strip: folded status ranges drawn on one <canvas>.
//
// Cost is O(ranges + pixels), whatever the number of partitions: a 100,000-partition backfill
// is one small answer and one paint. Rare statuses that matter (failed, running) keep at least
// one device pixel so they never vanish between neighbours. Mouse and keyboard both work:
// hover or arrow keys describe a partition, click or Enter opens its runs.
import { formatNumber, h } from "./dom.js";
import { PARTITION_COLORS, PARTITION_LABELS, PARTITION_STATUSES } from "./status.js";

const EMPHASIS = ["QUEUED", "RUNNING", "FAILED"]; // drawn last, lowest first

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
  }

  destroy() {
    this.resizeObserver.disconnect();
  }

  /** Show these ranges (sorted by startIndex) out of `total` partitions. */
  setRanges(ranges, total) {
    this.ranges = [...ranges].sort((a, b) => a.startIndex - b.startIndex);
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
    ctx.fillStyle = PARTITION_COLORS.PENDING;
    ctx.fillRect(0, 0, width, height);
    if (this.total > 0) {
      const scale = width / this.total;
      const cell = scale >= 6 * ratio; // wide cells: draw a gap between partitions
      for (const r of this.ranges) {
        ctx.fillStyle = PARTITION_COLORS[r.status] || "#999";
        const x0 = r.startIndex * scale;
        const x1 = (r.startIndex + r.count) * scale;
        ctx.fillRect(Math.floor(x0), 0, Math.max(1, Math.ceil(x1) - Math.floor(x0)), height);
      }
      for (const status of EMPHASIS) {
        ctx.fillStyle = PARTITION_COLORS[status];
        for (const r of this.ranges) {
          if (r.status !== status) continue;
          const x0 = r.startIndex * scale;
          const w = Math.max(ratio, r.count * scale);
          ctx.fillRect(Math.floor(x0), 0, Math.ceil(w), height);
        }
      }
      if (cell) {
        ctx.fillStyle = "#ffffff";
        for (let i = 1; i < this.total; i++) ctx.fillRect(Math.round(i * scale) - ratio / 2, 0, ratio, height);
      }
      const marked = this.hoverIndex ?? this.focusIndex;
      if (marked !== null && marked < this.total) {
        const x0 = Math.floor(marked * scale);
        const w = Math.max(2 * ratio, Math.ceil(scale));
        ctx.strokeStyle = "#111827";
        ctx.lineWidth = 2 * ratio;
        ctx.strokeRect(x0 + ratio, ratio, w - ratio, height - 2 * ratio);
      }
    }
    this.lastDrawMs = performance.now() - started;
    canvas.dataset.drawnRanges = String(this.ranges.length);
    canvas.dataset.total = String(this.total);
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

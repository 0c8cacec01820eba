// The asset graph: assets laid out in rows by dependency level (roots on top), with the edges
// upstream -> downstream drawn on one SVG layer behind the nodes.
//
// The rows are plain HTML (flex rows that wrap), so the graph fits any width without sideways
// scroll; the SVG only draws lines between where the browser put the nodes, and is redrawn when
// their sizes change. Each node is focusable: arrow keys follow the edges (Up to an upstream
// asset, Down to a downstream one, Left and Right along a row), Enter or Space selects it.
import { h } from "./dom.js";

const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes = {}) {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  return element;
}

/** The levels of a set of assets, as an array of arrays of names (stable within a level). */
export function levelsOf(assets) {
  const levels = [];
  for (const asset of assets) {
    const level = Math.max(0, asset.level | 0);
    (levels[level] ||= []).push(asset.name);
  }
  return levels.filter(Boolean);
}

/** A text naming a list of assets: "a", "a and b", "a, b and 2 more". */
export function namesText(names, shown = 3) {
  if (names.length <= 1) return names.join("");
  if (names.length <= shown) return `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
  return `${names.slice(0, shown).join(", ")} and ${names.length - shown} more`;
}

export class AssetGraph {
  /**
   * @param {object} options
   * @param {string} options.label the graph's accessible name
   * @param {Array<{name: string, level: number, upstream: string[]}>} options.assets
   * @param {(asset) => Node[]} options.renderNode the content of one node
   * @param {(name: string) => void} [options.onSelect] Enter, Space or a click on a node
   */
  constructor({ label, assets, renderNode, onSelect }) {
    this.assets = new Map(assets.map((a) => [a.name, a]));
    this.renderNode = renderNode;
    this.onSelect = onSelect || null;
    this.selected = null;
    this.nodes = new Map();
    this.upstream = new Map();
    this.downstream = new Map();
    for (const a of assets) {
      const ups = (a.upstream || []).filter((u) => this.assets.has(u));
      this.upstream.set(a.name, ups);
      for (const u of ups) {
        if (!this.downstream.has(u)) this.downstream.set(u, []);
        this.downstream.get(u).push(a.name);
      }
    }
    this.edges = svg("svg", { class: "asset-edges", "aria-hidden": "true", focusable: "false" });
    const levels = levelsOf(assets);
    this.rows = levels.map((names) => names.map((name) => this.node(this.assets.get(name))));
    this.element = h(
      "div",
      { class: "asset-graph", role: "group", "aria-label": label },
      this.edges,
      h(
        "ol",
        { class: "asset-levels" },
        levels.map((names, index) =>
          h(
            "li",
            { class: "asset-level", dataset: { level: String(index) } },
            h("p", { class: "asset-level-title" }, `Level ${index}`),
            h("ul", { class: "asset-row" }, this.rows[index]),
          ),
        ),
      ),
    );
    this.resizeObserver = new ResizeObserver(() => this.drawEdges());
    this.resizeObserver.observe(this.element);
    for (const node of this.nodes.values()) this.resizeObserver.observe(node);
  }

  node(asset) {
    const ups = this.upstream.get(asset.name);
    const headingId = `asset-node-${asset.name}`;
    const node = h(
      "li",
      {
        class: "asset-node",
        tabindex: "0",
        dataset: { asset: asset.name },
        "aria-labelledby": headingId,
        onkeydown: (event) => this.key(event, asset.name),
        onclick: (event) => {
          if (event.target.closest("a, button, input, select, textarea")) return;
          this.select(asset.name);
        },
        onfocus: () => this.highlight(asset.name),
        onmouseenter: () => this.highlight(asset.name),
        onmouseleave: () => this.highlight(this.selected),
      },
      h("h3", { class: "asset-name mono", id: headingId }, asset.name),
      h("p", { class: "asset-deps muted small" }, ups.length ? `after ${namesText(ups)}` : "a root"),
      h("div", { class: "asset-body" }, this.renderNode(asset)),
    );
    this.nodes.set(asset.name, node);
    return node;
  }

  /** Redraw the content of one node (its counts changed). */
  update(name) {
    const node = this.nodes.get(name);
    const asset = this.assets.get(name);
    if (!node || !asset) return;
    node.querySelector(".asset-body").replaceChildren(...[this.renderNode(asset)].flat(Infinity).filter(Boolean));
  }

  /** Replace an asset's data (for example its counts) and redraw its node. */
  set(name, data) {
    const asset = this.assets.get(name);
    if (!asset) return;
    Object.assign(asset, data);
    this.update(name);
  }

  select(name, { notify = true } = {}) {
    if (!this.nodes.has(name)) return;
    this.selected = name;
    for (const [n, node] of this.nodes) {
      if (n === name) node.setAttribute("aria-current", "true");
      else node.removeAttribute("aria-current");
    }
    this.highlight(name);
    if (notify && this.onSelect) this.onSelect(name);
  }

  highlight(name) {
    for (const path of this.edges.querySelectorAll("path")) {
      const active = name !== null && (path.dataset.from === name || path.dataset.to === name);
      path.classList.toggle("is-active", active);
    }
  }

  key(event, name) {
    if (event.target !== this.nodes.get(name)) return; // a link or button inside the node
    const rowIndex = this.rows.findIndex((row) => row.some((n) => n.dataset.asset === name));
    const row = this.rows[rowIndex];
    const column = row.findIndex((n) => n.dataset.asset === name);
    let target = null;
    switch (event.key) {
      case "ArrowUp":
        target = this.upstream.get(name)[0] ?? this.rows[rowIndex - 1]?.[0]?.dataset.asset;
        break;
      case "ArrowDown":
        target = this.downstream.get(name)?.[0] ?? this.rows[rowIndex + 1]?.[0]?.dataset.asset;
        break;
      case "ArrowLeft":
        target = row[column - 1]?.dataset.asset;
        break;
      case "ArrowRight":
        target = row[column + 1]?.dataset.asset;
        break;
      case "Home":
        target = this.rows[0][0].dataset.asset;
        break;
      case "End":
        target = this.rows[this.rows.length - 1].at(-1).dataset.asset;
        break;
      case "Enter":
      case " ":
        event.preventDefault();
        this.select(name);
        return;
      default:
        return;
    }
    event.preventDefault();
    if (target) this.nodes.get(target).focus();
  }

  drawEdges() {
    const box = this.element.getBoundingClientRect();
    if (!box.width) return;
    this.edges.setAttribute("width", String(box.width));
    this.edges.setAttribute("height", String(box.height));
    this.edges.setAttribute("viewBox", `0 0 ${box.width} ${box.height}`);
    const paths = [];
    for (const [name, ups] of this.upstream) {
      const to = this.nodes.get(name).getBoundingClientRect();
      for (const up of ups) {
        const from = this.nodes.get(up).getBoundingClientRect();
        const x1 = from.left + from.width / 2 - box.left;
        const y1 = from.bottom - box.top;
        const x2 = to.left + to.width / 2 - box.left;
        const y2 = to.top - box.top;
        const bend = Math.max(12, (y2 - y1) / 2);
        paths.push(
          svg("path", {
            class: "asset-edge",
            d: `M ${x1} ${y1} C ${x1} ${y1 + bend}, ${x2} ${y2 - bend}, ${x2} ${y2 - 4}`,
            "data-from": up,
            "data-to": name,
            "marker-end": "url(#asset-arrow)",
          }),
        );
      }
    }
    const marker = svg("marker", { id: "asset-arrow", viewBox: "0 0 8 8", refX: "4", refY: "4", markerWidth: "6", markerHeight: "6", orient: "auto" });
    marker.append(svg("path", { d: "M 0 0 L 8 4 L 0 8 z", class: "asset-arrow" }));
    const defs = svg("defs");
    defs.append(marker);
    this.edges.replaceChildren(defs, ...paths);
    this.element.dataset.edges = String(paths.length);
    this.highlight(this.selected);
  }

  destroy() {
    this.resizeObserver.disconnect();
  }
}

// Assets: the graph of every asset (loaded once per page), the key resolver of an asset's
// partitions, and the small pieces the backfill, assets and launch pages share.
import { graphql } from "./api.js";
import { formatNumber, h } from "./dom.js";
import { keyResolver } from "./keys.js";

const MAX_KEYS_TO_LOAD = 5000;

/** Every asset: name, description, level, upstream, downstream, partitions (or null). */
export async function loadAssetGraph() {
  const data = await graphql("UiAssets");
  return data.assets;
}

/** The names a selection covers: the named assets, plus everything up- or downstream. */
export function closure(assets, names, { upstream = false, downstream = false } = {}) {
  const byName = new Map(assets.map((a) => [a.name, a]));
  const chosen = new Set(names.filter((n) => byName.has(n)));
  const walk = (direction) => {
    const queue = [...names];
    while (queue.length) {
      const asset = byName.get(queue.pop());
      for (const next of asset ? asset[direction] : []) {
        if (!chosen.has(next)) {
          chosen.add(next);
          queue.push(next);
        }
      }
    }
  };
  if (upstream) walk("upstream");
  if (downstream) walk("downstream");
  return assets.filter((a) => chosen.has(a.name)).map((a) => a.name);
}

/** The roots of a set of names: those with no upstream inside the set. */
export function rootsOf(assets, names) {
  const inside = new Set(names);
  return assets.filter((a) => inside.has(a.name) && !a.upstream.some((u) => inside.has(u))).map((a) => a.name);
}

/** "raw_events + downstream", as a backfill's target reads. */
export function selectionLabel(selection) {
  const extras = [selection.upstream ? "upstream" : null, selection.downstream ? "downstream" : null].filter(Boolean);
  return `${selection.names.join(", ")}${extras.length ? ` + ${extras.join(" and ")}` : ""}`;
}

/** A key resolver (see keys.js) for the partitions of an asset, loading what it needs lazily. */
export function assetKeyResolver(name) {
  let resolver = null;
  const load = async () => {
    const first = await graphql("UiAssetKeys", { name, first: 100, after: null });
    const definition = first.asset?.partitions ?? null;
    return keyResolver(definition, async () => {
      if (!definition || definition.count > MAX_KEYS_TO_LOAD) return null;
      const keys = [];
      let page = first;
      for (;;) {
        const connection = page.asset?.partitions?.keys;
        if (!connection) return null;
        keys.push(...connection.nodes);
        if (!connection.pageInfo.hasNextPage) return keys;
        page = await graphql("UiAssetKeys", { name, first: 100, after: connection.pageInfo.endCursor });
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

/** Small figures under a node's bar: only the statuses that have partitions. */
export function figures(entries) {
  const shown = entries.filter(([, value]) => value);
  if (!shown.length) return null;
  return h(
    "p",
    { class: "asset-figures" },
    shown.map(([status, value, label]) =>
      h("span", { dataset: { figure: status.toLowerCase() } }, h("span", { class: `swatch st-${status.toLowerCase()}`, "aria-hidden": "true" }), `${formatNumber(value)} ${label}`),
    ),
  );
}

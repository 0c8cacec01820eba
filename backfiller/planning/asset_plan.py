"""The plan of an asset backfill: which partitions of which assets, in what order. Pure (no IO).

A launch pins, per selected asset, the partitions it covers: the requested selection on the
root assets' partitions definition, mapped through the graph to the others (a contiguous index
range where the mappings keep ranges contiguous, else a key list). That is O(assets) to store,
whatever the number of partitions, so launching stays one insert.

The slots of an asset backfill are numbered two ways:

* the planning *cursor* runs asset by asset in topological order (``offset(asset) + k``), so
  that an upstream slot is always planned before the slots that depend on it;
* the claim *position* interleaves assets partition by partition (position
  ``(ceil((k + 1) * N / n) - 1) * A + i`` for the ``k``-th of ``n`` partitions of the ``i``-th of
  ``A`` assets, ``N`` the largest ``n``), so that a downstream partition comes right after the
  upstream partitions it waits for, and is claimed as soon as they succeed instead of after a
  whole level.

A slot's key is ``asset/partition`` (asset names never hold ``/``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from backfiller.definitions.asset_graph import AssetGraph
from backfiller.definitions.mappings import EVERY, _Every
from backfiller.definitions.partitions import KeySpace
from backfiller.domain import Order

SEPARATOR = "/"


def slot_key(asset: str, key: str) -> str:
    return f"{asset}{SEPARATOR}{key}"


def split_slot_key(value: str) -> tuple[str, str]:
    asset, _, key = value.partition(SEPARATOR)
    return asset, key


def asset_prefix_bounds(asset: str) -> tuple[str, str]:
    """``[low, high)`` of the slot keys of ``asset`` (a range scan of the slots' key index)."""
    return f"{asset}{SEPARATOR}", f"{asset}{chr(ord(SEPARATOR) + 1)}"


class AssetPlanProblem(Exception):
    """Why a selection cannot be mapped through the graph."""


@dataclass(frozen=True, slots=True)
class AssetPart:
    """The partitions of one asset in a backfill: ``[start, start + count)`` or ``keys``."""

    name: str
    fingerprint: str
    start: int = 0
    count: int = 0
    keys: tuple[str, ...] | None = None

    def key_at(self, k: int, space: KeySpace) -> str:
        if self.keys is not None:
            return self.keys[k]
        return space.key_at(self.start + k)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "fingerprint": self.fingerprint}
        if self.keys is not None:
            out["keys"] = list(self.keys)
        else:
            out["start"], out["count"] = self.start, self.count
        return out

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> AssetPart:
        keys = raw.get("keys")
        if keys is not None:
            return cls(raw["name"], raw["fingerprint"], 0, len(keys), tuple(keys))
        return cls(raw["name"], raw["fingerprint"], int(raw["start"]), int(raw["count"]))


@dataclass(frozen=True, slots=True)
class AssetTarget:
    """An asset backfill's target as asked, and its pinned per-asset partitions."""

    names: tuple[str, ...]
    upstream: bool
    downstream: bool
    parts: tuple[AssetPart, ...]

    @property
    def total(self) -> int:
        return sum(p.count for p in self.parts)

    @property
    def assets(self) -> list[str]:
        return [p.name for p in self.parts]

    def part(self, name: str) -> AssetPart | None:
        return next((p for p in self.parts if p.name == name), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "names": list(self.names),
            "upstream": self.upstream,
            "downstream": self.downstream,
            "parts": [p.to_json() for p in self.parts],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> AssetTarget:
        return cls(
            tuple(raw["names"]),
            bool(raw["upstream"]),
            bool(raw["downstream"]),
            tuple(AssetPart.from_json(p) for p in raw["parts"]),
        )

    def at_cursor(self, g: int, spaces: Mapping[str, KeySpace], order: Order) -> tuple[int, str]:
        """The claim position and slot key of planning cursor ``g``."""
        offset = 0
        for i, p in enumerate(self.parts):
            if g < offset + p.count:
                k = g - offset
                return self.position_of(i, k, order), slot_key(p.name, p.key_at(k, spaces[p.name]))
            offset += p.count
        raise IndexError(g)

    def position_of(self, i: int, k: int, order: Order) -> int:
        """The claim position of the ``k``-th partition of the ``i``-th asset."""
        widest = max(p.count for p in self.parts)
        count = self.parts[i].count
        rank = k if order is Order.OLDEST_FIRST else count - 1 - k
        # ceil((rank + 1) * widest / count) - 1: the last "column" this partition spans
        column = -(-(rank + 1) * widest // count) - 1
        return column * len(self.parts) + i

    def in_launch_order(self, order: Order) -> Iterator[tuple[int, int]]:
        """``(i, k)`` of every slot (the ``k``-th partition of the ``i``-th asset) by claim
        position, lazily: each column holds at most one partition of each asset."""
        widest = max((p.count for p in self.parts), default=0)
        for column in range(widest):
            for i, p in enumerate(self.parts):
                # the one rank r, if any, with ceil((r + 1) * widest / count) - 1 == column
                rank = (column + 1) * p.count // widest - 1
                if rank < 0 or -(-(rank + 1) * widest // p.count) - 1 != column:
                    continue
                yield i, rank if order is Order.OLDEST_FIRST else p.count - 1 - rank


def map_parts(
    graph: AssetGraph,
    selected: Sequence[str],
    root: AssetPart,
    spaces: Mapping[str, KeySpace],
) -> list[AssetPart]:
    """Map the root assets' partitions through the graph to every selected asset.

    An asset with the roots' partitions definition covers the roots' partitions; another
    covers the image of its selected upstream assets' partitions; an unpartitioned asset
    covers its one partition.
    """
    parts: dict[str, AssetPart] = {}
    inside = set(selected)
    for name in graph.order:
        if name not in inside:
            continue
        asset = graph.assets[name]
        fingerprint = asset.key_partitions.fingerprint()
        space = spaces[name]
        if asset.partitions is None:
            parts[name] = AssetPart(name, fingerprint, 0, len(space))
            continue
        if fingerprint == root.fingerprint:
            parts[name] = AssetPart(name, fingerprint, root.start, root.count, root.keys)
            continue
        edges = [e for e in graph.upstream_edges[name] if e.upstream in parts]
        if not edges:
            raise AssetPlanProblem(
                f"asset {name!r} has partitions of its own and no selected upstream asset to map "
                "the selection from; select assets of one partitions definition as roots"
            )
        parts[name] = _image(name, fingerprint, edges, parts, spaces)
    return [parts[n] for n in graph.order if n in parts]


def _image(
    name: str,
    fingerprint: str,
    edges: Sequence[Any],
    parts: Mapping[str, AssetPart],
    spaces: Mapping[str, KeySpace],
) -> AssetPart:
    space = spaces[name]
    indexes: set[int] = set()
    contiguous = True
    for edge in edges:
        up = parts[edge.upstream]
        up_space = spaces[edge.upstream]
        if up.keys is not None:
            contiguous = False
            ends = [up.key_at(k, up_space) for k in range(up.count)]
        else:
            ends = [up.key_at(0, up_space), up.key_at(up.count - 1, up_space)] if up.count else []
        for key in ends:
            found = edge.mapping.downstream_keys(key, up_space, space)
            if isinstance(found, _Every):
                return AssetPart(name, fingerprint, 0, len(space))
            indexes.update(i for i in (space.index_of(k) for k in found) if i is not None)
    if not indexes:
        raise AssetPlanProblem(f"no partition of asset {name!r} depends on the selection")
    if contiguous:
        lo, hi = min(indexes), max(indexes)
        return AssetPart(name, fingerprint, lo, hi - lo + 1)
    ordered = sorted(indexes)
    return AssetPart(name, fingerprint, 0, len(ordered), tuple(space.key_at(i) for i in ordered))


def upstream_needs(
    graph: AssetGraph, target: AssetTarget, spaces: Mapping[str, KeySpace], slot: str
) -> list[tuple[str, list[str] | _Every]]:
    """What slot ``asset/key`` waits for: per upstream asset in the backfill, its keys (or
    :data:`EVERY`). Keys outside the upstream's part of the backfill have no slot and are not
    waited for."""
    asset, key = split_slot_key(slot)
    inside = set(target.assets)
    needs: list[tuple[str, list[str] | _Every]] = []
    for edge in graph.upstream_edges.get(asset, ()):
        if edge.upstream not in inside:
            continue
        found = edge.mapping.upstream_keys(key, spaces[edge.upstream], spaces[asset])
        if isinstance(found, _Every):
            needs.append((edge.upstream, EVERY))
        elif found:
            needs.append((edge.upstream, [slot_key(edge.upstream, k) for k in found]))
    return needs

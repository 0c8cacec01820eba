"""The asset graph: dependencies checked at load, selections, levels. Pure (no IO).

Built once from the definitions' assets. A cycle, a dependency on an unknown asset or a mapping
between incompatible partitions definitions is refused with :class:`AssetGraphError`, whose
message names the assets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from backfiller.definitions.assets import AssetDefinition
from backfiller.definitions.mappings import PartitionMapping, default_mapping


class AssetGraphError(ValueError):
    """The assets do not form a valid graph; the message says which assets and why."""


@dataclass(frozen=True, slots=True)
class Edge:
    upstream: str
    downstream: str
    mapping: PartitionMapping


class AssetGraph:
    """Assets by name, their edges (with mappings) and one topological order."""

    def __init__(self, assets: Sequence[AssetDefinition]) -> None:
        self.assets: dict[str, AssetDefinition] = {}
        for a in assets:
            if a.name in self.assets:
                raise AssetGraphError(
                    f"two assets are named {a.name!r}; asset names must be unique"
                )
            self.assets[a.name] = a
        self.upstream_edges: dict[str, list[Edge]] = {n: [] for n in self.assets}
        self.downstream_edges: dict[str, list[Edge]] = {n: [] for n in self.assets}
        for a in assets:
            for dep in a.deps:
                edge = self._edge(a, dep.asset, dep.mapping)
                self.upstream_edges[a.name].append(edge)
                self.downstream_edges[dep.asset].append(edge)
        self.order: list[str] = self._topological()
        self.level: dict[str, int] = {}
        for name in self.order:
            ups = [self.level[e.upstream] for e in self.upstream_edges[name]]
            self.level[name] = 1 + max(ups) if ups else 0

    def _edge(self, asset: AssetDefinition, name: str, mapping: PartitionMapping | None) -> Edge:
        upstream = self.assets.get(name)
        if upstream is None:
            raise AssetGraphError(
                f"asset {asset.name!r} depends on {name!r}, which is not an asset"
            )
        if name == asset.name:
            raise AssetGraphError(f"asset {asset.name!r} depends on itself")
        chosen = mapping or default_mapping(upstream.partitions, asset.partitions)
        if chosen is None:
            raise AssetGraphError(
                f"asset {asset.name!r} depends on {name!r} but their partitions are "
                "incompatible; give the dependency a partition mapping "
                "(Dep(..., mapping=StaticMapping({...})))"
            )
        problem = chosen.problem(upstream.partitions, asset.partitions)
        if problem is not None:
            raise AssetGraphError(
                f"asset {asset.name!r} depends on {name!r} with {chosen!r}: {problem}"
            )
        return Edge(name, asset.name, chosen)

    def _topological(self) -> list[str]:
        """Kahn's algorithm, in declaration order among ready assets; a cycle is refused."""
        waiting = {n: len(edges) for n, edges in self.upstream_edges.items()}
        ready = [n for n, k in waiting.items() if k == 0]
        order: list[str] = []
        while ready:
            name = ready.pop(0)
            order.append(name)
            for edge in self.downstream_edges[name]:
                waiting[edge.downstream] -= 1
                if waiting[edge.downstream] == 0:
                    ready.append(edge.downstream)
        if len(order) < len(self.assets):
            raise AssetGraphError(
                "the asset dependencies form a cycle through "
                + ", ".join(repr(n) for n in self._cycle(set(self.assets) - set(order)))
            )
        return order

    def _cycle(self, left: set[str]) -> list[str]:
        """One cycle among ``left`` (the assets Kahn's algorithm could not order)."""
        start = min(left)
        path: list[str] = [start]
        seen = {start: 0}
        while True:
            nxt = min(e.upstream for e in self.upstream_edges[path[-1]] if e.upstream in left)
            if nxt in seen:
                return [*path[seen[nxt] :], nxt]
            seen[nxt] = len(path)
            path.append(nxt)

    def __contains__(self, name: object) -> bool:
        return name in self.assets

    def upstream_of(self, name: str) -> list[str]:
        """Direct upstream assets of ``name``."""
        return [e.upstream for e in self.upstream_edges[name]]

    def downstream_of(self, name: str) -> list[str]:
        """Direct downstream assets of ``name``."""
        return [e.downstream for e in self.downstream_edges[name]]

    def select(self, names: Iterable[str], *, upstream: bool, downstream: bool) -> list[str]:
        """``names`` plus (optionally) everything up or downstream of them, in topological
        order. Unknown names raise :class:`KeyError`."""
        chosen: set[str] = set()
        for n in names:
            if n not in self.assets:
                raise KeyError(n)
            chosen.add(n)
        if upstream:
            chosen |= self._closure(chosen, self.upstream_of)
        if downstream:
            chosen |= self._closure(chosen, self.downstream_of)
        return [n for n in self.order if n in chosen]

    @staticmethod
    def _closure(start: set[str], step: object) -> set[str]:
        found: set[str] = set()
        todo = list(start)
        while todo:
            for nxt in step(todo.pop()):  # type: ignore[operator]
                if nxt not in found:
                    found.add(nxt)
                    todo.append(nxt)
        return found

    def levels(self, selected: Sequence[str]) -> dict[str, int]:
        """Each selected asset's dependency level within the selection (roots are 0)."""
        inside = set(selected)
        level: dict[str, int] = {}
        for name in self.order:
            if name not in inside:
                continue
            ups = [level[e.upstream] for e in self.upstream_edges[name] if e.upstream in inside]
            level[name] = 1 + max(ups) if ups else 0
        return level

    def edges_within(self, selected: Sequence[str]) -> list[Edge]:
        inside = set(selected)
        return [
            e
            for n in self.order
            if n in inside
            for e in self.upstream_edges[n]
            if e.upstream in inside
        ]

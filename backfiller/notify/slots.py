"""Delivery slots: how many deliveries are in flight, in all and per destination. Pure."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Picked:
    """What a look starts, and how many due deliveries it leaves waiting, by reason."""

    ids: list[int] = field(default_factory=list)
    destinations: dict[int, str] = field(default_factory=dict)
    destination_busy: int = 0
    no_slot: int = 0


@dataclass
class DeliverySlots:
    """``total`` deliveries in flight at most, ``per_destination`` of them to one
    ``scheme://host:port``."""

    total: int
    per_destination: int
    in_flight: Counter[str] = field(default_factory=Counter)

    @property
    def used(self) -> int:
        return sum(self.in_flight.values())

    @property
    def room(self) -> int:
        return max(0, self.total - self.used)

    def busy(self) -> list[str]:
        """Destinations that have their share already."""
        return sorted(d for d, n in self.in_flight.items() if n >= self.per_destination)

    def pick(self, due: Sequence[tuple[int, str]]) -> Picked:
        """Of ``due`` (id, destination), oldest first: those that have a slot now, each
        counted in; the others are counted as left waiting."""
        picked = Picked()
        taken: Counter[str] = Counter()
        for pk, destination in due:
            if self.in_flight[destination] + taken[destination] >= self.per_destination:
                picked.destination_busy += 1
            elif len(picked.ids) >= self.room:
                picked.no_slot += 1
            else:
                taken[destination] += 1
                picked.ids.append(pk)
                picked.destinations[pk] = destination
        return picked

    def take(self, destination: str) -> None:
        self.in_flight[destination] += 1

    def release(self, destination: str) -> None:
        self.in_flight[destination] -= 1
        if self.in_flight[destination] <= 0:
            del self.in_flight[destination]

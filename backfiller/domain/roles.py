"""Roles: what a caller (a token, a signed-in user, a run's credential) may do."""

from __future__ import annotations

import enum


class Role(enum.StrEnum):
    """What a token may do; each role may do everything the one before it may."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def allows(self, needed: Role) -> bool:
        return self.rank >= needed.rank


_RANKS = {Role.VIEWER: 1, Role.OPERATOR: 2, Role.ADMIN: 3}

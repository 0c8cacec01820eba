"""Helpers of the client tests (CLI, TypeScript): API tokens written straight to storage."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

from backfiller.domain.roles import Role
from backfiller.storage import Database
from backfiller.storage.auth import NewToken, TokenRepository

DEFS = "tests.defs.client:definitions"


def create_token(database_url: str, role: str, name: str | None = None) -> str:
    """A new token of ``role`` (its secret), as ``backfiller token create`` would make it."""

    async def add() -> str:
        database = Database(database_url)
        try:
            async with database.write() as session:
                _record, secret = await TokenRepository(session).add(
                    NewToken(
                        name=name or f"{role}-{uuid.uuid4().hex[:8]}",
                        role=Role(role),
                        expires_at=None,
                        created_by="test",
                    ),
                    datetime.now(UTC),
                )
        finally:
            await database.dispose()
        return secret

    return asyncio.run(add())

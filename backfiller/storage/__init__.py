"""Private storage: SQLAlchemy records, repositories and migrations.

Nothing here is public: columns may change in any release. Never import strawberry here.
"""

from backfiller.storage.engine import Database, normalize_database_url

__all__ = ["Database", "normalize_database_url"]

"""Moved to ``tests.defs.jobs_daemon``: this name stays while tests elsewhere still load
``tests.acceptance.jobs_daemon:definitions`` (to be folded once they say the new path)."""

from tests.defs.jobs_daemon import definitions as definitions

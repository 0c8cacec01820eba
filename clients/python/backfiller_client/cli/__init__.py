"""The remote CLI: the ``backfiller`` command's client commands, which talk to a server
through its public API only."""

"""The version of Backfiller: the one place it is written. Both distributions (backfiller and
backfiller-client) read it at build time, and ``backfiller --version`` prints it."""

__version__ = "0.1.0"

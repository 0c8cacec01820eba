"""The daemon: plans backfills lazily, launches runs within limits, watches and finishes them.

Ticks (``backfiller.daemon.ticks``) do the work and are called directly by tests;
``backfiller.daemon.loop`` only schedules them; ``backfiller.daemon.service.Daemon`` puts the
two together with a launcher.
"""

from backfiller.daemon.service import Daemon, DaemonSettings
from backfiller.daemon.ticks import DaemonState, Limits, TickReport

__all__ = ["Daemon", "DaemonSettings", "DaemonState", "Limits", "TickReport"]

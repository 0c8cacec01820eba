"""The user's definitions, and loading them from ``module:attribute``."""

from __future__ import annotations

import importlib
import sysconfig
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backfiller.definitions.asset_graph import AssetGraph, AssetGraphError
from backfiller.definitions.assets import AssetDefinition
from backfiller.definitions.jobs import JobDefinition


class DefinitionsError(Exception):
    """The definitions could not be loaded; the message says why, for a person."""


@dataclass(frozen=True)
class Definitions:
    """Everything a deployment of Backfiller knows how to run.

    Args:
        jobs: the partitioned jobs.
        assets: the assets (see ``backfiller.asset``); names are shared with jobs.
        triggers: functions that decide whether to launch a backfill.
    """

    jobs: Sequence[JobDefinition] = ()
    assets: Sequence[AssetDefinition] = ()
    triggers: Sequence[Any] = ()
    _jobs_by_name: Mapping[str, JobDefinition] = field(init=False, repr=False)
    _triggers_by_name: Mapping[str, Any] = field(init=False, repr=False)
    asset_graph: AssetGraph = field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_name: dict[str, JobDefinition] = {}
        for j in self.jobs:
            if not isinstance(j, JobDefinition):
                raise DefinitionsError(f"{j!r} is not a job (decorate it with @backfiller.job)")
            if j.name in by_name:
                raise DefinitionsError(f"two jobs are named {j.name!r}; job names must be unique")
            by_name[j.name] = j
        triggers: dict[str, Any] = {}
        for t in self.triggers:
            tname = getattr(t, "name", None)
            if not isinstance(tname, str):
                raise DefinitionsError(f"{t!r} is not a trigger (use @backfiller.trigger)")
            if tname in triggers:
                raise DefinitionsError(f"two triggers are named {tname!r}")
            triggers[tname] = t
        object.__setattr__(self, "_jobs_by_name", by_name)
        object.__setattr__(self, "asset_graph", _asset_graph(self.assets, by_name))
        object.__setattr__(self, "_triggers_by_name", triggers)

    def get_job(self, name: str) -> JobDefinition | None:
        return self._jobs_by_name.get(name)

    def get_asset(self, name: str) -> AssetDefinition | None:
        return self.asset_graph.assets.get(name)

    def get_runnable(self, name: str) -> JobDefinition | None:
        """What a run named ``name`` executes: a job, or an asset's run (one namespace)."""
        found = self._jobs_by_name.get(name)
        if found is None and name in self.asset_graph.assets:
            found = self.asset_graph.assets[name].job
        return found

    @property
    def runnables(self) -> list[JobDefinition]:
        """Every job and every asset's run."""
        return [*self._jobs_by_name.values(), *(a.job for a in self.asset_graph.assets.values())]

    def get_trigger(self, name: str) -> Any | None:
        return self._triggers_by_name.get(name)

    @property
    def job_list(self) -> list[JobDefinition]:
        return sorted(self._jobs_by_name.values(), key=lambda j: j.name)


def _asset_graph(
    assets: Sequence[AssetDefinition], jobs: Mapping[str, JobDefinition]
) -> AssetGraph:
    for a in assets:
        if not isinstance(a, AssetDefinition):
            raise DefinitionsError(f"{a!r} is not an asset (decorate it with @backfiller.asset)")
        if a.name in jobs:
            raise DefinitionsError(
                f"{a.name!r} names both a job and an asset; jobs and assets share one namespace"
            )
    try:
        return AssetGraph(assets)
    except AssetGraphError as exc:
        raise DefinitionsError(str(exc)) from None


def load_definitions(target: str) -> Definitions:
    """Import ``module:attribute`` and return the :class:`Definitions` it names.

    Raises:
        DefinitionsError: with one clear sentence (and the user's traceback text, when their
            module raised) instead of an uncaught traceback.
    """
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise DefinitionsError(f"definitions must be given as 'module:attribute', got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise DefinitionsError(f"no module named {module_name!r}") from None
        raise DefinitionsError(f"importing {module_name!r} failed{_where(exc)}: {exc}") from None
    except DefinitionsError as exc:
        raise DefinitionsError(f"{module_name!r}{_where(exc)}: {exc}") from None
    except Exception as exc:
        raise DefinitionsError(
            f"importing {module_name!r} failed{_where(exc)}: {type(exc).__name__}: {exc}"
        ) from None
    try:
        value = getattr(module, attribute)
    except AttributeError:
        raise DefinitionsError(f"module {module_name!r} has no attribute {attribute!r}") from None
    if not isinstance(value, Definitions):
        raise DefinitionsError(f"{target} is a {type(value).__name__}, not backfiller.Definitions")
    return value


def _where(exc: BaseException) -> str:
    """Where in the user's code ``exc`` was raised: the last frame outside Backfiller, the
    standard library and installed packages."""
    frames = traceback.extract_tb(exc.__traceback__)
    skipped = (
        str(Path(__file__).resolve().parent.parent),
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        "<frozen",
    )
    for frame in reversed(frames):
        if not frame.filename.startswith(skipped):
            return f" at {frame.filename}:{frame.lineno}"
    return ""

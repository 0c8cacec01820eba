"""The user's definitions, and loading them from ``module:attribute``."""

from __future__ import annotations

import importlib
import sysconfig
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from backfiller.definitions.jobs import JobDefinition


class DefinitionsError(Exception):
    """The definitions could not be loaded; the message says why, for a person."""


@dataclass(frozen=True)
class Definitions:
    """Everything a deployment of Backfiller knows how to run.

    Args:
        jobs: the partitioned jobs.
        triggers: functions that decide whether to launch a backfill.
    """

    jobs: Sequence[JobDefinition] = ()
    triggers: Sequence[Any] = ()
    _jobs_by_name: Mapping[str, JobDefinition] = field(init=False, repr=False)
    _triggers_by_name: Mapping[str, Any] = field(init=False, repr=False)

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
        object.__setattr__(self, "_triggers_by_name", triggers)

    def get_job(self, name: str) -> JobDefinition | None:
        return self._jobs_by_name.get(name)

    def get_trigger(self, name: str) -> Any | None:
        return self._triggers_by_name.get(name)

    @property
    def job_list(self) -> list[JobDefinition]:
        return sorted(self._jobs_by_name.values(), key=lambda j: j.name)


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

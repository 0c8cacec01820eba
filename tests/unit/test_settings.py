"""Settings keep their types whichever way they are built."""

from __future__ import annotations

import dataclasses

import pytest

from backfiller.config import AuthMode, Settings
from backfiller.web.workers import (
    SETTINGS_VARIABLE,
    settings_from_environment,
    settings_to_environment,
)


@pytest.mark.parametrize("mode", list(AuthMode))
def test_the_auth_mode_survives_the_trip_to_a_worker_process(
    mode: AuthMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SETTINGS_VARIABLE, settings_to_environment(Settings(auth_mode=mode)))
    assert settings_from_environment().auth_mode is mode


def test_an_unknown_auth_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="maybe"):
        dataclasses.replace(Settings(), auth_mode="maybe")  # type: ignore[arg-type]

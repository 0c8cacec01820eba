"""A daemon cut off from RabbitMQ twice, each time longer than its workers wait for
an answer (issue 31): no run is charged as failed unless its job began (see ``faults``). One
module per broker, so that the two run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acceptance.celery.faults import CUT_PARTITIONS, daemon_cuts

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]


def test_a_daemons_broker_cuts_charge_nothing_for_runs_that_never_began(
    database_url: str, marks: Path
) -> None:
    verdict = daemon_cuts(database_url, marks, "rabbitmq")
    assert verdict.charged_but_never_began == []
    assert verdict.began_but_not_started == []
    assert verdict.doubled == {}
    assert verdict.overlapping == []
    assert len(verdict.succeeded) == CUT_PARTITIONS and set(verdict.succeeded.values()) == {1}

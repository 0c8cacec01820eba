"""A daemon cut off from RabbitMQ twice, each time longer than its workers wait for
an answer (issue 31): no run is charged as failed unless its job began (see ``faults``). One
module per broker, so that the two run side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.acceptance.celery.faults import assert_daemon_cuts_charge_nothing

pytestmark = [pytest.mark.acceptance, pytest.mark.slow]


def test_a_daemons_broker_cuts_charge_nothing_for_runs_that_never_began(
    database_url: str, marks: Path
) -> None:
    assert_daemon_cuts_charge_nothing(database_url, marks, "rabbitmq")

"""Webhooks cannot reach inside: every spelling of an inside address is refused at launch, a
name that resolves inside is refused at delivery (and nothing is sent), a delivery connects to
the address it checked, and the API's delivery errors are coarse categories."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from backfiller.notify.addresses import ALLOW_VARIABLE, EgressPolicy, IPAddress
from backfiller.notify.events import PayloadFormat, server_target
from backfiller.notify.notifier import Notifier, NotifierSettings
from backfiller.storage import Database
from backfiller.storage.notification_records import BackfillWebhookRecord, NotificationRecord
from backfiller.storage.records import BackfillRecord
from tests.acceptance.daemon_support import Daemon, gql, launch, wait_for
from tests.operations.receiver import Receiver
from tests.operations.test_notify_input import LAUNCH, launch_input
from tests.support import FrozenClock, GraphQLRunner, LiveServer, count_rows, live_server

INSIDE = [
    "http://127.0.0.1/hook",
    "http://127.1:8080/hook",
    "http://2130706433/hook",
    "http://0x7f.1/hook",
    "http://0x7f000001/hook",
    "http://017700000001/hook",
    "http://127.0.0.1./hook",
    "http://localhost/hook",
    "http://LOCALHOST./hook",
    "http://app.localhost/hook",
    "http://0/hook",
    "http://0.0.0.0/hook",
    "http://[::]/hook",
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",
    "http://[::ffff:7f00:1]/hook",
    "http://[::127.0.0.1]/hook",
    "http://[2002:7f00:1::]/hook",
    "http://[64:ff9b::a9fe:a9fe]/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://[fd00:ec2::254]/latest/meta-data/",
    "http://[fe80::1%25eth0]/hook",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://100.100.100.200/latest/meta-data/",
    "http://192.0.0.192/opc/v1/",
    "http://10.0.0.1/hook",
    "http://172.16.0.1/hook",
    "http://192.168.1.1/hook",
    "http://100.64.0.1/hook",
    "http://224.0.0.1/hook",
    "http://[ff02::1]/hook",
    "https://127.0.0.1:8443/hook",
]
NOTIFICATIONS = """query($id: ID!) { backfill(id: $id) { notifications(first: 20) { nodes {
  status lastError deliveries { statusCode error } } } } }"""


async def test_every_spelling_of_an_inside_address_is_refused_at_launch(
    gql: GraphQLRunner, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ALLOW_VARIABLE, raising=False)
    for chunk in range(0, len(INSIDE), 10):  # at most 10 webhooks per launch
        urls = INSIDE[chunk : chunk + 10]
        data = await gql(LAUNCH, {"input": launch_input([{"url": u} for u in urls])})
        payload = data["launchBackfill"]
        assert payload["backfill"] is None
        errors = payload["userErrors"]
        assert [(e["field"], e["code"]) for e in errors] == [
            (["notify", str(i), "url"], "INVALID_ARGUMENT") for i in range(len(urls))
        ], urls
        assert all("may not reach" in e["message"] for e in errors)
    assert await count_rows(database, BackfillRecord) == 0
    assert await count_rows(database, BackfillWebhookRecord) == 0
    # Names are resolved at delivery; an admin's allow-list lets an inside receiver through.
    named = await gql(LAUNCH, {"input": launch_input([{"url": "https://hooks.example.com/x"}])})
    assert named["launchBackfill"]["userErrors"] == []
    monkeypatch.setenv(ALLOW_VARIABLE, "127.0.0.0/8, ::1, localhost")
    allowed: list[dict[str, object]] = [
        {"url": u} for u in ("http://127.0.0.1:9/a", "http://[::1]:9/b", "http://localhost/c")
    ]
    data = await gql(LAUNCH, {"input": launch_input(allowed, key="allowed")})
    assert data["launchBackfill"]["userErrors"] == []


class Resolver:
    """A DNS server we control, in process: ``answers[host]`` is the list of answers it gives
    on successive lookups (the last one repeats); every lookup is counted."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.lookups: dict[str, int] = {}

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        n = self.lookups.get(host, 0)
        self.lookups[host] = n + 1
        given = self.answers.get(host)
        if not given:
            raise socket.gaierror(socket.EAI_NONAME, "unknown name")
        return [ipaddress.ip_address(given[min(n, len(given) - 1)])]


@pytest.fixture
def receiver_on_127_0_0_2() -> Iterator[Receiver]:
    found = Receiver(host="127.0.0.2")
    yield found
    found.close()


async def deliveries_of(gql: GraphQLRunner, backfill: str) -> list[dict[str, Any]]:
    data = await gql(NOTIFICATIONS, {"id": backfill})
    nodes: list[dict[str, Any]] = data["backfill"]["notifications"]["nodes"]
    return nodes


async def test_a_delivery_connects_to_the_address_it_checked_and_refuses_names_inside(
    gql: GraphQLRunner,
    database: Database,
    clock: FrozenClock,
    receiver_on_127_0_0_2: Receiver,
    receiver: Receiver,
) -> None:
    """``rebind.test`` answers 127.0.0.2 (allowed) once, then 127.0.0.1 (loopback, refused): a
    client that resolved again to connect would reach the refused address, or fail to resolve
    a name the system does not know. ``inside.test`` always answers 127.0.0.1, where a real
    receiver listens: it must get nothing."""
    port_2 = receiver_on_127_0_0_2.server.server_address[1]
    port_1 = receiver.server.server_address[1]
    resolver = Resolver({"rebind.test": ["127.0.0.2", "127.0.0.1"], "inside.test": ["127.0.0.1"]})
    hooks: list[dict[str, object]] = [
        {"url": f"http://rebind.test:{port_2}/rebound", "events": ["LAUNCHED"]},
        {"url": f"http://inside.test:{port_1}/inside", "events": ["LAUNCHED"]},
    ]
    launched = await gql(LAUNCH, {"input": launch_input(hooks)})
    backfill = launched["launchBackfill"]["backfill"]["id"]
    settings = NotifierSettings(
        timeout_seconds=5, policy=EgressPolicy.of(["127.0.0.2/32"]), resolver=resolver
    )
    notifier = Notifier(database, clock, settings)
    assert await notifier.tick()
    await notifier.close()  # lets the deliveries in flight end
    by_path = {r.path: r for r in receiver_on_127_0_0_2.snapshot()}
    assert set(by_path) == {"/rebound"}
    assert by_path["/rebound"].headers["host"] == f"rebind.test:{port_2}"  # the name, kept
    assert receiver.snapshot() == []  # nothing reached the loopback receiver
    assert resolver.lookups == {"rebind.test": 1, "inside.test": 1}
    found = {d["deliveries"][0]["error"] for d in await deliveries_of(gql, backfill)}
    assert found == {None, "refused"}


async def test_delivery_errors_through_the_api_are_coarse(
    gql: GraphQLRunner, database: Database, clock: FrozenClock, receiver: Receiver
) -> None:
    """A closed port, a refused address and an error status, as every viewer reads them: a
    category, never the network's detail (which told closed from open from filtered)."""
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    receiver.script = lambda n: (503, 0.0)
    targets = (
        server_target(f"http://127.0.0.1:{closed_port}/closed", [], PayloadFormat.GENERIC),
        server_target(f"{receiver.url}/busy", [], PayloadFormat.GENERIC),
        server_target("http://169.254.169.254/latest/", [], PayloadFormat.GENERIC),
    )
    launched = await gql(LAUNCH, {"input": launch_input([])})
    backfill = launched["launchBackfill"]["backfill"]["id"]
    settings = NotifierSettings(
        targets=targets, timeout_seconds=5, policy=EgressPolicy.of(["127.0.0.1"])
    )
    notifier = Notifier(database, clock, settings)
    assert await notifier.tick()
    await notifier.close()
    errors = sorted(d["lastError"] for d in await deliveries_of(gql, backfill))
    assert errors == ["HTTP 503", "connection failed", "refused"]
    assert await count_rows(database, NotificationRecord) == 3


def _inside_addresses(name: str) -> list[str] | None:
    try:
        infos = socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)
    except OSError:
        return None
    found = sorted({str(info[4][0]) for info in infos})
    inside = all(not ipaddress.ip_address(a.split("%")[0]).is_global for a in found)
    return found if found and inside else None


server = live_server("tests.defs.jobs_daemon:definitions")


@pytest.mark.acceptance
def test_the_daemon_refuses_a_name_that_the_system_resolves_inside(
    server: LiveServer, database_url: str, receiver: Receiver
) -> None:
    """The machine's own name, through the system's resolver (``/etc/hosts``, DNS): a name,
    so the launch takes it; it resolves to loopback (or a private address), so the daemon
    refuses to send, records a refusal, and logs why without the URL's path."""
    name = socket.gethostname()
    addresses = _inside_addresses(name)
    if addresses is None:
        pytest.skip(f"{name!r} does not resolve, or resolves to a public address, here")
    port = receiver.server.server_address[1]
    url = f"http://{name}:{port}/T0/B0/secret-path-of-the-hook"
    daemon = Daemon(database_url, workers=1)
    try:
        backfill = launch(
            server,
            "steady",
            "2001-01-01",
            "2001-01-01",
            notify=[{"url": url, "events": ["LAUNCHED"]}],
        )

        def refused() -> list[dict[str, Any]] | None:
            nodes = gql(server, NOTIFICATIONS, {"id": backfill})["backfill"]["notifications"][
                "nodes"
            ]
            done = [n for n in nodes if n["deliveries"]]
            return done or None

        [found] = wait_for("the refusal recorded", refused, timeout=60)
        log = daemon.output_once_it_says("not an allowed webhook address")
    finally:
        daemon.stop()
    assert receiver.snapshot() == []
    assert found["deliveries"][0] == {"statusCode": None, "error": "refused"}
    assert "not an allowed webhook address" in log
    assert "secret-path-of-the-hook" not in log

"""A publish through ``launchers.celery.redis_publish`` (the workers' and the gate's publishers on
Redis: the lookup of the exchange's bindings and the push in one script) leaves on Redis exactly
what kombu's own transport leaves: the same message on the same lists, nothing for a routing key
no queue is bound with, and the expiry of a queue the channel declared set again."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.acceptance.celery.support import broker_url

pytestmark = [pytest.mark.acceptance]


def _publish_all(url: str, exchange: Any, names: dict[str, str], **options: Any) -> None:
    from kombu import Connection, Producer

    with Connection(url, **options) as conn:
        producer = Producer(conn.channel(), exchange=exchange)
        for key in (names["a"], names["b"], names["nobody"], names["odd"]):
            producer.publish({"to": key}, routing_key=key, serializer="json", delivery_mode=2)
        producer.publish({"urgent": True}, routing_key=names["a"], serializer="json", priority=5)
        # Pools replaced (as after a fork): the channel's client follows them.
        conn.default_channel._disconnect_pools()
        producer.publish({"after": "fork"}, routing_key=names["b"], serializer="json")


def _taken(client: Any, prefix: str) -> dict[str, list[dict[str, Any]]]:
    """Every list of ``prefix``'s queues (priority lists included), emptied; the messages
    without what differs from one publish to the next (delivery tag, message id)."""
    found = {}
    for key in sorted(k.decode() for k in client.keys(prefix + "*")):
        messages = [json.loads(raw) for raw in client.lrange(key, 0, -1)]
        for message in messages:
            message["properties"].pop("delivery_tag")
            message["headers"] = {}
        found[key] = messages
        client.delete(key)
    return found


def test_a_publish_routed_in_one_step_leaves_what_kombus_own_leaves() -> None:
    import redis
    from kombu import Connection, Exchange, Queue

    from backfiller.launchers.celery.redis_publish import publishing_transport_for

    url = broker_url("redis")
    client = redis.Redis.from_url(url)
    prefix = f"test.publish.{uuid.uuid4().hex[:8]}."
    names = {n: prefix + n for n in ("a", "b", "c", "nobody")}
    # A routing key with what a pattern of Redis's MATCH reads as wildcards, and a queue whose
    # routing key such a pattern would match.
    names.update(odd=prefix + "o*[?]", decoy=prefix + "oX?")
    exchange = Exchange(prefix + "control", type="direct", durable=True)
    try:
        with Connection(url) as conn:
            channel = conn.channel()
            Queue(names["a"], exchange=exchange, routing_key=names["a"])(channel).declare()
            Queue(names["b"], exchange=exchange, routing_key=names["b"])(channel).declare()
            Queue(names["c"], exchange=exchange, routing_key=names["a"])(channel).declare()
            for name in (names["odd"], names["decoy"]):
                Queue(name, exchange=exchange, routing_key=name)(channel).declare()
        _publish_all(url, exchange, names)
        by_kombu = _taken(client, prefix)
        _publish_all(url, exchange, names, **publishing_transport_for(url))
        routed = _taken(client, prefix)
        assert routed == by_kombu
        urgent = [names["a"] + "\x06\x163", names["c"] + "\x06\x163"]  # priority 5: list 3
        assert sorted(routed) == sorted([names["a"], names["b"], names["c"], names["odd"], *urgent])
    finally:
        client.delete(
            f"_kombu.binding.{exchange.name}", f"_kombu.binding_permanent.{exchange.name}"
        )


def test_a_queue_declared_with_an_expiry_has_it_set_again_at_each_publish() -> None:
    import redis
    from kombu import Connection, Exchange, Producer, Queue

    from backfiller.launchers.celery.redis_publish import publishing_transport_for

    url = broker_url("redis")
    client = redis.Redis.from_url(url)
    name = f"test.publish.{uuid.uuid4().hex[:8]}"
    exchange = Exchange(name + ".control", type="direct", durable=True)
    try:
        with Connection(url, **publishing_transport_for(url)) as conn:
            channel = conn.channel()
            Queue(name, exchange=exchange, routing_key=name, expires=100)(channel).declare()
            Producer(channel, exchange=exchange).publish({"n": 1}, routing_key=name)
        assert client.llen(name) == 1
        assert 90_000 < client.pttl(name) <= 100_000
    finally:
        client.delete(name, f"_kombu.binding.{exchange.name}")
        client.zrem("_kombu.binding_deadlines", exchange.name)

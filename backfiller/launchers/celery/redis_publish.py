"""Publishing on Redis in one round trip: kombu's Redis channel, whose publish to a direct
exchange looks up the exchange's bindings and pushes the message in one Lua script on the
server, and which keeps one client.

kombu's Redis transport publishes to an exchange in two round trips and a good deal of Python:
it reads the exchange's whole binding table (``SMEMBERS _kombu.binding.<exchange>``), parses
it and picks the queues bound with the message's routing key, then pushes the message onto
each (``LPUSH``); and it makes a ``redis.Redis`` for each command, each copying redis-py's table
of about 170 reply parsers. On a Celery worker's pool process, which publishes its start
requests, heartbeats, log lines and results, publishing was half of its CPU on Redis or more
(the control exchange's table grows: it keeps a binding for every worker process that ran),
nearly all of it in those two.

:class:`RoutingChannel` routes in one script (``ROUTE_AND_PUSH``): the same binding table read
at each publish (nothing of it is kept between publishes), the same rule (a direct exchange
delivers to each queue bound with the routing key, once), the same list keys (the queue's name,
with kombu's suffix for a priority) and the same message; the lookup and the pushes are one
atomic step (kombu's two let a binding change between them). A message that no queue is bound
for is dropped, as kombu drops it without a dead-letter queue. A queue this channel declared
with an expiry has it set again after the push, as kombu's ``_put`` does. Anything else (fanout
and topic exchanges, the default exchange, a dead-letter queue, a global key prefix, batched
publishing) takes kombu's own path.

The script pushes to keys it learns from the table, so it needs a Redis that is not a cluster
(as kombu's Redis transport does). It leans on kombu's binding table (its key, and its members:
routing key, pattern and queue joined by the channel's separator), its priority suffixes, its
``_inplace_augment_message`` and ``_maybe_update_queues_expire``, and its message format;
``pyproject.toml`` bounds kombu.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kombu.transport import redis as kombu_redis
from kombu.utils.json import dumps

from backfiller.launchers.celery.acks import is_redis

ROUTE_AND_PUSH = """
local sep = ARGV[2]
local skip = #ARGV[1] + #sep
local routed, seen = {}, {}
local cursor = '0'
repeat
  local reply = redis.call('SSCAN', KEYS[1], cursor, 'MATCH', ARGV[5], 'COUNT', 1000)
  cursor = reply[1]
  for _, member in ipairs(reply[2]) do
    local rest = string.sub(member, skip + 1)
    local at = string.find(rest, sep, 1, true)
    if at then
      local queue = string.sub(rest, at + #sep)
      if not seen[queue] and not string.find(queue, sep, 1, true) then
        seen[queue] = true
        redis.call('LPUSH', queue .. ARGV[3], ARGV[4])
        routed[#routed + 1] = queue
      end
    end
  end
until cursor == '0'
return routed
"""
"""KEYS: the exchange's binding table; ARGV: the routing key, kombu's separator, the suffix of
the message's priority ('' for the default one), the message, and the pattern of the members
that begin with the routing key and the separator. Pushes the message onto each queue bound with
the routing key (a member of three fields whose first is the routing key), once; returns those
queues' names. The members are matched by Redis (``SSCAN ... MATCH``), not read one by one here:
on Redis, the table keeps the binding of every worker process that ever ran (kombu deletes a
direct exchange's binding only with its queue, and a worker's queue outlives it there), and each
publish goes through the table."""

GLOB_SPECIAL = re.compile(r"([\\*?\[\]])")
"""Characters that mean something in a pattern of Redis's ``MATCH``: escaped in a routing key."""


class RoutingChannel(kombu_redis.Channel):  # type: ignore[misc]
    """kombu's Redis channel whose publish to a direct exchange takes one round trip, and which
    keeps one client for its commands (safe to share between threads: each command takes a
    connection of the pool)."""

    _kept_client: Any = None
    _route_script: Any = None

    @contextmanager
    def conn_or_acquire(self, client: Any = None) -> Iterator[Any]:
        if client:
            yield client
            return
        kept = self._kept_client
        if kept is None or kept.connection_pool is not self._pool:
            # First use, or the pools were replaced (after a fork): a client of the current pool.
            kept = self._kept_client = self._create_client()
        yield kept

    def basic_publish(self, message: Any, exchange: str, routing_key: Any, **kwargs: Any) -> Any:
        if not self._routes_in_one_step(exchange, routing_key, kwargs):
            return super().basic_publish(message, exchange, routing_key, **kwargs)
        self._inplace_augment_message(message, exchange, routing_key)
        suffix = self._q_for_pri("", self._get_message_priority(message, reverse=False))
        with self.conn_or_acquire() as client:
            if self._route_script is None:
                self._route_script = client.register_script(ROUTE_AND_PUSH)
            routed = self._route_script(
                keys=[self.keyprefix_queue % (exchange,)],
                args=[
                    routing_key,
                    self.sep,
                    suffix,
                    dumps(message),
                    _members_of(routing_key, self.sep),
                ],
                client=client,
            )
            for queue in routed or ():
                name = queue.decode() if isinstance(queue, bytes) else queue
                self._maybe_update_queues_expire(client, name)
        return None

    def _routes_in_one_step(self, exchange: str, routing_key: Any, kwargs: dict[str, Any]) -> bool:
        """Whether this publish is one the script routes exactly as kombu would."""
        if not exchange or not isinstance(routing_key, str) or self.sep in routing_key:
            return False
        if self.deadletter_queue or self.global_keyprefix:
            return False
        if kwargs.get("_publish_batch") is not None:
            return False
        return bool(self.typeof(exchange).type == "direct")


def _members_of(routing_key: str, sep: str) -> str:
    """The ``MATCH`` pattern of the binding table's members whose routing key is
    ``routing_key``."""
    return GLOB_SPECIAL.sub(r"\\\1", routing_key) + sep + "*"


class RoutingTransport(kombu_redis.Transport):  # type: ignore[misc]
    Channel = RoutingChannel


def publishing_transport_for(broker_url: str) -> dict[str, Any]:
    """The keyword arguments that give a kombu connection that only publishes to
    ``broker_url`` this transport (none for another broker)."""
    if is_redis(broker_url):
        return {"transport": RoutingTransport}
    return {}

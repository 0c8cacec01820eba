"""Backfiller's Redis transport for kombu: messages taken and recorded as held in one step, and
one client per channel.

kombu's Redis transport takes a message off a list (``BRPOP``, or ``RPOP`` for a get) and then,
in a second command, records it as delivered and not acknowledged (the ``unacked`` hash that
:func:`.acks.give_back_unacked` reads). A reader killed between the two (a daemon SIGKILLed
while Redis's answer is in flight, or before the daemon's thread has read it) loses the
message: for a worker's end, the run is then recorded ``WORKER_LOST`` and runs again.

The connections that read daemons' queues on Redis (a daemon's own queue, and a dead daemon's
at a takeover) use the transport below instead, whose get does both in one Lua script on the
server, for up to a batch of messages: whatever instant the reader dies, a message is still on
its queue or recorded as held (and given back by the next reader of the queue). Waiting for a
message moves the queue's last element onto its own end (``BLMOVE q q RIGHT RIGHT``): it blocks
until the queue holds a message, and leaves it where it was, so a reader killed while waiting
loses nothing either. The acknowledgements of one pass leave Redis in one round trip.

Its channel is :mod:`.redis_publish`'s: one client for its commands (kombu makes a
``redis.Redis`` per command, each copying redis-py's table of about 170 reply parsers, which was
a good part of a daemon's CPU a run on Redis), and a publish to a direct exchange in one round
trip. (The workers' listeners keep kombu's own transport: when the workers' links used this
one, the broker-message tests lost a reply queue or a run under load, a cause not found yet. The
workers' publishers, which read nothing, use :mod:`.redis_publish`'s transport, as the gate's
replier does.)

This leans on kombu's Redis transport (its channel's ``_get`` and ``conn_or_acquire``, its
QoS, key names and the format of its ``unacked`` entries: ``[message, exchange,
routing_key]``); ``pyproject.toml`` bounds kombu.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kombu.serialization import prepare_accept_content
from kombu.transport import redis as kombu_redis
from kombu.transport import virtual
from kombu.utils.json import loads

from backfiller.launchers.celery.acks import is_redis
from backfiller.launchers.celery.redis_publish import RoutingChannel

logger = logging.getLogger("backfiller.launcher")

TAKE_AND_HOLD = """
local n = #KEYS
local limit = tonumber(ARGV[2])
local taken = {}
for i = 1, n - 2 do
  while #taken < limit do
    local raw = redis.call('RPOP', KEYS[i])
    if not raw then break end
    local ok, message = pcall(cjson.decode, raw)
    if ok and type(message) == 'table' and type(message['properties']) == 'table' then
      local properties = message['properties']
      local tag = properties['delivery_tag']
      local info = properties['delivery_info']
      if type(tag) == 'string' and type(info) == 'table'
          and type(info['routing_key']) == 'string' and info['routing_key'] ~= '' then
        local entry = '[' .. raw .. ',' .. cjson.encode(info['exchange'] or '') .. ','
          .. cjson.encode(info['routing_key']) .. ']'
        redis.call('HSET', KEYS[n - 1], tag, entry)
        redis.call('ZADD', KEYS[n], ARGV[1], tag)
      end
    end
    taken[#taken + 1] = raw
  end
end
if ARGV[3] ~= '' then
  for i = 1, n - 2 do redis.call('PEXPIRE', KEYS[i], ARGV[3]) end
end
return taken
"""
"""KEYS: the queue's lists (one per priority, in kombu's reading order), then the ``unacked``
hash and its index; ARGV: the time, how many messages at most, and the queue's expiry in
milliseconds (or ''). Takes the next messages and records each as held, in one step; a message
that is not a kombu message (with a delivery tag and a routing key) is taken and returned
unrecorded (it is dropped). Then sets the queue's expiry again, as kombu's get does."""


class TakingQoS(kombu_redis.QoS):  # type: ignore[misc]
    """kombu's Redis QoS that does not record again what the take script recorded, and lets a
    batch of acknowledgements go to Redis in one round trip (``TakingChannel.ack_many``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recorded: set[str] = set()
        """Tags the take script recorded as held: their ``append`` is kept in memory only."""
        self.removed: set[str] = set()
        """Tags whose entry ``ack_many`` removed: their ``ack`` is kept in memory only."""

    def append(self, message: Any, delivery_tag: str) -> None:
        if delivery_tag in self.recorded:
            self.recorded.discard(delivery_tag)
            virtual.QoS.append(self, message, delivery_tag)
            return
        super().append(message, delivery_tag)

    def ack(self, delivery_tag: str) -> None:
        if delivery_tag in self.removed:
            self.removed.discard(delivery_tag)
            virtual.QoS.ack(self, delivery_tag)
            return
        super().ack(delivery_tag)


class TakingChannel(RoutingChannel):
    """kombu's Redis channel whose get takes and records messages in one step (and, as any
    :class:`.RoutingChannel`, keeps one client and publishes to a direct exchange in one round
    trip)."""

    QoS = TakingQoS
    _take_script: Any = None

    def _take(self, queue: str, limit: int) -> list[tuple[dict[str, Any], Any]]:
        """Up to ``limit`` messages of ``queue`` (payload and kombu message), each taken and
        recorded as held in one step. What is not a kombu message is dropped (logged, and its
        record removed: given back, it would fail again at every reconnection)."""
        keys = [self._q_for_pri(queue, pri) for pri in self.priority_steps]
        keys += [self.unacked_key, self.unacked_index_key]
        with self.conn_or_acquire() as client:
            if self._take_script is None:
                self._take_script = client.register_script(TAKE_AND_HOLD)
            expires = self._expires.get(queue) if self._expires else None
            args = [time.time(), limit, "" if expires is None else int(expires)]
            raws = self._take_script(keys=keys, args=args, client=client)
        taken = []
        for raw in raws or ():
            payload = _payload(raw)  # None exactly when the script did not record it
            try:
                message = self.Message(payload, channel=self) if payload is not None else None
            except Exception:
                message = None
            if payload is None or message is None:
                logger.warning("dropped a message of %s that is not a kombu message", queue)
                if payload is not None:
                    self._remove_records([payload["properties"]["delivery_tag"]])
                continue
            self.qos.recorded.add(message.delivery_tag)
            taken.append((payload, message))
        return taken

    def _remove_records(self, tags: list[str]) -> None:
        """Remove the held-message records of ``tags``, in one round trip."""
        with self.conn_or_acquire() as client:
            pipe = client.pipeline()
            pipe.zrem(self.unacked_index_key, *tags)
            pipe.hdel(self.unacked_key, *tags)
            pipe.execute()

    def _get(self, queue: str) -> dict[str, Any]:
        taken = self._take(queue, 1)
        if not taken:
            raise kombu_redis.Empty()
        return taken[0][0]

    def take_many(self, queue: str, limit: int) -> list[Any]:
        """Up to ``limit`` messages of ``queue`` (kombu messages, JSON only), each taken and
        recorded as held in one step."""
        accept = prepare_accept_content(["json"])
        messages = []
        for _, message in self._take(queue, limit):
            self.qos.append(message, message.delivery_tag)
            message.accept = accept
            messages.append(message)
        return messages

    def ack_many(self, messages: list[Any]) -> None:
        """Acknowledge ``messages``: their entries leave Redis in one round trip."""
        if not messages:
            return
        tags = [message.delivery_tag for message in messages]
        self._remove_records(tags)
        self.qos.removed.update(tags)
        for message in messages:
            message.ack()

    def wait_for(self, queue: str, timeout: float) -> bool:
        """Return once ``queue`` holds a message (True), or after ``timeout`` seconds (False);
        takes nothing."""
        with self.conn_or_acquire() as client:
            return client.blmove(queue, queue, max(timeout, 0.001), "RIGHT", "RIGHT") is not None


def _payload(raw: bytes | str) -> dict[str, Any] | None:
    """A kombu message's payload, or None: the take script's test (a delivery tag and a routing
    key) as well as JSON's, so that None means the script did not record it."""
    try:
        payload = loads(raw.decode() if isinstance(raw, bytes) else raw)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    properties = payload.get("properties")
    if not isinstance(properties, dict) or not isinstance(properties.get("delivery_tag"), str):
        return None
    info = properties.get("delivery_info")
    if not isinstance(info, dict) or not isinstance(info.get("routing_key"), str):
        return None
    if not info["routing_key"]:
        return None  # not recorded by the take script either (nowhere to give it back to)
    return payload


class TakingTransport(kombu_redis.Transport):  # type: ignore[misc]
    Channel = TakingChannel


def transport_for(broker_url: str) -> dict[str, Any]:
    """The keyword arguments that give a kombu connection to ``broker_url`` this transport
    (none for another broker)."""
    if is_redis(broker_url):
        return {"transport": TakingTransport}
    return {}


class Taker:
    """Reads one daemon queue on Redis (in place of kombu's consumer, whose ``BRPOP`` takes a
    message before recording it), up to ``BATCH`` messages a round trip."""

    BATCH = 64

    def __init__(self, channel: Any, queue: Any, on_message: Any) -> None:
        self.channel = channel
        self.queue = queue
        self.on_message = on_message

    def take(self, timeout: float) -> bool:
        """Hand the next messages to ``on_message``, waiting up to ``timeout`` seconds for one;
        whether there was one."""
        messages = self.channel.take_many(self.queue.name, self.BATCH)
        if not messages:
            if not self.channel.wait_for(self.queue.name, timeout):
                return False
            messages = self.channel.take_many(self.queue.name, self.BATCH)
            if not messages:
                return False
        for message in messages:
            self.on_message(message)
        return True

    def cancel(self) -> None:
        """Nothing is subscribed (see ``take``)."""

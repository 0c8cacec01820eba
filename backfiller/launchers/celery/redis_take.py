"""Taking a message off a daemon's queue on Redis: in one step with recording it as held.

kombu's Redis transport takes a message off a list (``BRPOP``, or ``RPOP`` for a get) and then,
in a second command, records it as delivered and not acknowledged (the ``unacked`` hash that
:func:`.acks.give_back_unacked` reads). A reader killed between the two (a daemon SIGKILLed
while Redis's answer is in flight, or before the daemon's thread has read it) loses the
message: for a worker's end, the run is then recorded ``WORKER_LOST`` and runs again.

The connections that read daemons' queues on Redis (a daemon's own queue, and a dead daemon's
at a takeover) use the transport below instead, whose get does both in one Lua script on the
server: whatever instant the reader dies, the message is still on its queue or recorded as held
(and given back by the next reader of the queue). Waiting for a message moves the queue's last
element onto its own end (``BLMOVE q q RIGHT RIGHT``): it blocks until the queue holds a
message, and leaves it where it was, so a reader killed while waiting loses nothing either.

This leans on kombu's Redis transport (its channel's ``_get``, key names and the format of its
``unacked`` entries: ``[message, exchange, routing_key]``); ``pyproject.toml`` bounds kombu.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from kombu.transport import redis as kombu_redis
from kombu.utils.json import loads

logger = logging.getLogger("backfiller.launcher")

TAKE_AND_HOLD = """
local n = #KEYS
for i = 1, n - 2 do
  local raw = redis.call('RPOP', KEYS[i])
  if raw then
    local ok, message = pcall(cjson.decode, raw)
    if ok and type(message) == 'table' and type(message['properties']) == 'table' then
      local properties = message['properties']
      local tag = properties['delivery_tag']
      local info = properties['delivery_info']
      if type(info) ~= 'table' then info = {} end
      if type(tag) == 'string' then
        local entry = '[' .. raw .. ',' .. cjson.encode(info['exchange'] or '') .. ','
          .. cjson.encode(info['routing_key'] or '') .. ']'
        redis.call('HSET', KEYS[n - 1], tag, entry)
        redis.call('ZADD', KEYS[n], ARGV[1], tag)
      end
    end
    return raw
  end
end
return false
"""
"""KEYS: the queue's lists (one per priority, in kombu's reading order), then the ``unacked``
hash and its index; ARGV: the time. Takes the next message and records it as held, in one
step; a message that is not a kombu message is taken and returned unrecorded (it is dropped)."""


class TakingChannel(kombu_redis.Channel):  # type: ignore[misc]
    """kombu's Redis channel whose get takes and records a message in one step."""

    _take_script: Any = None

    def _get(self, queue: str) -> dict[str, Any]:
        keys = [self._q_for_pri(queue, pri) for pri in self.priority_steps]
        keys += [self.unacked_key, self.unacked_index_key]
        with self.conn_or_acquire() as client:
            if self._take_script is None:
                self._take_script = client.register_script(TAKE_AND_HOLD)
            while True:
                raw = self._take_script(keys=keys, args=[time.time()], client=client)
                if raw is None:
                    self._maybe_update_queues_expire(client, queue)
                    raise kombu_redis.Empty()
                try:
                    message = loads(raw.decode() if isinstance(raw, bytes) else raw)
                except ValueError:
                    logger.warning("dropped a message of %s that is not JSON", queue)
                    continue
                if isinstance(message, dict):
                    self._maybe_update_queues_expire(client, queue)
                    return message
                logger.warning("dropped a message of %s that is not a kombu message", queue)

    def wait_for(self, queue: str, timeout: float) -> None:
        """Return once ``queue`` holds a message, or after ``timeout`` seconds; takes nothing."""
        with self.conn_or_acquire() as client:
            client.blmove(queue, queue, max(timeout, 0.001), "RIGHT", "RIGHT")


class TakingTransport(kombu_redis.Transport):  # type: ignore[misc]
    Channel = TakingChannel


class Taker:
    """Reads one daemon queue on Redis, one message at a time (in place of kombu's consumer,
    whose ``BRPOP`` takes a message before recording it)."""

    def __init__(self, channel: Any, queue: Any, on_message: Any) -> None:
        self.channel = channel
        self.queue = queue
        self.on_message = on_message

    def take(self, timeout: float) -> bool:
        """Hand the next message to ``on_message``, waiting up to ``timeout`` seconds for one;
        whether there was one."""
        message = self.queue.get(no_ack=False, accept=["json"])
        if message is None:
            self.channel.wait_for(self.queue.name, timeout)
            message = self.queue.get(no_ack=False, accept=["json"])
            if message is None:
                return False
        self.on_message(message)
        return True

    def cancel(self) -> None:
        """Nothing is subscribed (see ``take``)."""

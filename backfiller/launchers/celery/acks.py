"""When the messages a daemon receives from its workers are acknowledged.

A message that reports something to write (a run's end, its log lines) is acknowledged only
once the daemon has it in the database (``recorded``): a daemon that dies in between leaves it
on the broker, where the takeover finds it. Other messages are acknowledged when received.

- RabbitMQ gives back what a closed connection did not acknowledge. One cumulative
  acknowledgement a pass covers everything up to the oldest message still waiting.
- Redis (kombu's virtual transport) keeps each message delivered and not acknowledged in a hash
  (``unacked``), and gives it back only after a visibility timeout. Backfiller's own queues use
  a hash of their own (``REDIS_UNACKED``, apart from Celery's tasks, whose visibility timeout
  stays an hour) with no timeout of their own, and Backfiller gives a queue's messages back
  itself (``give_back_unacked``): a daemon before it consumes its queue (after each
  reconnection: what the broken connection held), and a takeover before it reads a dead
  daemon's queue. Each message is acknowledged on its own (the transport has no cumulative
  acknowledgement), those of one pass in one round trip. A message is taken off its queue and
  recorded in that hash in one step (:mod:`.redis_transport`), so a reader killed at any
  instant leaves it on the broker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backfiller.launchers.base import LauncherEvent
from backfiller.launchers.celery.state import Shared

REDIS_UNACKED = {
    "unacked_key": "backfiller.unacked",
    "unacked_index_key": "backfiller.unacked_index",
    "unacked_mutex_key": "backfiller.unacked_mutex",
    # Never given back by the transport on its own: a daemon slow to write (its database out
    # of reach) keeps what it holds; Backfiller gives a queue's messages back itself.
    "visibility_timeout": 30 * 24 * 3600,
}
"""Transport options of the connections that read daemons' queues on Redis (see above)."""


def is_redis(broker_url: str) -> bool:
    return broker_url.startswith(("redis", "rediss"))


def reader_options(broker_url: str) -> dict[str, Any]:
    """The keyword arguments of the kombu connection that reads daemons' queues: on Redis, the
    hash of its own (see the module's docstring) and a transport that takes a message and
    records it as held in one step (:mod:`.redis_transport`)."""
    if not is_redis(broker_url):
        return {"transport_options": {}}
    from backfiller.launchers.celery.redis_transport import transport_for

    return {"transport_options": dict(REDIS_UNACKED), **transport_for(broker_url)}


def give_back_unacked(channel: Any, queue: str) -> int:
    """Redis: put back on ``queue`` every message of it that a connection took and did not
    acknowledge (a daemon killed, or cut off, while holding them); how many. Nothing to do on
    RabbitMQ, which does it itself when the connection closes."""
    qos = getattr(channel, "qos", None)
    restore = getattr(qos, "restore_by_tag", None)
    if restore is None:
        return 0
    from kombu.utils.json import loads

    given = 0
    with channel.conn_or_acquire() as client:
        for tag, raw in client.hscan_iter(REDIS_UNACKED["unacked_key"]):
            try:
                routing_key = loads(raw)[2]
            except (ValueError, TypeError, IndexError):
                continue
            if routing_key == queue:
                restore(tag, client, leftmost=True)
                given += 1
    return given


@dataclass
class Held:
    """A received message not acknowledged yet, and how many of its events wait to be written."""

    message: Any
    waiting: int


class Acks:
    """The acknowledgements of one broker connection (under ``shared.lock`` but ``settle``)."""

    def __init__(self, shared: Shared, cumulative: bool) -> None:
        self.shared = shared
        self.cumulative = cumulative
        """RabbitMQ: one cumulative acknowledgement a pass; Redis: one a message."""
        self.to_ack: list[Any] = []
        """Redis: the messages to acknowledge at the next ``settle``."""
        self.held: dict[int, tuple[LauncherEvent, Held]] = {}
        """Per event (by identity, and kept alive so that the identity stays its own) reported
        by a message not acknowledged yet: the event and its message."""
        self.to_requeue: list[Any] = []
        self.unsettled: set[int] = set()
        """Delivery tags of the messages held or to give back: the acknowledgements stop below
        the lowest (one cumulative acknowledgement a pass, see ``settle``)."""
        self.given_back: set[int] = set()
        """Delivery tags of messages given back to their queue (no longer to acknowledge)."""
        self.received_up_to = 0
        self.acked_up_to = 0

    def reset(self) -> None:
        """A new connection: the broker gives the former one's messages again on it."""
        self.held.clear()
        self.to_requeue.clear()
        self.to_ack.clear()
        self.unsettled.clear()
        self.given_back.clear()
        self.received_up_to = self.acked_up_to = 0

    def hold(self, message: Any, events: list[LauncherEvent]) -> None:
        """Report ``events``; acknowledge ``message`` once they are written (see ``recorded``),
        or at once if it reports nothing."""
        self.shared.events += events
        if not events:
            self._done(message)
            return
        if self.cumulative:
            self.received_up_to = max(self.received_up_to, message.delivery_tag)
        self.unsettled.add(message.delivery_tag)
        held = Held(message, len(events))
        for event in events:
            self.held[id(event)] = (event, held)

    def stray(self, message: Any) -> None:
        """A message of a former owner's queue, received after leaving it: back to it."""
        if self.cumulative:
            self.received_up_to = max(self.received_up_to, message.delivery_tag)
            self.unsettled.add(message.delivery_tag)
        self.to_requeue.append(message)  # back to its queue, unacknowledged

    def _done(self, message: Any) -> None:
        """``message`` may go (under the lock)."""
        if self.cumulative:
            self.received_up_to = max(self.received_up_to, message.delivery_tag)
            self.unsettled.discard(message.delivery_tag)
        else:
            self.to_ack.append(message)

    def recorded(self, events: Sequence[LauncherEvent]) -> None:
        """Acknowledge the messages whose every event is now in the database."""
        for event in events:
            _, held = self.held.pop(id(event), (None, None))
            if held is not None:
                held.waiting -= 1
                if held.waiting == 0:
                    self._done(held.message)

    def give_back_held(self) -> None:
        """What was received and not written goes back to the queue, for the takeover."""
        held = {id(h.message): h.message for _, h in self.held.values()}
        self.to_requeue += held.values()
        self.held.clear()

    def settle(self, channel: Any) -> None:
        """Give back what a lost lease left unwritten, then acknowledge every message received
        up to the oldest still held, in one cumulative acknowledgement."""
        shared = self.shared
        with shared.lock:
            to_requeue, self.to_requeue = self.to_requeue, []
            to_ack, self.to_ack = self.to_ack, []
        for message in to_requeue:
            message.requeue()
        if not self.cumulative:
            ack_many = getattr(channel, "ack_many", None)  # Redis: one round trip
            if ack_many is not None:
                ack_many(to_ack)
            else:
                for message in to_ack:
                    message.ack()
            return
        with shared.lock:
            given_back = {m.delivery_tag for m in to_requeue}
            self.unsettled -= given_back
            self.given_back |= given_back
            upto = min(self.unsettled) - 1 if self.unsettled else self.received_up_to
            # The tag acknowledged must be one still unacknowledged (the broker refuses another).
            while upto in self.given_back:
                upto -= 1
            if upto <= self.acked_up_to:
                return
            self.acked_up_to = upto
            self.given_back = {tag for tag in self.given_back if tag > upto}
        channel.basic_ack(upto, multiple=True)

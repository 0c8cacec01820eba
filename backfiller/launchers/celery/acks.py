"""When the messages a daemon receives from its workers are acknowledged.

On RabbitMQ a message that reports something to write (a run's end, its log lines) is
acknowledged only once the daemon has it in the database (``recorded``): a daemon that dies in
between leaves it in its queue, where the takeover finds it (the broker gives back what a
closed connection did not acknowledge). Other messages are acknowledged when received; one
cumulative acknowledgement a pass covers everything up to the oldest message still waiting. On
Redis every message is taken as received.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backfiller.launchers.base import LauncherEvent
from backfiller.launchers.celery.envelope import seal
from backfiller.launchers.celery.state import Shared


@dataclass
class Held:
    """A received message not acknowledged yet, and how many of its events wait to be written."""

    message: Any
    waiting: int


class Acks:
    """The acknowledgements of one broker connection (under ``shared.lock`` but ``settle``)."""

    def __init__(self, shared: Shared, after_write: bool) -> None:
        self.shared = shared
        self.after_write = after_write
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
        self.strays: deque[tuple[str, dict[str, Any]]] = deque()
        """Messages for a former owner's queue, received after leaving it: put back there."""

    def reset(self) -> None:
        """A new connection: the broker gives the former one's messages again on it."""
        self.held.clear()
        self.to_requeue.clear()
        self.unsettled.clear()
        self.given_back.clear()
        self.received_up_to = self.acked_up_to = 0

    def hold(self, message: Any, events: list[LauncherEvent]) -> None:
        """Report ``events``; acknowledge ``message`` once they are written (see ``recorded``),
        or at once if it reports nothing."""
        self.shared.events += events
        if not self.after_write:
            return
        self.received_up_to = max(self.received_up_to, message.delivery_tag)
        if not events:
            return
        self.unsettled.add(message.delivery_tag)
        held = Held(message, len(events))
        for event in events:
            self.held[id(event)] = (event, held)

    def stray(self, routed: str, body: dict[str, Any], message: Any) -> None:
        """A message of a former owner's queue, received after leaving it: back to it."""
        if self.after_write:
            self.received_up_to = max(self.received_up_to, message.delivery_tag)
            self.unsettled.add(message.delivery_tag)
            self.to_requeue.append(message)  # back to its queue, unacknowledged
        else:
            self.strays.append((routed, body))

    def recorded(self, events: Sequence[LauncherEvent]) -> None:
        """Acknowledge the messages whose every event is now in the database."""
        for event in events:
            _, held = self.held.pop(id(event), (None, None))
            if held is not None:
                held.waiting -= 1
                if held.waiting == 0:
                    self.unsettled.discard(held.message.delivery_tag)

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
        for message in to_requeue:
            message.requeue()
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

    def put_back_strays(self, producer: Any) -> None:
        """Messages received for a former owner after leaving its queue go back to it, for
        the daemon that takes that owner's runs over."""
        while True:
            with self.shared.lock:
                if not self.strays:
                    return
                queue, body = self.strays.popleft()
            producer.publish(
                seal(body, to=queue), routing_key=queue, serializer="json", delivery_mode=2
            )

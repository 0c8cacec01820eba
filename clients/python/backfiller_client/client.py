"""``Client`` and ``AsyncClient``: the typed Python client of the public GraphQL API (v1).

Both talk only to ``{url}/graphql/v1`` and return the frozen types of
:mod:`backfiller_client.types`. A refused request raises
:class:`~backfiller_client.errors.BackfillerUserError`; a request that got no usable answer
raises a :class:`~backfiller_client.errors.BackfillerTransportError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import httpx

from backfiller_client import _calls
from backfiller_client._calls import UNCHANGED, Call, RetryInclude
from backfiller_client._operations import operation
from backfiller_client.errors import BackfillerConnectionError
from backfiller_client.requests import AssetSelection, BackfillRequest, PartitionSelection
from backfiller_client.types import (
    Asset,
    AssetPartition,
    Backfill,
    BackfillAsset,
    BackfillEvent,
    BackfillStatus,
    Job,
    PartitionMark,
    PartitionStatusRange,
    Preview,
    Run,
    RunStatus,
    Trigger,
    TriggerEvaluation,
)

T = TypeVar("T")

DEFAULT_TIMEOUT = 30.0
DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_PAGE_SIZE = 100
DEFAULT_ASSET_PAGE_SIZE = 1000
# An idle pooled connection is dropped after 2 s, well before the server closes it (uvicorn's
# keep-alive is 5 s, as is httpx's own default here): a request sent on a connection that the
# server is closing at that very moment fails with "Server disconnected without sending a
# response", which a script pausing about 5 s between calls would otherwise meet now and then.
POOL_LIMITS = httpx.Limits(keepalive_expiry=2.0)

ProgressCallback = Callable[[Backfill], object]


def _version() -> str:
    from backfiller_client._version import __version__

    return __version__


def _payload(call: Call[Any]) -> dict[str, Any]:
    return {
        "query": operation(call.operation),
        "operationName": call.operation,
        "variables": dict(call.variables),
    }


def _progress_key(backfill: Backfill) -> tuple[object, ...]:
    return (backfill.status, backfill.counts, backfill.updated_at)


class Client:
    """A synchronous client of a Backfiller server.

    Args:
        url: The server's base URL (``http://127.0.0.1:8000``); ``/graphql/v1`` is added.
        token: An API token, sent as ``Authorization: Bearer <token>``.
        headers: More headers to send with every request.
        timeout: Seconds to wait for each answer.
        transport: An httpx transport, to route requests somewhere unusual.

    Example:
        >>> with Client("http://127.0.0.1:8000") as client:  # doctest: +SKIP
        ...     backfill = client.launch_backfill(
        ...         BackfillRequest(job="daily_sales", partitions=PartitionRange("2024-01-01",
        ...         "2024-01-31"))
        ...     )
        ...     client.wait(backfill.id, on_progress=print)
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.url = url
        self.endpoint = _calls.endpoint_of(url)
        self._http = httpx.Client(
            headers=_calls.request_headers(token, headers, _version()),
            timeout=timeout,
            limits=POOL_LIMITS,
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections; the client cannot be used afterwards."""
        self._http.close()

    def _execute(self, call: Call[T]) -> T:
        try:
            response = self._http.post(self.endpoint, json=_payload(call))
        except httpx.TimeoutException as exc:
            raise BackfillerConnectionError(f"no answer from {self.endpoint} in time") from exc
        except httpx.HTTPError as exc:
            raise BackfillerConnectionError(f"cannot reach {self.endpoint}: {exc}") from exc
        return _calls.read_data(call, _calls.read_response(call.operation, response))

    def _pages(self, page: Callable[[str | None], Call[_calls.Page[T]]]) -> Iterator[T]:
        after: str | None = None
        while True:
            found = self._execute(page(after))
            yield from found.items
            if found.next_cursor is None:
                return
            after = found.next_cursor

    def api_version(self) -> str:
        """The version of the API the server speaks (``v1``)."""
        return self._execute(_calls.api_version())

    def launch_backfill(self, request: BackfillRequest) -> Backfill:
        """Launch a backfill.

        Raises:
            BackfillerUserError: The server refused it (unknown job, bad partitions, ...).
        """
        return self._execute(_calls.launch_backfill(request))

    def preview_backfill(self, request: BackfillRequest) -> Preview:
        """What launching ``request`` would do, without writing anything."""
        return self._execute(_calls.preview_backfill(request))

    def get_backfill(self, backfill_id: str) -> Backfill | None:
        """A backfill by id, or None when there is none."""
        return self._execute(_calls.get_backfill(backfill_id))

    def list_backfills(
        self,
        statuses: Iterable[BackfillStatus | str] | None = None,
        job: str | None = None,
        tag: tuple[str, str] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        *,
        asset: str | None = None,
        creator: str | None = None,
        tags: Mapping[str, str] | None = None,
        search: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        team: str | None = None,
    ) -> Iterator[Backfill]:
        """Every backfill matching the filters, newest first, fetched page by page.

        ``asset``, ``creator``, ``team``, ``tags`` (all of them), ``search`` (text in the
        title, any case) and the creation window narrow the list further; see
        ``BackfillFilter``.
        """
        size = _calls.check_page_size(page_size)
        wanted = list(statuses) if statuses is not None else None
        more = _calls.list_filters(
            asset, creator, tags, search, created_after, created_before, team
        )
        return self._pages(lambda after: _calls.backfills_page(wanted, job, tag, size, after, more))

    def pause(self, backfill_id: str) -> Backfill:
        """Stop launching new runs; runs in flight finish."""
        return self._execute(_calls.steer_backfill("Pause", backfill_id))

    def resume(self, backfill_id: str) -> Backfill:
        """Continue a paused backfill."""
        return self._execute(_calls.steer_backfill("Resume", backfill_id))

    def cancel(self, backfill_id: str) -> Backfill:
        """Stop launching runs and stop the runs in flight."""
        return self._execute(_calls.steer_backfill("Cancel", backfill_id))

    def update(
        self,
        backfill_id: str,
        *,
        max_concurrent_runs: int | None = UNCHANGED,
        priority: int = UNCHANGED,
        title: str | None = UNCHANGED,
        description: str | None = UNCHANGED,
    ) -> Backfill:
        """Change a running or paused backfill: its limit (None: no limit of its own), its
        priority, title or description; what is not given stays. A lower limit holds from the
        daemon's next claim (runs in flight finish)."""
        return self._execute(
            _calls.update_backfill(backfill_id, max_concurrent_runs, priority, title, description)
        )

    def retry(
        self,
        backfill_id: str,
        include: Iterable[RetryInclude] = ("FAILED",),
        idempotency_key: str | None = None,
    ) -> Backfill:
        """Launch the chosen partitions of a finished backfill again; returns the new one."""
        return self._execute(_calls.retry_backfill(backfill_id, list(include), idempotency_key))

    def runs(
        self,
        backfill_id: str,
        statuses: Iterable[RunStatus | str] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> Iterator[Run]:
        """Every run of a backfill, newest first, fetched page by page."""
        size = _calls.check_page_size(page_size)
        wanted = list(statuses) if statuses is not None else None
        return self._pages(lambda after: _calls.runs_page(backfill_id, wanted, size, after))

    def events(
        self, backfill_id: str, newest_first: bool = False, page_size: int = DEFAULT_PAGE_SIZE
    ) -> Iterator[BackfillEvent]:
        """What happened to a backfill, oldest first (or newest first), page by page."""
        size = _calls.check_page_size(page_size)
        return self._pages(lambda after: _calls.events_page(backfill_id, newest_first, size, after))

    def partition_status_ranges(self, backfill_id: str) -> list[PartitionStatusRange]:
        """The backfill's partitions folded into ranges of one status, in launch order."""
        return self._execute(_calls.partition_status_ranges(backfill_id))

    def wait(
        self,
        backfill_id: str,
        on_progress: ProgressCallback | None = None,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        timeout: float | None = None,
    ) -> Backfill:
        """Poll until the backfill is finished and return it.

        Args:
            backfill_id: The backfill to watch.
            on_progress: Called with the backfill first, then each time its status or
                counts change.
            poll_interval: Seconds between two reads.
            timeout: Give up after this many seconds (raises ``TimeoutError``).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: tuple[object, ...] | None = None
        while True:
            found = self.get_backfill(backfill_id)
            if found is None:
                raise _calls.not_found("PyGetBackfill", backfill_id)
            if on_progress is not None and _progress_key(found) != seen:
                seen = _progress_key(found)
                on_progress(found)
            if found.is_finished:
                return found
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"backfill {backfill_id} is still {found.status.value}")
            time.sleep(poll_interval)

    def backfill_assets(self, backfill_id: str) -> list[BackfillAsset]:
        """Per asset of an asset backfill, in dependency order: its level, counts and
        partition status ranges (empty for a job's backfill)."""
        return self._execute(_calls.backfill_assets(backfill_id))

    def assets(self) -> list[Asset]:
        """Every asset the server defines, in dependency order."""
        return self._execute(_calls.assets())

    def asset(self, name: str) -> Asset | None:
        """An asset by name (with its upstream and downstream assets), or None."""
        return self._execute(_calls.asset(name))

    def asset_partitions(
        self, name: str, page_size: int = DEFAULT_ASSET_PAGE_SIZE
    ) -> Iterator[AssetPartition]:
        """The asset's partitions that ran, by key, each with its latest run's status (in
        any backfill), fetched page by page."""
        size = _calls.check_page_size(page_size, _calls.MAX_ASSET_PAGE_SIZE)
        return self._pages(lambda after: _calls.asset_partitions_page(name, size, after))

    def jobs(self) -> list[Job]:
        """Every job the server defines."""
        return self._execute(_calls.jobs())

    def job(self, name: str) -> Job | None:
        """A job by name, or None."""
        return self._execute(_calls.job(name))

    def add_dynamic_partitions(self, name: str, keys: Iterable[str]) -> int:
        """Add keys to a dynamic partitions definition; returns how many were new."""
        return self._execute(_calls.dynamic_partitions("Add", name, _keys(keys)))

    def delete_dynamic_partitions(self, name: str, keys: Iterable[str]) -> int:
        """Delete keys of a dynamic partitions definition; returns how many existed."""
        return self._execute(_calls.dynamic_partitions("Delete", name, _keys(keys)))

    def mark_partitions(
        self,
        job: str | None = None,
        *,
        partitions: PartitionSelection,
        status: _calls.MarkStatus,
        reason: str,
        assets: AssetSelection | None = None,
    ) -> int:
        """Record partitions of a job (or ``assets``) as ``SUCCEEDED`` or ``SKIPPED`` without
        running them, with a reason (audited); returns how many. A marked success counts as
        a success (``MISSING`` skips it). ``BackfillerUserError`` with ``PARTITIONS_RUNNING``
        (nothing marked) while a backfill runs one of them."""
        return self._execute(_calls.mark_partitions(job, partitions, status, reason, assets))

    def partition_marks(
        self, job: str, partition_key: str | None = None, first: int = 20
    ) -> list[PartitionMark]:
        """A job's (or asset's) partitions marked by hand, newest first (at most 100)."""
        return self._execute(_calls.partition_marks(job, partition_key, first))

    def evaluate_trigger(self, name: str, dry_run: bool = False) -> TriggerEvaluation:
        """Evaluate a trigger now: it launches what it returns (nothing with ``dry_run``)."""
        return self._execute(_calls.evaluate_trigger(name, dry_run))

    def triggers(self) -> list[Trigger]:
        """Every trigger the server defines."""
        return self._execute(_calls.triggers())

    def trigger(self, name: str) -> Trigger | None:
        """A trigger by name, or None."""
        return self._execute(_calls.trigger(name))

    def set_trigger_enabled(self, name: str, enabled: bool) -> Trigger:
        """Turn a trigger's interval evaluation on or off."""
        return self._execute(_calls.set_trigger_enabled(name, enabled))

    def trigger_evaluations(
        self, name: str, page_size: int = DEFAULT_PAGE_SIZE
    ) -> Iterator[TriggerEvaluation]:
        """Every recorded evaluation of a trigger, newest first."""
        size = _calls.check_page_size(page_size)
        return self._pages(lambda after: _calls.trigger_evaluations_page(name, size, after))


class AsyncClient:
    """The asyncio twin of :class:`Client`: the same methods, awaited.

    ``list_backfills``, ``runs`` and ``trigger_evaluations`` return async iterators.
    """

    def __init__(
        self,
        url: str,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url
        self.endpoint = _calls.endpoint_of(url)
        self._http = httpx.AsyncClient(
            headers=_calls.request_headers(token, headers, _version()),
            timeout=timeout,
            limits=POOL_LIMITS,
            transport=transport,
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections; the client cannot be used afterwards."""
        await self._http.aclose()

    async def _execute(self, call: Call[T]) -> T:
        try:
            response = await self._http.post(self.endpoint, json=_payload(call))
        except httpx.TimeoutException as exc:
            raise BackfillerConnectionError(f"no answer from {self.endpoint} in time") from exc
        except httpx.HTTPError as exc:
            raise BackfillerConnectionError(f"cannot reach {self.endpoint}: {exc}") from exc
        return _calls.read_data(call, _calls.read_response(call.operation, response))

    async def _pages(self, page: Callable[[str | None], Call[_calls.Page[T]]]) -> AsyncIterator[T]:
        after: str | None = None
        while True:
            found = await self._execute(page(after))
            for item in found.items:
                yield item
            if found.next_cursor is None:
                return
            after = found.next_cursor

    async def api_version(self) -> str:
        return await self._execute(_calls.api_version())

    async def launch_backfill(self, request: BackfillRequest) -> Backfill:
        return await self._execute(_calls.launch_backfill(request))

    async def preview_backfill(self, request: BackfillRequest) -> Preview:
        return await self._execute(_calls.preview_backfill(request))

    async def get_backfill(self, backfill_id: str) -> Backfill | None:
        return await self._execute(_calls.get_backfill(backfill_id))

    def list_backfills(
        self,
        statuses: Iterable[BackfillStatus | str] | None = None,
        job: str | None = None,
        tag: tuple[str, str] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        *,
        asset: str | None = None,
        creator: str | None = None,
        tags: Mapping[str, str] | None = None,
        search: str | None = None,
        created_after: datetime | None = None,
        created_before: datetime | None = None,
        team: str | None = None,
    ) -> AsyncIterator[Backfill]:
        size = _calls.check_page_size(page_size)
        wanted = list(statuses) if statuses is not None else None
        more = _calls.list_filters(
            asset, creator, tags, search, created_after, created_before, team
        )
        return self._pages(lambda after: _calls.backfills_page(wanted, job, tag, size, after, more))

    async def pause(self, backfill_id: str) -> Backfill:
        return await self._execute(_calls.steer_backfill("Pause", backfill_id))

    async def resume(self, backfill_id: str) -> Backfill:
        return await self._execute(_calls.steer_backfill("Resume", backfill_id))

    async def cancel(self, backfill_id: str) -> Backfill:
        return await self._execute(_calls.steer_backfill("Cancel", backfill_id))

    async def update(
        self,
        backfill_id: str,
        *,
        max_concurrent_runs: int | None = UNCHANGED,
        priority: int = UNCHANGED,
        title: str | None = UNCHANGED,
        description: str | None = UNCHANGED,
    ) -> Backfill:
        return await self._execute(
            _calls.update_backfill(backfill_id, max_concurrent_runs, priority, title, description)
        )

    async def retry(
        self,
        backfill_id: str,
        include: Iterable[RetryInclude] = ("FAILED",),
        idempotency_key: str | None = None,
    ) -> Backfill:
        return await self._execute(
            _calls.retry_backfill(backfill_id, list(include), idempotency_key)
        )

    def runs(
        self,
        backfill_id: str,
        statuses: Iterable[RunStatus | str] | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
    ) -> AsyncIterator[Run]:
        size = _calls.check_page_size(page_size)
        wanted = list(statuses) if statuses is not None else None
        return self._pages(lambda after: _calls.runs_page(backfill_id, wanted, size, after))

    def events(
        self, backfill_id: str, newest_first: bool = False, page_size: int = DEFAULT_PAGE_SIZE
    ) -> AsyncIterator[BackfillEvent]:
        size = _calls.check_page_size(page_size)
        return self._pages(lambda after: _calls.events_page(backfill_id, newest_first, size, after))

    async def partition_status_ranges(self, backfill_id: str) -> list[PartitionStatusRange]:
        return await self._execute(_calls.partition_status_ranges(backfill_id))

    async def wait(
        self,
        backfill_id: str,
        on_progress: Callable[[Backfill], object | Awaitable[object]] | None = None,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        timeout: float | None = None,  # noqa: ASYNC109 (same signature as Client.wait)
    ) -> Backfill:
        """Poll until the backfill is finished; ``on_progress`` may be a coroutine function."""
        deadline = None if timeout is None else time.monotonic() + timeout
        seen: tuple[object, ...] | None = None
        while True:
            found = await self.get_backfill(backfill_id)
            if found is None:
                raise _calls.not_found("PyGetBackfill", backfill_id)
            if on_progress is not None and _progress_key(found) != seen:
                seen = _progress_key(found)
                result = on_progress(found)
                if isinstance(result, Awaitable):
                    await result
            if found.is_finished:
                return found
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"backfill {backfill_id} is still {found.status.value}")
            await asyncio.sleep(poll_interval)

    async def backfill_assets(self, backfill_id: str) -> list[BackfillAsset]:
        return await self._execute(_calls.backfill_assets(backfill_id))

    async def assets(self) -> list[Asset]:
        return await self._execute(_calls.assets())

    async def asset(self, name: str) -> Asset | None:
        return await self._execute(_calls.asset(name))

    def asset_partitions(
        self, name: str, page_size: int = DEFAULT_ASSET_PAGE_SIZE
    ) -> AsyncIterator[AssetPartition]:
        size = _calls.check_page_size(page_size, _calls.MAX_ASSET_PAGE_SIZE)
        return self._pages(lambda after: _calls.asset_partitions_page(name, size, after))

    async def jobs(self) -> list[Job]:
        return await self._execute(_calls.jobs())

    async def job(self, name: str) -> Job | None:
        return await self._execute(_calls.job(name))

    async def add_dynamic_partitions(self, name: str, keys: Iterable[str]) -> int:
        return await self._execute(_calls.dynamic_partitions("Add", name, _keys(keys)))

    async def delete_dynamic_partitions(self, name: str, keys: Iterable[str]) -> int:
        return await self._execute(_calls.dynamic_partitions("Delete", name, _keys(keys)))

    async def mark_partitions(
        self,
        job: str | None = None,
        *,
        partitions: PartitionSelection,
        status: _calls.MarkStatus,
        reason: str,
        assets: AssetSelection | None = None,
    ) -> int:
        return await self._execute(_calls.mark_partitions(job, partitions, status, reason, assets))

    async def partition_marks(
        self, job: str, partition_key: str | None = None, first: int = 20
    ) -> list[PartitionMark]:
        return await self._execute(_calls.partition_marks(job, partition_key, first))

    async def evaluate_trigger(self, name: str, dry_run: bool = False) -> TriggerEvaluation:
        return await self._execute(_calls.evaluate_trigger(name, dry_run))

    async def triggers(self) -> list[Trigger]:
        return await self._execute(_calls.triggers())

    async def trigger(self, name: str) -> Trigger | None:
        return await self._execute(_calls.trigger(name))

    async def set_trigger_enabled(self, name: str, enabled: bool) -> Trigger:
        return await self._execute(_calls.set_trigger_enabled(name, enabled))

    def trigger_evaluations(
        self, name: str, page_size: int = DEFAULT_PAGE_SIZE
    ) -> AsyncIterator[TriggerEvaluation]:
        size = _calls.check_page_size(page_size)
        return self._pages(lambda after: _calls.trigger_evaluations_page(name, size, after))


def _keys(keys: Iterable[str]) -> list[str]:
    if isinstance(keys, str):
        raise TypeError("keys must be a list of partition keys, not one string")
    return list(keys)


__all__ = ["AsyncClient", "Client"]

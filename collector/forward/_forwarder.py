"""Pass-through: every accepted span and log request forwarded to the next collector (DESIGN §6).

```
receiver ─accept→ ForwardingSink ─→ Ingest (span log, assembly: scoring)
                        └─ submit (never waits) → bounded queue → consumers → next collector
```

- **What is sent**: the request body as the agent sent it (un-gzipped): protobuf bodies
  byte for byte; OTLP/JSON bodies are converted once, off the request path, to the same
  request in protobuf (hex ids to bytes), so the next collector always receives
  `application/x-protobuf` (over HTTP) or a plain gRPC `Export` call. A JSON body that cannot be
  expressed in protobuf (an id that is not hex) is dropped as permanent and counted.
- **Where**: `forward.endpoint` only. The standard `OTEL_EXPORTER_OTLP_*` variables are NOT
  read here: they configure where scores go (`exporters.otlp`), and the agent's own SDK. An
  operator sets the forward target explicitly so scores and telemetry never get mixed up.
- **Bounded**: a queue bounded by requests (`queue_size`) and bytes (`queue_max_mib`),
  counting requests in flight. `submit` never waits: past the bound the NEW request is dropped
  (as the Collector's `sending_queue` does with `block_on_overflow: false`), so what is already
  queued is delivered in order of arrival and a burst never evicts older data.
- **Retry**: retryable answers (gRPC `CANCELLED`, `DEADLINE_EXCEEDED`, `ABORTED`,
  `OUT_OF_RANGE`, `UNAVAILABLE`, `DATA_LOSS`, and `RESOURCE_EXHAUSTED` only with `RetryInfo`;
  HTTP 429, 502, 503, 504; connection errors and timeouts) are retried without an end with
  jittered exponential backoff (`initial_backoff` doubling up to `max_backoff`, each wait
  50–100 % of that); a server's `RetryInfo` / `Retry-After` replaces the backoff (capped at
  `max_retry_after`). Only the queue bound limits an outage. Anything else (400,
  `INVALID_ARGUMENT`, `UNIMPLEMENTED`, 401, 404, …) is permanent: dropped and counted.
- **Counted** in `scorecar_forward_total{signal,outcome}` by span / log record: `forwarded`,
  `retried` (once per failed attempt that will be retried), `dropped_full`,
  `dropped_permanent`, `dropped_shutdown`.
- **Shutdown**: `stop(grace)` stops taking requests, keeps delivering (and retrying) until the
  queue is empty or `grace` ends, then counts what is left as `dropped_shutdown`.
- **Not durable**: the queue is in memory; a crash loses what it held (the scoring path keeps
  its own write-ahead log; telemetry replayed from it at start is not forwarded again).
- **Secrets**: header values are sent, never logged; logs name the endpoint (user info removed)
  and the status code only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from collector._retry import jittered_backoff
from collector._telemetry import Metrics
from collector.forward._transport import _GrpcTransport, _HttpTransport, _Transport
from collector.intake import BodyKind, SpanSink
from collector.otlp import Decoded, Signal, json_to_protobuf

__all__ = ["Forwarder", "ForwardingSink", "Signal"]

log = logging.getLogger("scorecar.forward")

_MIB = 1024 * 1024


@dataclass(eq=False, slots=True)
class _Item:
    signal: Signal
    kind: BodyKind
    body: bytes
    count: int


def _redact(endpoint: str) -> str:
    """The endpoint without user info (safe to log)."""
    if "://" not in endpoint:
        return endpoint
    parts = urlsplit(endpoint)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


# --------------------------------------------------------------------------- the forwarder


class Forwarder:
    """A bounded queue and its consumers, sending request bodies to the next collector.

    Args:
        endpoint: `host:port` or an `http(s)://` URL (for HTTP, the base: `/v1/traces` and
            `/v1/logs` are appended).
        metrics: `forward` (`scorecar_forward_total{signal,outcome}`) is incremented.
        protocol: `grpc` or `http/protobuf` (`http` accepted).
        headers: sent with every request (gRPC metadata names lower-cased); never logged.
        insecure: plaintext when the endpoint has no scheme (`https://` always means TLS).
        timeout: seconds per attempt.
        ca_file: PEM CA bundle to verify the server (None: the system's).
        cert_file: client certificate (mTLS), with `key_file`.
        key_file: its private key.
        queue_size: requests held at most (queued and in flight).
        queue_max_bytes: bytes of request bodies held at most.
        consumers: requests in flight at once.
        initial_backoff: first retry wait, seconds (doubles per attempt).
        max_backoff: longest backoff wait, seconds.
        max_retry_after: longest wait a server's `RetryInfo` / `Retry-After` can ask for.
        sleep: how to wait between attempts (tests pass a recording one).
    """

    def __init__(self, endpoint: str, metrics: Metrics, *, protocol: str = "grpc",
                 headers: Mapping[str, str] | None = None, insecure: bool = True,
                 timeout: float = 10.0, ca_file: Path | None = None,
                 cert_file: Path | None = None, key_file: Path | None = None,
                 queue_size: int = 1000, queue_max_bytes: int = 64 * _MIB, consumers: int = 4,
                 initial_backoff: float = 1.0, max_backoff: float = 30.0,
                 max_retry_after: float = 120.0,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.endpoint = _redact(endpoint)
        self._metrics = metrics
        headers = dict(headers or {})
        self._transport: _Transport
        if protocol in ("http", "http/protobuf"):
            self._transport = _HttpTransport(endpoint, insecure=insecure, headers=headers,
                                             timeout=timeout, ca_file=ca_file,
                                             cert_file=cert_file, key_file=key_file)
        elif protocol == "grpc":
            self._transport = _GrpcTransport(endpoint, insecure=insecure, headers=headers,
                                             timeout=timeout, ca_file=ca_file,
                                             cert_file=cert_file, key_file=key_file,
                                             reconnect_backoff=(initial_backoff, max_backoff))
        else:
            raise ValueError(f"forward protocol must be grpc or http/protobuf, not {protocol!r}")
        self._queue_size = queue_size
        self._queue_max_bytes = queue_max_bytes
        self._consumers = consumers
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_retry_after = max_retry_after
        self._sleep = sleep
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._held = 0  # requests queued or in flight
        self._held_bytes = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._closed = False
        self._failing = False

    @classmethod
    def from_config(cls, config: Any, metrics: Metrics) -> Forwarder:
        """A forwarder from `collector.config.ForwardConfig` (its endpoint must be set)."""
        return cls(config.endpoint, metrics, protocol=config.protocol,
                   headers=dict(config.headers), insecure=config.insecure,
                   timeout=config.timeout, ca_file=config.ca_file, cert_file=config.cert_file,
                   key_file=config.key_file, queue_size=config.queue_size,
                   queue_max_bytes=int(config.queue_max_mib * _MIB),
                   consumers=config.consumers, initial_backoff=config.initial_backoff,
                   max_backoff=config.max_backoff)

    def __repr__(self) -> str:
        return f"Forwarder({self.endpoint!r})"  # never the headers

    # ------------------------------------------------------------------ state

    @property
    def queued(self) -> int:
        """Requests held (queued or in flight)."""
        return self._held

    @property
    def queued_bytes(self) -> int:
        """Bytes of request bodies held (queued or in flight)."""
        return self._held_bytes

    def _count(self, item: _Item, outcome: str) -> None:
        self._metrics.forward.labels(item.signal, outcome).inc(item.count)

    # ------------------------------------------------------------------ the request path

    def submit(self, kind: BodyKind, body: bytes, count: int) -> bool:
        """Queue one accepted request body; never waits. Returns whether it was queued
        (otherwise it was dropped and counted: `dropped_full`, or `dropped_shutdown` once
        stopping).

        Args:
            kind: how `body` is encoded (which signal, protobuf or JSON).
            body: the un-gzipped request body.
            count: spans or log records in it (what the counter counts).
        """
        item = _Item("logs" if kind.startswith("logs") else "traces", kind, body, count)
        if self._closed:
            self._count(item, "dropped_shutdown")
            return False
        if self._held >= self._queue_size or \
                self._held_bytes + len(body) > self._queue_max_bytes:
            self._count(item, "dropped_full")
            return False
        self._held += 1
        self._held_bytes += len(body)
        self._idle.clear()
        self._queue.put_nowait(item)
        return True

    def _release(self, item: _Item) -> None:
        self._held -= 1
        self._held_bytes -= len(item.body)
        if self._held == 0:
            self._idle.set()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the connection (lazily: nothing is sent yet) and start the consumers."""
        if self._started:
            return
        self._started = True
        await self._transport.open()
        self._tasks = [asyncio.create_task(self._consume(), name=f"scorecar-forward-{i}")
                       for i in range(self._consumers)]

    async def flush(self, timeout: float) -> bool:
        """Wait until nothing is held (everything delivered or dropped); False on timeout."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            return False
        return True

    async def stop(self, grace: float = 10.0) -> None:
        """Take no more requests; deliver what is held within `grace` seconds; count the rest
        `dropped_shutdown`. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._tasks:
            await self.flush(grace)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
        left = 0
        while not self._queue.empty():
            item = self._queue.get_nowait()
            self._count(item, "dropped_shutdown")
            left += item.count
            self._release(item)
        if left:
            log.warning("forwarding stopped with %d span(s)/log record(s) not delivered to %s",
                        left, self.endpoint, extra={"dropped": left})
        with contextlib.suppress(Exception):
            await self._transport.close()

    # ------------------------------------------------------------------ delivery

    async def _consume(self) -> None:
        while True:
            item = await self._queue.get()
            try:
                await self._deliver(item)
            except asyncio.CancelledError:
                self._count(item, "dropped_shutdown")
                raise
            except Exception:  # noqa: BLE001 - one request never stops the consumer
                log.exception("forwarding a request to %s failed", self.endpoint)
                self._count(item, "dropped_permanent")
            finally:
                self._release(item)

    def _backoff(self, attempt: int) -> float:
        # The exponent stops at 30 so that an outage of any length never overflows.
        return jittered_backoff(attempt, initial=self._initial_backoff,
                                maximum=self._max_backoff, max_exponent=30)

    async def _deliver(self, item: _Item) -> None:
        payload = item.body
        if item.kind.endswith("_json"):
            try:
                payload = json_to_protobuf(item.body, item.signal)
            except ValueError as exc:
                self._count(item, "dropped_permanent")
                log.warning("a %s request could not be forwarded: its JSON has no protobuf "
                            "form (%s)", item.signal, str(exc)[:200])
                return
        attempt = 0
        while True:
            result = await self._transport.send(item.signal, payload)
            if result.ok:
                self._count(item, "forwarded")
                if self._failing:
                    self._failing = False
                    log.info("forwarding to %s works again", self.endpoint)
                return
            if not result.retryable:
                self._count(item, "dropped_permanent")
                log.warning("%s refused a forwarded %s request (%s, permanent): dropped %d "
                            "item(s)", self.endpoint, item.signal, result.why, item.count)
                return
            self._count(item, "retried")
            if not self._failing:
                self._failing = True
                log.warning("forwarding to %s failing (%s); retrying with backoff",
                            self.endpoint, result.why)
            if result.retry_after is not None:
                delay = min(result.retry_after, self._max_retry_after)
            else:
                delay = self._backoff(attempt)
            attempt += 1
            await self._sleep(delay)


class ForwardingSink:
    """A `SpanSink` that hands every accepted request to the scoring path (`inner`) and then
    to a `Forwarder`. A request `inner` refuses is not forwarded (the agent will retry it)."""

    def __init__(self, inner: SpanSink, forwarder: Forwarder) -> None:
        self._inner = inner
        self.forwarder = forwarder

    @property
    def undecoded_bytes(self) -> int:
        """The scoring path's undecoded bytes (the forward queue has its own bound)."""
        return self._inner.undecoded_bytes

    def check_capacity(self) -> None:
        """The scoring path's check (forwarding never refuses: it drops and counts).

        Raises:
            Overloaded: from `inner`.
        """
        self._inner.check_capacity()

    async def accept(self, decoded: Decoded, transport: str, body: bytes, kind: BodyKind) -> None:
        """`inner.accept`, then queue `body` for forwarding (never waits).

        Raises:
            Overloaded: from `inner` (nothing is forwarded then).
        """
        await self._inner.accept(decoded, transport, body, kind)
        self.forwarder.submit(kind, body, len(decoded.spans) + len(decoded.logs)
                              + decoded.undecoded)

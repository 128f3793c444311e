"""The app's `SpanSink`: write-ahead log first, then the per-trace buffers (DESIGN §5).

How the app drives it:

1. At startup, before the receivers open: `Ingest(spanlog, assembly, metrics, capacity=…)`,
   then `ingest.replay()` (every logged body re-decoded into the assembly).
2. Receivers call `check_capacity()` before decoding and `await accept(...)` after; when
   `accept` returns the request is in the log and the receiver may answer OK.
3. A poll loop: `for ready in assembly.poll(): build runs, queue jobs, ingest.release(ready)`,
   then sleep until `assembly.next_deadline()` (or a wake-up when spans arrive). Release only
   after the jobs are in the queue: until then a crash replays the trace.

Under sustained overload refusing wins over evicting: `check_capacity()` refuses (retryably,
`too_many_pending`) once `max_pending_spans` spans are buffered, so agents retry instead of
losing traces; eviction only trims what one accepted request pushed past the bound, and
enforces `max_traces`.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable, Iterable

from collector._telemetry import Metrics
from collector.intake._assembly import Assembly, Body, ReadyTrace, Released
from collector.intake._ports import BodyKind, Overloaded, decode_body
from collector.intake._spanlog import WriteAheadLog
from collector.otlp import Decoded

__all__ = ["Ingest", "decode_body"]


def _trace_ids(decoded: Decoded) -> set[str]:
    ids = {s.trace_id for s in decoded.spans}
    ids.update(lg.trace_id for lg in decoded.logs)
    return ids


class Ingest:
    """Implements `collector.intake._ports.SpanSink` over a span log and an assembly.

    Args:
        spanlog: `SpanLog` (or `MemorySpanLog` for `storage.kind: memory`).
        assembly: the per-trace buffers.
        metrics: the registry (the receivers count `scorecar_spans_received_total`).
        capacity: the app's other limits (queue full, memory): returns the refusal, or None.
        retry_after: `Retry-After` seconds when the buffers are full.
    """

    def __init__(self, spanlog: WriteAheadLog, assembly: Assembly, metrics: Metrics, *,
                 capacity: Callable[[], Overloaded | None] | None = None,
                 retry_after: float = 1.0) -> None:
        self.spanlog = spanlog
        self.assembly = assembly
        self._metrics = metrics
        self._capacity = capacity
        self._retry_after = retry_after
        # Bodies acknowledged (in the log) but not decoded yet, oldest first.
        self._backlog: deque[tuple[BodyKind, bytes, int | None, int]] = deque()
        self._backlog_items = 0
        self._backlog_bytes = 0
        self._wake = asyncio.Event()
        self.decoded_later = 0

    def check_capacity(self) -> None:
        """Refuse before decoding when the buffers or the app's limits are full.

        Raises:
            Overloaded: `too_many_pending` (buffered spans at `max_pending_spans` or traces at
                `max_traces`), or what `capacity()` returned.
        """
        # Refusing (retryably) beats accepting and then evicting what was acknowledged.
        if self.assembly.pending_spans + self._backlog_items >= self.assembly.max_pending_spans \
                or self.assembly.pending_traces >= self.assembly.max_traces:
            raise Overloaded("too_many_pending", self._retry_after)
        if self._capacity is not None:
            refusal = self._capacity()
            if refusal is not None:
                raise refusal

    async def accept(self, decoded: Decoded, transport: str, body: bytes, kind: BodyKind
                     ) -> None:
        """Append `body` to the span log, then buffer its spans and log records.

        Raises:
            Overloaded: `storage` — the log could not be written; nothing was kept.
        """
        if decoded.undecoded:
            # Only scanned by the receiver: log it now, decode it in `run()`.
            segment = self.spanlog.append(kind, body, decoded.trace_ids)
            self._backlog.append((kind, body, segment, decoded.undecoded))
            self._backlog_items += decoded.undecoded
            self._backlog_bytes += len(body)
            self._wake.set()
            return
        if not decoded.spans and not decoded.logs:
            return
        segment = self.spanlog.append(kind, body, _trace_ids(decoded))
        self._release_all(self.assembly.add(decoded.spans, decoded.logs, segment,
                                            Body(kind, body)))

    @property
    def undecoded_bytes(self) -> int:
        """Bytes of bodies acknowledged and logged but not decoded yet."""
        return self._backlog_bytes

    @property
    def backlog(self) -> int:
        """Spans acknowledged and logged but not decoded into the buffers yet."""
        return self._backlog_items

    async def run(self) -> None:
        """Decode the bodies receivers only scanned, in arrival order, each in a worker thread
        (the event loop keeps answering meanwhile), into the buffers. Runs until cancelled;
        what is still waiting then is in the span log and comes back by `replay()`."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._backlog:
                kind, body, segment, items = self._backlog[0]
                decoded = await asyncio.to_thread(decode_body, kind, body)
                self._backlog.popleft()
                self._backlog_items -= items
                self._backlog_bytes -= len(body)
                self.decoded_later += 1
                self._release_all(self.assembly.add(decoded.spans, decoded.logs, segment,
                                                    Body(kind, body)))

    def release(self, ready: ReadyTrace | str) -> None:
        """The trace's jobs are in the queue (or it yielded none): drop its log holds.

        Args:
            ready: the handed-over trace (drops exactly its holds), or a trace id (drops
                every hold of that trace, including late spans buffered since).
        """
        if isinstance(ready, str):
            self.spanlog.release(ready)
        else:
            self.spanlog.release(ready.trace.trace_id, ready.segments)

    def _release_all(self, released: Iterable[Released]) -> None:
        for r in released:
            self.spanlog.release(r.trace_id, r.segments)

    def replay(self) -> Counter[str]:
        """Re-decode every body of the span log into the assembly (after a restart, before
        the receivers open). Spans are not counted as received again.

        Returns:
            `records`, `spans`, `logs`, `traces`, plus the log's `torn`/`corrupt` records
            and the decoders' refusal reasons (`refused_<reason>`); empty (falsy) when the
            log held nothing.
        """
        counts: Counter[str] = Counter()
        traces: set[str] = set()
        for segment, kind, body in self.spanlog.replay():
            decoded = decode_body(kind, body)
            ids = _trace_ids(decoded)
            self.spanlog.track(segment, ids)
            self._release_all(self.assembly.add(decoded.spans, decoded.logs, segment,
                                                Body(kind, body)))
            counts["records"] += 1
            counts["spans"] += len(decoded.spans)
            counts["logs"] += len(decoded.logs)
            for reason, n in decoded.refused.items():
                counts[f"refused_{reason}"] += n
            traces |= ids
        if traces:
            counts["traces"] = len(traces)
        stats = self.spanlog.replay_stats
        for key in ("torn", "corrupt", "unreadable"):
            if stats.get(key):
                counts[key] = stats[key]
        return counts

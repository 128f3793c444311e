"""Trace assembly (DESIGN §3.1–3.3, §9): per-trace buffers, readiness, bounds, late spans.

`add()` buffers decoded spans and log records per trace id (a re-delivered span is kept once,
the ended copy wins); `poll()` hands over the traces that are ready:

- **quiet**: no new span for `quiet_period`, at least one run root (`transforms.run_roots`),
  and every run root has ended and is complete (all its ancestors arrived — an inner model
  call is not scored as a bare run while its agent span is still open). Run roots are
  computed once per quiet period after the trace last changed, never on every poll. When
  a run's model calls carry no content of their own (content sent as log records), the trace
  waits up to `log_wait` more for them; their arrival re-checks it at once.
- **max_wait**: nothing new arrived for the trace for `max_wait`; whatever is there is used
  (also for traces with no run root at all, so the run builder counts why: `not_genai`, …).
  A trace still receiving is never cut. A run root waiting for a parent that its span flags
  call local is not cut by max_wait: the parent will come (a tool may run for minutes); one
  whose missing parent is remote is complete (the parent is another process's).
- **max_trace_age**: the hard cap, from the trace's first arrival.

Runs handed over by either limit while still waiting for something (an open or incomplete
root, content not yet seen) are counted `partial` in `scorecar_transform_reasons_total`.

Bounds: past `max_traces` buffered traces or `max_pending_spans` buffered spans and log
records, the oldest traces (by first arrival) are dropped; `add()` returns them so their
write-ahead log holds are released. Counted in `scorecar_spans_refused_total{reason="evicted"}`
by spans and log records. (`collector.intake._ingest.Ingest.check_capacity` refuses new requests
once `max_pending_spans` is reached, so eviction by spans only trims what one request pushed
over the line; the trace bound is enforced by eviction alone.)

Late pieces: traces handed over are remembered for `late_window` seconds — their span ids, and
with `rescore_late` the request bodies they came in (`_held.py`; decoded objects only when a
piece came without its body), bounded by `max_traces`, `max_pending_spans` ids and
`max_remembered_bytes`, oldest forgotten first. A span or log record for such a trace that is
attached to what was handed over (a descendant, an ancestor one of its spans waited for, a
finished copy of a span handed over unfinished) is **late**, counted `late`. With
`rescore_late` the trace is rebuilt from the old pieces plus the new and handed over again
(`ReadyTrace.rebuild`; `roots` names the runs the new pieces touch; same run and score ids);
without it, late pieces are dropped. New spans not attached to what was handed over are a
separate subtree: new work, assembled normally.

Other counters: `duplicate` (re-delivered span or log record, kept once) and
`late_not_rescored` (late with `rescore_late` on, but the old pieces were forgotten)
in `scorecar_transform_reasons_total`; `scorecar_traces_pending` is kept current.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

from collector._telemetry import Metrics
from collector.intake._held import Body, BodyBudget, Recent, TraceBuffer, classify, log_key
from transforms import LogEvent, RunRoot, Span, Trace, run_roots

__all__ = ["Assembly", "Body", "ReadyTrace", "Released"]

_Why = Literal["quiet", "max_wait", "max_trace_age", "flush"]
_Kind = Literal["quiet", "wait", "age"]


@dataclass(slots=True)
class ReadyTrace:
    """A trace handed over for run building.

    Attributes:
        trace: its spans (de-duplicated) and log records.
        segments: write-ahead log holds to release once its jobs are queued
            (`Ingest.release(ready)`), counted per segment.
        reason: `quiet` (every run root ended and complete), `max_wait` (nothing new for that
            long), `max_trace_age` (the hard cap since the first arrival), or `flush`.
        rebuild: the trace holds spans handed over before (late spans arrived, or a new
            subtree of an already-scheduled trace, with `rescore_late`).
        roots: for a rebuild, the span ids of the run roots the new spans touch: schedule
            only the runs whose `target.span_id` is in it. None: every run is new.
        late: it holds late spans or log records (a rebuild of runs already handed over:
            their scores are replaced, same score ids).
        late_spans: how many late spans and log records it holds.
    """

    trace: Trace
    segments: Counter[int]
    reason: _Why = "quiet"
    rebuild: bool = False
    roots: frozenset[str] | None = None
    late: bool = False
    late_spans: int = 0


@dataclass(slots=True)
class Released:
    """Write-ahead log holds nobody buffers any more (the caller releases them).

    Attributes:
        trace_id: the trace.
        segments: holds per segment.
        reason: `evicted` (the buffer was dropped by a bound) or `dropped` (everything the
            request held for this trace was a duplicate or late and not kept).
        items: spans and log records dropped with it.
    """

    trace_id: str
    segments: Counter[int]
    reason: Literal["evicted", "dropped"]
    items: int = 0


class Assembly:
    """Per-trace buffers between the receivers and run building. Not thread-safe: call it
    from the event loop only.

    Args:
        quiet_period: seconds without a new span before a trace whose run roots all ended
            is ready.
        max_wait: seconds after its last arrival when a trace is handed over as it is (a trace
            still receiving is never cut), unless a run root waits for a parent its span flags
            call local: that one is waited for up to `max_trace_age`.
        max_pending_spans: bound on buffered spans plus log records.
        max_traces: bound on buffered traces.
        rescore_late: rebuild and hand over again traces that get late spans.
        metrics: where the counters and the `traces_pending` gauge live.
        clock: monotonic seconds (injected by tests).
        late_window: seconds a handed-over trace is remembered for late spans.
        log_wait: seconds past the quiet period that a trace whose run's model calls carry no
            content of their own waits for its log records (0: never).
        max_trace_age: seconds after its first arrival when a trace is handed over whatever
            it waits for (the hard cap; None: `max_wait` is the only cut).
        max_remembered_bytes: bound on the request bodies kept for re-scoring handed-over
            traces (each body counted once); past it the oldest traces' bodies are forgotten
            (their late pieces are then counted `late_not_rescored`).
    """

    def __init__(self, *, quiet_period: float = 1.0, max_wait: float = 30.0,
                 max_pending_spans: int = 200_000, max_traces: int = 20_000,
                 rescore_late: bool = False, metrics: Metrics,
                 clock: Callable[[], float] = time.monotonic,
                 late_window: float = 300.0, log_wait: float = 0.0,
                 max_trace_age: float | None = None,
                 max_remembered_bytes: int = 32 << 20) -> None:
        if quiet_period < 0 or max_wait < 0 or max_pending_spans < 1 or max_traces < 1 \
                or log_wait < 0 or (max_trace_age is not None and max_trace_age < max_wait):
            raise ValueError("assembly bounds must be positive (and max_trace_age >= max_wait)")
        self.log_wait = log_wait
        self.max_trace_age = max_trace_age
        self.quiet_period = quiet_period
        self.max_wait = max_wait
        self.max_pending_spans = max_pending_spans
        self.max_traces = max_traces
        self.rescore_late = rescore_late
        self.late_window = late_window
        self.max_remembered_bytes = max_remembered_bytes
        self._bodies = BodyBudget()
        self._with_bodies: dict[str, None] = {}  # remembered traces holding bodies, oldest first
        self._metrics = metrics
        self._clock = clock
        self._buffers: dict[str, TraceBuffer] = {}   # insertion order = first arrival
        self._recent: dict[str, Recent] = {}    # insertion order = handed over
        self._pending = 0
        self._recent_size = 0
        # (deadline, seq, trace id, buffer generation, kind, version): a `quiet` or `wait`
        # deadline is stale once the buffer changed since (a later one exists); `age` never is.
        self._deadlines: list[tuple[float, int, str, int, _Kind, int]] = []
        self._seq = itertools.count()
        self._gens = itertools.count()
        self.stats: Counter[str] = Counter()
        """Every decision, for logs and tests: `spans`, `logs`, `duplicate`, `late`,
        `late_not_rescored`, `evicted_traces`, `evicted`, `ready_quiet`, `ready_max_wait`,
        `ready_max_trace_age`, `rebuilds`, `roots_checked`, `awaiting_logs`,
        `awaiting_parent` (max_wait passed while a run waits for a local parent), `partial`
        (runs handed over by max_wait or max_trace_age while still waiting)."""

    # ------------------------------------------------------------------ state

    @property
    def pending_spans(self) -> int:
        """Spans and log records buffered, not yet handed over."""
        return self._pending

    @property
    def pending_traces(self) -> int:
        """Traces buffered, not yet handed over."""
        return len(self._buffers)

    @property
    def remembered_traces(self) -> int:
        """Handed-over traces still remembered for late spans."""
        return len(self._recent)

    @property
    def remembered_bytes(self) -> int:
        """Bytes of the request bodies kept to rebuild handed-over traces."""
        return self._bodies.bytes

    # ------------------------------------------------------------------ add

    def add(self, spans: Iterable[Span], logs: Iterable[LogEvent], segment: int | None,
            body: Body | None = None) -> list[Released]:
        """Buffer spans and log records, grouped by trace id.

        Args:
            spans: decoded spans, any order, duplicates allowed.
            logs: decoded log records.
            segment: the write-ahead log segment the request went to (None: not logged).
                Each trace of the request takes one hold on it.
            body: the request they were decoded from: what a handed-over trace is remembered
                as, for re-scoring (None: the decoded objects are remembered instead).

        Returns:
            Holds to release now: traces evicted by a bound, and traces whose part of this
            request was not kept (all duplicate or late).
        """
        now = self._clock()
        by_trace: dict[str, tuple[list[Span], list[LogEvent]]] = {}
        for s in spans:
            entry = by_trace.get(s.trace_id)
            if entry is None:
                entry = by_trace[s.trace_id] = ([], [])
            entry[0].append(s)
        for lg in logs:
            entry = by_trace.get(lg.trace_id)
            if entry is None:
                entry = by_trace[lg.trace_id] = ([], [])
            entry[1].append(lg)
        released: list[Released] = []
        self._forget(now)
        for tid, (tspans, tlogs) in by_trace.items():
            self.stats["spans"] += len(tspans)
            self.stats["logs"] += len(tlogs)
            recent = self._recent.get(tid)
            if recent is not None:
                buf = self._add_after_handover(tid, recent, tspans, tlogs, now)
            else:
                buf = self._add_to(self._buffer(tid, now), tspans, tlogs, now)
            if buf is None:
                if segment is not None:
                    released.append(Released(tid, Counter({segment: 1}), "dropped",
                                             len(tspans) + len(tlogs)))
                continue
            if segment is not None:
                buf.segments[segment] += 1
            if buf.bodies is not None:
                if body is None:
                    buf.bodies = None
                elif not buf.bodies or buf.bodies[-1] is not body:
                    buf.bodies.append(body)
        released.extend(self._enforce_bounds())
        self._metrics.traces_pending.set(len(self._buffers))
        return released

    def _buffer(self, tid: str, now: float) -> TraceBuffer:
        buf = self._buffers.get(tid)
        if buf is None:
            buf = self._buffers[tid] = TraceBuffer(tid, now, now, next(self._gens))
            if self.max_trace_age is not None:
                self._push(now + self.max_trace_age, buf, "age")
        return buf

    def _push(self, deadline: float, buf: TraceBuffer, kind: _Kind) -> None:
        heapq.heappush(self._deadlines,
                       (deadline, next(self._seq), buf.trace_id, buf.gen, kind, buf.version))

    def _add_to(self, buf: TraceBuffer, spans: list[Span], logs: list[LogEvent], now: float,
                touched: set[str] | None = None) -> TraceBuffer | None:
        """Add to `buf`; return it, or None when it stayed empty and was removed."""
        changed = False
        dup = 0
        for s in spans:
            old = buf.spans.get(s.span_id)
            if old is not None:
                dup += 1
                if not old.end_time_unix_nano and s.end_time_unix_nano:
                    buf.spans[s.span_id] = s  # the ended copy knows more
                    changed = True
                    if touched is not None:
                        touched.add(s.span_id)
                continue
            buf.spans[s.span_id] = s
            self._pending += 1
            changed = True
            if touched is not None:
                touched.add(s.span_id)
        for lg in logs:
            key = log_key(lg)
            if key in buf.log_keys:
                dup += 1
                continue
            buf.log_keys.add(key)
            buf.logs.append(lg)
            self._pending += 1
            changed = True
            if touched is not None and lg.span_id:
                touched.add(lg.span_id)
        self._count_duplicates(dup)
        if changed:
            buf.last = now
            buf.version += 1
            self._push(now + self.quiet_period, buf, "quiet")
            self._push(now + self.max_wait, buf, "wait")
        if buf.size == 0:
            self._buffers.pop(buf.trace_id, None)
            return None
        return buf

    def _count_duplicates(self, n: int) -> None:
        if n:
            self.stats["duplicate"] += n
            self._metrics.build_reasons.labels("duplicate").inc(n)

    def _add_after_handover(self, tid: str, recent: Recent, spans: list[Span],
                            logs: list[LogEvent], now: float) -> TraceBuffer | None:
        """Sort what arrived for a handed-over trace into duplicate, late and new work."""
        late_spans, new_spans, dup = classify(recent, spans)
        late_logs: list[LogEvent] = []
        new_logs: list[LogEvent] = []
        late_ids = {s.span_id for s in late_spans}
        for lg in logs:
            if recent.log_keys is not None and log_key(lg) in recent.log_keys:
                dup += 1
            elif lg.span_id in recent.ended or lg.span_id in late_ids:
                late_logs.append(lg)
            else:
                new_logs.append(lg)
        self._count_duplicates(dup)
        n_late = len(late_spans) + len(late_logs)
        if n_late:
            self.stats["late"] += n_late
            self._metrics.build_reasons.labels("late").inc(n_late)
        buf = self._buffers.get(tid)
        if self.rescore_late and recent.keeps_pieces and (n_late or new_spans or new_logs):
            # Rebuild: the old spans plus everything new, in one buffer.
            buf = self._buffer(tid, now)
            if not buf.rebuild:
                self._make_rebuild(buf, recent)
            buf.late += n_late
            return self._add_to(buf, late_spans + new_spans, late_logs + new_logs, now,
                                buf.touched)
        if n_late and self.rescore_late:
            self.stats["late_not_rescored"] += n_late
            self._metrics.build_reasons.labels("late_not_rescored").inc(n_late)
        if not new_spans and not new_logs:
            return buf  # keep the hold with the buffer already there, if any
        return self._add_to(self._buffer(tid, now), new_spans, new_logs, now)

    def _make_rebuild(self, buf: TraceBuffer, recent: Recent) -> None:
        """Turn `buf` into a rebuild: what it holds is new; the old pieces join it (decoded
        again from their request bodies, when that is how they were remembered)."""
        buf.rebuild = True
        buf.touched.update(buf.spans)
        buf.touched.update(lg.span_id for lg in buf.logs if lg.span_id)
        if recent.bodies is not None:
            old_spans: dict[str, Span] = {}
            old_logs: list[LogEvent] = []
            for body in recent.bodies:
                spans, logs = body.pieces(buf.trace_id)
                for s in spans:
                    seen = old_spans.get(s.span_id)
                    if seen is None or (not seen.end_time_unix_nano and s.end_time_unix_nano):
                        old_spans[s.span_id] = s  # the ended copy knows more
                old_logs.extend(logs)
            if buf.bodies is not None:
                buf.bodies[:0] = recent.bodies
        else:
            assert recent.spans is not None and recent.logs is not None
            old_spans, old_logs = recent.spans, recent.logs
            buf.bodies = None  # what was handed over is only held as objects
        for sid, s in old_spans.items():
            if sid not in buf.spans:
                buf.spans[sid] = s
                self._pending += 1
        for lg in old_logs:
            key = log_key(lg)
            if key not in buf.log_keys:
                buf.log_keys.add(key)
                buf.logs.append(lg)
                self._pending += 1

    # ------------------------------------------------------------------ bounds

    def _enforce_bounds(self) -> list[Released]:
        out: list[Released] = []
        while self._buffers and (self._pending > self.max_pending_spans
                                 or len(self._buffers) > self.max_traces):
            tid = next(iter(self._buffers))
            buf = self._buffers.pop(tid)
            self._pending -= buf.size
            self.stats["evicted_traces"] += 1
            self.stats["evicted"] += buf.size
            self._metrics.spans_refused.labels("evicted").inc(buf.size)
            out.append(Released(tid, buf.segments, "evicted", buf.size))
        return out

    def _trim_recent(self) -> None:
        """Forget the old pieces (and, when none are kept, the ids) of the oldest remembered
        trace."""
        for tid, r in self._recent.items():
            if r.keeps_pieces:
                self._recent_size -= r.size
                self._drop_pieces(tid, r)
                r.log_keys = None
                self._recent_size += r.size
                return
            self._drop(tid)
            return

    def _drop_pieces(self, tid: str, r: Recent) -> None:
        if r.bodies is not None:
            self._bodies.drop(r.bodies)
            self._with_bodies.pop(tid, None)
        r.bodies = None
        r.spans = r.logs = None

    def _drop(self, tid: str) -> None:
        r = self._recent.pop(tid)
        self._recent_size -= r.size
        self._drop_pieces(tid, r)

    def _forget(self, now: float) -> None:
        while self._recent:
            tid, r = next(iter(self._recent.items()))
            if now - r.at < self.late_window and len(self._recent) <= self.max_traces:
                return
            self._drop(tid)

    # ------------------------------------------------------------------ poll

    def poll(self) -> list[ReadyTrace]:
        """Hand over every trace that is ready now (its buffer is removed, and the trace is
        remembered for late spans). Cheap when nothing is due: deadlines sit in a heap."""
        now = self._clock()
        ready: list[ReadyTrace] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            _, _, tid, gen, kind, version = heapq.heappop(heap)
            buf = self._buffers.get(tid)
            if buf is None or buf.gen != gen:
                continue  # handed over or evicted already
            if kind == "age":
                ready.append(self._cut(tid, buf, "max_trace_age", now))
            elif version != buf.version:
                continue  # changed since: a later deadline of the same kind exists
            elif kind == "wait":
                if self._awaits_local_parent(buf):
                    self.stats["awaiting_parent"] += 1  # max_trace_age cuts it, if set
                    if self.max_trace_age is None:
                        ready.append(self._cut(tid, buf, "max_wait", now))
                else:
                    ready.append(self._cut(tid, buf, "max_wait", now))
            elif self._roots_done(buf, now):
                ready.append(self._hand_over(tid, buf, "quiet", now))
            # else: a run root is still open, or its content may still come as log records:
            # wait for the next change, for the log_wait deadline, or for max_wait.
        if ready:
            self._forget(now)
            self._metrics.traces_pending.set(len(self._buffers))
        return ready

    def _roots(self, buf: TraceBuffer) -> list[RunRoot]:
        """The run roots the next hand-over of `buf` would build (a rebuild: those its new
        spans touch)."""
        self.stats["roots_checked"] += 1
        roots = run_roots(Trace(buf.trace_id, list(buf.spans.values()), buf.logs))
        if buf.rebuild:
            roots = [r for r in roots if r.span_id in self._touched_roots(buf, roots)]
        return roots

    def _awaits_local_parent(self, buf: TraceBuffer) -> bool:
        return any(r.awaits_local_parent for r in self._roots(buf))

    def _cut(self, tid: str, buf: TraceBuffer, reason: _Why, now: float) -> ReadyTrace:
        """Hand over by a time limit, counting the runs that were still waiting for something
        (`partial`: an open or incomplete root, or content not yet seen)."""
        waiting = sum(1 for r in self._roots(buf)
                      if not (r.ended and r.complete) or r.awaits_content)
        if waiting:
            self.stats["partial"] += waiting
            self._metrics.build_reasons.labels("partial").inc(waiting)
        return self._hand_over(tid, buf, reason, now)

    def _roots_done(self, buf: TraceBuffer, now: float) -> bool:
        roots = self._roots(buf)
        if not roots or not all(r.ended and r.complete for r in roots):
            return False
        if self.log_wait and any(r.awaits_content for r in roots):
            # Model calls without content of their own: their log records may still be on
            # their way (the SDK's log and span processors export apart). Wait for them up to
            # log_wait past the quiet period; a change (the records) re-checks sooner.
            until = buf.last + self.quiet_period + self.log_wait
            if now < until:
                self.stats["awaiting_logs"] += 1
                self._push(until, buf, "quiet")
                return False
        return True

    @staticmethod
    def _touched_roots(buf: TraceBuffer, roots: Iterable[Any]) -> frozenset[str]:
        """Run roots that are a new span or an ancestor of one."""
        root_ids = {r.span_id for r in roots}
        hit: set[str] = set()
        for sid in buf.touched:
            seen: set[str] = set()
            cur: str | None = sid
            while cur is not None and cur not in seen:
                seen.add(cur)
                if cur in root_ids:
                    hit.add(cur)
                span = buf.spans.get(cur)
                cur = span.parent_span_id if span is not None else None
        return frozenset(hit)

    def flush(self) -> list[ReadyTrace]:
        """Hand over every buffered trace now, ready or not (shutdown drain, offline
        scoring, tests)."""
        now = self._clock()
        ready = [self._hand_over(tid, buf, "flush", now)
                 for tid, buf in list(self._buffers.items())]
        self._metrics.traces_pending.set(0)
        return ready

    def _hand_over(self, tid: str, buf: TraceBuffer,
                   reason: _Why, now: float) -> ReadyTrace:
        del self._buffers[tid]
        self._pending -= buf.size
        spans = list(buf.spans.values())
        trace = Trace(tid, spans, buf.logs)
        roots: frozenset[str] | None = None
        if buf.rebuild:
            roots = self._touched_roots(buf, run_roots(trace))
            self.stats["rebuilds"] += 1
        self.stats[f"ready_{reason}"] += 1
        self._remember(tid, buf, now)
        return ReadyTrace(trace, buf.segments, reason, buf.rebuild, roots, buf.late > 0,
                          buf.late)

    def _remember(self, tid: str, buf: TraceBuffer, now: float) -> None:
        old = self._recent.get(tid)
        # (asked before the old entry is dropped: dropping forgets its pieces)
        keep = self.rescore_late and (old is None or old.keeps_pieces)
        if old is not None:
            self._drop(tid)
        ended = dict(old.ended) if old is not None else {}
        for sid, s in buf.spans.items():
            ended[sid] = bool(s.end_time_unix_nano) or ended.get(sid, False)
        bodies = list(buf.bodies) if keep and buf.bodies is not None else None
        objects = keep and bodies is None
        missing = {s.parent_span_id for s in buf.spans.values()
                   if s.parent_span_id is not None and s.parent_span_id not in ended}
        if old is not None:
            missing.update(p for p in old.missing if p not in ended)
        r = Recent(ended, missing, now, bodies,
                   dict(buf.spans) if objects else None,
                   list(buf.logs) if objects else None,
                   set(buf.log_keys) if keep or old is None or old.log_keys is not None
                   else None)
        self._recent[tid] = r
        self._recent_size += r.size
        if bodies is not None:
            self._bodies.hold(bodies)
            self._with_bodies[tid] = None
        while self._recent and self._recent_size > self.max_pending_spans:
            self._trim_recent()
        while self._with_bodies and self._bodies.bytes > self.max_remembered_bytes:
            oldest = next(iter(self._with_bodies))
            self._drop_pieces(oldest, self._recent[oldest])

    def next_deadline(self) -> float | None:
        """The clock time at which `poll()` may next find a trace ready (None: nothing
        buffered). The app's poll loop sleeps until then, or until new spans arrive."""
        heap = self._deadlines
        while heap:
            _, _, tid, gen, kind, version = heap[0]
            buf = self._buffers.get(tid)
            if buf is not None and buf.gen == gen and (kind == "age" or version == buf.version):
                return heap[0][0]
            heapq.heappop(heap)
        return None

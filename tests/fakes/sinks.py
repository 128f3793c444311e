"""`RecordingSink`: a fake for both of the collector's sinks, keeping what it is given.

As a `SpanSink` (what receivers hand their decoded requests to) it records each accepted
request as a `Call`; as a `ScoreSink` (where workers export score records) it keeps the records.
Errors can be scripted for either side.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from collector.intake import BodyKind, Overloaded, decode_body
from collector.otlp import Decoded
from scorers import ScoreRecord
from transforms.types import LogEvent, Span


@dataclass
class Call:
    """One `accept` call as the sink saw it."""

    decoded: Decoded
    transport: str
    body: bytes
    kind: BodyKind


class RecordingSink:
    """Records what it accepts (a `SpanSink`) and what it exports (a `ScoreSink`).

    Args:
        name: the sink's `name` (the `exporter` label of its export counts).
        errors: raised by `export` first, one per call, in order.

    Attributes:
        calls: every accepted request.
        overloaded: raised by `check_capacity` while set, at most `overloaded_times` times.
        accept_error: raised by `accept` the next `accept_error_times` calls.
        capacity_checks: how many times `check_capacity` was called.
        records: every score record exported without error.
        exports: how many times `export` was called (failed calls too).
    """

    def __init__(self, name: str = "rec", errors: Sequence[Exception] = (), *,
                 overloaded: Overloaded | None = None, overloaded_times: int = 1_000_000
                 ) -> None:
        self.name = name
        self.calls: list[Call] = []
        self.overloaded = overloaded
        self.overloaded_times = overloaded_times
        self.accept_error: BaseException | None = None
        self.accept_error_times = 1_000_000
        self.capacity_checks = 0
        self.records: list[ScoreRecord] = []
        self.exports = 0
        self.errors = list(errors)

    # ------------------------------------------------------------------ as a SpanSink

    undecoded_bytes = 0
    """Nothing waits to be decoded here: `accept` keeps what it gets at once."""

    def check_capacity(self) -> None:
        self.capacity_checks += 1
        if self.overloaded is not None and self.overloaded_times > 0:
            self.overloaded_times -= 1
            raise self.overloaded

    async def accept(self, decoded: Decoded, transport: str, body: bytes,
                     kind: BodyKind) -> None:
        if self.accept_error is not None and self.accept_error_times > 0:
            self.accept_error_times -= 1
            raise self.accept_error
        if decoded.undecoded:  # only scanned by the receiver: decode it, as the app's sink does
            full = decode_body(kind, body)
            assert len(full.spans) == decoded.undecoded
            assert {s.trace_id for s in full.spans} == decoded.trace_ids
            decoded = Decoded(full.spans, full.logs, decoded.refused, decoded.errors)
        self.calls.append(Call(decoded, transport, body, kind))

    @property
    def spans(self) -> list[Span]:
        return [s for c in self.calls for s in c.decoded.spans]

    @property
    def logs(self) -> list[LogEvent]:
        return [r for c in self.calls for r in c.decoded.logs]

    # ------------------------------------------------------------------ as a ScoreSink

    async def export(self, records: Sequence[ScoreRecord]) -> None:
        self.exports += 1
        if self.errors:
            raise self.errors.pop(0)
        self.records.extend(records)

    async def shutdown(self) -> None:
        pass

    def by_scorer(self) -> dict[str, ScoreRecord]:
        return {r.scorer_id: r for r in self.records}

"""The request path up to "acknowledged and durable": the ports receivers hand requests to,
the write-ahead span log, ingest (decode, log, buffer) and trace assembly (readiness)."""

from collector.intake._assembly import (
    Assembly,
    Body,
    ReadyTrace,
    Released,
)
from collector.intake._ingest import (
    Ingest,
    decode_body,
)
from collector.intake._ports import (
    BodyKind,
    Overloaded,
    SpanSink,
)
from collector.intake._spanlog import (
    MemorySpanLog,
    ReplayStats,
    SpanLog,
    WriteAheadLog,
    open_spanlog,
)

__all__ = ["Assembly", "Body", "BodyKind", "Ingest", "MemorySpanLog", "Overloaded", "ReadyTrace", "Released", "ReplayStats", "SpanLog", "SpanSink", "WriteAheadLog", "decode_body", "open_spanlog"]

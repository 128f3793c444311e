"""The seams between the stages of the sidecar's data path (DESIGN §5–§6).

Receivers decode a request and hand it to a `SpanSink` (the app's ingest: write-ahead log,
then per-trace buffers); they never see assembly, the queue or the exporters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from collector.otlp import (
    Decoded,
    decode_json_bytes,
    decode_logs_protobuf,
    decode_traces_protobuf,
)

__all__ = ["BodyKind", "Overloaded", "SpanSink", "decode_body"]

BodyKind = Literal["traces_protobuf", "logs_protobuf", "traces_json", "logs_json"]

_DECODERS: dict[str, Callable[[bytes], Decoded]] = {
    "traces_protobuf": decode_traces_protobuf,
    "logs_protobuf": decode_logs_protobuf,
    "traces_json": decode_json_bytes,
    "logs_json": decode_json_bytes,
}


def decode_body(kind: BodyKind, body: bytes) -> Decoded:
    """Decode a request body the way its receiver did."""
    return _DECODERS[kind](body)


class Overloaded(Exception):
    """Refuse this request with a retryable answer (gRPC `UNAVAILABLE` + `RetryInfo`, HTTP 503
    + `Retry-After`).

    Attributes:
        reason: the `scorecar_spans_refused_total` reason (`queue_full`, `memory`,
            `too_many_pending`, `storage`, `shutting_down`).
        retry_after: seconds the client should wait.
    """

    def __init__(self, reason: str, retry_after: float = 1.0) -> None:
        super().__init__(f"scorecar is over its limit ({reason}); retry in {retry_after:g}s")
        self.reason = reason
        self.retry_after = retry_after


class SpanSink(Protocol):
    """Where receivers put what they decoded."""

    def check_capacity(self) -> None:
        """Cheap check before decoding a request.

        Raises:
            Overloaded: the queue, the buffers or memory is over its limit.
        """
        ...

    @property
    def undecoded_bytes(self) -> int:
        """Bytes of requests acknowledged but not decoded yet (what the receivers' in-flight
        bound counts beside the requests they are handling)."""
        ...

    async def accept(self, decoded: Decoded, transport: str, body: bytes, kind: BodyKind) -> None:
        """Make the decoded spans and log records durable (write-ahead log) and buffer them.
        Returns only once they are in the log: the receiver may then answer OK.

        Args:
            decoded: what the receiver decoded from `body`.
            transport: `grpc` or `http` (the `scorecar_spans_received_total` label).
            body: the request body as received, un-gzipped (the write-ahead log keeps it and
                decodes it again on replay).
            kind: how `body` is encoded.

        Raises:
            Overloaded: refused as a whole, retryably (nothing of it was kept).
        """
        ...

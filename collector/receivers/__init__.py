"""OTLP receivers (DESIGN §6): gRPC and HTTP front ends that decode export requests and hand
them to a `collector.intake.SpanSink`.

Both answer what the OTLP specification asks: partial success for spans with bad ids, a
size limit of their own (`RESOURCE_EXHAUSTED` / 413), malformed bodies refused with a
message (`INVALID_ARGUMENT` / 400), and a retryable refusal when the sink is over its limit
(`UNAVAILABLE` + `RetryInfo` / 503 + `Retry-After`). Every refusal is counted in
`scorecar_spans_refused_total{reason}`.
"""

from __future__ import annotations

from collector.receivers.grpc import GrpcReceiver
from collector.receivers.http import HttpReceiver

__all__ = ["GrpcReceiver", "HttpReceiver"]

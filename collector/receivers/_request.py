"""What both receivers do with a request body: check capacity, decode, hand over, count.

The transports only map the outcome (an `Accepted` or a `Refused`) to their own answers.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from dataclasses import dataclass

from collector._telemetry import Metrics
from collector.intake import BodyKind, Overloaded, SpanSink
from collector.otlp import (
    Decoded,
    decode_json,
    decode_logs_protobuf,
    scan_traces_protobuf,
    utf8_text,
)
from collector.receivers._status import Status
from transforms.reasons import Reason

__all__ = ["Accepted", "Refused", "ingest", "refuse"]

log = logging.getLogger("scorecar.receivers")

# Reasons in `Decoded.refused` that dropped a span or log record. The others (`too_deep`,
# `invalid_utf8`) only altered a value: the item was kept, so the answer carries a warning.
_DROPPING = frozenset({Reason.BAD_TRACE_ID, Reason.BAD_SPAN_ID, Reason.BAD_PARENT_ID,
                       Reason.LOG_WITHOUT_TRACE, Reason.NOT_OTLP})
# Reasons that refuse a request whole.
_MALFORMED = (Reason.MALFORMED_PROTOBUF, Reason.MALFORMED_JSON)
_MAX_MESSAGE = 1000
# The decoders refuse wrong shapes (`{"resourceSpans": 5}`) as `malformed_json` themselves; this
# is only a backstop so that a decoder bug still answers 400, not 500.
_SHAPE_ERRORS = (TypeError, AttributeError, KeyError, ValueError, RecursionError)


class Refused(Exception):
    """The request is refused whole (already counted in `spans_refused`).

    Attributes:
        status: what kind of refusal; `collector.receivers._status.ANSWERS` maps it to
            each transport's answer.
        message: an English explanation for the client.
        retry_after: seconds the client should wait (`overloaded`, `internal`,
            `rate_limited`).
    """

    def __init__(self, status: Status, message: str, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.status: Status = status
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class Accepted:
    """The request was accepted (perhaps partly).

    Attributes:
        rejected: spans (or log records) dropped from it; 0 with a `message` is a warning.
        message: why they were dropped ("" when nothing is to be said).
    """

    rejected: int = 0
    message: str = ""


def refuse(metrics: Metrics, reason: str, status: Status, message: str,
           retry_after: float = 1.0, count: int = 1) -> Refused:
    """Count a whole-request refusal and return the exception to raise."""
    metrics.spans_refused.labels(reason).inc(count)
    return Refused(status, message, retry_after)


def _decode_json_request(body: bytes, logs: bool) -> Decoded:
    """Decode an OTLP/JSON body for one endpoint, as `decode_json_bytes` would.

    Raises:
        ValueError: the body is not JSON, not an object, or the other signal's request.
    """
    out = Decoded()
    text = utf8_text(body, out)
    try:
        doc = json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deep") from None
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise ValueError(f"an OTLP JSON request is an object, not {type(doc).__name__}")
    want, other = ("resourceLogs", "resourceSpans") if logs else ("resourceSpans", "resourceLogs")
    other_snake = "resource_spans" if logs else "resource_logs"
    if other in doc or other_snake in doc:
        endpoint, right = ("/v1/logs", "/v1/traces") if logs else ("/v1/traces", "/v1/logs")
        raise ValueError(f"{endpoint} takes an Export{'Logs' if logs else 'Trace'}ServiceRequest;"
                         f" this body has {other}: send it to {right}")
    snake = "resource_logs" if logs else "resource_spans"
    if want not in doc and snake not in doc:
        return out  # `{}`: an empty request (proto3 JSON leaves every field optional)
    out.extend(decode_json(doc))
    return out


def _decode(body: bytes, kind: BodyKind) -> Decoded:
    """Decode `body`; raise ValueError with a message when it is malformed as a whole."""
    try:
        if kind == "traces_protobuf":
            # Ids checked, values not decoded: the sink decodes off the request path.
            decoded = scan_traces_protobuf(body)
        elif kind == "logs_protobuf":
            decoded = decode_logs_protobuf(body)
        else:
            decoded = _decode_json_request(body, logs=kind == "logs_json")
    except ValueError:
        raise
    except _SHAPE_ERRORS as exc:
        raise ValueError(f"not an OTLP request: a field has the wrong type ({exc})") from None
    for reason in _MALFORMED:
        if decoded.refused[reason]:
            # That refusal's message (an `invalid_utf8` warning may come before it).
            raise ValueError(next((e for e in decoded.errors if e.startswith(f"{reason}: ")),
                                  "request did not parse"))
    return decoded


def _message(decoded: Decoded, rejected: int, noun: str) -> str:
    head = f"{rejected} {noun} rejected" if rejected else "request accepted with warnings"
    text = f"{head}: " + "; ".join(decoded.errors)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


async def ingest(sink: SpanSink, metrics: Metrics, transport: str, body: bytes,
                 kind: BodyKind) -> Accepted:
    """Check capacity, decode `body`, hand it to `sink`, count the outcome.

    Args:
        sink: where decoded spans and log records go.
        metrics: counters to increment.
        transport: `grpc` or `http`.
        body: the un-gzipped request body (already within the size limit).
        kind: how `body` is encoded.

    Returns:
        What to tell the client on success (partial success when items were dropped).

    Raises:
        Refused: the request is refused whole (counted).
    """
    try:
        sink.check_capacity()
    except Overloaded as exc:
        raise refuse(metrics, exc.reason, "overloaded", str(exc), exc.retry_after) from None
    except Exception:
        log.exception("span sink failed its capacity check")
        raise refuse(metrics, "internal", "internal",
                     "scorecar could not take the request; retry later") from None
    try:
        decoded = _decode(body, kind)
    except ValueError as exc:
        raise refuse(metrics, "malformed", "malformed", str(exc)) from None
    n = len(decoded.spans) + len(decoded.logs) + decoded.undecoded
    if n:
        try:
            await sink.accept(decoded, transport, body, kind)
        except Overloaded as exc:
            raise refuse(metrics, exc.reason, "overloaded", str(exc), exc.retry_after,
                         count=n) from None
        except Exception:
            log.exception("span sink failed to accept %d items", n)
            raise refuse(metrics, "internal", "internal",
                         "scorecar could not store the request; retry later", count=n) from None
        metrics.spans_received.labels(transport).inc(n)
    if not decoded.refused:
        return Accepted()
    dropped: Counter[str] = Counter({r: c for r, c in decoded.refused.items() if r in _DROPPING})
    for reason, count in dropped.items():
        metrics.spans_refused.labels(reason).inc(count)
    rejected = sum(dropped.values())
    noun = "log records" if kind.startswith("logs") else "spans"
    if rejected:
        log.debug("%s request: %d %s rejected (%s)", transport, rejected, noun, dict(dropped))
    return Accepted(rejected, _message(decoded, rejected, noun))

"""One table: a refused request's status -> its answer on either transport (the Collector's
`receiver/otlpreceiver/internal/errors`). Both receivers read it; only how the wait is written
(a `RetryInfo` in gRPC trailers, `Retry-After` whole seconds over HTTP) is theirs.

| status            | gRPC                 | HTTP | google.rpc code    | retryable |
|-------------------|----------------------|------|--------------------|-----------|
| `malformed`       | `INVALID_ARGUMENT`   | 400  | INVALID_ARGUMENT   | no        |
| `oversized`       | `RESOURCE_EXHAUSTED` | 413  | RESOURCE_EXHAUSTED | no        |
| `unsupported`     | `INVALID_ARGUMENT`   | 415  | INVALID_ARGUMENT   | no        |
| `overloaded`      | `UNAVAILABLE`        | 503  | UNAVAILABLE        | yes       |
| `internal`        | `UNAVAILABLE`        | 503  | UNAVAILABLE        | yes       |
| `unauthenticated` | `UNAUTHENTICATED`    | 401  | UNAUTHENTICATED    | no        |
| `rate_limited`    | `RESOURCE_EXHAUSTED` | 429  | RESOURCE_EXHAUSTED | yes       |

Retryable answers carry the wait: `RetryInfo` (gRPC, and in the HTTP error body) and
`Retry-After` (HTTP). A `RESOURCE_EXHAUSTED` without `RetryInfo` is permanent to OTLP clients,
which is what `oversized` means. Only HTTP refuses a content type (`unsupported`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import grpc  # type: ignore[import-untyped,unused-ignore]
from google.rpc import code_pb2  # type: ignore[import-untyped,unused-ignore]

__all__ = ["ANSWERS", "Answer", "Status"]

Status = Literal["malformed", "oversized", "unsupported", "overloaded", "internal",
                 "unauthenticated", "rate_limited"]


@dataclass(frozen=True, slots=True)
class Answer:
    """How a refusal is answered.

    Attributes:
        grpc_code: the gRPC status code.
        http_status: the HTTP status.
        rpc_code: the `google.rpc.Code` of the HTTP error body (`google.rpc.Status`).
        retryable: the answer carries the wait (`RetryInfo` / `Retry-After`).
    """

    grpc_code: grpc.StatusCode
    http_status: int
    rpc_code: int
    retryable: bool


ANSWERS: dict[Status, Answer] = {
    "malformed": Answer(grpc.StatusCode.INVALID_ARGUMENT, 400, code_pb2.INVALID_ARGUMENT, False),
    "oversized": Answer(grpc.StatusCode.RESOURCE_EXHAUSTED, 413, code_pb2.RESOURCE_EXHAUSTED,
                        False),
    "unsupported": Answer(grpc.StatusCode.INVALID_ARGUMENT, 415, code_pb2.INVALID_ARGUMENT,
                          False),
    "overloaded": Answer(grpc.StatusCode.UNAVAILABLE, 503, code_pb2.UNAVAILABLE, True),
    "internal": Answer(grpc.StatusCode.UNAVAILABLE, 503, code_pb2.UNAVAILABLE, True),
    "unauthenticated": Answer(grpc.StatusCode.UNAUTHENTICATED, 401, code_pb2.UNAUTHENTICATED,
                              False),
    "rate_limited": Answer(grpc.StatusCode.RESOURCE_EXHAUSTED, 429, code_pb2.RESOURCE_EXHAUSTED,
                           True),
}

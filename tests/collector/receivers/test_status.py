"""The refusal table (`collector.receivers._status`): every refusal status has a gRPC code and
an HTTP status, and both receivers answer from it; retryable answers carry the wait."""

from __future__ import annotations

import typing

import grpc
import pytest
from google.protobuf import json_format
from google.rpc import code_pb2, error_details_pb2, status_pb2

from collector._retry import retry_info
from collector._telemetry import Metrics
from collector.receivers import GrpcReceiver, HttpReceiver
from collector.receivers._request import Refused
from collector.receivers._status import ANSWERS, Status
from tests.fakes.sinks import RecordingSink

# status: (gRPC code, HTTP status, google.rpc code, retryable): the answers the receivers gave
# before the table. `unsupported` (a content type or encoding) is raised by HTTP only; gRPC's
# old if-chain would have answered it UNAVAILABLE + RetryInfo, had it ever been raised there.
EXPECTED = {
    "malformed": (grpc.StatusCode.INVALID_ARGUMENT, 400, code_pb2.INVALID_ARGUMENT, False),
    "oversized": (grpc.StatusCode.RESOURCE_EXHAUSTED, 413, code_pb2.RESOURCE_EXHAUSTED, False),
    "unsupported": (grpc.StatusCode.INVALID_ARGUMENT, 415, code_pb2.INVALID_ARGUMENT, False),
    "overloaded": (grpc.StatusCode.UNAVAILABLE, 503, code_pb2.UNAVAILABLE, True),
    "internal": (grpc.StatusCode.UNAVAILABLE, 503, code_pb2.UNAVAILABLE, True),
    "unauthenticated": (grpc.StatusCode.UNAUTHENTICATED, 401, code_pb2.UNAUTHENTICATED, False),
    "rate_limited": (grpc.StatusCode.RESOURCE_EXHAUSTED, 429, code_pb2.RESOURCE_EXHAUSTED, True),
}
STATUSES = typing.get_args(Status)


def test_every_refusal_status_has_one_answer() -> None:
    assert set(ANSWERS) == set(STATUSES) == set(EXPECTED)
    for status, answer in ANSWERS.items():
        assert (answer.grpc_code, answer.http_status, answer.rpc_code,
                answer.retryable) == EXPECTED[status], status
        # the HTTP error body's google.rpc code is the gRPC code's number
        assert answer.rpc_code == answer.grpc_code.value[0], status


class _Aborted(Exception):
    pass


class _Context:
    """What `ServicerContext.abort` was called with (it raises, as grpc's does)."""

    def __init__(self) -> None:
        self.code: grpc.StatusCode | None = None
        self.details = ""
        self.trailers: typing.Any = None

    async def abort(self, code: grpc.StatusCode, details: str = "",
                    trailing_metadata: typing.Any = ()) -> None:
        self.code, self.details, self.trailers = code, details, trailing_metadata
        raise _Aborted


@pytest.mark.parametrize("status", STATUSES)
async def test_grpc_answers_from_the_table(status: Status) -> None:
    context = _Context()
    with pytest.raises(_Aborted):
        await GrpcReceiver._abort(context, Refused(status, "go away", retry_after=2.5))  # type: ignore[arg-type]
    code, _, _, retryable = EXPECTED[status]
    assert context.code is code and context.details == "go away"
    if retryable:
        assert retry_info(context.trailers) == 2.5
        assert dict(context.trailers)["google.rpc.retryinfo-bin"] == \
            error_details_pb2.RetryInfo(retry_delay={"seconds": 2, "nanos": 500_000_000}
                                        ).SerializeToString()
    else:
        assert context.trailers == ()


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("status", STATUSES)
def test_http_answers_from_the_table(status: Status, as_json: bool) -> None:
    receiver = HttpReceiver(RecordingSink(), Metrics(), endpoint="127.0.0.1:0")
    response = receiver._error(Refused(status, "go away", retry_after=2.2), as_json)
    _, http_status, rpc_code, retryable = EXPECTED[status]
    assert response.status == http_status
    assert response.content_type == ("application/json" if as_json else "application/x-protobuf")
    assert isinstance(response.body, bytes)
    if as_json:
        body = json_format.Parse(response.body, status_pb2.Status())
    else:
        body = status_pb2.Status.FromString(response.body)
    assert body.code == rpc_code and body.message == "go away"
    assert (response.headers.get("WWW-Authenticate") == "Bearer") == (status == "unauthenticated")
    if retryable:
        assert response.headers["Retry-After"] == "3"  # whole seconds, rounded up
        info = error_details_pb2.RetryInfo()
        assert len(body.details) == 1 and body.details[0].Unpack(info)
        assert info.retry_delay.seconds == 3 and info.retry_delay.nanos == 0
    else:
        assert "Retry-After" not in response.headers and not body.details

"""Retry written once (`collector._retry`, over `scorers._retry`): capped backoff and its jitter,
the HTTP hints (`retry-after-ms`, `Retry-After` seconds or date) and gRPC's `RetryInfo`, read
from what a real gRPC server sends."""

from __future__ import annotations

import math
import time
from email.utils import formatdate

import grpc
import pytest
from google.rpc import status_pb2

from collector import _retry
from collector._retry import (
    capped_backoff,
    http_retry_hint,
    jitter,
    jittered_backoff,
    retry_after,
    retry_info,
)
from collector._telemetry import Metrics
from collector.intake import Overloaded
from collector.receivers import GrpcReceiver
from scorers.processors import exponential_delay
from tests.fakes.sinks import RecordingSink

TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def test_collector_retry_is_the_scorers_one() -> None:
    import scorers._retry

    for name in ("capped_backoff", "http_retry_hint", "jitter", "jittered_backoff",
                 "retry_after"):
        assert getattr(_retry, name) is getattr(scorers._retry, name)


# ---------------------------------------------------------------------- backoff


def test_capped_backoff_doubles_up_to_the_cap() -> None:
    assert [capped_backoff(n, initial=1.0, maximum=30.0) for n in range(7)] == \
        [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert capped_backoff(2, initial=0.5, maximum=60.0, factor=3.0) == 4.5


def test_the_exponent_clamp_keeps_a_long_outage_from_overflowing() -> None:
    with pytest.raises(OverflowError):
        capped_backoff(5000, initial=1.0, maximum=30.0)
    assert capped_backoff(5000, initial=1.0, maximum=30.0, max_exponent=30) == 30.0
    # the clamp bites below the cap only when the cap is far out
    assert capped_backoff(40, initial=1.0, maximum=1e12, max_exponent=30) == 2.0 ** 30


def test_jitter_is_half_to_all_of_the_wait() -> None:
    draws = [jitter(10.0) for _ in range(2000)]
    assert all(5.0 <= d <= 10.0 for d in draws)
    assert min(draws) < 5.1 and max(draws) > 9.9
    waits = [jittered_backoff(3, initial=1.0, maximum=5.0) for _ in range(500)]
    assert all(2.5 <= w <= 5.0 for w in waits) and len(set(waits)) > 1


def test_exponential_delay_is_the_judges_unjittered_backoff() -> None:
    delay = exponential_delay(initial=0.5, factor=2.0, maximum=3.0)
    assert [delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert all(isinstance(delay(n), float) for n in range(3))
    assert exponential_delay(initial=1, factor=2, maximum=30)(2) == 4.0


# ---------------------------------------------------------------------- HTTP hints


def test_retry_after_ms_beats_retry_after() -> None:
    assert http_retry_hint({"retry-after-ms": "150", "retry-after": "30"}) == pytest.approx(0.15)
    assert http_retry_hint({"Retry-After-Ms": "1500", "Retry-After": "30"}) == 1.5
    # an unusable retry-after-ms leaves retry-after to answer
    for bad in ("soon", "-5", "nan", "inf", ""):
        assert http_retry_hint({"retry-after-ms": bad, "retry-after": "2"}) == 2.0, bad
    assert http_retry_hint({"RETRY-AFTER": "7"}) == 7.0


def test_retry_after_as_an_http_date() -> None:
    ahead = retry_after(formatdate(time.time() + 3600, usegmt=True))
    assert ahead is not None and 3590 < ahead <= 3600
    assert retry_after(formatdate(time.time() - 60, usegmt=True)) == 0.0
    assert http_retry_hint({"retry-after": formatdate(time.time() - 60, usegmt=True)}) == 0.0
    ahead = retry_after(formatdate(time.time() + 90, usegmt=True), clamp=True)
    assert ahead is not None and 80 < ahead <= 90


def test_garbage_is_no_hint() -> None:
    for value in (None, "", "soon", "Mon, 32 Jan 2020 00:00:00 GMT", "12 parsecs"):
        assert retry_after(value) is None, value
        assert retry_after(value, clamp=True) is None, value
    assert http_retry_hint({}) is None
    assert http_retry_hint({"retry-after": "soon", "retry-after-ms": "later"}) is None
    assert http_retry_hint({"x-retry-after": "3"}) is None


def test_numbers_that_make_no_wait_are_read_as_each_caller_did() -> None:
    # the judge (clamp=False): only a finite, non-negative number is a hint
    assert retry_after("3") == 3.0 and retry_after(" 0.5 ") == 0.5 and retry_after("0") == 0.0
    for value in ("-1", "nan", "inf"):
        assert retry_after(value) is None, value
        assert http_retry_hint({"retry-after": value}) is None, value
    # the pass-through (clamp=True): any number, at least 0
    assert retry_after("-1", clamp=True) == 0.0
    assert retry_after("nan", clamp=True) == 0.0
    assert retry_after("inf", clamp=True) == math.inf
    assert retry_after("3", clamp=True) == 3.0


# ---------------------------------------------------------------------- gRPC RetryInfo


async def _grpc_error(sink: RecordingSink) -> grpc.aio.AioRpcError:
    receiver = GrpcReceiver(sink, Metrics(), endpoint="127.0.0.1:0")
    port = await receiver.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            rpc = channel.unary_unary(TRACES, request_serializer=None,
                                      response_deserializer=None)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await rpc(b"\xff\xff not protobuf", timeout=5)
    finally:
        await receiver.stop(grace=0)
    return caught.value


async def test_retry_info_from_real_grpc_trailing_metadata() -> None:
    overloaded = await _grpc_error(RecordingSink(overloaded=Overloaded("queue_full",
                                                                       retry_after=2.5)))
    assert overloaded.code() is grpc.StatusCode.UNAVAILABLE
    assert retry_info(overloaded.trailing_metadata()) == 2.5
    malformed = await _grpc_error(RecordingSink())  # INVALID_ARGUMENT carries no RetryInfo
    assert malformed.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert retry_info(malformed.trailing_metadata()) is None


def test_retry_info_without_a_usable_detail_is_none() -> None:
    assert retry_info(None) is None
    assert retry_info(()) is None
    assert retry_info([("grpc-status-details-bin", b"\xff\xff\xff")]) is None  # no Status
    no_detail = status_pb2.Status(code=14, message="busy").SerializeToString()
    assert retry_info([("grpc-status-details-bin", no_detail)]) is None
    assert retry_info([("grpc-status-details-bin", "not bytes")]) is None

"""Early refusal under overload: past `max_inflight_requests` or `max_inflight_mib` a receiver
answers at once, retryably (gRPC `UNAVAILABLE` + `RetryInfo`, HTTP 503 + `Retry-After`), and
counts it, instead of letting the agent's export wait."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import grpc  # type: ignore[import-untyped,unused-ignore]
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from collector._retry import retry_info
from collector._telemetry import Metrics
from collector.receivers import GrpcReceiver, HttpReceiver
from collector.receivers._inflight import Inflight
from collector.receivers._request import Refused
from tests.fakes.metrics import sample
from tests.fakes.sdk_telemetry import make_spans
from tests.fakes.sinks import RecordingSink

TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
BODY = encode_spans(make_spans(2)).SerializeToString()


class SlowSink(RecordingSink):
    """Holds every request in `accept` until released: requests stay in flight."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.waiting = 0

    async def accept(self, *args: Any, **kwargs: Any) -> None:
        self.waiting += 1
        await self.release.wait()
        await super().accept(*args, **kwargs)


async def _until(cond: Any, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition never held"
        await asyncio.sleep(0.01)


def test_bounds_count_and_release() -> None:
    metrics = Metrics()
    inflight = Inflight(metrics, max_requests=2, max_mib=1)
    with inflight.admit(600_000):
        with pytest.raises(Refused) as caught:  # 600 kB + 600 kB > 1 MiB
            with inflight.admit(600_000):
                pass
        assert caught.value.status == "overloaded" and caught.value.retry_after == 1.0
        with inflight.admit(100):
            with pytest.raises(Refused):  # the third request
                with inflight.admit(1):
                    pass
    assert (inflight.requests, inflight.bytes) == (0, 0)
    with inflight.admit(5 * 1024 * 1024):  # larger than the bound, alone: let in
        pass
    assert sample(metrics, "scorecar_spans_refused_total", reason="overloaded") == 2
    with pytest.raises(ValueError):
        Inflight(metrics, max_requests=0)


async def test_grpc_refuses_at_once_past_max_inflight_requests() -> None:
    sink, metrics = SlowSink(), Metrics()
    receiver = GrpcReceiver(sink, metrics, endpoint="127.0.0.1:0", max_inflight_requests=1)
    port = await receiver.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            rpc = channel.unary_unary(TRACES, request_serializer=None,
                                      response_deserializer=None)
            first = asyncio.ensure_future(rpc(BODY, timeout=10))
            await _until(lambda: sink.waiting == 1)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await rpc(BODY, timeout=10)
            assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
            assert retry_info(caught.value.trailing_metadata()) == 1.0
            assert "max_inflight_requests" in (caught.value.details() or "")
            sink.release.set()
            await first  # the one in flight is accepted
            await rpc(BODY, timeout=10)  # and once it is done, the next is too
    finally:
        await receiver.stop(grace=0)
    assert sample(metrics, "scorecar_spans_refused_total", reason="overloaded") == 1
    assert len(sink.spans) == 4


async def test_http_refuses_at_once_past_max_inflight_mib() -> None:
    sink, metrics = SlowSink(), Metrics()
    receiver = HttpReceiver(sink, metrics, endpoint="127.0.0.1:0",
                            max_inflight_mib=1.5 * len(BODY) / (1024 * 1024))
    port = await receiver.start()
    url = f"http://127.0.0.1:{port}/v1/traces"
    headers = {"Content-Type": "application/x-protobuf"}
    try:
        async with aiohttp.ClientSession() as session:
            first = asyncio.create_task(session.post(url, data=BODY, headers=headers))
            await _until(lambda: sink.waiting == 1)
            async with session.post(url, data=BODY, headers=headers) as refused:
                assert refused.status == 503 and refused.headers["Retry-After"] == "1"
            sink.release.set()
            async with await first as ok:
                assert ok.status == 200
    finally:
        await receiver.stop()
    assert sample(metrics, "scorecar_spans_refused_total", reason="overloaded") == 1
    assert len(sink.spans) == 2


def test_bytes_acknowledged_but_not_decoded_count_toward_the_bound() -> None:
    metrics = Metrics()
    backlog = [3 * 1024 * 1024]
    inflight = Inflight(metrics, max_mib=4, undecoded=lambda: backlog[0])
    with pytest.raises(Refused, match="not yet decoded"):
        with inflight.admit(2 * 1024 * 1024):  # 3 MiB waiting to be decoded + 2 MiB > 4 MiB
            pass
    backlog[0] = 0  # decoded meanwhile
    with inflight.admit(2 * 1024 * 1024):
        pass
    assert sample(metrics, "scorecar_spans_refused_total", reason="overloaded") == 1

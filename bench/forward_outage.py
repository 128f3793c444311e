"""Figure (issue 12, "upstream outage", the forwarding half): the next collector is down for N
seconds under a steady load, then back. Prints the forwarded spans lost within the queue bound
(goal 0) and the spans dropped past it (equal to `scorecar_forward_total{outcome="dropped_full"}`).

Load: `--rate` export requests per second of `--spans` spans each (unique trace and span ids),
handed to the forwarder exactly as the receivers do (`Forwarder.submit`, the call behind
`ForwardingSink.accept`), for 0.5 s with the backend up, `--seconds` with it down (ports
closed: connection refused), and 0.5 s after it is back; then the queue is flushed and the
real OTLP backend's received span ids are compared with the ids sent.

    python bench/forward_outage.py [--seconds 60] [--rate 20] [--spans 50] [--queue-size 1000]
                                   [--protocol grpc|http]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span  # noqa: E402

from collector._telemetry import Metrics  # noqa: E402
from collector.forward._forwarder import Forwarder  # noqa: E402
from tests.fakes.otlp_backend import OtlpBackend  # noqa: E402


@dataclass(frozen=True)
class OutageFigure:
    """What one outage run measured (spans)."""

    seconds: float
    sent: int
    delivered: int
    lost_within_bound: int
    dropped_past_bound: int
    counter_dropped: int
    counter_forwarded: int
    retried: int


def _request(number: int, spans: int) -> bytes:
    trace_id = number.to_bytes(16, "big")
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(
        spans=[Span(trace_id=trace_id, span_id=(number * 4096 + i + 1).to_bytes(8, "big"),
                    name="agent step", start_time_unix_nano=1, end_time_unix_nano=2)
               for i in range(spans)])])]).SerializeToString()


def _value(metrics: Metrics, outcome: str) -> int:
    return int(metrics.registry.get_sample_value(
        "scorecar_forward_total", {"signal": "traces", "outcome": outcome}) or 0)


async def run_outage(seconds: float = 60.0, rate: float = 20.0, spans_per_request: int = 50,
                     queue_size: int = 1000, protocol: str = "grpc",
                     initial_backoff: float = 1.0, max_backoff: float = 5.0) -> OutageFigure:
    """Hold a real OTLP backend down for `seconds` under `rate` requests/s; the figure.

    Args:
        seconds: how long the backend is down.
        rate: export requests per second (steady).
        spans_per_request: spans in each request.
        queue_size: the forwarder's bound in requests (bytes: the default 64 MiB).
        protocol: `grpc` or `http`.
        initial_backoff: the forwarder's first retry wait.
        max_backoff: its longest retry wait (how soon a returned backend is used).
    """
    metrics = Metrics()
    with OtlpBackend() as backend:
        endpoint = backend.endpoint if protocol == "grpc" else backend.http_endpoint
        forwarder = Forwarder(endpoint, metrics, protocol=protocol, queue_size=queue_size,
                              initial_backoff=initial_backoff, max_backoff=max_backoff)
        await forwarder.start()
        sent: list[int] = []
        accepted: set[int] = set()

        async def load(duration: float) -> None:
            start = time.monotonic()
            due = 0
            while (elapsed := time.monotonic() - start) < duration:
                target = int(elapsed * rate) + 1
                while due < target:
                    number = len(sent) + 1
                    sent.append(number)
                    if forwarder.submit("traces_protobuf", _request(number, spans_per_request),
                                        spans_per_request):
                        accepted.add(number)
                    due += 1
                await asyncio.sleep(min(0.01, 1 / rate))

        await load(0.5)
        await asyncio.to_thread(backend.down)
        await load(seconds)
        await asyncio.to_thread(backend.up)
        await load(0.5)
        await forwarder.flush(timeout=4 * max_backoff + 60)
        await forwarder.stop(grace=1.0)
        delivered_ids = {(s["trace_id"], s["span_id"]) for s in backend.spans()}
    accepted_ids = {(n.to_bytes(16, "big").hex(),
                     (n * 4096 + i + 1).to_bytes(8, "big").hex())
                    for n in accepted for i in range(spans_per_request)}
    return OutageFigure(
        seconds=seconds, sent=len(sent) * spans_per_request,
        delivered=len(delivered_ids),
        lost_within_bound=len(accepted_ids - delivered_ids),
        dropped_past_bound=(len(sent) - len(accepted)) * spans_per_request,
        counter_dropped=_value(metrics, "dropped_full"),
        counter_forwarded=_value(metrics, "forwarded"),
        retried=_value(metrics, "retried"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="outage length (60)")
    parser.add_argument("--rate", type=float, default=20.0, help="requests per second (20)")
    parser.add_argument("--spans", type=int, default=50, help="spans per request (50)")
    parser.add_argument("--queue-size", type=int, default=1000,
                        help="forward.queue_size, requests (1000, the default)")
    parser.add_argument("--protocol", choices=["grpc", "http"], default="grpc")
    args = parser.parse_args()
    figure = asyncio.run(run_outage(args.seconds, args.rate, args.spans, args.queue_size,
                                    args.protocol))
    print(f"upstream outage, forwarding: backend down {figure.seconds:g} s under "
          f"{args.rate:g} req/s x {args.spans} spans ({args.protocol}, queue_size "
          f"{args.queue_size})")
    print(f"  spans sent                      {figure.sent}")
    print(f"  spans delivered                 {figure.delivered}")
    print(f"  lost within the bound (goal 0)  {figure.lost_within_bound}")
    print(f"  dropped past the bound          {figure.dropped_past_bound}")
    print(f"  scorecar_forward_total{{outcome=dropped_full}}  {figure.counter_dropped}"
          f"  ({'equal' if figure.counter_dropped == figure.dropped_past_bound else 'DIFFERS'})")
    print(f"  retried (span-attempts)         {figure.retried}")
    sys.exit(0 if figure.lost_within_bound == 0
             and figure.counter_dropped == figure.dropped_past_bound else 1)


if __name__ == "__main__":
    main()

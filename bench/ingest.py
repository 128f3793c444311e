"""Benchmark (not a test): sustained OTLP/gRPC ingest of `scorecar serve` against a bare
grpc.aio receiver, same load, same machine, same run.

Load: every committed capture (realistic GenAI spans of ten libraries) packed into
pre-serialized 512-span `ExportTraceServiceRequest`s; each send gets fresh trace ids (a byte
substitution, so the generator stays cheap). The generator runs in its own process with
several concurrent streams, calling TraceService/Export with raw bytes as an agent's exporter
would.

Targets:
- baseline: a bare grpc.aio receiver (own process) that parses every request and walks every
  attribute of every span into Python values — what any Python consumer must at least do;
- scorecar: `scorecar serve` (own process, SQLite queue, one cheap code scorer), whose rate
  counts the work it accepted but finishes after the load stops: spans acknowledged / (time
  until every run of them is scored and exported).

Then the agent's Export latency (p50/p99) against `scorecar serve` at half its maximum rate.

    python bench/ingest.py [--seconds S] [--streams N] [--profile OUT.prof]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import multiprocessing as mp
import os
import random
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

# Run as a script, this file's directory comes first on sys.path and its name would shadow
# packages: drop it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import grpc  # type: ignore[import-untyped]  # noqa: E402

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
SPANS_PER_REQUEST = 512


# --------------------------------------------------------------------------- the load


@dataclasses.dataclass
class Template:
    """One pre-serialized request and the trace ids to replace on each send."""

    body: bytes
    trace_ids: list[bytes]
    spans: int
    runs: int


def build_templates(count: int) -> list[Template]:
    """`count` requests of ~512 spans of whole traces from every capture."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from collector.cli import to_readable_spans
    from collector.otlp import read_otlp_file
    from transforms import build_runs, group_traces

    files = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl"))
    traces = [t for f in files for t in group_traces(read_otlp_file(f).spans).values()]
    runs_of = {t.trace_id: len(build_runs(t).runs) for t in traces}
    rng = random.Random(7)
    out: list[Template] = []
    for _ in range(count):
        picked: list[Any] = []
        ids: list[bytes] = []
        runs = 0
        while len(picked) < SPANS_PER_REQUEST:
            t = rng.choice(traces)
            new = rng.getrandbits(128).to_bytes(16, "big")
            picked.extend(dataclasses.replace(s, trace_id=new.hex()) for s in t.spans)
            ids.append(new)
            runs += runs_of[t.trace_id]
        body = encode_spans(to_readable_spans(picked)).SerializeToString()
        out.append(Template(body, ids, len(picked), runs))
    return out


def fresh(template: Template, rng: random.Random) -> bytes:
    """The template with new trace ids (16-byte substitutions)."""
    body = template.body
    for old in template.trace_ids:
        body = body.replace(old, rng.getrandbits(128).to_bytes(16, "big"))
    return body


async def _streams(target: str, templates: list[Template], seconds: float, streams: int,
                   rate: float | None, seed: int) -> dict[str, Any]:
    """Send for `seconds`; `rate`: spans/s over all streams (None: as fast as acknowledged)."""
    channel = grpc.aio.insecure_channel(target, options=[
        ("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)])
    call = channel.unary_unary(EXPORT)  # raw bytes in and out
    rng = random.Random(seed)
    # Bodies are prepared ahead so the generator's own work does not pace the load.
    bodies = [(fresh(t, rng), t) for t in templates]
    sent = {"spans": 0, "runs": 0, "requests": 0, "refused": 0, "errors": 0}
    latencies: list[float] = []
    start = time.perf_counter()
    end = start + seconds
    interval = (SPANS_PER_REQUEST * streams / rate) if rate else 0.0

    async def stream(k: int) -> None:
        i = k
        next_at = start + (interval / streams) * k if rate else start
        while True:
            now = time.perf_counter()
            if now >= end:
                return
            if rate:
                if next_at > now:
                    await asyncio.sleep(next_at - now)
                next_at += interval
            body, t = bodies[i % len(bodies)]
            i += streams
            if i >= len(bodies):  # reuse a body only with new ids
                bodies[i % len(bodies)] = (fresh(t, rng), t)
            t0 = time.perf_counter()
            try:
                await call(body, timeout=30)
            except grpc.aio.AioRpcError as exc:
                if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED):
                    sent["refused"] += 1
                    await asyncio.sleep(0.05)
                else:
                    sent["errors"] += 1
                continue
            latencies.append(time.perf_counter() - t0)
            sent["spans"] += t.spans
            sent["runs"] += t.runs
            sent["requests"] += 1

    await asyncio.gather(*(stream(k) for k in range(streams)))
    sent["elapsed"] = time.perf_counter() - start
    await channel.close()
    latencies.sort()
    return {**sent, "latencies": latencies}


def _load_process(target: str, templates: list[Template], seconds: float, streams: int,
                  rate: float | None, out: Any) -> None:
    out.put(asyncio.run(_streams(target, templates, seconds, streams, rate, os.getpid())))


def run_load(target: str, templates: list[Template], seconds: float, streams: int,
             rate: float | None = None) -> dict[str, Any]:
    """The load generator in its own process; returns its counts and latencies."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_load_process, args=(target, templates, seconds, streams, rate, q))
    p.start()
    result = q.get(timeout=seconds + 120)
    p.join(30)
    return dict(result)


# --------------------------------------------------------------------------- the baseline


def _walk(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_walk(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _walk(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind) if kind else None


def _baseline_server(port_out: Any, stop: Any) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )

    ok = ExportTraceServiceResponse().SerializeToString()

    async def export(body: bytes, context: Any) -> bytes:
        req = ExportTraceServiceRequest.FromString(body)
        for rs in req.resource_spans:
            {kv.key: _walk(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    {kv.key: _walk(kv.value) for kv in s.attributes}
                    for e in s.events:
                        {kv.key: _walk(kv.value) for kv in e.attributes}
        return ok

    async def main() -> None:
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", 128 << 20)])
        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)})
        server.add_generic_rpc_handlers((handler,))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        port_out.put(port)
        while not stop.is_set():
            await asyncio.sleep(0.1)
        await server.stop(1)

    asyncio.run(main())


def measure_baseline(templates: list[Template], seconds: float, streams: int) -> dict[str, Any]:
    ctx = mp.get_context("spawn")
    port_q, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=_baseline_server, args=(port_q, stop))
    server.start()
    try:
        port = port_q.get(timeout=30)
        return run_load(f"127.0.0.1:{port}", templates, seconds, streams)
    finally:
        stop.set()
        server.join(10)


# --------------------------------------------------------------------------- scorecar serve


def _metric(url: str, name: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name:
                total += s.value
    return total


class Serve:
    """`scorecar serve` in a subprocess with a cheap code scorer, SQLite storage, free ports."""

    def __init__(self, tmp: Path, profile: Path | None = None,
                 build_processes: int | None = None) -> None:
        sys.path.insert(0, str(ROOT / "tests" / "e2e"))
        config = {
            "receivers": {"grpc": {"endpoint": "127.0.0.1:0"},
                          "http": {"endpoint": "127.0.0.1:0"}},
            "assembly": {"quiet_period": 0.5, "max_wait": 30.0},
            "storage": {"kind": "sqlite", "path": str(tmp / "data")},
            "exporters": {"prometheus": {"endpoint": "127.0.0.1:0"}},
            "scorers": [{"scorer": "bench._cheap_scorer:output_length"}],
        }
        from _serve import ServeProcess  # tests/e2e/_serve.py

        self.proc = ServeProcess(config, tmp)
        if profile is not None:
            self.proc.env["SCORECAR_PROFILE"] = str(profile)
        if build_processes is not None:
            self.proc.env["SCORECAR_ASSEMBLY__BUILD_PROCESSES"] = str(build_processes)

    def __enter__(self) -> Serve:
        self.proc.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate(60)

    @property
    def target(self) -> str:
        return self.proc.grpc_endpoint

    def runs_done(self) -> float:
        return _metric(f"{self.proc.metrics_url}/metrics", "scorecar_scorer_runs_total")

    def rss_mib(self) -> float:
        assert self.proc.proc is not None
        with open(f"/proc/{self.proc.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0


def measure_serve(templates: list[Template], seconds: float, streams: int,
                  profile: Path | None, build_processes: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="scorecar-bench-") as tmp, \
            Serve(Path(tmp), profile, build_processes) as serve:
        result = run_load(serve.target, templates, seconds, streams)
        sent_at = time.perf_counter()
        want = result["runs"]
        deadline = time.monotonic() + 300
        while serve.runs_done() < want and time.monotonic() < deadline:
            time.sleep(0.05)
        done_at = time.perf_counter()
        result["done"] = serve.runs_done()
        result["finish_after_load"] = done_at - sent_at
        result["rss_peak_mib"] = serve.rss_mib()
        # from the generator's own first send (its process spawn is not serve's time)
        result["total_time"] = result["elapsed"] + (done_at - sent_at)
    return result


def measure_latency(templates: list[Template], seconds: float, streams: int,
                    rate: float, build_processes: int | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="scorecar-bench-") as tmp, \
            Serve(Path(tmp), None, build_processes) as serve:
        return run_load(serve.target, templates, seconds, streams, rate=rate)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="load duration per target")
    parser.add_argument("--streams", type=int, default=4, help="concurrent Export streams")
    parser.add_argument("--templates", type=int, default=40, help="distinct 512-span requests")
    parser.add_argument("--profile", type=Path, default=None,
                        help="write a cProfile of `scorecar serve` under load to this file")
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--build-processes", type=int, default=None,
                        help="assembly.build_processes of the sidecar (default: its own)")
    args = parser.parse_args()

    templates = build_templates(args.templates)
    spans = sum(t.spans for t in templates) / len(templates)
    size = sum(len(t.body) for t in templates) / len(templates)
    print(f"load: {args.streams} streams of pre-serialized requests, {spans:.0f} spans and "
          f"{size / 1024:.0f} KiB per request, {args.seconds:g} s per target; "
          f"{os.cpu_count()} cores")

    base = measure_baseline(templates, args.seconds, args.streams)
    base_rate = base["spans"] / base["elapsed"]
    print(f"baseline (bare grpc.aio, parse + attribute walk): {base_rate:,.0f} spans/s "
          f"({base['requests']} requests, p50 {1000 * _pct(base['latencies'], .5):.1f} ms)")

    serve = measure_serve(templates, args.seconds, args.streams, args.profile,
                          args.build_processes)
    accepted = serve["spans"] / serve["elapsed"]
    sustained = serve["spans"] / serve["total_time"]
    print(f"scorecar serve: accepted {accepted:,.0f} spans/s while loaded; sustained "
          f"{sustained:,.0f} spans/s counting the {serve['finish_after_load']:.1f} s it took "
          f"to finish after the load stopped ({serve['done']:.0f}/{serve['runs']} runs scored, "
          f"{serve['refused']} retryable refusals, peak RSS {serve['rss_peak_mib']:.0f} MiB)")
    print(f"ratio (sustained / baseline): {sustained / base_rate:.2f}   (goal >= 0.5, "
          "stretch 0.8)")

    if not args.skip_latency:
        half = sustained / 2
        lat = measure_latency(templates, args.seconds, args.streams, half, args.build_processes)
        lats = lat["latencies"]
        print(f"agent Export latency at {half:,.0f} spans/s (half the sustained rate): "
              f"p50 {1000 * _pct(lats, .5):.1f} ms, p99 {1000 * _pct(lats, .99):.1f} ms "
              f"over {len(lats)} requests (goal p99 <= 10 ms)")
    if args.profile:
        print(f"profile of scorecar serve written to {args.profile} "
              f"(python -m pstats {args.profile})")


if __name__ == "__main__":
    main()

"""Benchmark (not a test): spans/s through decode -> group -> build runs, beside a baseline.

Corpus: every committed capture (tests/testdata/captures/*/*.otlp.jsonl), converted to the
protobuf bodies an OTLP exporter would send, repeated with fresh trace ids. Baseline, measured
in the same run on the same bytes: the bare protobuf parse plus a walk over every attribute
value (what any consumer must at least do). Prints both rates and the ratio (goal >= 0.5).

    python bench/transforms.py [--copies N] [--seconds S] [--stages] [--roots]

`--roots` also times `run_roots` (the sidecar's ready-check) against `build_runs` on the
same traces.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script, this file's directory comes first on sys.path and its name would shadow
# the `transforms` package: drop it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from google.protobuf.json_format import ParseDict
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from collector.otlp import Decoded, decode_logs_protobuf, decode_traces_protobuf
from transforms import build_runs, group_traces, run_roots

ROOT = Path(__file__).resolve().parents[1]
ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _ids_to_base64(node: Any, trace_suffix: int) -> Any:
    # OTLP/JSON ids are hex; protobuf's JSON parser wants base64. Each copy gets new trace ids.
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            if k in ID_KEYS and isinstance(v, str) and v:
                raw = bytearray(bytes.fromhex(v))
                if k == "traceId":
                    raw[-4:] = (int.from_bytes(raw[-4:], "big") ^ trace_suffix).to_bytes(4, "big")
                out[k] = base64.b64encode(bytes(raw)).decode()
            else:
                out[k] = _ids_to_base64(v, trace_suffix)
        return out
    if isinstance(node, list):
        return [_ids_to_base64(x, trace_suffix) for x in node]
    return node


def corpus(copies: int) -> tuple[list[tuple[str, bytes]], int]:
    """(kind, protobuf body) pairs and the number of spans in them."""
    docs = []
    for path in sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl")):
        docs += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    bodies: list[tuple[str, bytes]] = []
    spans = 0
    for c in range(copies):
        for doc in docs:
            d = _ids_to_base64(doc, c + 1)
            if "resourceSpans" in d:
                req = ParseDict(d, ExportTraceServiceRequest())
                spans += sum(len(ss.spans) for rs in req.resource_spans for ss in rs.scope_spans)
                bodies.append(("traces", req.SerializeToString()))
            if "resourceLogs" in d:
                bodies.append(("logs", ParseDict(d, ExportLogsServiceRequest())
                               .SerializeToString()))
    return bodies, spans


def _walk_value(v: Any) -> int:
    which = v.WhichOneof("value")
    if which == "array_value":
        return sum(_walk_value(x) for x in v.array_value.values)
    if which == "kvlist_value":
        return sum(_walk_value(kv.value) for kv in v.kvlist_value.values)
    getattr(v, which) if which else None
    return 1


def baseline(bodies: list[tuple[str, bytes]]) -> int:
    """Bare parse + touch every attribute value."""
    n = 0
    for kind, body in bodies:
        if kind == "traces":
            req = ExportTraceServiceRequest.FromString(body)
            for rs in req.resource_spans:
                n += sum(_walk_value(kv.value) for kv in rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        n += sum(_walk_value(kv.value) for kv in s.attributes)
                        for e in s.events:
                            n += sum(_walk_value(kv.value) for kv in e.attributes)
        else:
            lreq = ExportLogsServiceRequest.FromString(body)
            for rl in lreq.resource_logs:
                for sl in rl.scope_logs:
                    for r in sl.log_records:
                        n += sum(_walk_value(kv.value) for kv in r.attributes)
                        n += _walk_value(r.body)
    return n


def full(bodies: list[tuple[str, bytes]]) -> int:
    """Decode -> group by trace -> build runs."""
    decoded = Decoded()
    for kind, body in bodies:
        decoded.extend(decode_traces_protobuf(body) if kind == "traces"
                       else decode_logs_protobuf(body))
    runs = 0
    for trace in group_traces(decoded.spans, decoded.logs).values():
        runs += len(build_runs(trace).runs)
    return runs


def stages(bodies: list[tuple[str, bytes]], seconds: float) -> dict[str, float]:
    """Breakdown (not a headline number): best seconds per pass of each stage of `full`."""
    best = {"decode": float("inf"), "group": float("inf"), "build": float("inf")}
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        t0 = time.perf_counter()
        decoded = Decoded()
        for kind, body in bodies:
            decoded.extend(decode_traces_protobuf(body) if kind == "traces"
                           else decode_logs_protobuf(body))
        t1 = time.perf_counter()
        traces = group_traces(decoded.spans, decoded.logs)
        t2 = time.perf_counter()
        for trace in traces.values():
            build_runs(trace)
        t3 = time.perf_counter()
        for name, dt in (("decode", t1 - t0), ("group", t2 - t1), ("build", t3 - t2)):
            best[name] = min(best[name], dt)
    return best


def roots_cost(bodies: list[tuple[str, bytes]], seconds: float) -> tuple[float, float]:
    """Best seconds per pass of `run_roots` and of `build_runs` over every trace."""
    decoded = Decoded()
    for kind, body in bodies:
        decoded.extend(decode_traces_protobuf(body) if kind == "traces"
                       else decode_logs_protobuf(body))
    traces = list(group_traces(decoded.spans, decoded.logs).values())
    best = [float("inf"), float("inf")]
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        for i, fn in enumerate((run_roots, build_runs)):
            t0 = time.perf_counter()
            for trace in traces:
                fn(trace)
            best[i] = min(best[i], time.perf_counter() - t0)
    return best[0], best[1]


def rate(fn: Callable[[list[tuple[str, bytes]]], int], bodies: list[tuple[str, bytes]],
         spans: int, seconds: float) -> tuple[float, int]:
    fn(bodies)  # warm up
    rounds, started = 0, time.perf_counter()
    result = 0
    while True:
        result = fn(bodies)
        rounds += 1
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return spans * rounds / elapsed, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--stages", action="store_true",
                        help="also print the best time per pass of decode, group and build")
    parser.add_argument("--roots", action="store_true",
                        help="also print the cost of run_roots against build_runs")
    args = parser.parse_args()
    bodies, spans = corpus(args.copies)
    base, _ = rate(baseline, bodies, spans, args.seconds)
    ours, runs = rate(full, bodies, spans, args.seconds)
    print(f"corpus: {spans} spans in {len(bodies)} requests, {runs} runs per pass")
    print(f"baseline (protobuf parse + attribute walk): {base:12,.0f} spans/s")
    print(f"scorecar (decode + group + build runs):     {ours:12,.0f} spans/s")
    print(f"ratio: {ours / base:.2f} (goal >= 0.5)")
    if args.stages:
        per_pass = spans / base
        best = stages(bodies, args.seconds)
        timings = "  ".join(f"{k} {v * 1e3:.1f}" for k, v in best.items())
        print(f"stages (ms per pass; baseline mean, others best): baseline {per_pass * 1e3:.1f}"
              f"  {timings}")
    if args.roots:
        roots_s, build_s = roots_cost(bodies, args.seconds)
        print(f"run_roots {roots_s * 1e3:.1f} ms per pass, build_runs {build_s * 1e3:.1f} ms: "
              f"ratio {roots_s / build_s:.2f}")


if __name__ == "__main__":
    main()

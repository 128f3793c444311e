"""Scoring benchmarks of `scorecar serve` (not tests). Loopback only, bounded in time.

    python bench/scoring.py            # about 3 minutes
    python bench/scoring.py --quick    # about 50 seconds

Every figure comes from `scorecar serve` running as its own process (so no load generator shares
its event loop), against real loopback servers, and is printed with its goal (issue 9):

1. Judge-bound throughput, per provider (`--provider anthropic|openai|both`).
   `builtin:answer_relevancy` (two judge calls per run) against the fake Anthropic Messages API
   or the strict fake OpenAI server (`openai/gpt-4.1-mini`) answering every call after a fixed
   latency L, with
   `judge.max_concurrency` C and `requests_per_minute` far above C/L. Enough runs are sent at
   once to keep the judge busy; the rate of judge calls over the steady part (a least-squares
   slope of call arrivals at the fake, first and last second dropped) is reported as a ratio
   to the ideal C/L. Goal >= 0.95. Then each provider's judge adapter overhead per call
   (`bench/scorers.py`: a judge call minus a bare HTTP POST of the same body to the same
   zero-latency fake). Goal <= 2 ms.
2. Score lag of a code scorer. Traces with fresh timestamps (the newest span ends when it is
   sent) go through the official OTel gRPC exporter at a steady modest rate; the sidecar
   exports scores to a loopback OTLP backend that notes when each evaluation span arrives. Lag
   = arrival - end of the scored agent span (or the moment its trace was sent, when the span
   ended before that: the sidecar cannot see it earlier). Goal p99 <= quiet_period + 100 ms.
3. Peak RSS under load with the judge stalled. A load generator in its own process sends
   pre-serialized 512-span requests of the demo captures (fresh trace ids per request) over
   raw OTLP/gRPC at 10,000 spans/s for 60 s (10 s with --quick) while the fake judge never
   answers; VmRSS/VmHWM of the sidecar are read from /proc/PID/status. Goal <= 150 MiB. The
   rate the sidecar actually acknowledged, its Export latency and every refusal (UNAVAILABLE
   with RetryInfo is retryable) are printed too.

The machine's speed mostly cancels out of (1) and (2) (both are bound by configured waits);
(3) is an absolute figure and depends on how many spans the sidecar keeps in memory.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

# Run as a script, this file's directory comes first on sys.path and bench/transforms.py would
# shadow the `transforms` package: drop it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.e2e._serve import metrics as _metrics  # noqa: E402 - the `/metrics` readers, shared
from tests.e2e._serve import total as _total  # noqa: E402

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
SPANS_PER_REQUEST = 512
KEY_ENV = "SCORECAR_BENCH_JUDGE_KEY"
JUDGE_SCORER = "builtin:answer_relevancy"  # two judge calls per run: verdicts, then the reason


def _judge_reply(delay: float) -> Any:
    """The fake judge's answer to answer_relevancy's two prompts, after `delay` seconds."""
    from tests.fakes.fake_anthropic import structured, text

    def reply(request: Any) -> Any:
        if request.asks_structured_output:
            return structured({"results": [
                {"statement": "it is sunny", "result": "yes", "reason": "on topic"}]},
                delay=delay)
        return text("The answer addresses the question.", delay=delay)

    return reply


# --------------------------------------------------------------------------- helpers


def _pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank; NaN for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def _by_label(samples: dict[str, float], name: str, label: str) -> dict[str, float]:
    out: Counter[str] = Counter()
    for key, value in samples.items():
        if key.split("{")[0] != name:
            continue
        for part in key.split("{", 1)[1].rstrip("}").split(","):
            if part.startswith(f"{label}="):
                out[part.split("=", 1)[1]] += value  # type: ignore[assignment]
    return dict(out)


def _histogram_quantile(samples: dict[str, float], name: str, q: float) -> float:
    """The upper bound of the bucket holding the q-quantile (Prometheus-style, no interpolation)."""
    buckets = sorted((float(k.split("le=")[1].split(",")[0].rstrip("}")), v)
                     for k, v in samples.items() if k.startswith(f"{name}_bucket{{"))
    if not buckets or buckets[-1][1] == 0:
        return float("nan")
    rank = q * buckets[-1][1]
    return next(le for le, count in buckets if count >= rank)


def _proc_status(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of `pid` in MiB (empty when the process is gone)."""
    out: dict[str, float] = {}
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def _templates() -> list[list[Any]]:
    """The demo captures (one per instrumentation library), as lists of spans per trace."""
    from collector.cli import demo_trace_files
    from collector.otlp import read_otlp_file
    from transforms import group_traces

    return [list(t.spans) for f in demo_trace_files()
            for t in group_traces(read_otlp_file(f).spans).values()]


def _runs_of(trace: list[Any]) -> list[str]:
    """The span ids of the agent runs the sidecar will find in `trace`."""
    from transforms import build_runs, group_traces

    (grouped,) = group_traces(trace).values()
    return [r.target.span_id for r in build_runs(grouped).runs if r.target is not None]


def _fresh(trace: list[Any], trace_id: str) -> list[Any]:
    return [dataclasses.replace(s, trace_id=trace_id) for s in trace]


def _new_trace_id(rng: random.Random) -> str:
    return f"{rng.getrandbits(128):032x}"


@contextlib.contextmanager
def _serve(config: dict[str, Any], tmp: Path, env: dict[str, str] | None = None) -> Iterator[Any]:
    """`scorecar serve` as a subprocess (tests/e2e/_serve.py); killed on any error or Ctrl-C."""
    from tests.e2e._serve import ServeProcess

    proc = ServeProcess(config, tmp, env=env)
    try:
        proc.start(timeout=60)
        yield proc
    except BaseException:
        proc.kill()
        raise
    else:
        try:
            proc.terminate(timeout=60)
        finally:
            proc.kill()


def _base_config(tmp: Path, **sections: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "receivers": {"grpc": {"endpoint": "127.0.0.1:0"}, "http": {"endpoint": "127.0.0.1:0"}},
        "storage": {"kind": "sqlite", "path": str(tmp / "data")},
        "exporters": {"prometheus": {"endpoint": "127.0.0.1:0"},
                      "jsonl": {"path": str(tmp / "scores.jsonl")}},
    }
    config.update(sections)
    return config


def _judge_config(base_url: str, concurrency: int, provider: str = "anthropic"
                  ) -> dict[str, Any]:
    config: dict[str, Any] = {"api_key_env": KEY_ENV, "base_url": base_url,
                              "max_concurrency": concurrency,
                              "requests_per_minute": 1_000_000, "max_retries": 0,
                              "timeout": 3600}
    if provider == "openai":
        config["model"] = "openai/gpt-4.1-mini"
    return config


def _openai_judge_reply(delay: float) -> Any:
    """The fake OpenAI judge's answer to answer_relevancy's two prompts, after `delay` s."""
    from tests.fakes.fake_openai import StructuredReply, TextReply

    def reply(request: Any) -> Any:
        time.sleep(delay)  # the fake serves each request in its own thread
        if request.response_format == "json_schema" or request.forced_tool:
            return StructuredReply({"results": [
                {"statement": "it is sunny", "result": "yes", "reason": "on topic"}]})
        return TextReply("The answer addresses the question.")

    return reply


@contextlib.contextmanager
def _judge_server(provider: str, latency: float) -> Iterator[Any]:
    """The fake judge of `provider` answering after `latency` s; yields (fake, requests())."""
    if provider == "openai":
        from tests.fakes.fake_openai import FakeOpenAI

        with FakeOpenAI(strict=True, default_reply=_openai_judge_reply(latency)) as oai:
            yield oai, lambda: oai.chat_requests
    else:
        from tests.fakes.fake_anthropic import FakeAnthropic

        with FakeAnthropic(default_reply=_judge_reply(latency)) as ant:
            yield ant, lambda: ant.message_requests


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    from tests.e2e._serve import read_jsonl

    return read_jsonl(path)


# --------------------------------------------------------------------------- 1. judge throughput


def bench_judge(latency: float, concurrency: int, seconds: float,
                provider: str = "anthropic") -> dict[str, Any]:
    """Judge calls/s of `scorecar serve` against a judge of `provider` answering after
    `latency` seconds."""
    from collector.cli import otlp_span_exporter, to_readable_spans

    templates = _templates()
    runs_per_round = sum(len(_runs_of(t)) for t in templates)
    ideal = concurrency / latency
    # enough runs for `seconds` of steady judge work (two calls per run), plus the ramps
    rounds = max(1, round((ideal * (seconds + 2) / 2) / runs_per_round))
    rng = random.Random(1)

    with tempfile.TemporaryDirectory(prefix="scorecar-bench-") as tmp_name, \
            _judge_server(provider, latency) as (fake, judge_requests):
        tmp = Path(tmp_name)
        config = _base_config(tmp, assembly={"quiet_period": 0.2},
                              judge=_judge_config(fake.base_url, concurrency, provider),
                              scorers=[{"scorer": JUDGE_SCORER}])
        with _serve(config, tmp, env={KEY_ENV: fake.api_key}) as serve:
            spans = [s for _ in range(rounds) for t in templates
                     for s in _fresh(t, _new_trace_id(rng))]
            exporter = otlp_span_exporter(serve.grpc_endpoint, "grpc")
            try:
                readable = to_readable_spans(spans, shift_ns=0)
                for i in range(0, len(readable), SPANS_PER_REQUEST):
                    exporter.export(readable[i:i + SPANS_PER_REQUEST])
            finally:
                exporter.shutdown()
            runs = rounds * runs_per_round
            # Wait on a cheap count (this process also serves the fake judge: no busy parsing
            # here), until every run made its calls or calls stopped coming.
            last, last_change = 0, time.monotonic()
            while (n := len(fake.requests)) < 2 * runs and \
                    time.monotonic() - last_change < 10 * latency + 5:
                if n != last:
                    last, last_change = n, time.monotonic()
                time.sleep(0.25)
            time.sleep(latency + 0.5)
            samples = _metrics(serve.metrics_url)
            calls = sorted(r.received_at for r in judge_requests())
        records = _read_jsonl(tmp / "scores.jsonl")
    # steady part: judge slots full, queue not yet drained (first and last second dropped)
    steady = [t for t in calls if calls[0] + 1.0 <= t <= calls[-1] - 1.0]
    rate = float("nan")
    if len(steady) >= 2 * concurrency:
        rate = statistics.linear_regression(steady, range(len(steady))).slope
    scored = sum(r["status"] == "scored" for r in records)
    return {
        "runs": runs, "calls": len(calls), "scored": scored,
        "statuses": dict(Counter(r["status"] for r in records)),
        "calls_per_run": len(calls) / max(1, len(records)),
        "rate": rate, "ideal": ideal, "ratio": rate / ideal,
        "overall": (len(calls) - 1) / (calls[-1] - calls[0]) if len(calls) > 1 else float("nan"),
        "judge_ok": _total(samples, "scorecar_judge_requests_total", outcome="ok"),
        "steady_seconds": steady[-1] - steady[0] if steady else 0.0,
    }


# --------------------------------------------------------------------------- 2. score lag


class _Backend:
    """A loopback OTLP/gRPC backend (traces and logs) that notes when each evaluation span
    arrives."""

    def __init__(self) -> None:
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

        self.arrivals: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        backend = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC name
                now = time.time()
                with backend._lock:
                    for rs in request.resource_spans:
                        for ss in rs.scope_spans:
                            for s in ss.spans:
                                if s.name.startswith("evaluation "):
                                    key = (s.trace_id.hex(), s.parent_span_id.hex())
                                    backend.arrivals.setdefault(key, now)
                return trace_service_pb2.ExportTraceServiceResponse()

        class Logs(logs_service_pb2_grpc.LogsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC name
                return logs_service_pb2.ExportLogsServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    def __enter__(self) -> _Backend:
        self.server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop(grace=None)

    def count(self) -> int:
        with self._lock:
            return len(self.arrivals)


def bench_lag(quiet: float, rate: float, seconds: float) -> dict[str, Any]:
    """Agent span end -> evaluation span at the OTLP backend, for a code scorer."""
    from collector.cli import otlp_span_exporter, to_readable_spans

    templates = [(t, _runs_of(t)) for t in _templates()]
    rng = random.Random(2)
    ends: dict[tuple[str, str], float] = {}  # (trace, run span) -> max(span end, sent at)
    clamped = 0
    with tempfile.TemporaryDirectory(prefix="scorecar-bench-") as tmp_name, _Backend() as backend:
        tmp = Path(tmp_name)
        exporters = {"prometheus": {"endpoint": "127.0.0.1:0"},
                     "jsonl": {"path": str(tmp / "scores.jsonl")},
                     "otlp": {"endpoint": f"127.0.0.1:{backend.port}", "protocol": "grpc"}}
        config = _base_config(tmp, assembly={"quiet_period": quiet},
                              scorers=[{"scorer": "builtin:completeness"}], exporters=exporters)
        with _serve(config, tmp) as serve:
            exporter = otlp_span_exporter(serve.grpc_endpoint, "grpc")
            try:
                start = time.monotonic()
                i = 0
                while time.monotonic() - start < seconds:
                    due = start + i / rate
                    if due > time.monotonic():
                        time.sleep(due - time.monotonic())
                    trace, runs = templates[i % len(templates)]
                    trace_id = _new_trace_id(rng)
                    newest = max(s.end_time_unix_nano or s.start_time_unix_nano for s in trace)
                    sent_ns = time.time_ns()
                    shift = sent_ns - newest
                    end_of = {s.span_id: (s.end_time_unix_nano + shift) / 1e9 for s in trace}
                    for span_id in runs:
                        clamped += end_of[span_id] < sent_ns / 1e9 - 0.001
                        ends[(trace_id, span_id)] = max(end_of[span_id], sent_ns / 1e9)
                    exporter.export(to_readable_spans(_fresh(trace, trace_id), shift_ns=shift))
                    i += 1
            finally:
                exporter.shutdown()
            deadline = time.monotonic() + quiet + 30
            while backend.count() < len(ends) and time.monotonic() < deadline:
                time.sleep(0.1)
            samples = _metrics(serve.metrics_url)
        records = _read_jsonl(tmp / "scores.jsonl")
        arrivals = dict(backend.arrivals)
    lags = [arrivals[k] - ends[k] for k in ends if k in arrivals]
    scored_lags = []
    for r in records:
        key = (r["traceId"], r["spanId"])
        if key in ends and r.get("createdAt"):
            created = datetime.fromisoformat(r["createdAt"].replace("Z", "+00:00")).timestamp()
            scored_lags.append(created - ends[key])
    return {
        "traces": i, "runs": len(ends), "exported": len(lags), "clamped": clamped,
        "p50": _pct(lags, 0.5), "p99": _pct(lags, 0.99), "max": max(lags, default=float("nan")),
        "scored_p50": _pct(scored_lags, 0.5), "scored_p99": _pct(scored_lags, 0.99),
        "histogram_p99": _histogram_quantile(samples, "scorecar_score_lag_seconds", 0.99),
        "statuses": dict(Counter(r["status"] for r in records)),
    }


# --------------------------------------------------------------------------- 3. RSS under load


def _request_template() -> tuple[Any, int]:
    """One ExportTraceServiceRequest of whole demo traces (~512 spans) and its number of runs.
    Trace ids are 8 zero bytes and a per-trace counter: each send replaces the zero bytes."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from collector.cli import to_readable_spans

    templates = [(t, len(_runs_of(t))) for t in _templates()]
    spans: list[Any] = []
    runs = 0
    k = 0
    while len(spans) < SPANS_PER_REQUEST:
        trace, n = templates[k % len(templates)]
        spans.extend(_fresh(trace, f"{0:016x}{k:016x}"))
        runs += n
        k += 1
    request = encode_spans(to_readable_spans(spans))
    return request, runs


def loadgen(target: str, rate: float, seconds: float, streams: int) -> dict[str, Any]:
    """Send ~512-span requests to `target` at `rate` spans/s for `seconds` from `streams`
    threads (open loop: a late stream sends at once, so in-flight requests cap the rate)."""
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    rng = random.Random(os.getpid())
    request, runs = _request_template()
    spans_per_request = sum(len(ss.spans) for rs in request.resource_spans
                            for ss in rs.scope_spans)
    all_spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    suffixes = [s.trace_id[8:] for s in all_spans]
    build_lock = threading.Lock()

    def body() -> bytes:
        with build_lock:  # the template is shared: one new set of trace ids at a time
            prefix = rng.getrandbits(64).to_bytes(8, "big")
            for s, suffix in zip(all_spans, suffixes, strict=True):
                s.trace_id = prefix + suffix
            return request.SerializeToString()

    channel = grpc.insecure_channel(target, options=[
        ("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)])
    call = channel.unary_unary(EXPORT)  # raw bytes in and out
    interval = spans_per_request / rate
    lock = threading.Lock()
    state = {"next": 0}
    stats: Counter[str] = Counter()
    latencies: list[float] = []
    codes: Counter[str] = Counter()
    start = time.monotonic()
    end = start + seconds

    def stream() -> None:
        while True:
            with lock:
                slot = state["next"]
                state["next"] += 1
            due = start + slot * interval
            if due >= end:
                return
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            data = body()
            t0 = time.monotonic()
            try:
                raw = call(data, timeout=30)
            except grpc.RpcError as exc:
                with lock:
                    codes[exc.code().name] += 1  # type: ignore[attr-defined]
                    stats["refused_spans"] += spans_per_request
                continue
            latency = time.monotonic() - t0
            reply = trace_service_pb2.ExportTraceServiceResponse.FromString(raw)
            with lock:
                latencies.append(latency)
                stats["ok_requests"] += 1
                stats["ok_spans"] += spans_per_request
                stats["runs"] += runs
                stats["rejected_spans"] += reply.partial_success.rejected_spans

    threads = [threading.Thread(target=stream, daemon=True) for _ in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    channel.close()
    return {**stats, "elapsed": elapsed, "refusals": dict(codes), "target_rate": rate,
            "spans_per_request": spans_per_request, "runs_per_request": runs,
            "p50_ms": _pct(latencies, 0.5) * 1e3, "p99_ms": _pct(latencies, 0.99) * 1e3}


def bench_rss(rate: float, seconds: float, streams: int, concurrency: int) -> dict[str, Any]:
    """Peak RSS of `scorecar serve` receiving `rate` spans/s for `seconds`, judge stalled."""
    from tests.fakes.fake_anthropic import FakeAnthropic

    samples_rss: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="scorecar-bench-") as tmp_name, \
            FakeAnthropic(default_reply=_judge_reply(3600)) as fake:  # stalled
        tmp = Path(tmp_name)
        config = _base_config(tmp, judge=_judge_config(fake.base_url, concurrency),
                              scorers=[{"scorer": JUDGE_SCORER}])
        with _serve(config, tmp, env={KEY_ENV: fake.api_key}) as serve:
            assert serve.proc is not None
            pid = serve.proc.pid
            idle = _proc_status(pid).get("VmRSS", float("nan"))
            cmd = [sys.executable, str(Path(__file__).resolve()), "--loadgen", serve.grpc_endpoint,
                   "--rate", str(rate), "--seconds", str(seconds), "--streams", str(streams)]
            gen = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
            try:
                t0 = time.monotonic()
                while gen.poll() is None:
                    status = _proc_status(pid)
                    samples_rss.append((time.monotonic() - t0, status.get("VmRSS", 0.0)))
                    time.sleep(0.25)
                out, _ = gen.communicate(timeout=30)
            except BaseException:
                gen.kill()
                gen.wait()
                raise
            if gen.returncode != 0:
                raise RuntimeError(f"the load generator failed (exit {gen.returncode})")
            load = json.loads(out.strip().splitlines()[-1])
            # the work accepted but not yet assembled goes on after the load stops
            tail_end = time.monotonic() + 5.0
            while time.monotonic() < tail_end:
                samples_rss.append((time.monotonic() - t0, _proc_status(pid).get("VmRSS", 0.0)))
                time.sleep(0.25)
            status = _proc_status(pid)
            metrics = _metrics(serve.metrics_url)
            judge_calls = len(fake.message_requests)
    return {
        "load": load, "idle_mib": idle, "peak_mib": status.get("VmHWM", float("nan")),
        "max_sampled_mib": max((v for _, v in samples_rss), default=float("nan")),
        "end_mib": status.get("VmRSS", float("nan")),
        "received": _total(metrics, "scorecar_spans_received_total"),
        "refused": _by_label(metrics, "scorecar_spans_refused_total", "reason"),
        "pending_traces": _total(metrics, "scorecar_traces_pending"),
        "queue_depth": _total(metrics, "scorecar_queue_depth"),
        "agent_runs": _total(metrics, "scorecar_agent_runs_total"),
        "skipped": _by_label(metrics, "scorecar_runs_skipped_total", "reason"),
        "judge_calls": judge_calls,
    }


# --------------------------------------------------------------------------- report


def _code_state() -> str:
    """The commit measured, and whether the sidecar's packages differ from it (a shared tree)."""
    def git(*cmd: str) -> str:
        return subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", "collector", "transforms", "scorers", "exporters")
    return f"{head}" + (f" + uncommitted changes in {len(dirty.splitlines())} files of "
                        "collector/transforms/scorers/exporters" if dirty else " (clean)")


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _mark(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (about 50 s)")
    parser.add_argument("--latency", type=float, default=0.2, help="judge latency L, seconds")
    parser.add_argument("--concurrency", type=int, default=8, help="judge.max_concurrency C")
    parser.add_argument("--quiet", type=float, default=1.0, help="assembly.quiet_period Q, s")
    parser.add_argument("--rate", type=float, default=10_000, help="spans/s for the RSS run")
    parser.add_argument("--seconds", type=float, default=None,
                        help="seconds of load for the RSS run (default 60, 10 with --quick)")
    parser.add_argument("--streams", type=int, default=4, help="concurrent Export streams")
    parser.add_argument("--provider", choices=["anthropic", "openai", "both"], default="both",
                        help="the judge's provider for part 1 (default: both)")
    parser.add_argument("--only", choices=["judge", "lag", "rss"], action="append",
                        help="run only these parts (repeatable)")
    parser.add_argument("--loadgen", metavar="HOST:PORT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loadgen:
        print(json.dumps(loadgen(args.loadgen, args.rate, args.seconds, args.streams)))
        return
    # SIGTERM unwinds like Ctrl-C, so every server and subprocess is stopped.
    signal.signal(signal.SIGTERM, _interrupt)
    quick = args.quick
    judge_seconds = 5.0 if quick else 20.0
    lag_seconds = 6.0 if quick else 20.0
    rss_seconds = args.seconds or (10.0 if quick else 60.0)
    parts = set(args.only or ["judge", "lag", "rss"])
    print(f"machine: nproc={os.cpu_count()} (affinity {len(os.sched_getaffinity(0))}), "
          f"python {sys.version.split()[0]}; scorecar serve as a subprocess, loopback only"
          f"{' (--quick)' if quick else ''}")
    print(f"code: {_code_state()}")
    rows: list[tuple[str, str, str, str]] = []
    providers = ["anthropic", "openai"] if args.provider == "both" else [args.provider]
    for provider in providers if "judge" in parts else []:
        j = bench_judge(args.latency, args.concurrency, judge_seconds, provider)
        print(f"\n1. judge throughput ({provider}): L={args.latency:g}s C={args.concurrency} "
              f"requests_per_minute=1e6, {j['runs']} runs, {j['calls']} judge calls "
              f"({j['calls_per_run']:.2f} per run), records {j['statuses']}; steady part "
              f"{j['steady_seconds']:.1f}s: {j['rate']:.1f} calls/s (whole run "
              f"{j['overall']:.1f}/s), ideal C/L = {j['ideal']:.1f}/s")
        rows.append((f"judge calls/s ÷ C/L ({provider})", f"{j['ratio']:.3f}", ">= 0.95",
                     _mark(j["ratio"] >= 0.95)))
    if "judge" in parts:
        import asyncio

        from bench.scorers import bench_judge as adapter_anthropic
        from bench.scorers import bench_judge_openai as adapter_openai
        from bench.scorers import print_adapter

        for provider in providers:
            print()
            bench = adapter_openai if provider == "openai" else adapter_anthropic
            overhead = print_adapter(provider, asyncio.run(bench(200, 5)), 5, 200)
            rows.append((f"judge adapter overhead ({provider})", f"{overhead * 1e3:.2f} ms",
                         "<= 2 ms", _mark(overhead <= 0.002)))
    if "lag" in parts:
        lag = bench_lag(args.quiet, 10.0, lag_seconds)
        goal = args.quiet + 0.1
        print(f"\n2. score lag (builtin:completeness, Q={args.quiet:g}s, 10 traces/s for "
              f"{lag_seconds:g}s): {lag['traces']} traces, {lag['runs']} runs, "
              f"{lag['exported']} evaluation spans at the backend, records {lag['statuses']}; "
              f"span end -> exported p50 {lag['p50']:.3f}s p99 {lag['p99']:.3f}s max "
              f"{lag['max']:.3f}s ({lag['clamped']} runs ended before their trace was sent: "
              f"measured from the send); -> record created p50 {lag['scored_p50']:.3f}s p99 "
              f"{lag['scored_p99']:.3f}s; /metrics scorecar_score_lag_seconds p99 bucket "
              f"<= {lag['histogram_p99']:g}s")
        rows.append(("score lag p50", f"{lag['p50'] * 1e3:.0f} ms", "-", ""))
        rows.append(("score lag p99", f"{lag['p99'] * 1e3:.0f} ms", f"<= {goal * 1e3:.0f} ms",
                     _mark(lag["p99"] <= goal and lag["exported"] == lag["runs"])))
    if "rss" in parts:
        r = bench_rss(args.rate, rss_seconds, args.streams, args.concurrency)
        load = r["load"]
        accepted = load.get("ok_spans", 0) / load["elapsed"]
        print(f"\n3. RSS with the judge stalled: target {args.rate:,.0f} spans/s for "
              f"{rss_seconds:g}s, {args.streams} streams of {load['spans_per_request']}-span "
              f"requests; acknowledged {load.get('ok_spans', 0):,} spans = {accepted:,.0f} "
              f"spans/s (Export p50 {load['p50_ms']:.0f} ms, p99 {load['p99_ms']:.0f} ms), "
              f"refused requests {load['refusals'] or 'none'}, partial-success rejected spans "
              f"{load.get('rejected_spans', 0)}; sidecar counted {r['received']:,.0f} received, "
              f"refused {r['refused'] or 'none'}; {r['agent_runs']:,.0f} runs scheduled, queue "
              f"depth {r['queue_depth']:,.0f}, skipped {r['skipped'] or 'none'}, traces pending "
              f"{r['pending_traces']:,.0f}, {r['judge_calls']} judge calls (stalled, cut by the "
              f"scorer's 30 s timeout); runs sent {load.get('runs', 0):,}, scorecar_agent_runs_total "
              f"{r['agent_runs']:,.0f}; RSS idle "
              f"{r['idle_mib']:.0f} MiB, max sampled {r['max_sampled_mib']:.0f} MiB, at the end "
              f"{r['end_mib']:.0f} MiB")
        rows.append((f"spans/s acknowledged (target {args.rate:,.0f})", f"{accepted:,.0f}",
                     f">= {args.rate:,.0f}", _mark(accepted >= 0.98 * args.rate)))
        rows.append(("peak RSS (VmHWM)", f"{r['peak_mib']:.0f} MiB", "<= 150 MiB",
                     _mark(r["peak_mib"] <= 150)))
    print()
    widths = [max(len(row[i]) for row in [("figure", "value", "goal", ""), *rows])
              for i in range(4)]
    for row in [("figure", "value", "goal", ""), *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()

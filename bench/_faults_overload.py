"""Overload: five times the measured maximum ingest rate, for 60 s.

First the maximum sustained ingest rate of `scorecar serve` is measured as in bench/ingest.py
(spans acknowledged / time until every run of them is scored; pre-serialized 512-span requests
from every committed capture, a load generator in its own process). Then a fresh sidecar with
`limits.memory_mib` set gets 5× that rate. Figure: answers other than OK or a retryable refusal
(goal 0), peak RSS of the sidecar process (VmHWM) below `limits.memory_mib` (goal), and the
agent-side Export latency (p50/p99 of the acknowledged requests, and of the refusals).

    python bench/faults.py overload [--quick]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._faults_crash import mark, pct  # noqa: E402
from tests.e2e._serve import metrics, total  # noqa: E402

MEMORY_MIB = 512


def measure(*, seconds: float = 60.0, probe_seconds: float = 15.0, factor: float = 5.0,
            memory_mib: int = MEMORY_MIB, streams: int = 8) -> dict[str, Any]:
    """The maximum rate, then `factor`× it for `seconds` against a memory-limited sidecar."""
    from bench import ingest

    templates = ingest.build_templates(24)
    probe = ingest.measure_serve(templates, probe_seconds, streams, None)
    max_rate = probe["spans"] / probe["total_time"]
    rate = factor * max_rate
    with tempfile.TemporaryDirectory(prefix="scorecar-overload-") as name:
        serve = ingest.Serve(Path(name))
        serve.proc.env["SCORECAR_LIMITS__MEMORY_MIB"] = str(memory_mib)
        with serve:
            started = time.monotonic()
            load = ingest.run_load(serve.target, templates, seconds, streams * 4, rate=rate)
            samples = metrics(serve.proc.metrics_url)
            peak = serve.rss_mib()
            alive = serve.proc.proc is not None and serve.proc.proc.poll() is None
            elapsed = time.monotonic() - started
    refused = {k.split("reason=")[1].rstrip("}"): v for k, v in samples.items()
               if k.startswith("scorecar_spans_refused_total{")}
    latencies = load["latencies"]
    return {
        "max_rate": max_rate, "rate": rate, "offered_seconds": seconds, "elapsed": elapsed,
        "acknowledged_spans": load["spans"], "acknowledged_rate": load["spans"] / load["elapsed"],
        "requests_ok": load["requests"], "refused": load["refused"], "errors": load["errors"],
        "refused_by_reason": refused,
        "received": total(samples, "scorecar_spans_received_total"),
        "p50": pct(latencies, 0.50), "p99": pct(latencies, 0.99),
        "rss_peak_mib": peak, "memory_mib": memory_mib, "alive": alive,
    }


def memory_refusal(limit_mib: int = 40, requests: int = 6) -> dict[str, Any]:
    """A sidecar whose `limits.memory_mib` is below its idle RSS: what agents are answered."""
    import random

    from bench._faults_crash import RawAgent, agent_runs, http_export, request_body
    from tests.e2e._serve import ServeProcess, base_config

    with tempfile.TemporaryDirectory(prefix="scorecar-memory-") as name:
        tmp = Path(name)
        config = base_config(tmp)
        config["limits"] = {"memory_mib": limit_mib}
        serve = ServeProcess(config, tmp)
        try:
            serve.start(timeout=60)
            agent = RawAgent(serve.grpc_endpoint)
            answers = []
            for i, batch in enumerate(agent_runs(requests, random.Random(4))):
                body = request_body(batch)
                if i % 2:
                    status, after = http_export(serve.http_endpoint, body)
                    answers.append(f"HTTP {status} Retry-After {after}")
                else:
                    answers.append(f"gRPC {agent.export(body)}")
            agent.close()
            samples = metrics(serve.metrics_url)
            code = serve.terminate(timeout=60)
        finally:
            serve.kill()
    return {"answers": answers, "refused_memory": total(samples, "scorecar_spans_refused_total",
                                                         reason="memory"),
            "limit_mib": limit_mib, "exit_code": code}


def ok(r: dict[str, Any]) -> bool:
    """Every goal met."""
    return r["errors"] == 0 and r["rss_peak_mib"] < r["memory_mib"] and r["alive"]


def main(quick: bool = False) -> int:
    """Print the overload figure; 0 when every goal is met."""
    m = memory_refusal()
    r = measure(seconds=10, probe_seconds=5) if quick else measure()
    print(f"overload{' (--quick)' if quick else ''}: maximum ingest {r['max_rate']:,.0f} spans/s; "
          f"offered 5x = {r['rate']:,.0f} spans/s for {r['offered_seconds']:g} s")
    print(f"  acknowledged            {r['acknowledged_spans']:,} spans "
          f"({r['acknowledged_rate']:,.0f}/s), {r['requests_ok']} requests")
    print(f"  refused retryably       {r['refused']} requests {r['refused_by_reason']}")
    print(f"  other answers (errors)  {r['errors']:>6}   goal 0  {mark(r['errors'] == 0)}")
    print(f"  peak RSS (VmHWM)        {r['rss_peak_mib']:,.0f} MiB   goal < limits.memory_mib "
          f"{r['memory_mib']}  {mark(r['rss_peak_mib'] < r['memory_mib'])}"
          f"{'' if r['alive'] else '   PROCESS DIED'}")
    print(f"  agent Export latency    p50 {r['p50'] * 1000:,.0f} ms, p99 {r['p99'] * 1000:,.0f} ms"
          " (acknowledged requests)")
    retryable = all(a in ("gRPC UNAVAILABLE", "HTTP 503 Retry-After 5") for a in m["answers"])
    print(f"memory limit below the idle RSS (limits.memory_mib {m['limit_mib']}): "
          f"{len(m['answers'])} requests answered {sorted(set(m['answers']))}, "
          f"{m['refused_memory']:.0f} counted as spans_refused{{memory}}  "
          f"{mark(retryable and m['refused_memory'] == len(m['answers']))}")
    return 0 if ok(r) and retryable and m["refused_memory"] == len(m["answers"]) else 1


if __name__ == "__main__":
    raise SystemExit(main("--quick" in sys.argv))

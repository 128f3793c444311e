"""Upstream outage, score export half: the OTLP backend that receives the evaluation spans is
down for a while under steady agent load, then back.

Two runs:

- within the queue bound (`storage.max_jobs` far above what the outage accumulates): every
  score record of every acknowledged run reaches the backend once it is back (goal: 0 lost);
- past the bound (`storage.max_jobs` smaller than the outage accumulates): the sidecar refuses
  new requests retryably (`UNAVAILABLE`, reason `queue_full`) instead of dropping anything it
  acknowledged; this agent does not re-send, so what is dropped is what it was refused. Goal:
  the refusals the agent saw equal `scorecar_spans_refused_total{reason="queue_full"}`, and
  still 0 acknowledged score records lost.

(Forwarded spans are the pass-through figure's other half, measured by its own module.)

    python bench/faults.py outage [--quick]
"""

from __future__ import annotations

import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._faults_crash import (  # noqa: E402
    RawAgent,
    agent_runs,
    mark,
    request_body,
    run_ids,
)
from tests.e2e._serve import metrics, total  # noqa: E402

SCORERS = [{"scorer": "builtin:tone"}, {"scorer": "builtin:completeness"}]


def _score_ids(backend: Any) -> set[str]:
    out = set()
    for s in backend.spans():
        score_id = s["attributes"].get("scorecar.score.id")
        if isinstance(score_id, str):
            out.add(score_id)
    return out


def measure(*, before: float = 5.0, outage: float = 60.0, after: float = 5.0,
            rate: float = 10.0, max_jobs: int = 100_000, seed: int = 3,
            wait: float = 120.0) -> dict[str, Any]:
    """Send `rate` requests/s (one agent copy = two runs each) for before + outage + after
    seconds; the backend is down during `outage`. Then wait until every acknowledged run's
    records reached the backend (or `wait` seconds)."""
    from tests.e2e._serve import ServeProcess, base_config, read_jsonl
    from tests.fakes.otlp_backend import OtlpBackend

    count = int(rate * (before + outage + after)) + 1
    batches = agent_runs(count, random.Random(seed))
    bodies = [request_body(b) for b in batches]
    with tempfile.TemporaryDirectory(prefix="scorecar-outage-") as name, \
            OtlpBackend() as backend:
        tmp = Path(name)
        config = base_config(tmp, scorers=SCORERS)
        config["assembly"] = {"quiet_period": 0.2, "max_wait": 5.0}
        config["storage"]["max_jobs"] = max_jobs
        config["exporters"]["otlp"] = {"endpoint": backend.endpoint, "protocol": "grpc",
                                       "insecure": True, "timeout": 2}
        serve = ServeProcess(config, tmp)
        answers: Counter[str] = Counter()
        acknowledged: list[int] = []
        depth_peak = 0.0
        try:
            serve.start(timeout=60)
            agent = RawAgent(serve.grpc_endpoint)
            start = time.monotonic()
            down_at, up_at = start + before, start + before + outage
            state = {"down": False}

            def flip() -> None:
                while time.monotonic() < down_at:
                    time.sleep(0.05)
                backend.down()
                state["down"] = True
                while time.monotonic() < up_at:
                    time.sleep(0.05)
                backend.up()
                state["down"] = False

            flipper = threading.Thread(target=flip, daemon=True)
            flipper.start()
            for i, body in enumerate(bodies):
                due = start + i / rate
                if (delay := due - time.monotonic()) > 0:
                    time.sleep(delay)
                answer = agent.export(body)
                answers[answer] += 1
                if answer == "OK":
                    acknowledged.append(i)
                if i % max(1, int(rate)) == 0:
                    depth_peak = max(depth_peak, total(metrics(serve.metrics_url),
                                                       "scorecar_queue_depth"))
            flipper.join()
            expected_runs = run_ids([batches[i] for i in acknowledged])
            deadline = time.monotonic() + wait
            local: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                local = [r for r in read_jsonl(tmp / "scores.jsonl") if r["runId"] in
                         expected_runs]
                if {r["runId"] for r in local} >= expected_runs and \
                        _score_ids(backend) >= {r["id"] for r in local} and \
                        total(metrics(serve.metrics_url), "scorecar_queue_depth") == 0:
                    break
                time.sleep(0.5)
            samples = metrics(serve.metrics_url)
            agent.close()
            code = serve.terminate(timeout=60)
        finally:
            serve.kill()
        exported = _score_ids(backend)
    expected_ids = {r["id"] for r in local}
    refused = sum(n for a, n in answers.items() if a != "OK")
    return {
        "requests": len(bodies), "answers": dict(answers), "refused_by_agent": refused,
        "refused_metric": total(samples, "scorecar_spans_refused_total"),
        "refused_queue_full": total(samples, "scorecar_spans_refused_total", reason="queue_full"),
        "runs_skipped_queue_full": total(samples, "scorecar_runs_skipped_total",
                                         reason="queue_full"),
        "runs": len(expected_runs), "records": len(expected_ids),
        "lost": len(expected_ids - exported),
        "runs_without_records": len(expected_runs - {r["runId"] for r in local}),
        "export_retry": total(samples, "scorecar_export_total", exporter="otlp",
                              outcome="retry"),
        "export_dropped": total(samples, "scorecar_export_total", outcome="dropped"),
        "depth_peak": depth_peak, "max_jobs": max_jobs, "outage": outage, "rate": rate,
        "exit_code": code,
    }


def ok(r: dict[str, Any]) -> bool:
    """Every goal met."""
    return (r["lost"] == 0 and r["runs_without_records"] == 0 and r["export_dropped"] == 0
            and r["refused_by_agent"] == r["refused_metric"])


def main(quick: bool = False) -> int:
    """Print the outage figure (scores); 0 when every goal is met."""
    outage = 6.0 if quick else 60.0
    rate = 10.0
    within = measure(outage=outage, rate=rate, before=2 if quick else 5, after=2 if quick else 5)
    # past the bound: room for about a third of the outage's jobs (two scorers per run)
    bound = max(20, int(outage * rate * 3 * 2 / 3))
    past = measure(outage=outage, rate=rate, max_jobs=bound, before=2 if quick else 5,
                   after=2 if quick else 5)
    code = 0
    for title, r in (("within the queue bound", within), ("past the queue bound", past)):
        print(f"upstream outage (scores){' (--quick)' if quick else ''}, {title}: backend down "
              f"{r['outage']:g} s under {r['rate']:g} requests/s (2 runs each); max_jobs "
              f"{r['max_jobs']}, queue depth peak {r['depth_peak']:.0f}")
        print(f"  score records lost          {r['lost']:>6}   goal 0  "
              f"{mark(r['lost'] == 0 and r['runs_without_records'] == 0)}   (of {r['records']} "
              f"for {r['runs']} acknowledged runs; {r['export_retry']:.0f} export retries)")
        print(f"  requests refused (agent)    {r['refused_by_agent']:>6}   = metrics "
              f"{r['refused_metric']:.0f} (queue_full {r['refused_queue_full']:.0f})  "
              f"{mark(r['refused_by_agent'] == r['refused_metric'])}   "
              f"runs_skipped{{queue_full}} {r['runs_skipped_queue_full']:.0f} (held, "
              "scored later)")
        code = max(code, 0 if ok(r) else 1)
    return code


if __name__ == "__main__":
    raise SystemExit(main("--quick" in sys.argv))

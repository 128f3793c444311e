"""Judge storm: about half of all judge requests answer 429 (rate limited) or 529 (overloaded)
with a `Retry-After` longer than the configured cap; then a judge that answers 401.

The fake Anthropic server (tests/fakes/fake_anthropic.py, strict) decides per request. Each
judge call (one prompt; its retries send the same body) is refused F times before it is
answered, F drawn per call from a geometric law (P(F=k) = 2^-(k+1)) truncated at
`judge.max_retries`: ≈ 47% of all requests are refused, and every call can still succeed within
its retry budget. Figure: runs scored (goal: all), attempts per call (goal ≤ 1 + max_retries),
waits between attempts within `max(exponential delay, min(Retry-After, max_retry_after))`
(measured from the fake's recorded arrival times; goal: all within, + 0.5 s scheduling slack).
401: attempts per call (goal 1: no retry) and configuration-error log lines (goal 1).

    python bench/faults.py storm [--quick]
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._faults_crash import agent_runs, mark, run_ids  # noqa: E402

KEY_ENV = "SCORECAR_FAULTS_JUDGE_KEY"
SCORER = "builtin:answer_relevancy"  # two judge calls per run: verdicts, then the reason
SLACK = 0.5


def _key(request: Any) -> str:
    return hashlib.sha256(json.dumps(request.body, sort_keys=True).encode()).hexdigest()


class StormJudge:
    """The fake's reply callable: refuse each call's first F attempts (429 or 529)."""

    def __init__(self, max_retries: int, retry_after: float, seed: int) -> None:
        self.max_retries = max_retries
        self.retry_after = retry_after
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._plan: dict[str, int] = {}
        self._seen: Counter[str] = Counter()
        self.storm = False
        self.calm: set[str] = set()

    def _failures(self) -> int:
        k = 0
        while k < self.max_retries and self._rng.random() < 0.5:
            k += 1
        return k

    def __call__(self, request: Any) -> Any:
        from tests.fakes.fake_anthropic import overloaded, rate_limited, structured, text

        key = _key(request)
        with self._lock:
            if not self.storm:
                self.calm.add(key)
            if key not in self._plan:
                self._plan[key] = self._failures() if self.storm else 0
            attempt = self._seen[key]
            self._seen[key] += 1
            refuse = attempt < self._plan[key]
            use_429 = self._rng.random() < 0.5
        if refuse:
            if use_429:
                return rate_limited(retry_after=self.retry_after)
            return overloaded(headers={"retry-after": f"{self.retry_after:g}"})
        if request.asks_structured_output:
            return structured({"results": [
                {"statement": "it is raining", "result": "yes", "reason": "on topic"}]})
        return text("The answer addresses the question.")


def _serve_config(tmp: Path, base_url: str, max_retries: int, cap: float) -> dict[str, Any]:
    from tests.e2e._serve import base_config

    config = base_config(tmp, scorers=[{"scorer": SCORER}])
    config["assembly"] = {"quiet_period": 0.2, "max_wait": 5.0}
    config["judge"] = {"api_key_env": KEY_ENV, "base_url": base_url, "max_concurrency": 64,
                       "requests_per_minute": 1_000_000, "max_retries": max_retries,
                       "max_retry_after": cap, "timeout": 30}
    return config


def _send(serve: Any, batches: list[list[Any]]) -> None:
    from collector.cli import otlp_span_exporter, send_spans

    exporter = otlp_span_exporter(serve.grpc_endpoint, "grpc", timeout=10)
    try:
        send_spans([s for b in batches for s in b], exporter, recent=False)
    finally:
        exporter.shutdown()


def _wait_for(tmp: Path, runs: set[str], wait: float) -> list[dict[str, Any]]:
    """The records once every run in `runs` has one (or after `wait` seconds)."""
    from tests.e2e._serve import read_jsonl

    deadline = time.monotonic() + wait
    records: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        records = read_jsonl(tmp / "scores.jsonl")
        if {r["runId"] for r in records} >= runs:
            break
        time.sleep(0.25)
    return records


def measure_storm(runs: int = 300, *, max_retries: int = 3, retry_after: float = 30.0,
                  cap: float = 1.0, seed: int = 12, wait: float = 120.0,
                  pace: int = 10, slack: float = SLACK) -> dict[str, Any]:
    """Runs scored, attempts per call and waits under a 429/529 storm (agents send `pace`
    copies, 2 runs each, per second)."""
    from tests.e2e._serve import ServeProcess
    from tests.fakes.fake_anthropic import FakeAnthropic

    warmup, *batches = agent_runs(1 + max(1, runs // 2), random.Random(seed), unique_text=True)
    expected = run_ids(batches)
    judge = StormJudge(max_retries, retry_after, seed)
    with tempfile.TemporaryDirectory(prefix="scorecar-storm-") as name, \
            FakeAnthropic(default_reply=judge) as fake:
        tmp = Path(name)
        serve = ServeProcess(_serve_config(tmp, fake.base_url, max_retries, cap), tmp,
                             env={KEY_ENV: fake.api_key})
        started = time.monotonic()
        try:
            serve.start(timeout=60)
            # A calm first run: the first judge calls of a fresh process set up its client
            # (the event loop is busy for a moment), which is not what this figure measures.
            _send(serve, [warmup])
            _wait_for(tmp, run_ids([warmup]), wait)
            judge.storm = True
            # Paced, so judge calls in flight stay well under max_concurrency: a retry that
            # queues for a slot (or behind a swamped fake) waits longer than the sleep it chose,
            # and this figure is about that sleep.
            for i in range(0, len(batches), pace):
                if i:
                    time.sleep(1.0)
                _send(serve, batches[i:i + pace])
            records = _wait_for(tmp, expected, wait)
            code = serve.terminate(timeout=60)
        finally:
            serve.kill()
        requests = [r for r in fake.message_requests if _key(r) not in judge.calm]
        seconds = time.monotonic() - started
    by_call: dict[str, list[float]] = defaultdict(list)
    for r in requests:
        by_call[_key(r)].append(r.received_at)
    attempts = Counter(len(v) for v in by_call.values())
    waits_over = 0
    worst = 0.0
    worst_waits: list[float] = []
    for arrivals in by_call.values():
        times = sorted(arrivals)
        for n, (a, b) in enumerate(zip(times, times[1:]), start=1):
            allowed = max(2.0 ** (n - 1), min(retry_after, cap))
            if (b - a) - allowed > worst:
                worst = (b - a) - allowed
                worst_waits = [round(y - x, 2) for x, y in zip(times, times[1:])]
            waits_over += (b - a) > allowed + slack
    refused = sum(len(x) - 1 for x in by_call.values())
    records = [r for r in records if r["runId"] in expected]
    statuses = Counter(r["status"] for r in records)
    scored_runs = {r["runId"] for r in records if r["status"] == "scored"}
    return {
        "runs": len(expected), "scored": len(scored_runs & expected), "statuses": dict(statuses),
        "calls": len(by_call), "requests": len(requests), "refused": refused,
        "attempts": dict(sorted(attempts.items())), "max_attempts": max(attempts, default=0),
        "bound": 1 + max_retries, "waits_over": waits_over, "worst_excess": worst,
        "worst_waits": worst_waits,
        "cap": cap, "retry_after": retry_after, "exit_code": code, "seconds": seconds,
    }


def measure_auth(runs: int = 9, seed: int = 13, wait: float = 60.0) -> dict[str, Any]:
    """A judge that answers 401 to everything: attempts per call, configuration error lines."""
    from tests.e2e._serve import ServeProcess, read_jsonl
    from tests.fakes.fake_anthropic import FakeAnthropic, unauthorized

    batches = agent_runs(max(1, runs // 2), random.Random(seed), unique_text=True)
    expected = run_ids(batches)
    with tempfile.TemporaryDirectory(prefix="scorecar-storm-") as name, \
            FakeAnthropic(default_reply=lambda request: unauthorized()) as fake:
        tmp = Path(name)
        serve = ServeProcess(_serve_config(tmp, fake.base_url, 3, 1.0), tmp,
                             env={KEY_ENV: fake.api_key})
        try:
            serve.start(timeout=60)
            _send(serve, batches)
            deadline = time.monotonic() + wait
            records: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                records = read_jsonl(tmp / "scores.jsonl")
                if {r["runId"] for r in records} >= expected:
                    break
                time.sleep(0.25)
            time.sleep(0.5)
            serve.terminate(timeout=60)
        finally:
            serve.kill()
        per_call = Counter(_key(r) for r in fake.message_requests)
    config_errors = [line for line in serve.lines if "CONFIGURATION ERROR" in line]
    return {"runs": len(expected), "records": len(records),
            "failed": sum(r["status"] == "failed" for r in records),
            "calls": len(per_call), "max_attempts": max(per_call.values(), default=0),
            "config_errors": len(config_errors)}


def storm_ok(r: dict[str, Any]) -> bool:
    """Every storm goal met."""
    return r["scored"] == r["runs"] and r["max_attempts"] <= r["bound"] and r["waits_over"] == 0


def auth_ok(r: dict[str, Any]) -> bool:
    """Every 401 goal met."""
    return r["max_attempts"] == 1 and r["config_errors"] == 1 and r["failed"] == r["records"] > 0


def main(quick: bool = False) -> int:
    """Print the judge-storm figure; 0 when every goal is met."""
    s = measure_storm(runs=60 if quick else 600)
    a = measure_auth()
    print(f"judge storm{' (--quick)' if quick else ''}: {s['runs']} runs, {s['calls']} judge "
          f"calls, {s['requests']} requests of which {s['refused']} answered 429/529 "
          f"({s['refused'] / max(1, s['requests']):.0%}), Retry-After {s['retry_after']:g} s, "
          f"max_retry_after {s['cap']:g} s, {s['seconds']:.0f} s")
    print(f"  runs scored               {s['scored']:>5} of {s['runs']}   goal all  "
          f"{mark(s['scored'] == s['runs'])}   (records: {s['statuses']})")
    print(f"  attempts per call (max)   {s['max_attempts']:>5}   goal <= {s['bound']}  "
          f"{mark(s['max_attempts'] <= s['bound'])}   (histogram {s['attempts']})")
    print(f"  waits over the cap        {s['waits_over']:>5}   goal 0  "
          f"{mark(s['waits_over'] == 0)}   (worst: {s['worst_excess']:+.2f} s vs the allowed "
          "wait)")
    print(f"judge 401: {a['runs']} runs, {a['calls']} judge calls, {a['failed']} failed records")
    print(f"  attempts per call (max)   {a['max_attempts']:>5}   goal 1  "
          f"{mark(a['max_attempts'] == 1)}")
    print(f"  configuration error lines {a['config_errors']:>5}   goal 1  "
          f"{mark(a['config_errors'] == 1)}")
    return 0 if storm_ok(s) and auth_ok(a) else 1


if __name__ == "__main__":
    raise SystemExit(main("--quick" in sys.argv))

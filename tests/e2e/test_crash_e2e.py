"""kill -9 at random moments while agents send traces and the sidecar scores and exports them:
after restarts, every acknowledged span's run is scored, and no score id ever has two values."""

from __future__ import annotations

import dataclasses
import random
import time
from collections import defaultdict
from pathlib import Path

import pytest

from collector.otlp import read_otlp_file
from tests.e2e._serve import ServeProcess, base_config, export_or_die, read_jsonl
from transforms import Span, build_runs, group_traces

ROOT = Path(__file__).resolve().parents[2]


def _copies(n: int, rng: random.Random) -> list[list[Span]]:
    """`n` copies of the weather agent's two traces, each with fresh trace ids."""
    spans = read_otlp_file(ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl").spans
    out = []
    for _ in range(n):
        ids = {t: f"{rng.getrandbits(128):032x}" for t in {s.trace_id for s in spans}}
        out.append([dataclasses.replace(s, trace_id=ids[s.trace_id]) for s in spans])
    return out


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_no_run_and_changes_no_score(tmp_path: Path) -> None:
    rng = random.Random(20261201)
    batches = _copies(40, rng)
    expected_runs = {r.run_id for batch in batches
                     for t in group_traces(batch).values() for r in build_runs(t).runs}
    config = base_config(tmp_path, scorers=[{"scorer": "tests.e2e.e2e_scorers:random_score"},
                                            {"scorer": "builtin:tone"}])
    # run building in a worker process: it must survive (and never outlive) every kill too
    config["assembly"] = {"quiet_period": 0.1, "max_wait": 5.0, "build_processes": 1}
    serve = ServeProcess(config, tmp_path).start()
    kills = 0

    def restart() -> None:
        nonlocal kills
        serve.kill()
        kills += 1
        serve.start()

    try:
        i = 0
        while i < len(batches):
            if rng.random() < 0.12:  # die between requests …
                restart()
            # … or while one is in flight
            kill_after = rng.uniform(0, 0.02) if rng.random() < 0.08 else None
            if export_or_die(serve, batches[i], kill_after):
                i += 1  # acknowledged: must be scored whatever happens next
            if serve.proc is not None and serve.proc.poll() is not None:
                kills += 1
                serve.start()
        # die while assembling, scoring and exporting
        for _ in range(3):
            time.sleep(rng.uniform(0.05, 0.6))
            restart()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            records = read_jsonl(tmp_path / "scores.jsonl")
            if {r["runId"] for r in records} >= expected_runs and \
                    len({r["id"] for r in records}) >= 2 * len(expected_runs):
                break
            time.sleep(0.2)
        code = serve.terminate()
    finally:
        serve.kill()
    assert code == 0
    assert kills >= 3
    records = read_jsonl(tmp_path / "scores.jsonl")
    assert {r["runId"] for r in records} == expected_runs, "a run was lost"
    values: dict[str, set[float | None]] = defaultdict(set)
    for r in records:
        values[r["id"]].add(r["score"])
    assert len(values) == 2 * len(expected_runs)
    changed = {k: v for k, v in values.items() if len(v) > 1}
    assert not changed, f"score ids with two values: {changed}"

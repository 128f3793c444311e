"""`scorecar score FILE…`: the same records offline (source TEST), filters and sampling applied."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from collector.cli import inspect_files

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"
CAPTURES = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl"))


def _score(tmp: Path, files: list[Path], config: dict | None) -> tuple[int, list[dict], str]:
    args = [sys.executable, "-m", "collector.cli", "score", *map(str, files),
            "-o", str(tmp / "out.jsonl"), "--no-progress"]
    if config is not None:
        (tmp / "c.yaml").write_text(yaml.safe_dump(config))
        args += ["-c", str(tmp / "c.yaml")]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    out = tmp / "out.jsonl"
    records = [json.loads(x) for x in out.read_text().splitlines()] if out.exists() else []
    return done.returncode, records, done.stderr


def test_score_writes_one_test_record_per_run_and_scorer(tmp_path: Path) -> None:
    runs = inspect_files(CAPTURES).runs
    config = {"scorers": [
        {"scorer": "builtin:completeness"},
        {"scorer": "builtin:tool_call_accuracy", "options": {"expected_tool": "get_weather"},
         "filter": {"conventions": ["mastra"]}},
        {"scorer": "builtin:tone", "sampling": {"type": "ratio", "rate": 0.5}},
    ]}
    code, records, err = _score(tmp_path, CAPTURES, config)
    assert code == 0, err
    assert all(r["source"] == "TEST" for r in records)
    by = {s: [r for r in records if r["scorerId"] == s] for s in
          ("completeness", "tool_call_accuracy", "tone")}
    assert {r["runId"] for r in by["completeness"]} == {r.run_id for r in runs}
    mastra = [r for r in runs if r.target and r.target.convention == "mastra"]
    assert {r["runId"] for r in by["tool_call_accuracy"]} == {r.run_id for r in mastra}
    assert 0 < len(by["tone"]) < len(runs)  # sampled by trace id
    assert f"{len(runs)} run(s)" in err and "filtered" in err and "sampled_out" in err
    # the same run → the same score id as the sidecar gives it (uuid5 of trace, span, scorer)
    import uuid
    r = by["completeness"][0]
    assert r["id"] == str(uuid.uuid5(uuid.NAMESPACE_URL,
                                     f"scorecar:score:{r['traceId']}:{r['spanId']}:completeness"))


def test_score_without_a_config_runs_the_demo_scorers_and_refuses_unreadable_input(
        tmp_path: Path) -> None:
    code, records, err = _score(tmp_path, [EXAMPLE], None)
    assert code == 0, err
    assert len(records) == 2 * 4 and {r["status"] for r in records} == {"scored"}
    code, _, err = _score(tmp_path, [tmp_path / "missing.jsonl"], None)
    assert code == 2 and "cannot read" in err

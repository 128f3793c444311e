"""`scorecar inspect` on the captures of the libraries with an expectation file: what a user runs to see what scorers will get.
Every run it prints, read back, matches the capture's expectation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from collector.cli import main
from scorers.types import ScorerRun
from tests.transforms._runs import compare_run

CAPTURES = Path(__file__).resolve().parents[1] / "testdata" / "captures"
LIBRARIES = ("vercel-ai-v6", "vercel-ai-v7", "anthropic-sdk", "openlit", "openai-agents",
         "pydantic-ai", "langfuse")


@pytest.mark.parametrize("library", LIBRARIES)
def test_inspect_prints_the_expected_runs(library: str) -> None:
    expectations = sorted((CAPTURES / library).glob("*.expected.json"))
    assert expectations
    for exp_path in expectations:
        capture = exp_path.with_name(exp_path.name.replace(".expected.json", ".otlp.jsonl"))
        result = CliRunner().invoke(main, ["inspect", str(capture)])
        assert result.exit_code == 0, result.output
        runs = [ScorerRun.model_validate(json.loads(line))
                for line in result.stdout.splitlines() if line.strip()]
        expected = json.loads(exp_path.read_text(encoding="utf-8"))["runs"]
        assert len(runs) == len(expected), (exp_path.name, result.stderr)
        problems = [f"{exp_path.name} run {i}: {p}" for i, (e, r) in enumerate(
            zip(expected, runs)) for p in compare_run(e, r)]
        assert not problems, "\n".join(problems)
        assert f"{len(runs)} run(s)" in result.stderr

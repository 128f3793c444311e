"""The README examples run as users would run them: as scripts, in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fakes.fake_anthropic import FakeAnthropic, structured, text

ROOT = Path(__file__).resolve().parent.parent


def run_example(name: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, env={**clean, **(env or {})})


def test_function_scorer_example_prints_its_score() -> None:
    done = run_example("function_scorer.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "score: 0.667",
        "reason: The answer covers 67% of the question's keywords ['flows', 'paris', 'river'].",
    ]


def test_judge_scorer_example_against_the_fake_server(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        structured({"relevant_statements": 1, "total_statements": 2},
                   input_tokens=120, output_tokens=20),
        text("Only one of the two statements is about the river.", input_tokens=60,
             output_tokens=15))
    done = run_example("judge_scorer.py", fake_anthropic.env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "score: 0.5",
        "reason: Only one of the two statements is about the river.",
        "judge calls: 2, tokens: 215",
    ]
    analyze, reason = fake_anthropic.message_requests
    assert "<question>Which river flows through Paris?</question>" in analyze.user_text
    assert "output_config" in analyze.body
    assert "explain why the answer scored 0.50" in reason.user_text
    auth = analyze.headers.get("x-api-key") or analyze.headers.get("authorization", "")
    assert fake_anthropic.api_key in auth


def test_judge_scorer_example_reports_a_bad_key_without_retrying(
        fake_anthropic: FakeAnthropic) -> None:
    done = run_example("judge_scorer.py",
                       {**fake_anthropic.env(), "ANTHROPIC_API_KEY": "sk-ant-revoked"})
    assert done.returncode == 1  # sys.exit(message)
    assert done.stderr.strip() == (
        "scoring failed in step analyze: JudgeAuthError: the judge refused our credentials "
        "(HTTP 401): check the API key and its permissions")
    [refused] = fake_anthropic.take_rejections()  # the fake refused the key, as the API does
    assert (refused.status, refused.message) == (401, "invalid x-api-key")
    assert len(fake_anthropic.message_requests) == 1


async def test_judge_scorer_example_offline_with_a_scripted_provider() -> None:
    import importlib.util

    from scorers import AgentRunInput, Message, ScorerRun
    from scorers.testing import ScriptedProvider

    spec = importlib.util.spec_from_file_location("judge_scorer_example",
                                                  ROOT / "examples" / "judge_scorer.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    judge = ScriptedProvider([{"relevant_statements": 2, "total_statements": 2}, "All on topic."])
    run = ScorerRun(input=AgentRunInput(input_messages=[Message.from_text("user", "River?")]),
                    output=[Message.from_text("assistant", "The Seine.")])
    result = await example.relevance.run(run, judge_provider=judge)
    assert (result.score, result.reason) == (1.0, "All on topic.")
    assert "<answer>The Seine.</answer>" in judge.requests[0].messages[-1]["content"]

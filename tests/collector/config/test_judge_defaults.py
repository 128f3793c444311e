"""The configured judge is every scorer's default: a user scorer loaded by import path whose
`Judge(...)` sets nothing gets the judge block's retries, key and endpoint, as built-ins do.

Over HTTP against the fake Anthropic server, through the sidecar's own path (`load_config` →
`build_scorer_specs` → `run_scorer` under the `LimitedProvider`). The waits are recorded by the
judge's `sleep` seam (no wall clock is spent).
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from collector._telemetry import Metrics
from collector.config import build_scorer_specs, load_config, render_effective_config
from collector.scoring import LimitedProvider, run_scorer
from scorers import ScorerResult, ScorerRun
from scorers.errors import ConfigError
from scorers.judge import default_provider
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, error, structured
from tests.fakes.fake_openai import FakeOpenAI
from tests.fakes.fake_openai import structured as structured_openai
from tests.fakes.metrics import sample

USER_MODULE = '''
from scorers import Judge, PromptStep, create_scorer

quality = create_scorer(
    id="quality", description="How good the answer is.",
    judge=Judge(instructions="You grade answers."),        # sets nothing else
).generate_score(PromptStep(description="score",
                            create_prompt=lambda run, results: f"Grade {run.input}."))
'''

FAILURES = [0, 1, 0, 2, 0, 1, 3, 4]
"""Judge calls answered 429/529 before the first success, per run (cycled over 40 runs): about
half of all calls fail; a run failing 4 times is past `max_retries: 3`."""
HINT_429, HINT_529 = 2.5, 3.5


class Waits(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _user_scorer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_scorers.py").write_text(USER_MODULE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_scorers", raising=False)


async def test_user_scorer_is_retried_under_the_judge_blocks_policy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_anthropic: FakeAnthropic) -> None:
    _user_scorer(tmp_path, monkeypatch)
    seen: dict[str, int] = {}
    answered_failed: dict[str, list[float]] = {}

    def answer(request: RecordedRequest) -> Reply:
        run = request.user_text.split()[1].rstrip(".")
        calls = seen[run] = seen.get(run, 0) + 1
        if calls <= FAILURES[int(run.split("-")[1]) % len(FAILURES)]:
            if calls % 2:
                answered_failed.setdefault(run, []).append(HINT_429)
                return error(429, "rate_limit_error", "slow down",
                             headers={"retry-after": str(HINT_429)})
            answered_failed.setdefault(run, []).append(HINT_529)
            return error(529, "overloaded_error", "Overloaded",
                         headers={"retry-after-ms": str(int(HINT_529 * 1000))})
        return structured({"score": 0.8})

    fake_anthropic.default_reply = answer
    config_path = tmp_path / "scorecar.yaml"
    config_path.write_text(textwrap.dedent(f"""
        judge: {{base_url: "{fake_anthropic.base_url}", max_retries: 3, max_retry_after: 30}}
        scorers:
          - scorer: "my_scorers:quality"
    """), encoding="utf-8")
    config = load_config(config_path, env={"ANTHROPIC_API_KEY": fake_anthropic.api_key})
    [spec] = build_scorer_specs(config)
    waits = Waits()
    assert spec.scorer.judge is not None
    judge = spec.scorer.judge.model_copy(update={"sleep": waits})
    spec = dataclasses.replace(spec, scorer=dataclasses.replace(spec.scorer, judge=judge))
    limited = LimitedProvider(default_provider(), metrics=Metrics(), requests_per_minute=None)

    runs = [f"run-{i}" for i in range(40)]
    outcomes: list[Any] = await asyncio.gather(*(
        run_scorer(spec, ScorerRun(input=name, output="answer"), provider=limited)
        for name in runs))

    for name, (outcome, _expired) in zip(runs, outcomes, strict=True):
        failures = FAILURES[int(name.split("-")[1]) % len(FAILURES)]
        if failures <= 3:  # recoverable within 1 + max_retries attempts: scored
            assert isinstance(outcome, ScorerResult), (name, outcome)
            assert outcome.score == 0.8
            assert seen[name] == failures + 1
        else:
            assert not isinstance(outcome, ScorerResult), name
            assert seen[name] == 4  # 1 + max_retries, never more
    retried = [hint for name in runs
               for hint in answered_failed.get(name, [])[:3]]  # the 4th failure is not retried
    assert len(waits) == len(retried)
    assert min(waits) >= HINT_429  # no wait shorter than the server's hint
    assert sum(1 for w in waits if w >= HINT_529) >= retried.count(HINT_529)
    failed_calls = sum(len(v) for v in answered_failed.values())
    assert 0.4 <= failed_calls / sum(seen.values()) <= 0.7  # about half the calls failed


async def test_a_judge_that_sets_its_own_value_keeps_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_anthropic: FakeAnthropic) -> None:
    (tmp_path / "my_scorers.py").write_text(USER_MODULE.replace(
        'Judge(instructions="You grade answers.")',
        'Judge(instructions="You grade answers.", error_processors=[], timeout=7.0)'),
        encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_scorers", raising=False)
    config_path = tmp_path / "scorecar.yaml"
    config_path.write_text(f'judge: {{base_url: "{fake_anthropic.base_url}", max_retries: 3, '
                           f'timeout: 20, redact_pii: true}}\n'
                           'scorers: [{scorer: "my_scorers:quality"}]\n', encoding="utf-8")
    config = load_config(config_path, env={"ANTHROPIC_API_KEY": fake_anthropic.api_key})
    [spec] = build_scorer_specs(config)
    judge = spec.scorer.judge
    assert judge is not None
    assert judge.error_processors == [] and judge.timeout == 7.0  # its own values win
    assert judge.base_url == fake_anthropic.base_url  # unset: from the judge block
    assert judge.redact_pii is True  # from the judge block
    fake_anthropic.enqueue(error(429, "rate_limit_error", "slow down"))
    outcome, _ = await run_scorer(spec, ScorerRun(input="run-0", output="a"))
    assert not isinstance(outcome, ScorerResult)  # no retries: it said so itself
    assert len(fake_anthropic.message_requests) == 1


# --------------------------------------------------------------------------- named judges


async def test_named_judges_each_with_its_own_endpoint_key_and_limits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_anthropic: FakeAnthropic,
        fake_openai: FakeOpenAI) -> None:
    _user_scorer(tmp_path, monkeypatch)
    config_path = tmp_path / "scorecar.yaml"
    config_path.write_text(textwrap.dedent(f"""
        judge: {{base_url: "{fake_anthropic.base_url}"}}
        judges:
          strong:
            model: "openai/gpt-4.1"
            base_url: "{fake_openai.base_url}"
            api_key_env: STRONG_KEY
            max_concurrency: 2
            daily_token_budget: 1000
            headers: {{X-Team: evals}}
        scorers:
          - scorer: "my_scorers:quality"
            judge: strong
          - scorer: "builtin:toxicity"
    """), encoding="utf-8")
    env = {"ANTHROPIC_API_KEY": fake_anthropic.api_key, "STRONG_KEY": fake_openai.api_key}
    config = load_config(config_path, env=env)
    quality, toxicity = build_scorer_specs(config)
    assert (quality.judge, toxicity.judge) == ("strong", "default")
    assert quality.scorer.judge is not None and quality.scorer.judge.model == "openai/gpt-4.1"
    assert config.judges["strong"].max_concurrency == 2

    metrics = Metrics()
    strong = LimitedProvider(default_provider(), metrics=metrics, requests_per_minute=None)
    fake_openai.enqueue(structured_openai({"score": 0.9}))
    outcome, _ = await run_scorer(quality, ScorerRun(input="run-1", output="a"), provider=strong)
    assert isinstance(outcome, ScorerResult) and outcome.score == 0.9
    [sent] = fake_openai.chat_requests
    assert sent.body["model"] == "gpt-4.1"
    assert {k.lower(): v for k, v in sent.headers.items()}["x-team"] == "evals"
    assert sample(metrics, "scorecar_judge_requests_total", provider="openai", model="gpt-4.1",
                  outcome="ok") == 1

    shown = render_effective_config(config)
    assert "# resolved scorers: 2" in shown
    assert "quality  (my_scorers:quality, judge strong: openai/gpt-4.1" in shown
    assert "toxicity  (builtin:toxicity, judge default: claude-" in shown
    assert fake_openai.api_key not in shown and "evals" not in shown  # key and headers masked


def test_unknown_judge_names_and_missing_keys_are_reported_with_paths(tmp_path: Path) -> None:
    path = tmp_path / "scorecar.yaml"
    path.write_text(textwrap.dedent("""
        judges:
          strong: {model: "openai/gpt-4.1"}
          local: {model: "openai/llama3.1", base_url: "http://127.0.0.1:11434/v1"}
          default: {model: "x"}
          odd: {model: "mistral/large"}
        scorers:
          - {scorer: "builtin:toxicity", judge: strnog}
          - {scorer: "builtin:bias", judge: strong}
          - {scorer: "builtin:hallucination", judge: local}
    """), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    text = str(info.value)
    assert "judges.default: 'default' is the judge: block" in text
    assert "judges.odd.model" in text and "unknown judge provider 'mistral'" in text
    path.write_text(path.read_text().replace('  default: {model: "x"}\n', "")
                    .replace('  odd: {model: "mistral/large"}\n', ""))
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    problems = info.value.problems  # type: ignore[attr-defined]
    assert any(p.startswith("scorers[0].judge") and "no judge named 'strnog'" in p
               for p in problems), problems
    assert any(p.startswith("judges.strong") and "OPENAI_API_KEY" in p and "bias" in p
               for p in problems), problems
    assert not any(p.startswith("judges.local") for p in problems), problems  # no key needed


def test_model_in_router_form_from_the_environment(tmp_path: Path) -> None:
    config = load_config(None, env={"SCORECAR_JUDGE__MODEL": "openai/gpt-4.1-mini",
                                    "OPENAI_API_KEY": "sk-x"})
    assert config.judge.model == "openai/gpt-4.1-mini" and config.judge.provider == "openai"
    assert config.judge.api_key is not None and config.judge.key_variable == "OPENAI_API_KEY"
    with pytest.raises(ConfigError, match="unknown judge provider"):
        load_config(None, env={"SCORECAR_JUDGE__MODEL": "mistral/large"})

"""Named judges in the worker pool: each scorer's calls go through its own judge's limits and
budget; quota and unknown-model failures are said once per judge, never retried, and counted."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from collector._telemetry import Metrics
from collector.scoring import (
    LimitedProvider,
    MemoryQueue,
    Scheduler,
    ScorerSpec,
    TokenBudget,
    WorkerPool,
)
from scorers import Judge, PromptStep, ScorerRun, StreamErrorRetryProcessor, create_scorer
from scorers.judge import default_provider
from tests.fakes.fake_openai import ErrorReply, FakeOpenAI, insufficient_quota, structured
from tests.fakes.metrics import sample
from tests.fakes.sinks import RecordingSink


def openai_scorer(fake: FakeOpenAI, scorer_id: str, model: str = "gpt-4.1-mini") -> Any:
    judge = Judge(model=f"openai/{model}", instructions="Rate.", base_url=fake.base_url,
                  api_key=fake.api_key,
                  error_processors=[StreamErrorRetryProcessor(max_retries=3)])
    return create_scorer(id=scorer_id, description="j", judge=judge).generate_score(
        PromptStep(description="score", create_prompt=lambda run, results: "Rate it."))


async def run_pool(specs: list[ScorerSpec], runs: list[ScorerRun], sink: RecordingSink,
                   **pool_kw: Any) -> None:
    queue = MemoryQueue()
    Scheduler(specs, queue, Metrics()).schedule(runs)
    pool = WorkerPool(specs, queue, [sink], pool_kw.pop("metrics"), poll_interval=0.02,
                      backoff_initial=0.01, backoff_max=0.05, **pool_kw)
    await pool.start()
    try:
        await pool.drain(timeout=20)
    finally:
        await pool.stop(grace=5)


async def test_quota_and_unknown_model_are_said_once_per_judge_and_counted(
        fake_openai: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    def reply(request: Any) -> Any:
        if request.body["model"] == "gone-model":
            return ErrorReply(404, "The model `gone-model` does not exist",
                              "invalid_request_error", "model_not_found")
        return insufficient_quota()

    fake_openai.default_reply = reply
    metrics = Metrics()
    strong = LimitedProvider(default_provider(), metrics=metrics, requests_per_minute=None)
    specs = [ScorerSpec(openai_scorer(fake_openai, "broke"), judge="default"),
             ScorerSpec(openai_scorer(fake_openai, "missing", "gone-model"), judge="strong")]
    sink = RecordingSink()
    runs = [ScorerRun(input=f"q{i}", output="a") for i in range(3)]
    with caplog.at_level(logging.ERROR, logger="collector.scoring._score"):
        await run_pool(specs, runs, sink, metrics=metrics,
                       provider=LimitedProvider(default_provider(), metrics=metrics,
                                                requests_per_minute=None),
                       judges={"strong": (strong, TokenBudget(None))})
    assert [r.status for r in sink.records] == ["failed"] * 6
    assert len(fake_openai.chat_requests) == 6  # never retried, though max_retries is 3
    reports = [r.getMessage() for r in caplog.records if "CONFIGURATION ERROR" in r.getMessage()]
    assert len(reports) == 2, reports
    assert any("'default'" in r and "quota" in r for r in reports)
    assert any("'strong'" in r and "model" in r for r in reports)
    assert sample(metrics, "scorecar_judge_requests_total", provider="openai",
                  model="gpt-4.1-mini", outcome="quota") == 3
    assert sample(metrics, "scorecar_judge_requests_total", provider="openai",
                  model="gone-model", outcome="unknown_model") == 3


async def test_each_named_judge_has_its_own_budget(fake_openai: FakeOpenAI) -> None:
    fake_openai.default_reply = structured({"score": 0.5})
    metrics = Metrics()
    spent = TokenBudget(10)
    spent.charge(10)  # the strong judge's daily budget is used up
    strong = LimitedProvider(default_provider(), metrics=metrics, budget=spent)
    default = LimitedProvider(default_provider(), metrics=metrics)
    specs = [ScorerSpec(openai_scorer(fake_openai, "cheap"), judge="default"),
             ScorerSpec(openai_scorer(fake_openai, "pricey"), judge="strong")]
    sink = RecordingSink()
    await run_pool(specs, [ScorerRun(input="q", output="a")], sink, metrics=metrics,
                   provider=default, budget=default.budget, judges={"strong": (strong, spent)})
    status = {r.scorer_id: r.status for r in sink.records}
    assert status == {"cheap": "scored", "pricey": "skipped"}
    assert sample(metrics, "scorecar_runs_skipped_total", scorer="pricey",
                  reason="daily_token_budget") == 1

"""Judge limits: the concurrency cap holds, the token buckets make calls wait, the daily budget
resets at UTC midnight, and every call is counted by outcome (real SDK errors from the fake
Anthropic server)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from collector._telemetry import Metrics
from collector.scoring import LimitedProvider, TokenBudget, estimate_tokens
from scorers import JudgeReply, JudgeRequest
from scorers.judge import default_provider
from tests.fakes.fake_anthropic import (
    FakeAnthropic,
    context_too_long,
    rate_limited,
    structured,
    text,
    unauthorized,
)
from tests.fakes.metrics import sample

MODEL = "claude-haiku-4-5"


def request(text: str = "Rate this answer.", **kw: object) -> JudgeRequest:
    return JudgeRequest(model=MODEL, system="You are a judge.",
                        messages=[{"role": "user", "content": text}], max_tokens=64,
                        **kw)  # type: ignore[arg-type]


class SlowProvider:
    """Counts calls in flight; each call waits until released."""

    def __init__(self, input_tokens: int = 10, output_tokens: int = 5) -> None:
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = 0
        self.gate = asyncio.Event()
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await self.gate.wait()
        finally:
            self.in_flight -= 1
        return JudgeReply(text="ok", input_tokens=self.input_tokens,
                          output_tokens=self.output_tokens)


class LoopClock:
    """The running loop's clock, moved by hand: the token buckets (aiolimiter reads
    `loop.time()` and sets `loop.call_at` timers) wait without spending wall-clock time."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        loop = asyncio.get_running_loop()
        self.now = loop.time()
        monkeypatch.setattr(loop, "time", lambda: self.now)

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def settle() -> None:
    """Let every task that can run, run (no timer is due unless the clock moved)."""
    for _ in range(20):
        await asyncio.sleep(0)


async def test_concurrency_cap_holds() -> None:
    inner = SlowProvider()
    limited = LimitedProvider(inner, max_concurrency=3, requests_per_minute=None,
                              metrics=Metrics())
    calls = [asyncio.create_task(limited.complete(request())) for _ in range(10)]
    await settle()  # every task reaches the semaphore
    assert inner.in_flight == 3
    inner.gate.set()
    replies = await asyncio.gather(*calls)
    assert len(replies) == 10
    assert inner.max_in_flight == 3


async def test_requests_per_minute_bucket_makes_the_next_call_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = LoopClock(monkeypatch)
    inner = SlowProvider()
    inner.gate.set()
    metrics = Metrics()
    limited = LimitedProvider(inner, max_concurrency=10, requests_per_minute=2, metrics=metrics)
    await limited.complete(request())
    await limited.complete(request())
    third = asyncio.create_task(limited.complete(request()))
    await settle()
    assert not third.done() and inner.calls == 2
    clock.advance(29.5)  # the bucket refills one call per 30 s
    await settle()
    assert not third.done() and inner.calls == 2
    clock.advance(1.0)
    await settle()
    assert third.done() and inner.calls == 3
    await third
    assert sample(metrics, "scorecar_judge_requests_total", provider="anthropic", model=MODEL,
                  outcome="ok") == 3


async def test_tokens_per_minute_charges_the_estimate_then_the_real_usage(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = LoopClock(monkeypatch)
    inner = SlowProvider(input_tokens=150, output_tokens=50)
    inner.gate.set()
    metrics = Metrics()
    limited = LimitedProvider(inner, max_concurrency=10, requests_per_minute=None,
                              tokens_per_minute=300, metrics=metrics)
    small = request("x")
    assert estimate_tokens(small) < 20
    # each call is charged its estimate (~5) plus what the previous call used beyond its own
    # estimate: 5, then 5 + 195, then 5 -> ~210 of 300; the next one owes 195 and must wait
    for _ in range(3):
        await limited.complete(small)
    blocked = asyncio.create_task(limited.complete(small))
    await settle()
    assert not blocked.done() and inner.calls == 3
    clock.advance(1.0)  # the bucket drips 5 tokens per second: not enough yet
    await settle()
    assert not blocked.done() and inner.calls == 3
    clock.advance(40.0)  # ~195 tokens owed at 5 per second
    await settle()
    assert blocked.done() and inner.calls == 4
    await blocked
    assert sample(metrics, "scorecar_judge_tokens_total", provider="anthropic", model=MODEL,
                  type="input") == 600
    assert sample(metrics, "scorecar_judge_tokens_total", provider="anthropic", model=MODEL,
                  type="output") == 200
    assert limited.budget.used == 800


def test_token_budget_resets_at_utc_midnight() -> None:
    now = datetime(2026, 3, 1, 23, 59, tzinfo=UTC)
    budget = TokenBudget(100, clock=lambda: now)
    budget.charge(60)
    assert not budget.exhausted()
    budget.charge(40)
    assert budget.exhausted()
    now += timedelta(minutes=2)
    assert not budget.exhausted() and budget.used == 0
    assert not TokenBudget(None).exhausted()


async def test_budget_is_charged_by_real_usage() -> None:
    inner = SlowProvider(input_tokens=70, output_tokens=40)
    inner.gate.set()
    limited = LimitedProvider(inner, requests_per_minute=None, metrics=Metrics(),
                              daily_token_budget=100)
    assert not limited.budget.exhausted()
    await limited.complete(request())
    assert limited.budget.exhausted()


async def test_outcomes_are_classified_from_real_sdk_errors(fake_anthropic: FakeAnthropic) -> None:
    metrics = Metrics()
    limited = LimitedProvider(default_provider(), metrics=metrics)
    req = request(api_key=fake_anthropic.api_key, base_url=fake_anthropic.base_url)
    fake_anthropic.enqueue(unauthorized(), rate_limited(retry_after=0), context_too_long(),
                           text("Fine."))
    for _ in range(3):
        with pytest.raises(Exception):  # noqa: B017 - the SDK's own error classes
            await limited.complete(req)
    reply = await limited.complete(req)
    assert reply.text == "Fine."
    counts = {outcome: sample(metrics, "scorecar_judge_requests_total", provider="anthropic",
                              model=MODEL, outcome=outcome)
              for outcome in ("ok", "retryable", "auth", "refused", "error")}
    assert counts == {"ok": 1, "retryable": 1, "auth": 1, "refused": 1, "error": 0}
    assert sample(metrics, "scorecar_judge_request_duration_seconds_count",
                  provider="anthropic", model=MODEL) == 4
    assert sample(metrics, "scorecar_judge_tokens_total", provider="anthropic", model=MODEL,
                  type="input") == 11
    assert sample(metrics, "scorecar_judge_tokens_total", provider="anthropic", model=MODEL,
                  type="cached_input") == 0


async def test_judge_block_credentials_reach_scorers_without_their_own(
        fake_anthropic: FakeAnthropic) -> None:
    """A user scorer's `Judge(instructions=…)` sets no key or URL: the sidecar's judge block
    supplies them (and never overrides a scorer that sets its own)."""
    from scorers import Judge, PromptStep, create_scorer, use_judge_provider

    scorer = create_scorer(id="mine", description="d", judge=Judge(instructions="Rate it.")) \
        .generate_score(PromptStep(description="score", create_prompt=lambda run, results: "x"))
    limited = LimitedProvider(default_provider(), metrics=Metrics(),
                              api_key="sk-block-key", base_url=fake_anthropic.base_url)
    fake_anthropic.api_key = "sk-block-key"  # the server refuses any other key
    fake_anthropic.enqueue(structured({"score": 0.75}))
    with use_judge_provider(limited):
        result = await scorer.run({"input": {"inputMessages": []}, "output": []})
    assert result.score == 0.75
    [sent] = fake_anthropic.message_requests
    assert "sk-block-key" in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])

    fake_anthropic.clear()
    fake_anthropic.api_key = "sk-own-key"
    fake_anthropic.enqueue(structured({"score": 0.5}))
    own = create_scorer(id="own", description="d",
                        judge=Judge(instructions="Rate it.", api_key="sk-own-key",
                                    base_url=fake_anthropic.base_url)) \
        .generate_score(PromptStep(description="score", create_prompt=lambda run, results: "x"))
    with use_judge_provider(LimitedProvider(default_provider(), metrics=Metrics(),
                                            api_key="sk-block-key", base_url="http://unused")):
        assert (await own.run({"input": {"inputMessages": []}, "output": []})).score == 0.5
    [sent] = fake_anthropic.message_requests
    assert "sk-own-key" in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])

"""Judge limits (DESIGN §5): global concurrency, requests and tokens per minute, a daily token
budget, and the judge metrics — one `JudgeProvider` wrapped around the real one.

The workers run every job inside `use_judge_provider(limited)`, so every judge call of every
scorer (that has no provider of its own) goes through `LimitedProvider.complete`. Retries of the
judge's error processors are separate calls, so each one waits for its own turn here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import time
import weakref
from collections.abc import Callable
from datetime import UTC, date, datetime
from typing import Literal

from aiolimiter import AsyncLimiter

from collector._telemetry import Metrics
from scorers.errors import JudgeAuthError, JudgeRequestError, JudgeUnavailableError
from scorers.judge import JudgeProvider, JudgeReply, JudgeRequest, load_provider_sdk

__all__ = ["LimitedProvider", "Outcome", "SdkWarmup", "TokenBudget", "classify_error",
           "estimate_tokens"]

Outcome = Literal["ok", "retryable", "auth", "quota", "unknown_model", "refused", "error"]
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached",
                         "billing_not_active"})
"""Provider error codes for a used-up quota (never retried; said once per judge)."""
UNKNOWN_MODEL_CODES = frozenset({"model_not_found", "not_found_error", "DeploymentNotFound"})
"""Provider error codes for a model or deployment the provider does not know."""
CHARS_PER_TOKEN = 4
"""Rough characters per token, for the estimate charged before a call."""


def _utcnow() -> datetime:
    return datetime.now(UTC)


class TokenBudget:
    """A daily judge token budget (input + output tokens) that resets at 00:00 UTC.

    Args:
        limit: tokens per UTC day; None means no budget (never exhausted).
        clock: the current time, timezone-aware (injected in tests).
    """

    def __init__(self, limit: int | None, *, clock: Callable[[], datetime] = _utcnow) -> None:
        self.limit = limit
        self._clock = clock
        self._day: date = self._today()
        self._used = 0

    def _today(self) -> date:
        return self._clock().astimezone(UTC).date()

    def _roll(self) -> None:
        today = self._today()
        if today != self._day:
            self._day = today
            self._used = 0

    @property
    def used(self) -> int:
        """Tokens charged today (UTC)."""
        self._roll()
        return self._used

    def charge(self, tokens: int) -> None:
        """Count `tokens` against today's budget."""
        self._roll()
        self._used += max(0, tokens)

    def exhausted(self) -> bool:
        """True when today's budget is used up (jobs of judge scorers are then skipped)."""
        if self.limit is None:
            return False
        self._roll()
        return self._used >= self.limit


def estimate_tokens(request: JudgeRequest) -> int:
    """A cheap estimate of a request's input tokens: its text length / 4, rounded up."""
    chars = len(request.system)
    for message in request.messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and isinstance(block.get("text"), str):
                    chars += len(block["text"])
    for schema in (request.output_schema, request.tool):
        if schema is not None:
            chars += len(json.dumps(schema))
    return max(1, math.ceil(chars / CHARS_PER_TOKEN))


def classify_error(exc: BaseException) -> Outcome:
    """The `outcome` label of a failed judge call.

    `auth`: 401/403 and authentication/permission errors; `quota`: the key's quota is used
    up; `unknown_model`: no such model or deployment; `retryable`: what the provider marks
    retryable (408, 409, 429, 5xx, connection errors, timeouts); `refused`: the provider refused
    the request itself (other 4xx); `error`: anything else.
    """
    # Providers raise the scorers.errors tree themselves (SDK errors are their __cause__).
    if isinstance(exc, JudgeAuthError):
        return "auth"
    code = getattr(exc, "code", None)
    if isinstance(exc, JudgeRequestError) and code in QUOTA_CODES:
        return "quota"
    if isinstance(exc, JudgeRequestError) and code in UNKNOWN_MODEL_CODES:
        return "unknown_model"
    if isinstance(exc, JudgeUnavailableError) or getattr(exc, "retryable", False):
        return "retryable"
    if isinstance(exc, JudgeRequestError):
        return "refused"
    return "error"


class SdkWarmup:
    """Imports each provider's SDK once, in a worker thread, when the first judge call for it
    is near (an import takes ~1 s: on the event loop it would stall every receiver)."""

    def __init__(self) -> None:
        self._done: set[str] = set()
        self._loading: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[str, asyncio.Task[None]]] = (
            weakref.WeakKeyDictionary())

    async def ready(self, provider: str) -> None:
        """Return once `provider`'s SDK is imported (concurrent callers share one import; a
        failed import is tried again by the next caller)."""
        if provider in self._done:
            return
        per_loop = self._loading.setdefault(asyncio.get_running_loop(), {})
        task = per_loop.get(provider)
        if task is None:
            task = per_loop[provider] = asyncio.create_task(
                asyncio.to_thread(load_provider_sdk, provider))
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            raise
        except Exception:
            per_loop.pop(provider, None)
            raise
        self._done.add(provider)


WARMUP = SdkWarmup()
"""The process's SDK warm-up (imports are process-wide)."""


class LimitedProvider:
    """A `JudgeProvider` that applies the sidecar's judge limits around another provider.

    Args:
        inner: the provider that makes the call (e.g. `scorers.judge.default_provider()`).
        max_concurrency: judge calls in flight at most (`judge.max_concurrency`).
        requests_per_minute: token bucket of calls per minute; None for no limit.
        tokens_per_minute: token bucket of judge tokens per minute; None for no limit. A call
            is charged an estimate of its input tokens before it is made, and the difference to
            its real usage (input + output) is charged to the next call.
        metrics: `judge_requests{provider,model,outcome}`, `judge_tokens{provider,model,type}`
            (type `input`, `output`, `cached_input`, `reasoning`) and
            `judge_request_duration{provider,model}` are observed here.
        daily_token_budget: judge tokens per UTC day; None for no budget (`self.budget`).
        clock: the current time for the budget's UTC day (injected in tests).
        budget: a `TokenBudget` to charge instead of one built from `daily_token_budget`
            (share it with the `WorkerPool`).
        api_key: the `judge:` block's key, used by every call whose scorer's `Judge` sets none
            (user scorers loaded by import path get the sidecar's credentials this way).
        base_url: likewise for the endpoint.
        provider: the judge's provider (`anthropic`, `openai`): `api_key` and `base_url` go only
            to its requests; None: to every request.
    """

    def __init__(self, inner: JudgeProvider, *, max_concurrency: int = 8,
                 requests_per_minute: float | None = 600, tokens_per_minute: float | None = None,
                 metrics: Metrics, daily_token_budget: int | None = None,
                 clock: Callable[[], datetime] = _utcnow,
                 budget: TokenBudget | None = None, api_key: str | None = None,
                 base_url: str | None = None, provider: str | None = None) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.inner = inner
        self.metrics = metrics
        self.budget = (budget if budget is not None
                       else TokenBudget(daily_token_budget, clock=clock))
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._requests = (AsyncLimiter(requests_per_minute, 60.0)
                          if requests_per_minute else None)
        self._tokens = AsyncLimiter(tokens_per_minute, 60.0) if tokens_per_minute else None
        self._token_debt = 0.0
        self._api_key = api_key
        self._base_url = base_url
        self._provider = provider

    async def _acquire_tokens(self, estimate: int) -> float:
        assert self._tokens is not None
        amount = min(max(0.0, estimate + self._token_debt), self._tokens.max_rate)
        self._token_debt = 0.0
        await self._tokens.acquire(amount)
        return amount

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        """Wait for a concurrency slot and both buckets, then make the call and count it."""
        if self._provider not in (None, request.provider):
            pass  # another provider's request: this judge's credentials are not for it
        elif (request.api_key is None and self._api_key is not None) or \
                (request.base_url is None and self._base_url is not None):
            request = dataclasses.replace(
                request, api_key=request.api_key if request.api_key is not None
                else self._api_key,
                base_url=request.base_url if request.base_url is not None else self._base_url)
        model, provider = request.model, request.provider
        await WARMUP.ready(provider)
        async with self._semaphore:
            if self._requests is not None:
                await self._requests.acquire()
            charged = 0.0
            if self._tokens is not None:
                charged = await self._acquire_tokens(estimate_tokens(request))
            started = time.perf_counter()
            try:
                reply = await self.inner.complete(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.metrics.judge_request_duration.labels(provider, model).observe(
                    time.perf_counter() - started)
                self.metrics.judge_requests.labels(provider, model, classify_error(exc)).inc()
                raise
        self.metrics.judge_request_duration.labels(provider, model).observe(
            time.perf_counter() - started)
        self.metrics.judge_requests.labels(provider, model, "ok").inc()
        used = reply.input_tokens + reply.output_tokens
        tokens = self.metrics.judge_tokens
        tokens.labels(provider, model, "input").inc(reply.input_tokens)
        tokens.labels(provider, model, "output").inc(reply.output_tokens)
        tokens.labels(provider, model, "cached_input").inc(reply.cached_input_tokens)
        tokens.labels(provider, model, "reasoning").inc(reply.reasoning_tokens)
        self.budget.charge(used)
        if self._tokens is not None:
            self._token_debt += used - charged
        return reply

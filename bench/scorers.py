"""Scorer engine benchmarks (not tests). Run: python bench/scorers.py [--calls N]

1. Judge adapter overhead per call: the time of one judge call (`call_judge`: merge, processors,
   request building, the anthropic SDK, parsing and validation) minus the time of a bare httpx
   POST of the same body to the same zero-latency fake Messages API, measured in the same run,
   interleaved. Also shows how much of it is the SDK itself (a raw `messages.create`). Goal: the
   overhead is at most 2 ms per call.
2. Pipeline overhead of a function scorer: `scorer.run()` per call against calling the same step
   functions directly.
3. The built-in code scorers: runs per second on 1,000 synthetic agent runs, each against a
   trivial one-step scorer through the same pipeline (`bench/scorers_builtin.py`).

Every number is a median over rounds of the same run; ratios are against the baseline of the same
run, so the machine's speed cancels out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.fakes when run as a script

import anthropic  # noqa: E402
import httpx2  # noqa: E402  (the HTTP client the installed anthropic SDK is built on)

from scorers import AgentRunInput, Judge, Message, ScorerRun, create_scorer  # noqa: E402
from scorers.judge import call_judge  # noqa: E402
from tests.fakes.fake_anthropic import FakeAnthropic, structured  # noqa: E402

PROMPT = "Rate the answer to: Which river flows through Paris? Answer: The Seine."


async def _per_call(fn: Callable[[], Awaitable[object]], calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        await fn()
    return (time.perf_counter() - start) / calls


async def bench_judge(calls: int, rounds: int) -> dict[str, float]:
    """Median seconds per call of a bare POST, a raw SDK call, and a judge call."""
    with FakeAnthropic(default_reply=structured({"score": 0.5})) as fake:
        judge = Judge(instructions="You are an evaluator.", base_url=fake.base_url,
                      api_key=fake.api_key)
        body = {"model": "claude-haiku-5-5", "max_tokens": 1024, "system": "You are an evaluator.",
                "messages": [{"role": "user", "content": PROMPT}],
                "output_config": {"format": {"type": "json_schema", "schema": {
                    "type": "object", "properties": {"score": {"type": "number"}},
                    "required": ["score"], "additionalProperties": False}}}}
        raw_body = json.dumps(body).encode()
        headers = {"content-type": "application/json", "x-api-key": fake.api_key,
                   "anthropic-version": "2023-06-01"}
        sdk = anthropic.AsyncAnthropic(base_url=fake.base_url, api_key=fake.api_key,
                                       max_retries=0)
        async with httpx2.AsyncClient(base_url=fake.base_url) as http:

            async def bare() -> object:
                response = await http.post("/v1/messages", content=raw_body, headers=headers)
                return json.loads(response.content)

            async def raw_sdk() -> object:
                return await sdk.messages.create(**body, timeout=60.0)  # type: ignore[call-overload]

            async def judged() -> object:
                return await call_judge(judge, None, step="generate_score", prompt=PROMPT,
                                        kind="score")

            kinds = {"bare_post": bare, "sdk_call": raw_sdk, "judge_call": judged}
            for fn in kinds.values():  # warm up connections and caches
                await _per_call(fn, max(10, calls // 10))
            samples: dict[str, list[float]] = {k: [] for k in kinds}
            for _ in range(rounds):  # interleaved, so drift hits all three alike
                for name, fn in kinds.items():
                    samples[name].append(await _per_call(fn, calls))
        await sdk.close()
        fake.verify()  # every call was one the real API takes
    return {k: statistics.median(v) for k, v in samples.items()}


async def bench_judge_openai(calls: int, rounds: int) -> dict[str, float]:
    """As `bench_judge`, for the OpenAI provider against the strict fake OpenAI server."""
    import openai

    from scorers._openai import strict_schema
    from tests.fakes.fake_openai import FakeOpenAI
    from tests.fakes.fake_openai import structured as oai_structured

    with FakeOpenAI(strict=True, default_reply=oai_structured({"score": 0.5})) as fake:
        judge = Judge(model="openai/gpt-4.1-mini", instructions="You are an evaluator.",
                      base_url=fake.base_url, api_key=fake.api_key)
        schema = {"type": "object", "properties": {"score": {"type": "number"}},
                  "required": ["score"], "additionalProperties": False}
        body = {"model": "gpt-4.1-mini", "max_tokens": 1024,
                "messages": [{"role": "system", "content": "You are an evaluator."},
                             {"role": "user", "content": PROMPT}],
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "structured_output", "schema": strict_schema(schema),
                    "strict": True}}}
        raw_body = json.dumps(body).encode()
        headers = {"content-type": "application/json",
                   "authorization": f"Bearer {fake.api_key}"}
        sdk = openai.AsyncOpenAI(base_url=fake.base_url, api_key=fake.api_key, max_retries=0)
        async with httpx2.AsyncClient(base_url=fake.base_url) as http:

            async def bare() -> object:
                response = await http.post("/chat/completions", content=raw_body,
                                           headers=headers)
                return json.loads(response.content)

            async def raw_sdk() -> object:
                create: Any = sdk.chat.completions.create
                return await create(**body, timeout=60.0)

            async def judged() -> object:
                return await call_judge(judge, None, step="generate_score", prompt=PROMPT,
                                        kind="score")

            kinds = {"bare_post": bare, "sdk_call": raw_sdk, "judge_call": judged}
            for fn in kinds.values():
                await _per_call(fn, max(10, calls // 10))
            samples: dict[str, list[float]] = {k: [] for k in kinds}
            for _ in range(rounds):
                for name, fn in kinds.items():
                    samples[name].append(await _per_call(fn, calls))
        await sdk.close()
        fake.verify()
    return {k: statistics.median(v) for k, v in samples.items()}


def print_adapter(provider: str, judge: dict[str, float], rounds: int, calls: int) -> float:
    """Print one provider's adapter numbers; returns the overhead in seconds."""
    overhead = judge["judge_call"] - judge["bare_post"]
    ours = judge["judge_call"] - judge["sdk_call"]
    print(f"judge adapter ({provider}), {rounds} rounds x {calls} calls to a zero-latency fake:")
    print(f"  bare httpx POST        {judge['bare_post'] * 1e3:7.3f} ms/call  (baseline, 1.00x)")
    print(f"  raw SDK call           {judge['sdk_call'] * 1e3:7.3f} ms/call  "
          f"({judge['sdk_call'] / judge['bare_post']:.2f}x)")
    print(f"  judge call             {judge['judge_call'] * 1e3:7.3f} ms/call  "
          f"({judge['judge_call'] / judge['bare_post']:.2f}x)")
    print(f"  adapter overhead       {overhead * 1e3:7.3f} ms/call  "
          f"(judge call - bare POST; goal <= 2 ms: {'met' if overhead <= 0.002 else 'NOT met'})")
    print(f"  judge call - raw SDK   {ours * 1e3:+7.3f} ms/call  (scorecar's own code)")
    return overhead


async def bench_pipeline(calls: int, rounds: int) -> dict[str, float]:
    """Median seconds per call of a 3-step function scorer vs the bare step functions."""
    run = ScorerRun(
        input=AgentRunInput(input_messages=[Message.from_text("user", "Which river?")]),
        output=[Message.from_text("assistant", "The Seine flows through Paris.")])

    def pre(run: ScorerRun, results: object) -> list[str]:
        return run.output[-1].text.lower().split()

    def score(run: ScorerRun, results: object) -> float:
        return 1.0 if "seine" in results.preprocess_step_result else 0.0  # type: ignore[attr-defined]

    def reason(run: ScorerRun, results: object, score: float) -> str:
        return f"score {score}"

    scorer = (create_scorer(id="bench", description="").preprocess(pre)
              .generate_score(score).generate_reason(reason))

    class R:
        preprocess_step_result: list[str] = []

    async def direct() -> object:
        r = R()
        r.preprocess_step_result = pre(run, r)
        return reason(run, r, score(run, r))

    async def piped() -> object:
        return await scorer.run(run)

    samples: dict[str, list[float]] = {"direct_functions": [], "scorer_run": []}
    for _ in range(rounds):
        samples["direct_functions"].append(await _per_call(direct, calls))
        samples["scorer_run"].append(await _per_call(piped, calls))
    return {k: statistics.median(v) for k, v in samples.items()}


def main(argv: list[str] | None = None) -> None:
    """Run the scorer-engine benchmarks and print the numbers."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="judge calls per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1000, help="synthetic runs for the built-ins")
    args = parser.parse_args(argv)

    print_adapter("anthropic", asyncio.run(bench_judge(args.calls, args.rounds)), args.rounds,
                  args.calls)
    print_adapter("openai", asyncio.run(bench_judge_openai(args.calls, args.rounds)),
                  args.rounds, args.calls)

    pipe = asyncio.run(bench_pipeline(args.calls * 10, args.rounds))
    print(f"function scorer pipeline, {args.rounds} rounds x {args.calls * 10} runs:")
    print(f"  step functions called directly {pipe['direct_functions'] * 1e6:8.1f} us/run "
          "(baseline, 1.00x)")
    print(f"  scorer.run()                   {pipe['scorer_run'] * 1e6:8.1f} us/run "
          f"({pipe['scorer_run'] / pipe['direct_functions']:.1f}x, "
          f"{1 / pipe['scorer_run']:.0f} runs/s)")

    from bench.scorers_builtin import main as bench_builtins  # noqa: PLC0415 (a sibling script)

    print("built-in code scorers:")
    asyncio.run(bench_builtins(args.runs, 3))


if __name__ == "__main__":
    main()

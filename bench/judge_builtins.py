"""Judge built-ins and PII redactor benchmarks (not tests). Run: python bench/judge_builtins.py

1. Cost of each LLM-judge built-in on a realistic agent run: judge calls, and the characters
   (and ~tokens, chars/4) of system + user prompt sent per run, measured on the requests the
   zero-latency fake Messages API received. The judge is scripted, so this is the prompt side of
   the bill; the answer side depends on the model.
2. PII redactor speed: redacting a realistic ~10 KB judge prompt, against a baseline measured in
   the same run: one `re.finditer(r"\\w+")` word pass over the same text (the cheapest scan a
   redactor could possibly do). Also the redactor's added share of one scorer run against the
   fake server.

Every time is a median over rounds of the same run; ratios cancel out the machine's speed.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # for tests.fakes when run as a script

from scorers import AgentRunInput, Judge, Message, PiiRedactor, ScorerRun  # noqa: E402
from scorers.builtin import (  # noqa: E402
    create_answer_relevancy_scorer,
    create_bias_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    create_prompt_alignment_scorer,
    create_tool_call_appropriateness_scorer,
    create_toxicity_scorer,
)
from scorers.redact import RedactionVault  # noqa: E402
from scorers.types import SystemMessage  # noqa: E402
from tests.fakes.fake_anthropic import FakeAnthropic, structured, text  # noqa: E402

QUESTION = ("Hi, I'm Jane (jane.doe@example.com, +1 415 555 2671). My order ORD-2024-000123 "
            "was charged twice on card 4111 1111 1111 1111. Can you refund one charge and tell "
            "me when the replacement ships? I paid 129.99 EUR on 2026-11-28.")
ANSWER = ("I'm sorry about the double charge, Jane. I found order ORD-2024-000123: it was "
          "charged 129.99 EUR twice on 2026-11-28. I have refunded one charge to the card "
          "ending 1111; it will show within 3-5 business days. The replacement ships tomorrow "
          "by express courier and should arrive by Wednesday. A confirmation goes to "
          "jane.doe@example.com.")


def realistic_run() -> ScorerRun:
    parts: list[dict[str, Any]] = [
        {"type": "tool-invocation", "toolInvocation": {
            "state": "result", "toolCallId": "c1", "toolName": "lookup_order",
            "args": {"order_id": "ORD-2024-000123"},
            "result": {"status": "charged_twice", "amount": 129.99, "currency": "EUR",
                       "ship_date": "2026-11-30", "carrier": "express"}}},
        {"type": "tool-invocation", "toolInvocation": {
            "state": "result", "toolCallId": "c2", "toolName": "refund",
            "args": {"order_id": "ORD-2024-000123", "amount": 129.99},
            "result": {"ok": True, "eta_days": "3-5"}}},
        {"type": "text", "text": ANSWER}]
    return ScorerRun(
        input=AgentRunInput(
            input_messages=[Message.from_text("user", QUESTION)],
            system_messages=[SystemMessage(content=(
                "You are the support agent of an online shop. Be concise and polite. Never "
                "promise delivery dates the order system does not give. Use the tools."))]),
        output=[Message.model_validate({"role": "assistant",
                                        "content": {"content": ANSWER, "parts": parts}})])


DIMENSIONS = {
    "intentAlignment": {"score": 0.9, "primaryIntent": "refund", "isAddressed": True,
                        "reasoning": "r"},
    "requirementsFulfillment": {"requirements": [], "overallScore": 0.8},
    "completeness": {"score": 0.8, "missingElements": [], "reasoning": "r"},
    "responseAppropriateness": {"score": 1.0, "formatAlignment": True, "toneAlignment": True,
                                "reasoning": "r"}}
ALIGNMENT = {"userAlignment": DIMENSIONS, "systemAlignment": DIMENSIONS,
             "overallAssessment": "aligned"}
CLAIMS = {"verdicts": [{"claim": "refunded", "verdict": "yes", "reason": "r"}]}

SCORERS: list[tuple[str, Callable[..., Any], dict[str, Any], list[Any]]] = [
    ("answer_relevancy", create_answer_relevancy_scorer, {},
     [{"results": [{"statement": "s", "result": "yes", "reason": "r"}] * 3}]),
    ("faithfulness", create_faithfulness_scorer, {}, [CLAIMS]),
    ("hallucination", create_hallucination_scorer, {},
     [{"verdicts": [{"statement": "refunded", "verdict": "no", "reason": "r"}]}]),
    ("toxicity", create_toxicity_scorer, {},
     [{"verdicts": [{"opinion": "o", "verdict": "no", "reason": "r"}]}]),
    ("bias", create_bias_scorer, {},
     [{"results": [{"opinion": "o", "result": "no", "reason": "r"}]}]),
    ("prompt_alignment", create_prompt_alignment_scorer, {}, [ALIGNMENT]),
    ("tool_call_appropriateness", create_tool_call_appropriateness_scorer, {},
     [{"evaluations": [{"toolCalled": "lookup_order", "wasAppropriate": True,
                        "reasoning": "r"}]}]),
]


async def cost_table(fake: FakeAnthropic) -> None:
    print("1. Prompt side of each judge built-in on one realistic run (reason step included)")
    print(f"{'scorer':28} {'calls':>5} {'prompt chars':>12} {'~tokens':>8}")
    for name, factory, options, replies in SCORERS:
        fake.clear()
        fake.enqueue(*[structured(r) for r in replies], text("The score is 1 because."))
        scorer = factory(Judge(api_key=fake.api_key, base_url=fake.base_url), **options)
        result = await scorer.run(realistic_run())
        assert result.score is not None, name
        fake.verify()  # every scripted reply used, no request the real API would refuse
        chars = sum(len(r.system_text) + len(r.user_text) for r in fake.message_requests)
        print(f"{name:28} {len(fake.message_requests):>5} {chars:>12} {chars // 4:>8}")


def _median_time(fn: Callable[[], object], rounds: int, inner: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def redactor_speed() -> None:
    text_10k = ((QUESTION + "\n" + ANSWER + "\nLog: v2.31.0 build 20241129 at 10:00:00Z, "
                 "price $1,234.56, 42 items, trace 4bf92f3577b34da6a3ce929d0e0e4736.\n") * 12)
    redactor = PiiRedactor()
    word = re.compile(r"\w+")
    baseline = _median_time(lambda: sum(1 for _ in word.finditer(text_10k)), 7, 20)
    redact = _median_time(lambda: redactor.redact(text_10k, RedactionVault()), 7, 20)
    found = len(redactor.find(text_10k))
    print(f"\n2. Redacting a {len(text_10k) / 1024:.1f} KB prompt ({found} values found)")
    print(f"   word-scan baseline {baseline * 1e3:.3f} ms, redactor {redact * 1e3:.3f} ms "
          f"-> {redact / baseline:.1f}x the baseline")


async def redactor_share(fake: FakeAnthropic, rounds: int = 15) -> None:
    async def one(processors: list[Any]) -> float:
        fake.clear()
        fake.enqueue(structured({"verdicts": [{"opinion": "o", "verdict": "no",
                                               "reason": "r"}]}))
        scorer = create_toxicity_scorer(Judge(api_key=fake.api_key, base_url=fake.base_url,
                                              input_processors=processors), reason=False)
        start = time.perf_counter()
        await scorer.run(realistic_run())
        elapsed = time.perf_counter() - start
        fake.verify()
        return elapsed

    plain, redacted = [], []
    for _ in range(rounds):  # interleaved, so drift hits both alike
        plain.append(await one([]))
        redacted.append(await one([PiiRedactor()]))
    p, r = statistics.median(plain), statistics.median(redacted)
    print(f"   one toxicity run against the fake server: {p * 1e3:.2f} ms without, "
          f"{r * 1e3:.2f} ms with the redactor -> {r / p:.2f}x")


async def main() -> None:
    with FakeAnthropic() as fake:
        await cost_table(fake)
        redactor_speed()
        await redactor_share(fake)


if __name__ == "__main__":
    asyncio.run(main())

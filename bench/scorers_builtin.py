"""Built-in code scorer throughput (not a test). Run: python bench/scorers_builtin.py [--runs N]

Scores a corpus of N (default 1,000) synthetic agent runs — a question, an answer of one to
eight sentences, zero to four tool calls — with each built-in code scorer through the real
pipeline (`await scorer.run(run)`), and the same corpus with a trivial function scorer (a
one-step scorer returning 1.0) as the baseline, measured in the same process, interleaved
over rounds. Prints runs per second (median of rounds) and the cost of each scorer as a ratio
to the baseline, so the machine's speed cancels out.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scorers import AgentRunInput, Message, ScorerRun, create_scorer  # noqa: E402
from scorers.builder import Scorer  # noqa: E402
from scorers.builtin import (  # noqa: E402
    checks,
    create_completeness_scorer,
    create_content_similarity_scorer,
    create_keyword_coverage_scorer,
    create_textual_difference_scorer,
    create_tone_scorer,
    create_tool_call_accuracy_scorer,
)
from scorers.types import MessageContent, TextPart, ToolInvocation, ToolInvocationPart  # noqa: E402

WORDS = ("order refund account password weather flight booking invoice payment delivery "
         "support manager report dashboard cluster deploy server database customer product "
         "great terrible happy sorry quickly carefully running delayed approved checked "
         "the a of to and in is was will have has can should please thanks").split()
TOOLS = ["search", "get_weather", "lookup_order", "refund", "summarize"]


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(5, 16))]
    return " ".join(words).capitalize() + rng.choice(".!?")


def make_corpus(n: int, seed: int = 1) -> list[ScorerRun]:
    """N deterministic synthetic agent runs."""
    rng = random.Random(seed)
    runs = []
    for _ in range(n):
        question = _sentence(rng)
        answer = " ".join(_sentence(rng) for _ in range(rng.randint(1, 8)))
        parts: list[TextPart | ToolInvocationPart] = []
        for i in range(rng.randint(0, 4)):
            state = rng.choice(["result", "result", "result", "output-error"])
            parts.append(ToolInvocationPart(tool_invocation=ToolInvocation(
                state=state, tool_call_id=f"call_{i}", tool_name=rng.choice(TOOLS),
                args={"q": question[:20]}, result={"ok": True} if state == "result" else None)))
        parts.append(TextPart(text=answer))
        output = Message(role="assistant", content=MessageContent(content=answer, parts=parts))
        runs.append(ScorerRun(
            input=AgentRunInput(input_messages=[Message.from_text("user", question)]),
            output=[output]))
    return runs


def scorers_under_test() -> dict[str, Scorer]:
    return {
        "completeness": create_completeness_scorer(),
        "content_similarity": create_content_similarity_scorer(),
        "keyword_coverage": create_keyword_coverage_scorer(),
        "textual_difference": create_textual_difference_scorer(),
        "tone": create_tone_scorer(),
        "tone(reference)": create_tone_scorer(reference_tone="Thanks, happy to help!"),
        "tool_call_accuracy": create_tool_call_accuracy_scorer(expected_tool="search"),
        "checks.no_tool_errors": checks.no_tool_errors(),
        "checks.similarity": checks.similarity("happy to help"),
    }


async def _pass(scorer: Scorer, corpus: list[ScorerRun]) -> float:
    start = time.perf_counter()
    for run in corpus:
        await scorer.run(run)
    return len(corpus) / (time.perf_counter() - start)


async def main(n: int, rounds: int) -> None:
    corpus = make_corpus(n)
    baseline = create_scorer(id="baseline", description="trivial").generate_score(
        lambda run: 1.0)
    targets = scorers_under_test()
    rates: dict[str, list[float]] = {name: [] for name in ["baseline", *targets]}
    measure: list[tuple[str, Callable[[], Scorer]]] = [("baseline", lambda: baseline)]
    measure += [(name, (lambda s=s: s)) for name, s in targets.items()]
    await _pass(baseline, corpus[:50])  # warm up (lazy data loading, caches)
    for scorer in targets.values():
        await _pass(scorer, corpus[:50])
    for _ in range(rounds):
        for name, get in measure:
            rates[name].append(await _pass(get(), corpus))
    base = statistics.median(rates["baseline"])
    chars = sum(len(r.output[0].text) for r in corpus) / len(corpus)
    print(f"{n} synthetic runs (answers {chars:.0f} chars on average), median of {rounds} rounds")
    print(f"{'scorer':<24}{'runs/s':>10}{'cost vs baseline':>18}")
    print(f"{'baseline (1 step)':<24}{base:>10.0f}{1.0:>17.2f}x")
    for name in targets:
        rate = statistics.median(rates[name])
        print(f"{name:<24}{rate:>10.0f}{base / rate:>17.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.rounds))

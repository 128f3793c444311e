"""Prompt injection at scale, CI-sized: every LLM-judge built-in fed runs whose content tries to
take over the judge (the cases and the checks are bench/_faults_injection.py's; `python
bench/faults.py injection` runs all 588). Against the strict fake Messages API with scripted
valid replies, each hostile request must equal the clean run's request except inside the data
block that holds the hostile text: same system prompt, same output schema and request fields,
same prompt outside the `<untrusted_data>` blocks, same blocks, same score.
"""

from __future__ import annotations

import re

import pytest

from bench import _faults_injection as inj
from scorers.builtin import _judge_prompts
from tests.fakes.fake_anthropic import FakeAnthropic

JUDGE_BUILTINS = ["answer_relevancy", "faithfulness", "hallucination", "toxicity", "bias",
                  "prompt_alignment", "tool_call_appropriateness"]


def _cases(scorer_id: str) -> list[tuple[inj.ScorerCase, str, str]]:
    """Every payload once for this scorer, the places taken in turn."""
    [case] = [c for c in inj.SCORERS if c.id == scorer_id]
    return [(case, name, inj.PLACES[i % len(inj.PLACES)])
            for i, name in enumerate(inj.PAYLOADS)]


def test_the_bench_covers_every_judge_builtin() -> None:
    assert sorted(c.id for c in inj.SCORERS) == sorted(JUDGE_BUILTINS)
    assert len(inj.all_cases(quick=False)) >= 500


@pytest.mark.parametrize("scorer_id", JUDGE_BUILTINS)
async def test_hostile_content_changes_nothing_outside_its_data_block(
        fake_anthropic: FakeAnthropic, scorer_id: str) -> None:
    fig = await inj.run_cases(fake_anthropic, _cases(scorer_id))

    assert fig.cases == len(inj.PAYLOADS)
    assert fig.requests == 2 * fig.cases  # analyze + reason, as on the clean run
    assert fig.changed_system_or_schema == 0, fig.examples
    assert fig.outside_block == 0, fig.examples
    assert fig.scores_differ == 0, fig.examples
    assert fig.payload_in_a_block > 0  # the hostile text did reach the judge, as data


async def test_the_checks_catch_a_forged_closing_tag_when_escaping_is_off(
        fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    # The control: with the data blocks' tag escaping disabled, the same cases are caught.
    monkeypatch.setattr(_judge_prompts, "_TAG_RE", re.compile(r"(?!x)(x)"))  # matches nothing
    [case] = [c for c in inj.SCORERS if c.id == "answer_relevancy"]
    fig = await inj.run_cases(fake_anthropic, [(case, "close_tag", "answer")])
    assert fig.outside_block >= 1

"""scorecar's runs from each Mastra capture against the runs a live Mastra scorer received for the
same turns (`<scenario>.live_scorer_runs.json`, recorded by the capture driver's scorer on the
agent): the same instructions, the same new input, the same tagged system messages under Mastra's
own tags (a retrying output processor's feedback included), the same history and answer.

The one tag the OTel export cannot carry: Mastra files the per-call `system` option under
`user-provided`; its text is the app's and the export drops the tag, so scorecar files it under
`runtime` (LOST_TAGS). History is compared as texts and tool calls (id, state) in order: Mastra hands its
scorers one stored message per assistant turn, the export has the prompt's wire form (the
assistant's tool-call message and its answer as two messages).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scorers.types import Message, ScorerRun
from tests.transforms._runs import decode_file, runs_of

MASTRA = Path(__file__).resolve().parents[1] / "testdata" / "captures" / "mastra"
SCENARIOS = sorted(p.name.removesuffix(".live_scorer_runs.json")
                   for p in MASTRA.glob("*.live_scorer_runs.json"))
LOST_TAGS = {"user-provided": "runtime"}


def _text(content: Any) -> str:
    """A Mastra message's text: a plain string, `content.content`, or its text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        if isinstance(content.get("content"), str):
            return str(content["content"])
        content = content.get("parts", [])
    return "".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text")


def _calls(parts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(p["toolInvocation"]["toolCallId"], p["toolInvocation"]["state"])
            for p in parts if p.get("type") == "tool-invocation"]


def _live_view(run: dict[str, Any]) -> dict[str, Any]:
    given = run["input"]
    tagged: dict[str, list[str]] = {}
    for tag, msgs in given["taggedSystemMessages"].items():
        tagged.setdefault(LOST_TAGS.get(tag, tag), []).extend(_text(m["content"]) for m in msgs)
    history = given["rememberedMessages"]
    return {
        "system": [_text(m["content"]) for m in given["systemMessages"]],
        "tagged": tagged,
        "input": [(m["role"], _text(m["content"])) for m in given["inputMessages"]],
        "history": [(m["role"], _text(m["content"])) for m in history
                    if _text(m["content"])],
        "historyCalls": [c for m in history for c in _calls(m["content"]["parts"])],
        "answer": [_text(m["content"]) for m in run["output"]],
        "calls": [c for m in run["output"] for c in _calls(m["content"]["parts"])],
    }


def _ids(msgs: list[Message]) -> list[tuple[str, str]]:
    return [(str(t.tool_call_id), t.state) for m in msgs for t in m.tool_invocations]


def _scorecar_view(run: ScorerRun) -> dict[str, Any]:
    i = run.input
    return {
        "system": [m.content for m in i.system_messages],
        "tagged": {k: [m.content for m in v] for k, v in i.tagged_system_messages.items()},
        "input": [(m.role, m.text) for m in i.input_messages],
        "history": [(m.role, m.text) for m in i.remembered_messages if m.text],
        "historyCalls": _ids(i.remembered_messages),
        "answer": [m.text for m in run.output],
        "calls": _ids(run.output),
    }


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_runs_match_what_the_live_mastra_scorer_received(scenario: str) -> None:
    live = json.loads((MASTRA / f"{scenario}.live_scorer_runs.json").read_text("utf-8"))
    runs, _ = runs_of(decode_file(MASTRA / f"{scenario}.otlp.jsonl"))
    assert len(runs) == len(live)
    for run, turn in zip(runs, live):
        assert _scorecar_view(run) == _live_view(turn["run"]), f"turn {turn['turn']}"


def test_every_mastra_capture_has_its_live_runs() -> None:
    captures = sorted(p.name.removesuffix(".otlp.jsonl") for p in MASTRA.glob("*.otlp.jsonl"))
    assert SCENARIOS == captures


def test_the_live_runs_carry_mastras_tags() -> None:
    # What the proof rests on: Mastra's own tags, not the runtime fallback.
    tags = {tag for s in SCENARIOS
            for turn in json.loads((MASTRA / f"{s}.live_scorer_runs.json").read_text("utf-8"))
            for tag in turn["run"]["input"]["taggedSystemMessages"]}
    assert tags == {"memory", "user-provided", "processor-retry-feedback"}


def test_a_retried_step_gives_the_accepted_answer_and_its_feedback() -> None:
    # processor_retry: Mastra's export glues the rejected and the accepted answer in the agent's
    # and the generation's output; the live scorer gets the accepted one and the feedback of the
    # retried step (in that step's prompt only), and so does scorecar.
    live = json.loads((MASTRA / "processor_retry.live_scorer_runs.json").read_text("utf-8"))
    feedback = live[0]["run"]["input"]["taggedSystemMessages"]["processor-retry-feedback"]
    runs, _ = runs_of(decode_file(MASTRA / "processor_retry.otlp.jsonl"))
    run = runs[0]
    assert [m.text for m in run.output] == ["It is 14°C and raining in Paris."]
    assert [m.content for m in run.input.tagged_system_messages["processor-retry-feedback"]] == [
        _text(m["content"]) for m in feedback]
    assert "processor-retry-feedback" not in runs[1].input.tagged_system_messages

"""The built-in scorers through the real pipeline: ids, errors, typed and JSON runs, registry."""

from __future__ import annotations

from typing import Any

import pytest

from scorers import AgentRunInput, Message, ScorerRun, ScorerRunError
from scorers.builtin import (
    BUILTINS,
    checks,
    create_completeness_scorer,
    create_content_similarity_scorer,
    create_keyword_coverage_scorer,
    create_textual_difference_scorer,
    create_tone_scorer,
    create_tool_call_accuracy_scorer,
    get_builtin,
)
from scorers.errors import ConfigError
from scorers.types import MessageContent, TextPart, ToolInvocation, ToolInvocationPart

CODE_IDS = {"completeness", "content_similarity", "keyword_coverage", "textual_difference",
            "tone", "tool_call_accuracy"}


def _run(question: str, *answers: Message) -> ScorerRun:
    return ScorerRun(input=AgentRunInput(input_messages=[Message.from_text("user", question)]),
                     output=list(answers))


def _tool_answer(text: str, *calls: tuple[str, str]) -> Message:
    parts: list[Any] = [ToolInvocationPart(tool_invocation=ToolInvocation(
        state=state, tool_call_id=f"c{i}", tool_name=name, result={"ok": 1}))
        for i, (name, state) in enumerate(calls)]
    parts.append(TextPart(text=text))
    return Message(role="assistant", content=MessageContent(content=text, parts=parts))


async def test_factories_have_snake_case_ids_and_agent_type() -> None:
    scorers = [create_completeness_scorer(), create_content_similarity_scorer(),
               create_keyword_coverage_scorer(), create_textual_difference_scorer(),
               create_tone_scorer(), create_tool_call_accuracy_scorer(expected_tool="x")]
    assert {s.id for s in scorers} == CODE_IDS
    assert all(s.type == "agent" and not s.has_judge for s in scorers)


async def test_typed_run_scores() -> None:
    run = _run("What is the capital of France?",
               Message.from_text("assistant", "The capital of France is Paris."))
    assert (await create_keyword_coverage_scorer().run(run)).score == 1.0  # capital, france
    assert (await create_completeness_scorer().run(run)).score == pytest.approx(5 / 6)
    result = await create_textual_difference_scorer().run(run)
    assert 0 < result.score < 1 and result.preprocess_step_result["changes"] > 0


async def test_json_run_in_mastras_shape_scores_the_same() -> None:
    typed = _run("Is it sunny?", _tool_answer("It is sunny.", ("get_weather", "result")))
    as_json = typed.model_dump(mode="json")
    assert "inputMessages" in as_json["input"]
    scorer = create_tool_call_accuracy_scorer(expected_tool="get_weather", strict_mode=True)
    assert (await scorer.run(typed)).score == 1.0
    assert (await scorer.run(as_json)).score == 1.0
    similar = create_content_similarity_scorer()
    assert (await similar.run(typed)).score == (await similar.run(as_json)).score


async def test_tool_call_accuracy_refuses_what_mastra_refuses() -> None:
    with pytest.raises(ValueError, match="Either expectedTool or expectedToolOrder"):
        create_tool_call_accuracy_scorer()
    empty = ScorerRun(input=AgentRunInput(input_messages=[Message.from_text("user", "q")]),
                      output=[])
    with pytest.raises(ScorerRunError) as caught:
        await create_tool_call_accuracy_scorer(expected_tool="x").run(empty)
    assert caught.value.failed_step == "preprocess"
    assert "Input and output messages cannot be null or empty" in str(caught.value)


async def test_completeness_refuses_a_run_that_is_not_an_agent_run() -> None:
    with pytest.raises(ScorerRunError, match="Inputs cannot be null or undefined"):
        await create_completeness_scorer().run(ScorerRun(input="plain text", output=None))


async def test_no_tool_errors_sees_every_failure_form() -> None:
    ok = _run("q", _tool_answer("fine", ("a", "result")))
    thrown = _run("q", _tool_answer("oops", ("a", "result"), ("b", "output-error")))
    assert (await checks.no_tool_errors().run(ok)).score == 1.0
    result = await checks.no_tool_errors().run(thrown)
    assert result.score == 0.0
    assert result.preprocess_step_result == {"errorCount": 1, "totalCalls": 2, "passed": False}


async def test_checks_read_assistant_text_only() -> None:
    run = _run("q", Message.from_text("assistant", "It is SUNNY"),
               Message.from_text("user", "sorry"))
    assert (await checks.includes("sunny").run(run)).score == 1.0
    assert (await checks.includes("sunny", ignore_case=False).run(run)).score == 0.0
    assert (await checks.excludes("sorry").run(run)).score == 1.0
    assert (await checks.matches(r"sun+y", exact=False).run(run)).score == 0.0
    assert (await checks.similarity("it is sunny", threshold=0.99).run(run)).score == 1.0


def test_registry_lists_the_code_scorers() -> None:
    assert CODE_IDS <= set(BUILTINS)
    assert all(not BUILTINS[i].takes_judge for i in CODE_IDS)


def test_registry_builds_with_options_in_either_spelling() -> None:
    scorer = get_builtin("builtin:tool_call_accuracy", expectedTool="search", strict_mode=True)
    assert scorer.id == "tool_call_accuracy"
    assert "search" in scorer.description
    assert get_builtin("tone", reference_tone="happy").id == "tone"


def test_registry_unknown_id_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        get_builtin("completness")
    message = str(caught.value)
    assert "completness" in message
    assert all(i in message for i in CODE_IDS)


def test_registry_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="tone"):
        get_builtin("tone", colour="blue")
    with pytest.raises(ConfigError, match="Either expectedTool"):
        get_builtin("tool_call_accuracy")
    with pytest.raises(ConfigError, match="takes no judge"):
        get_builtin("completeness", judge=object())


def test_lexicons_ship_as_package_data() -> None:
    from importlib import resources

    data = resources.files("scorers.builtin").joinpath("data")
    names = {p.name for p in data.iterdir()}
    assert {"sentiment_en.json", "keyword_extractor_stopwords_en.json", "NOTICE.md"} <= names


async def test_textual_difference_long_texts() -> None:
    # 3,000 × 3,000 characters runs off the event loop; (ab)^n vs (ba)^n has LCS 2n − 1.
    run = _run("ab" * 1500, Message.from_text("assistant", "ba" * 1500))
    result = await create_textual_difference_scorer().run(run)
    assert result.score == 2 * 2999 / 6000
    assert result.preprocess_step_result["changes"] == 1

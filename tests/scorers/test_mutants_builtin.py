"""Built-in code scorers: what bench/mutation.py found no test watching.

The id, name and description of a scorer go into every score record (`ScorerInfo`): dashboards
group by them, and Mastra's names are the ones users know. Plus a few edge rules of the checks
and of textual_difference.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from scorers import AgentRunInput, Message, ScorerRun, ScorerRunError
from scorers.builder import Scorer
from scorers.builtin import checks, get_builtin
from scorers.builtin.textual_difference import create_textual_difference_scorer
from scorers.types import MessageContent, TextPart, ToolInvocation, ToolInvocationPart


def _run(question: str, *answers: Message) -> ScorerRun:
    return ScorerRun(input=AgentRunInput(input_messages=[Message.from_text("user", question)]),
                     output=list(answers))


CODE_SCORERS: list[tuple[str, dict[str, Any], str, str]] = [
    ("completeness", {}, "Completeness Scorer",
     "The fraction of the input's words (verbs in their base form) that the output covers."),
    ("content_similarity", {}, "Content Similarity Scorer",
     "Calculates content similarity between input and output messages using string "
     "comparison algorithms."),
    ("keyword_coverage", {}, "Keyword Coverage Scorer",
     "The fraction of the input's keywords that the output contains (keyword-extractor's "
     "English stop words removed)."),
    ("textual_difference", {}, "Textual Difference Scorer",
     "Calculate textual difference between input and output using sequence matching "
     "algorithms."),
    ("tone", {}, "Tone Scorer",
     "Analyzes the tone and sentiment of agent responses using sentiment analysis. Can "
     "compare against a reference tone or evaluate sentiment stability."),
    ("tool_call_accuracy", {"expected_tool": "weather"}, "Tool Call Accuracy Scorer",
     "Evaluates whether the LLM selected the correct tool (weather) from the available tools"),
    ("tool_call_accuracy", {"expected_tool_order": ["search", "summarize"]},
     "Tool Call Accuracy Scorer",
     "Evaluates whether the LLM called tools in the correct order: [search, summarize]"),
]


@pytest.mark.parametrize(("scorer_id", "options", "name", "description"), CODE_SCORERS)
def test_code_scorers_carry_mastras_name_and_description(
        scorer_id: str, options: dict[str, Any], name: str, description: str) -> None:
    scorer = get_builtin(scorer_id, **options)
    assert (scorer.id, scorer.name, scorer.description, scorer.type) == (
        scorer_id, name, description, "agent")


# Factories, called inside the test: mutmut attributes the calls to the test that makes them.
CHECKS: list[tuple[Callable[[], Scorer], str, str, str]] = [
    (lambda: checks.includes("sunny"), "check_includes", "Includes Check",
     'Checks if output includes "sunny"'),
    (lambda: checks.excludes("rain"), "check_excludes", "Excludes Check",
     'Checks that output does not include "rain"'),
    (lambda: checks.equals("ok"), "check_equals", "Equals Check", 'Checks if output equals "ok"'),
    (lambda: checks.matches(r"sun+y"), "check_matches", "Matches Check",
     "Checks if output matches pattern sun+y"),
    (lambda: checks.similarity("hi"), "check_similarity", "Similarity Check",
     'Checks string similarity to "hi"'),
    (lambda: checks.called_tool("search"), "check_called_tool", "Called Tool Check",
     'Checks that "search" was called'),
    (lambda: checks.called_tool("search", times=2), "check_called_tool", "Called Tool Check",
     'Checks that "search" was called at least 2 times'),
    (lambda: checks.did_not_call("delete"), "check_did_not_call", "Did Not Call Check",
     'Checks that "delete" was NOT called'),
    (lambda: checks.tool_order(["search", "summarize"]), "check_tool_order", "Tool Order Check",
     "Checks tool call order: [search → summarize]"),
    (lambda: checks.max_tool_calls(3), "check_max_tool_calls", "Max Tool Calls Check",
     "Checks that no more than 3 tool calls were made"),
    (lambda: checks.used_no_tools(), "check_used_no_tools", "Used No Tools Check",
     "Checks that no tools were called"),
    (lambda: checks.no_tool_errors(), "check_no_tool_errors", "No Tool Errors Check",
     "Checks that no tool calls resulted in errors"),
]


@pytest.mark.parametrize(("factory", "scorer_id", "name", "description"), CHECKS,
                         ids=[c[1] + str(i) for i, c in enumerate(CHECKS)])
def test_checks_carry_their_id_name_and_description(
        factory: Callable[[], Scorer], scorer_id: str, name: str, description: str) -> None:
    scorer = factory()
    assert (scorer.id, scorer.name, scorer.description, scorer.type) == (
        scorer_id, name, description, "agent")


async def test_matches_searches_anywhere_unless_exact() -> None:
    run = _run("q", Message.from_text("assistant", "It is sunny"))
    assert (await checks.matches(r"sun+y").run(run)).score == 1.0
    assert (await checks.matches(r"sun+y", exact=True).run(run)).score == 0.0


async def test_an_exact_multiline_pattern_may_match_one_line_as_in_javascript() -> None:
    # new RegExp("^a$", "m").test("a\nb") is true in JavaScript.
    run = _run("q", Message.from_text("assistant", "a\nb"))
    assert (await checks.matches(re.compile("a", re.M), exact=True).run(run)).score == 1.0
    assert (await checks.matches(re.compile("a"), exact=True).run(run)).score == 0.0


async def test_a_result_flagged_is_error_in_snake_case_is_a_tool_error() -> None:
    invocation = ToolInvocation.model_validate({
        "state": "result", "toolCallId": "c1", "toolName": "fetch",
        "result": {"text": "denied"}, "is_error": True})
    message = Message(role="assistant", content=MessageContent(content="", parts=[
        ToolInvocationPart(tool_invocation=invocation), TextPart(text="Sorry.")]))
    result = await checks.no_tool_errors().run(_run("q", message))
    assert result.score == 0.0
    assert result.preprocess_step_result == {"errorCount": 1, "totalCalls": 1, "passed": False}


async def test_textual_difference_of_one_character_against_nothing() -> None:
    run = _run("x", Message.from_text("assistant", ""))
    result = await create_textual_difference_scorer().run(run)
    assert result.score == 0.0
    assert result.preprocess_step_result == {"ratio": 0.0, "confidence": 0.0, "changes": 1,
                                             "lengthDiff": 1.0}


@pytest.mark.parametrize(("scorer_id", "options", "run", "message"), [
    ("completeness", {}, ScorerRun(input="plain text", output=None),
     "Inputs cannot be null or undefined"),
    ("tool_call_accuracy", {"expected_tool": "x"},
     ScorerRun(input=AgentRunInput(input_messages=[Message.from_text("user", "q")]), output=[]),
     "Input and output messages cannot be null or empty"),
])
async def test_refusals_say_exactly_what_mastra_says(
        scorer_id: str, options: dict[str, Any], run: ScorerRun, message: str) -> None:
    with pytest.raises(ScorerRunError) as caught:
        await get_builtin(scorer_id, **options).run(run)
    assert isinstance(caught.value.__cause__, ValueError)
    assert str(caught.value.__cause__) == message


@pytest.mark.parametrize("key", ["inputMessages", "input_messages"])
async def test_a_json_input_that_is_not_strictly_an_agent_input_is_still_read(key: str) -> None:
    # An extra field keeps the input a plain dict; its messages are read in either spelling.
    run = ScorerRun(input={key: [{"role": "user", "content": "What is the capital of France?"}],
                           "runId": "r1"},
                    output=[{"role": "assistant", "content": "The capital of France is Paris."}])
    assert isinstance(run.input, dict)
    result = await get_builtin("keyword_coverage").run(run)
    assert result.preprocess_step_result["referenceKeywords"] == ["capital", "france"]
    assert result.score == 1.0

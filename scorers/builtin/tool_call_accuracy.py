"""Tool call accuracy (code): did the agent call the expected tool, or tools in order?"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from scorers.builder import Scorer, StepResults, create_scorer
from scorers.builtin._messages import extract_tool_calls, input_messages, output_messages
from scorers.types import ScorerRun

__all__ = ["check_tool_order", "create_tool_call_accuracy_scorer"]


def check_tool_order(actual: Sequence[str], expected: Sequence[str],
                     strict_mode: bool = False) -> bool:
    """Strict: the calls are exactly `expected`. Otherwise the first call of each expected
    tool comes after the first call of the one before it."""
    if strict_mode:
        return list(actual) == list(expected)
    positions: list[int] = []
    for tool in expected:
        if tool not in actual:
            return False
        positions.append(list(actual).index(tool))
    return all(b > a for a, b in zip(positions, positions[1:]))


def _accuracy(expected_tool: str | None, actual: list[str], strict_mode: bool,
              expected_tool_order: Sequence[str] | None) -> float:
    if not actual:
        return 0.0
    if expected_tool_order:
        return 1.0 if check_tool_order(actual, expected_tool_order, strict_mode) else 0.0
    if not expected_tool:
        return 0.0
    if strict_mode:
        return 1.0 if actual == [expected_tool] else 0.0
    return 1.0 if expected_tool in actual else 0.0


def create_tool_call_accuracy_scorer(expected_tool: str | None = None,
                                     strict_mode: bool = False,
                                     expected_tool_order: Sequence[str] | None = None) -> Scorer:
    """1 when the agent called the right tool (or tools in the right order), else 0.

    Mastra's `createToolCallAccuracyScorerCode`. A run without tool calls scores 0. With
    `expected_tool_order` (non-empty) the order decides: exact sequence in strict mode, else
    increasing first positions. Otherwise `expected_tool` must be among the calls (strict:
    the only call). Every call counts whatever its outcome, in every output message.

    Args:
        expected_tool: the tool that should be called.
        strict_mode: require exactly this tool / exactly this sequence.
        expected_tool_order: the tools that should be called, in order.

    Returns:
        An agent scorer with id `tool_call_accuracy`.

    Raises:
        ValueError: neither `expected_tool` nor `expected_tool_order` was given (as Mastra).
    """
    if not expected_tool and expected_tool_order is None:
        raise ValueError("Either expectedTool or expectedToolOrder must be provided")
    order = list(expected_tool_order) if expected_tool_order is not None else None
    if order is not None:
        description = ("Evaluates whether the LLM called tools in the correct order: "
                       f"[{', '.join(order)}]")
    else:
        description = (f"Evaluates whether the LLM selected the correct tool ({expected_tool}) "
                       "from the available tools")

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        inputs, outputs = input_messages(run), output_messages(run)
        if not inputs or not outputs:
            raise ValueError("Input and output messages cannot be null or empty")
        tools, infos = extract_tool_calls(outputs)
        if expected_tool:
            correct = tools == [expected_tool] if strict_mode else expected_tool in tools
        else:
            correct = False
        return {
            "expectedTool": expected_tool,
            "actualTools": tools,
            "strictMode": strict_mode,
            "expectedToolOrder": order,
            "hasToolCalls": bool(tools),
            "correctToolCalled": correct,
            "toolCallInfos": infos,
            "correctOrderCalled": (check_tool_order(tools, order, strict_mode)
                                   if order is not None else None),
        }

    def generate_score(results: StepResults) -> float:
        step = results.preprocess_step_result
        return _accuracy(step["expectedTool"], step["actualTools"], step["strictMode"],
                         step["expectedToolOrder"])

    return (
        create_scorer(id="tool_call_accuracy", name="Tool Call Accuracy Scorer", type="agent",
                      description=description)
        .preprocess(preprocess)
        .generate_score(generate_score)
    )

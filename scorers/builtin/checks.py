"""Quick checks: zero-judge 0/1 scorers for common assertions (Mastra's `checks`).

Each function returns an agent scorer. Text checks read the text of the output's assistant
messages; tool checks read every tool invocation of the output.

    from scorers.builtin import checks
    scorers = [checks.includes("sunny"), checks.called_tool("get_weather"),
               checks.tool_order(["search", "summarize"]), checks.no_tool_errors()]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from scorers.builder import Scorer, StepResults, create_scorer
from scorers.builtin._js import js_truthy
from scorers.builtin._messages import extract_tool_calls, merge_tool_invocations, output_messages
from scorers.builtin.content_similarity import compare_two_strings
from scorers.types import ScorerRun, ToolInvocation

__all__ = [
    "called_tool",
    "did_not_call",
    "equals",
    "excludes",
    "includes",
    "matches",
    "max_tool_calls",
    "no_tool_errors",
    "similarity",
    "tool_order",
    "used_no_tools",
]


def _assistant_text(run: ScorerRun, separator: str) -> str:
    return separator.join(m.text for m in output_messages(run) or [] if m.role == "assistant")


def _tools(run: ScorerRun) -> list[str]:
    return extract_tool_calls(output_messages(run) or [])[0]


def _check(id: str, name: str, description: str,  # noqa: A002
           preprocess: Any, passed_key: str) -> Scorer:
    def generate_score(results: StepResults) -> float:
        return 1.0 if (results.preprocess_step_result or {}).get(passed_key) else 0.0

    return (create_scorer(id=id, name=name, description=description, type="agent")
            .preprocess(preprocess).generate_score(generate_score))


def includes(expected: str, *, ignore_case: bool = True) -> Scorer:
    """1 if the output text contains `expected`, else 0.

    Args:
        expected: the substring to look for.
        ignore_case: compare lower-cased texts.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output, target = _assistant_text(run, " "), expected
        if ignore_case:
            output, target = output.lower(), target.lower()
        return {"output": output, "target": target, "found": target in output}

    return _check("check_includes", "Includes Check", f'Checks if output includes "{expected}"',
                  preprocess, "found")


def excludes(unwanted: str, *, ignore_case: bool = True) -> Scorer:
    """1 if the output text does not contain `unwanted`, else 0.

    Args:
        unwanted: the substring that must not appear.
        ignore_case: compare lower-cased texts.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output, target = _assistant_text(run, " "), unwanted
        if ignore_case:
            output, target = output.lower(), target.lower()
        return {"output": output, "target": target, "excluded": target not in output}

    return _check("check_excludes", "Excludes Check",
                  f'Checks that output does not include "{unwanted}"', preprocess, "excluded")


def equals(expected: str, *, ignore_case: bool = True) -> Scorer:
    """1 if the output text (assistant messages joined without separator) equals `expected`.

    Args:
        expected: the exact text.
        ignore_case: compare lower-cased texts.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output, target = _assistant_text(run, ""), expected
        if ignore_case:
            output, target = output.lower(), target.lower()
        return {"output": output, "target": target, "isEqual": output == target}

    return _check("check_equals", "Equals Check", f'Checks if output equals "{expected}"',
                  preprocess, "isEqual")


def matches(pattern: str | re.Pattern[str], *, exact: bool = False) -> Scorer:
    """1 if the output text matches the regular expression (searched anywhere), else 0.

    Args:
        pattern: a Python regular expression (string or compiled, flags kept).
        exact: the whole text must match (`^…$`, as Mastra builds it).
    """
    compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
    if exact:
        # Mastra builds `^source$`; `\Z`, unlike Python's `$`, does not match before a final
        # newline, as JavaScript's `$` without the m flag.
        end = "$" if compiled.flags & re.MULTILINE else r"\Z"
        tester = re.compile(f"^{compiled.pattern}{end}", compiled.flags)
    else:
        tester = compiled

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output = _assistant_text(run, "")
        return {"output": output, "pattern": compiled.pattern,
                "matched": tester.search(output) is not None}

    return _check("check_matches", "Matches Check",
                  f"Checks if output matches pattern {compiled.pattern}", preprocess, "matched")


def similarity(expected: str, *, ignore_case: bool = True,
               threshold: float | None = None) -> Scorer:
    """The Dice similarity (0..1) of the output text and `expected`; with `threshold`,
    1 when the similarity is at least the threshold, else 0.

    Args:
        expected: the text to compare with.
        ignore_case: compare lower-cased texts.
        threshold: turn the similarity into a pass/fail score.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        output, target = _assistant_text(run, " "), expected
        if ignore_case:
            output, target = output.lower(), target.lower()
        return {"output": output, "target": target,
                "score": compare_two_strings(output, target), "threshold": threshold}

    def generate_score(results: StepResults) -> float:
        step = results.preprocess_step_result
        score = float(step["score"])
        if threshold is not None:
            return 1.0 if score >= threshold else 0.0
        return score

    return (create_scorer(id="check_similarity", name="Similarity Check", type="agent",
                          description=f'Checks string similarity to "{expected}"')
            .preprocess(preprocess).generate_score(generate_score))


def called_tool(tool_name: str, *, times: int = 1) -> Scorer:
    """1 if the agent called `tool_name` at least `times` times, else 0."""

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        count = _tools(run).count(tool_name)
        return {"toolName": tool_name, "expectedTimes": times, "actualCount": count,
                "passed": count >= times}

    at_least = f" at least {times} times" if times > 1 else ""
    return _check("check_called_tool", "Called Tool Check",
                  f'Checks that "{tool_name}" was called{at_least}', preprocess, "passed")


def did_not_call(tool_name: str) -> Scorer:
    """1 if the agent never called `tool_name`, else 0."""

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        count = _tools(run).count(tool_name)
        return {"toolName": tool_name, "count": count, "passed": count == 0}

    return _check("check_did_not_call", "Did Not Call Check",
                  f'Checks that "{tool_name}" was NOT called', preprocess, "passed")


def tool_order(expected_order: Sequence[str]) -> Scorer:
    """1 if the tools were called in this order (other calls may come in between), else 0."""
    order = list(expected_order)

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        tools = _tools(run)
        index = 0
        for tool in tools:
            if index < len(order) and tool == order[index]:
                index += 1
        return {"actualTools": tools, "expectedOrder": order, "passed": index == len(order)}

    return _check("check_tool_order", "Tool Order Check",
                  f"Checks tool call order: [{' → '.join(order)}]", preprocess, "passed")


def max_tool_calls(max: int) -> Scorer:  # noqa: A002 - Mastra's name
    """1 if the agent made at most `max` tool calls, else 0."""

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        count = len(_tools(run))
        return {"count": count, "max": max, "passed": count <= max}

    return _check("check_max_tool_calls", "Max Tool Calls Check",
                  f"Checks that no more than {max} tool calls were made", preprocess, "passed")


def used_no_tools() -> Scorer:
    """1 if the agent made no tool call, else 0."""

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        count = len(_tools(run))
        return {"count": count, "passed": count == 0}

    return _check("check_used_no_tools", "Used No Tools Check",
                  "Checks that no tools were called", preprocess, "passed")


def _is_error(invocation: ToolInvocation) -> bool:
    extra = invocation.model_extra or {}
    flagged = extra.get("isError", extra.get("is_error"))
    result = invocation.result
    return (invocation.state in ("call", "output-error") or flagged is True
            or (isinstance(result, dict) and js_truthy(result.get("error"))))


def no_tool_errors() -> Scorer:
    """1 if no tool invocation failed, else 0.

    A failure is a thrown call (`output-error`), a call that never got a result (`call`),
    a result flagged `isError`, or a result object with a truthy `error` field.
    """

    def preprocess(run: ScorerRun) -> dict[str, Any]:
        invocations = [inv for message in output_messages(run) or []
                       for inv in merge_tool_invocations(message)]
        errors = sum(1 for inv in invocations if _is_error(inv))
        return {"errorCount": errors, "totalCalls": len(invocations), "passed": errors == 0}

    return _check("check_no_tool_errors", "No Tool Errors Check",
                  "Checks that no tool calls resulted in errors", preprocess, "passed")

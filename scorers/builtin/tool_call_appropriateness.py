"""Tool call appropriateness (LLM judge): whether the agent chose the right tools for the request.

Port of Mastra's LLM `createToolCallAccuracyScorerLLM` (named `tool_call_appropriateness` here so it
does not clash with the deterministic `tool_call_accuracy`). The tool calls are read from the run
(every call under the agent, with arguments and results, not just tool names); the judge
evaluates each call against the user's explicit request (analyze) and lists tools that should
have been called. Score: `appropriate / evaluated`, rounded to 2 decimals; with no evaluated call,
1 when nothing was missing and 0 when a tool was missing (Mastra's rule).

A run without input or output messages is not scorable (Mastra raises an error instead); no judge
call is made. 2 judge calls per run (1 with `reason=False`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from scorers.builder import NotScorable, Scorer, StepResults, not_scorable
from scorers.builtin._judge_prompts import (
    JudgeSchema,
    JudgeScorerInfo,
    agent_input,
    assistant_text,
    data_block,
    js_number,
    messages_of,
    round2,
    tool_calls,
    user_text,
)
from scorers.builtin._judge_scorer import judge_scorer, preprocessed
from scorers.judge import Judge
from scorers.types import ScorerRun

__all__ = [
    "TOOL_CALL_APPROPRIATENESS_INFO",
    "TOOL_CALL_APPROPRIATENESS_INSTRUCTIONS",
    "ToolEvaluation",
    "ToolEvaluations",
    "create_tool_call_appropriateness_scorer",
    "tool_call_appropriateness_score",
]

TOOL_CALL_APPROPRIATENESS_INFO = JudgeScorerInfo(
    id="tool_call_appropriateness",
    measures="share of the agent's tool calls that were appropriate for the user's explicit "
             "request (no calls: 1, or 0 when a tool was needed)",
    higher_is_better=True, judge_calls=2)

TOOL_CALL_APPROPRIATENESS_INSTRUCTIONS = """\
You are an expert evaluator of AI agent tool selection. You assess whether an agent chose
appropriate tools for what the user explicitly asked.

Responsibilities:
- Understand what the user explicitly asked for.
- Evaluate every tool call against that specific need.
- Identify tools that should have been used but were not.

Philosophy:
- Be precise and literal. Approve only tools that directly serve the explicit request.
- Distinguish "helpful" from "appropriate": a tool that is merely related or generally useful but
  was not asked for is inappropriate.
- When no tool was called, asking for clarification of a vague request is good judgment; a generic
  answer to a clear, specific request that a tool could serve is a missed tool."""


class ToolEvaluation(JudgeSchema):
    """One tool call and whether it was appropriate."""

    tool_called: str
    was_appropriate: bool
    reasoning: str


class ToolEvaluations(JudgeSchema):
    """Analyze output: one evaluation per tool call, and the tools that were missing."""

    evaluations: list[ToolEvaluation]
    missing_tools: list[str] = []


def tool_call_appropriateness_score(analysis: ToolEvaluations | None) -> float:
    """`appropriate / evaluated`, rounded; without evaluations 0 if a tool was missing, else 1."""
    evaluations = analysis.evaluations if analysis is not None else []
    if not evaluations:
        missing = analysis.missing_tools if analysis is not None else []
        return 0.0 if missing else 1.0
    appropriate = sum(1 for e in evaluations if e.was_appropriate)
    return round2(appropriate / len(evaluations))


def _tool_reference(available_tools: Iterable[Any] | None) -> list[str]:
    out: list[str] = []
    for tool in available_tools or []:
        if isinstance(tool, str):
            out.append(tool)
        elif isinstance(tool, Mapping):
            name = tool.get("id") or tool.get("name") or "?"
            description = tool.get("description") or ""
            out.append(f"{name}: {description}" if description else str(name))
        else:
            name = getattr(tool, "id", None) or getattr(tool, "name", None) or str(tool)
            description = getattr(tool, "description", "") or ""
            out.append(f"{name}: {description}" if description else str(name))
    return out


def _preprocess(run: ScorerRun) -> dict[str, Any] | NotScorable:
    agent = agent_input(run)
    has_input = bool(agent.input_messages) if agent is not None else bool(run.input)
    if not has_input or not messages_of(run.output):
        return not_scorable("input and output messages are needed to judge tool choices")
    calls = tool_calls(run)
    return {"actualTools": [c["tool"] for c in calls], "hasToolCalls": bool(calls),
            "toolCalls": calls}


def _analyze_prompt(run: ScorerRun, results: StepResults, reference: list[str]) -> str:
    calls = preprocessed(results).get("toolCalls", [])
    return f"""\
Evaluate whether the agent made appropriate tool choices for the user's request.

Rules:
1. If tools were called: evaluate each call (in order) against the user's EXPLICIT request. Mark a
   tool appropriate only if it directly provides what was asked for; tools the agent called
   without being asked, or that are merely related to the domain, are inappropriate.
2. If no tool was called: decide whether that was right. Asking follow-up questions about a vague
   request ("I'm looking for a firm", "help with legal stuff") is appropriate, and missingTools
   stays empty. A generic answer to a clear, specific request ("I need pricing for litigation")
   that an available tool could serve is a missed tool: list it in missingTools. Delaying a
   clear, complete request with needless questions is inappropriate too.
3. List in missingTools any tool that should have been called and was not.

{data_block("user_request", user_text(run))}

{data_block("agent_answer", assistant_text(run))}

{data_block("tool_calls_made", calls)}

{data_block("available_tools", reference or "not listed: judge from the request and the calls")}

Return {{"evaluations": [{{"toolCalled": "...", "wasAppropriate": true | false,
"reasoning": "..."}}, ...], "missingTools": [...]}} with one evaluation per tool call made (an
empty list when none was made)."""


def _reason_prompt(run: ScorerRun, results: StepResults, score: float) -> str:
    analysis = results.analyze_step_result
    dump = analysis.model_dump() if isinstance(analysis, ToolEvaluations) else {}
    shown = js_number(score)
    return f"""\
Explain this tool selection evaluation in ONE sentence. The score is {shown} out of 1: the share of
tool calls that were appropriate (with no calls: 1, or 0 when a tool was missing). Use this score
as given; do not recompute it.

{data_block("user_request", user_text(run))}

{data_block("evaluation", dump)}"""


def create_tool_call_appropriateness_scorer(judge: Judge | None = None, *,
                                            available_tools: Iterable[Any] | None = None,
                                            reason: bool = True) -> Scorer:
    """Create the tool call appropriateness scorer (higher is better).

    Args:
        judge: judge settings (model, key, processors …); the scorer supplies the instructions.
        available_tools: the agent's tools, as names, `{"id"|"name", "description"}` mappings or
            objects with `id`/`name` and `description` (Mastra's `availableTools`). Optional:
            without it the judge works from the request and the calls.
        reason: ask the judge to explain the score (one more judge call).

    Returns:
        A `type="agent"` scorer with id `tool_call_appropriateness`.
    """
    reference = _tool_reference(available_tools)
    return judge_scorer(
        id="tool_call_appropriateness", name="Tool Call Appropriateness",
        description="Share of the agent's tool calls that were appropriate for the user's "
                    "explicit request, 0 to 1; higher is better.",
        judge=judge, instructions=TOOL_CALL_APPROPRIATENESS_INSTRUCTIONS, preprocess=_preprocess,
        analyze_description="Judge each tool call against the request",
        output_schema=ToolEvaluations,
        analyze_prompt=lambda run, results: _analyze_prompt(run, results, reference),
        score=lambda results: tool_call_appropriateness_score(results.analyze_step_result),
        reason_prompt=_reason_prompt, reason=reason)

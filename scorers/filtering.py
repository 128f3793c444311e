"""`filter_run`: a ready-made `prepare_run` that trims what a scorer sees (Mastra's `filterRun`).

Semantics (reference §2): `part_types` and `tool_names` are prefix matches (on `part.type` and
`toolInvocation.toolName`). A message without a tool-invocation part is kept unless `part_types`
is set and none of its parts matches; a message with one is kept only when a tool name matches
(if `tool_names` is set) and a part type matches (if `part_types` is set). Messages are filtered
first, then `max_remembered_messages` / `max_output_messages` keep the last N. `input_messages`
are never touched. The caller's run is never mutated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scorers.types import AgentRunInput, Message, ScorerRun, ToolInvocationPart

__all__ = ["FilterRun", "filter_run"]


def _matches(value: str, prefixes: Sequence[str]) -> bool:
    return any(value.startswith(prefix) for prefix in prefixes)


@dataclass(frozen=True)
class FilterRun:
    """The `prepare_run` built by `filter_run` (callable on a `ScorerRun`)."""

    part_types: tuple[str, ...] = ()
    tool_names: tuple[str, ...] = ()
    max_remembered_messages: int | None = None
    max_output_messages: int | None = None
    drop_request_context: bool = False
    drop_ground_truth: bool = False

    def _keep(self, message: Any) -> bool:
        if not isinstance(message, Message):
            return True  # no parts to look at
        parts = message.content.parts
        types = [str(getattr(p, "type", "")) for p in parts]
        type_ok = not self.part_types or any(_matches(t, self.part_types) for t in types)
        tools = [p.tool_invocation.tool_name for p in parts if isinstance(p, ToolInvocationPart)]
        if not tools:
            return type_ok
        tool_ok = not self.tool_names or any(_matches(t, self.tool_names) for t in tools)
        return tool_ok and type_ok

    def _filter(self, messages: list[Any], limit: int | None) -> list[Any]:
        kept = ([m for m in messages if self._keep(m)] if self.part_types or self.tool_names
                else list(messages))
        if limit is not None:
            kept = kept[len(kept) - limit:] if limit < len(kept) else kept
        return kept

    def __call__(self, run: ScorerRun) -> ScorerRun:
        """Return a trimmed copy of `run`."""
        update: dict[str, Any] = {}
        if self.drop_request_context:
            update["request_context"] = {}
        if self.drop_ground_truth:
            update["ground_truth"] = None
        if isinstance(run.input, AgentRunInput):
            update["input"] = run.input.model_copy(update={
                "remembered_messages": self._filter(run.input.remembered_messages,
                                                    self.max_remembered_messages)})
        if isinstance(run.output, list):
            update["output"] = self._filter(run.output, self.max_output_messages)
        return run.model_copy(update=update)


def filter_run(part_types: Sequence[str] | None = None, tool_names: Sequence[str] | None = None,
               max_remembered_messages: int | None = None,
               max_output_messages: int | None = None, drop_request_context: bool = False,
               drop_ground_truth: bool = False) -> FilterRun:
    """Build a `prepare_run` that filters and trims a run before scoring.

    Args:
        part_types: keep messages with a part whose type starts with one of these
            (`"text"`, `"tool-invocation"`, `"reasoning"`, `"data-"` …).
        tool_names: keep tool-call messages only when a tool name starts with one of these;
            messages without tool calls are unaffected.
        max_remembered_messages: keep the last N remembered messages (0 keeps none).
        max_output_messages: keep the last N output messages (0 keeps none).
        drop_request_context: empty `request_context`.
        drop_ground_truth: set `ground_truth` to None.

    Returns:
        A callable to pass as `create_scorer(prepare_run=...)`.
    """
    for name, value in (("max_remembered_messages", max_remembered_messages),
                        ("max_output_messages", max_output_messages)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise ValueError(f"{name} must be a non-negative integer")
    for name, seq in (("part_types", part_types), ("tool_names", tool_names)):
        if isinstance(seq, str):
            raise TypeError(f"{name} must be a list of strings, not a string")
    return FilterRun(part_types=tuple(part_types or ()), tool_names=tuple(tool_names or ()),
                     max_remembered_messages=max_remembered_messages,
                     max_output_messages=max_output_messages,
                     drop_request_context=drop_request_context,
                     drop_ground_truth=drop_ground_truth)

"""What the per-convention extractors produce: the facts of one span.

Every extractor turns one span into `SpanFacts`: what that span says about an agent
invocation (identity, new input, output), a model call (its messages), or a tool call. The
run builder merges facts per agent root. Messages are normalized to OTel GenAI "parts"
(`NMessage`/`NPart`, by `transforms._normalize`) whatever the convention wrote.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from transforms.reasons import Reason

__all__ = [
    "SYSTEM_ROLES",
    "Mark",
    "ModelCall",
    "NMessage",
    "NPart",
    "SpanFacts",
    "StepFact",
    "ToolFact",
]

SYSTEM_ROLES = frozenset({"system", "developer"})
"""Message roles that carry instructions rather than conversation."""


@dataclass(slots=True)
class NPart:
    """One normalized message part.

    `kind` is `text`, `reasoning`, `tool_call`, `tool_result` or `other`. `absent` marks a
    part whose content the library left out (capture off keeps the part skeleton).
    """

    kind: str
    text: str = ""
    tool_call_id: str | None = None
    tool_name: str | None = None
    args: Any = None
    result: Any = None
    is_error: bool = False
    absent: bool = False


@dataclass(slots=True)
class NMessage:
    """One normalized message: role plus parts (OTel GenAI shape)."""

    role: str
    parts: list[NPart] = field(default_factory=list)
    finish_reason: str | None = None

    @property
    def text(self) -> str:
        """The text parts joined (no separator between parts is added beyond newlines)."""
        parts = self.parts
        if len(parts) == 1:  # the common message: its one part's text, without a generator
            p = parts[0]
            return p.text if p.kind == "text" and p.text else ""
        return "\n".join(p.text for p in parts if p.kind == "text" and p.text)

    @property
    def only_tool_results(self) -> bool:
        """True when every part is a tool result (the Anthropic wire form of a tool reply)."""
        parts = self.parts
        if not parts:
            return False
        for p in parts:  # a loop, not all() over a generator: this runs for every message
            if p.kind != "tool_result":
                return False
        return True


@dataclass(slots=True)
class ToolFact:
    """A tool execution span: call id, name, arguments and result or error. `redacted`: the
    arguments or the result were a placeholder for hidden content (they are None here)."""

    call_id: str | None
    name: str | None
    args: Any = None
    result: Any = None
    has_result: bool = False
    error_text: str | None = None
    redacted: bool = False


@dataclass(slots=True)
class StepFact:
    """One step of a model call that spans several (a tool loop recorded as one generation,
    each step a span of its own: Mastra's `agent_step`): the step's own output text, whether it
    called tools, and the system messages of the step's own prompt (in order)."""

    text: str
    called_tools: bool = False
    system: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Mark:
    """What a span is, read without its content (the run roots need no more): its role and,
    for an agent span, the agent's identity. Every extractor starts its `SpanFacts` from
    its convention's mark, so the two never disagree."""

    role: str = "other"
    agent_name: str | None = None
    agent_id: str | None = None

    def facts(self, convention: str) -> SpanFacts:
        """Empty facts of `convention` with this role and identity."""
        # Positional (SpanFacts' first four fields): one per span, keywords cost a third more.
        return SpanFacts(convention, self.role, self.agent_name, self.agent_id)


@dataclass(slots=True)
class ModelCall:
    """One model call: a model-call span, or a call rebuilt from events or a transcript."""

    start: int
    end: int
    facts: SpanFacts


@dataclass(slots=True)
class SpanFacts:
    """What one span says, as read by its convention's extractor.

    Attributes:
        convention: `genai`, `mastra`, `openinference`, `openllmetry`, `vercel`, `anthropic`,
            `langfuse`, `pydantic_ai` (DESIGN §3).
        role: `agent`, `workflow` (an agent root only when no agent span is around it),
            `model`, `tool` or `other`.
        agent_name / agent_id: the agent identity on agent spans.
        model_name: the model on model-call spans.
        instructions: explicit agent instructions (None = not given).
        root_input: the invocation's input messages on agent spans.
        input_mode: `new` (root_input holds only this turn), `conversation` (whole history:
            take its trailing user messages) or `unusable` (args dump, redacted, cut).
        root_output: the invocation's final text on agent spans.
        model_input / model_output: messages sent to / received from a model.
        remembered_exact: the model input minus `root_input` is exactly the history (or, for a
            `conversation` input, its trailing user messages are exactly the new input).
        transcript: the whole conversation an agent span records, this invocation's replies
            included (Pydantic AI `all_messages`): it stands in for model calls not seen.
        tool: the tool call a tool span executed.
        system_tags: tag per system-message text, when the convention names one.
        step: on a step span of a model call that spans several steps, what that step says.
        continues: a model call that sent only the new messages of a server-held thread
            (the Anthropic tool runner): its history is on the earlier calls of the thread.
        stitched: the builder gave `model_input` that history back (so it is inferred).
        truncated / redacted / capture_off: faithfulness flags for the run.
        cut_input / cut_output: the raw text of an input/output value whose JSON was cut
            by a length limit (kept when nothing better is known).
        reasons: reason codes to count for this span (e.g. `truncated_json`).
    """

    convention: str
    role: str = "other"
    agent_name: str | None = None
    agent_id: str | None = None
    model_name: str | None = None
    instructions: list[str] | None = None
    root_input: list[NMessage] | None = None
    input_mode: str = "conversation"
    root_output: str | None = None
    model_input: list[NMessage] | None = None
    model_output: list[NMessage] | None = None
    remembered_exact: bool = False
    transcript: list[NMessage] | None = None
    tool: ToolFact | None = None
    system_tags: dict[str, str] = field(default_factory=dict)
    step: StepFact | None = None
    continues: bool = False
    stitched: bool = False
    truncated: bool = False
    cut_input: str | None = None
    cut_output: str | None = None
    redacted: bool = False
    capture_off: bool = False
    reasons: list[Reason] = field(default_factory=list)

    @property
    def is_model_call(self) -> bool:
        """The span records a model call (its messages, or at least that it happened)."""
        return self.role == "model" or self.model_input is not None or (
            self.model_output is not None and self.role != "agent")

"""The run, message and score data model (DESIGN §2).

Python reads snake_case; JSON is camelCase and matches Mastra's shapes
(`MastraDBMessage`, `ScorerRunInputForAgent`, `ScoreRowData`). Every model
validates from either spelling and dumps camelCase by default.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    model_validator,
)
from pydantic.alias_generators import to_camel

__all__ = [
    "AgentRunInput",
    "ConversationAgent",
    "ConversationRun",
    "ConversationTurn",
    "JudgeExecution",
    "JudgeStepTelemetry",
    "JudgeUsage",
    "Message",
    "MessageContent",
    "NotScorableInfo",
    "OtherPart",
    "Part",
    "ReasoningPart",
    "RunTarget",
    "ScoreError",
    "ScoreRecord",
    "ScorerInfo",
    "ScorerResult",
    "ScorerRun",
    "SystemMessage",
    "TextPart",
    "ToolInvocation",
    "ToolInvocationPart",
    "conversation_score_id",
    "run_id_for",
    "score_id_for",
    "score_id_of",
]


class _Model(BaseModel):
    """Base: snake_case in Python, camelCase in JSON, either accepted on input."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


class _Open(_Model):
    """A model that keeps fields it does not know (Mastra stores more than we read)."""

    model_config = ConfigDict(extra="allow")


# --------------------------------------------------------------------------- messages


class ToolInvocation(_Open):
    """One tool call, with its result or error once seen.

    `state` is `call` (no result seen), `result` or `output-error` (Mastra's
    states; `partial-call` and others are accepted as given).
    """

    state: str = "call"
    tool_call_id: str
    tool_name: str
    args: Any = None
    result: Any = None
    error_text: str | None = None


class TextPart(_Open):
    type: Literal["text"] = "text"
    text: str = ""


class ToolInvocationPart(_Open):
    type: Literal["tool-invocation"] = "tool-invocation"
    tool_invocation: ToolInvocation


class ReasoningPart(_Open):
    type: Literal["reasoning"] = "reasoning"
    reasoning: str = ""


class OtherPart(_Open):
    """Any other part Mastra stores (`step-start`, `file`, `source`, `data-*` …), kept as is."""

    type: str


def _part_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in ("text", "tool-invocation", "reasoning") else "other"


Part = Annotated[
    (
        Annotated[TextPart, Tag("text")]
        | Annotated[ToolInvocationPart, Tag("tool-invocation")]
        | Annotated[ReasoningPart, Tag("reasoning")]
        | Annotated[OtherPart, Tag("other")]
    ),
    Discriminator(_part_tag),
]


class MessageContent(_Open):
    """Mastra's format-2 message content."""

    format: int = 2
    content: str | None = None
    parts: list[Part] = Field(default_factory=list)
    tool_invocations: list[ToolInvocation] | None = None
    """Legacy copy of the tool calls; merged with the parts, parts winning."""


class Message(_Open):
    """A conversation message (Mastra's `MastraDBMessage`).

    Roles are `user`, `assistant` and `system`; a tool result lives in the
    assistant's `tool-invocation` part, never in a message of its own.
    """

    id: str = ""
    role: Literal["user", "assistant", "system"]
    created_at: datetime | None = None
    content: MessageContent = Field(default_factory=MessageContent)

    @model_validator(mode="before")
    @classmethod
    def _string_content(cls, data: Any) -> Any:
        # Accept `content: "text"` as shorthand for a one-text-part message.
        if isinstance(data, dict) and isinstance(data.get("content"), str):
            text = data["content"]
            data = {**data, "content": {"format": 2, "content": text,
                                        "parts": [{"type": "text", "text": text}]}}
        return data

    @classmethod
    def from_text(cls, role: Literal["user", "assistant", "system"], text: str,
                  **fields: Any) -> Message:
        """A message holding one text part."""
        return cls(role=role, content=MessageContent(content=text, parts=[TextPart(text=text)]),
                   **fields)

    @property
    def text(self) -> str:
        """The message text, as Mastra's `getTextContentFromMastraDBMessage` gives it:
        `content.content` when it is a non-empty string, else the last text part, else ''."""
        content = self.content
        if isinstance(content.content, str) and content.content != "":
            return content.content
        extra_text = (content.model_extra or {}).get("text")
        if isinstance(extra_text, str) and extra_text != "":
            return extra_text
        texts = [p.text for p in content.parts if isinstance(p, TextPart)]
        return texts[-1] if texts else ""

    @property
    def tool_invocations(self) -> list[ToolInvocation]:
        """Tool invocations from the parts, then legacy ones whose id the parts lack."""
        from_parts = [p.tool_invocation for p in self.content.parts
                      if isinstance(p, ToolInvocationPart)]
        seen = {t.tool_call_id for t in from_parts}
        legacy = [t for t in (self.content.tool_invocations or []) if t.tool_call_id not in seen]
        return from_parts + legacy


class SystemMessage(_Model):
    role: Literal["system"] = "system"
    content: str


# --------------------------------------------------------------------------- runs


class AgentRunInput(_Model):
    """Mastra's `ScorerRunInputForAgent`."""

    model_config = ConfigDict(extra="forbid")

    input_messages: list[Message]
    remembered_messages: list[Message] = Field(default_factory=list)
    system_messages: list[SystemMessage] = Field(default_factory=list)
    tagged_system_messages: dict[str, list[SystemMessage]] = Field(default_factory=dict)


class RunTarget(_Model):
    """Where a run came from: the agent span it was rebuilt from, and how faithfully."""

    trace_id: str | None = None
    span_id: str | None = None
    entity_type: str = "agent_run"
    entity_id: str | None = None
    entity_name: str | None = None
    conversation_id: str | None = None
    resource_id: str | None = None
    convention: str | None = None
    resource: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    derived: list[str] = Field(default_factory=list)
    """camelCase names of fields that were inferred rather than read."""
    truncated: bool = False
    content_captured: bool = True


def _new_run_id() -> str:
    return str(uuid.uuid4())


class ScorerRun(_Model):
    """What a scorer's `run()` receives.

    For agent scorers `input` is an `AgentRunInput` and `output` a list of
    assistant messages; other scorers may pass any JSON-like values.
    """

    run_id: str = Field(default_factory=_new_run_id)
    # left_to_right: an agent-shaped value becomes AgentRunInput / list[Message] (smart mode
    # would keep JSON input as a plain dict, since `Any` is an exact match).
    input: AgentRunInput | Any = Field(default=None, union_mode="left_to_right")
    output: list[Message] | Any = Field(default=None, union_mode="left_to_right")
    ground_truth: Any = None
    request_context: dict[str, Any] = Field(default_factory=dict)
    target: RunTarget | None = None


# --------------------------------------------------------------------------- results


class ConversationAgent(_Model):
    """The agent a conversation is held with (DESIGN §11)."""

    id: str | None = None
    name: str | None = None


class ConversationTurn(_Model):
    """One turn of a conversation: one agent run's new input and its output (DESIGN §11).

    The turn's `input` is the run's `AgentRunInput` (its new input messages, system messages,
    what it remembered); `output` is what the agent answered, with its tool calls. History the
    run resent is in `input.remembered_messages`: the turns, not that history, are the
    transcript.
    """

    run_id: str
    trace_id: str | None = None
    span_id: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    input: AgentRunInput
    output: list[Message] = Field(default_factory=list)


class ConversationRun(_Model):
    """What a `type="conversation"` scorer's steps receive (DESIGN §11): the conversation's
    turns in order, cut to a budget keeping the first and the last (`omitted_turns` says how
    many were left out between them)."""

    conversation_id: str
    resource_id: str | None = None
    agent: ConversationAgent = Field(default_factory=ConversationAgent)
    turns: list[ConversationTurn] = Field(default_factory=list)
    omitted_turns: int = 0


class JudgeUsage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0


class ScoreError(_Model):
    """Why a step or a judge call failed."""

    name: str
    message: str
    code: str | None = None
    step: str | None = None


class JudgeExecution(_Model):
    """One judge call of one prompt step (Mastra's execution record)."""

    status: Literal["success", "failed"]
    judge_model_id: str
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    attempt_count: int = 1
    """Format attempts: 2 when the single schema fallback was used."""
    model_call_count: int = 1
    """HTTP calls, retries included."""
    duration_ms: float = 0.0
    raw_output: str | None = None
    error: ScoreError | None = None


class JudgeStepTelemetry(_Model):
    executions: list[JudgeExecution] = Field(default_factory=list)


class NotScorableInfo(_Model):
    step: str
    reason: str | None = None


class ScorerResult(ScorerRun):
    """What `scorer.run()` returns: the prepared run plus every step's outcome."""

    status: Literal["scored", "not_scorable"] = "scored"
    score: float | None = None
    reason: str | None = None
    not_scorable: NotScorableInfo | None = None
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    generate_score_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge: dict[str, JudgeStepTelemetry] = Field(default_factory=dict)


class ScorerInfo(_Model):
    id: str
    name: str
    description: str = ""
    has_judge: bool = False


def _utcnow() -> datetime:
    return datetime.now(UTC)


class ScoreRecord(_Model):
    """One score per (run, scorer): Mastra's `ScoreRowData` plus a status."""

    id: str
    """uuid5 of traceId, spanId and scorerId: the idempotency key downstream."""
    status: Literal["scored", "not_scorable", "failed", "skipped"]
    """`skipped`: not run (over the daily token budget, shed); the reason is in `error`."""
    scorer_id: str
    scorer: ScorerInfo
    entity_id: str | None = None
    entity_type: str = "agent_run"
    entity: dict[str, Any] = Field(default_factory=dict)
    run_id: str
    trace_id: str | None = None
    span_id: str | None = None
    conversation_id: str | None = None
    target_scope: Literal["run", "conversation"] = "run"
    """`conversation`: a conversation scorer's score; `runId`/`traceId`/`spanId` are then the
    conversation's last turn's (DESIGN §11)."""
    turn_count: int | None = None
    """Conversation scores: how many turns the conversation had (kept and omitted)."""
    source: Literal["LIVE", "TEST"] = "LIVE"
    input: Any = None
    output: Any = None
    score: float | None = None
    reason: str | None = None
    preprocess_step_result: Any = None
    analyze_step_result: Any = None
    preprocess_prompt: str | None = None
    analyze_prompt: str | None = None
    generate_score_prompt: str | None = None
    generate_reason_prompt: str | None = None
    judge: dict[str, JudgeStepTelemetry] = Field(default_factory=dict)
    error: ScoreError | None = None
    created_at: datetime = Field(default_factory=_utcnow)


# --------------------------------------------------------------------------- ids


_URL_NAMESPACE = uuid.NAMESPACE_URL.bytes


def _uuid5(name: str) -> str:
    """`str(uuid.uuid5(uuid.NAMESPACE_URL, name))` without building a UUID object (a third of
    the time; ids are made for every run the builder assembles)."""
    h = bytearray(hashlib.sha1(_URL_NAMESPACE + name.encode()).digest()[:16])
    h[6] = (h[6] & 0x0F) | 0x50  # version 5
    h[8] = (h[8] & 0x3F) | 0x80  # RFC 4122 variant
    x = h.hex()
    return f"{x[:8]}-{x[8:12]}-{x[12:16]}-{x[16:20]}-{x[20:]}"


def run_id_for(trace_id: str, span_id: str) -> str:
    """The deterministic run id of the agent span `span_id` in `trace_id` (a UUID 5 of the
    URL namespace and `scorecar:run:{trace_id}:{span_id}`)."""
    return _uuid5(f"scorecar:run:{trace_id}:{span_id}")


def score_id_for(trace_id: str, span_id: str, scorer_id: str) -> str:
    """The deterministic id of one scorer's score of one agent span (a UUID 5 of the URL
    namespace and `scorecar:score:{trace_id}:{span_id}:{scorer_id}`)."""
    return _uuid5(f"scorecar:score:{trace_id}:{span_id}:{scorer_id}")


def conversation_score_id(conversation_id: str, scorer_id: str) -> str:
    """The id of scorer `scorer_id`'s score of conversation `conversation_id` (DESIGN §11): a
    UUID 5 of the URL namespace and `scorecar:conversation-score:{conversation_id}:{scorer_id}`;
    the same on every re-score, so the newer record replaces the older one downstream."""
    return _uuid5(f"scorecar:conversation-score:{conversation_id}:{scorer_id}")


def score_id_of(run: ScorerRun, scorer_id: str) -> str:
    """The score id of scorer `scorer_id` on `run` — the record's `id` and its queue job's id
    (DESIGN §2): `score_id_for` of the run's trace and agent span; a run that came from no
    trace has its run id stand in for the span (and an empty trace id)."""
    t = run.target
    if t is not None and t.trace_id and t.span_id:
        return score_id_for(t.trace_id, t.span_id, scorer_id)
    return score_id_for("", run.run_id, scorer_id)

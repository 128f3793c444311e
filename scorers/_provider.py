"""The seam between the judge and a model API: `JudgeProvider`, `JudgeRequest`, `JudgeReply`.

A provider makes one call and classifies its own failures: it raises the `scorers.errors` tree
(`JudgeUnavailableError(retry_after=…)` for what may succeed later, `JudgeAuthError`,
`JudgeRequestError`) with its SDK's error as `__cause__`. It never retries: the judge's error
processors do. `scorers._anthropic.AnthropicProvider` is the real one;
`scorers.testing.ScriptedProvider` answers in process.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["DEFAULT_TIMEOUT", "JudgeProvider", "JudgeReply", "JudgeRequest"]

DEFAULT_TIMEOUT = 60.0


@dataclass(frozen=True)
class JudgeRequest:
    """One call to the model, provider-neutral."""

    model: str
    system: str
    messages: list[dict[str, Any]]
    max_tokens: int
    temperature: float | None = None
    output_schema: dict[str, Any] | None = None
    """Native structured output: send as Anthropic `output_config.format`."""
    tool: dict[str, Any] | None = None
    """Forced tool call: `{"name", "description", "input_schema"}`."""
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT


@dataclass(frozen=True)
class JudgeReply:
    """What the model answered."""

    text: str
    tool_input: Any = None
    """The forced tool call's input, when the request forced one and the model made it."""
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None


@runtime_checkable
class JudgeProvider(Protocol):
    """The seam between the judge and a model API."""

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        """Make one call (no retries here).

        Raises:
            JudgeUnavailableError: busy or unreachable (`retry_after` when the API said).
            JudgeAuthError: the credentials were refused or are missing.
            JudgeRequestError: the API refused this request.
        """
        ...

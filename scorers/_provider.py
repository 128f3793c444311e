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

__all__ = ["DEFAULT_TIMEOUT", "PROVIDERS", "JudgeProvider", "JudgeReply", "JudgeRequest",
           "split_model"]

DEFAULT_TIMEOUT = 60.0
PROVIDERS = ("anthropic", "openai")
"""The providers a model name may start with (`provider/model`)."""


def split_model(model: str) -> tuple[str, str]:
    """`(provider, model id)` of a model name in Mastra's router form `provider/model`.

    A bare name (`claude-haiku-4-5`) is Anthropic's; the id keeps any further slashes
    (`openai/meta-llama/Llama-3.1-8B-Instruct` → `("openai", "meta-llama/Llama-3.1-8B-Instruct")`,
    the name a vLLM server knows).

    Raises:
        ValueError: an unknown provider, or nothing after the slash.
    """
    provider, sep, name = model.partition("/")
    if not sep:
        return "anthropic", model
    if provider not in PROVIDERS:
        raise ValueError(f"unknown judge provider {provider!r} in model {model!r}: write "
                         f"'anthropic/<model>' or 'openai/<model>' (for an OpenAI-compatible "
                         f"server, 'openai/{model}')")
    if not name.strip():
        raise ValueError(f"model {model!r} names no model after {provider + '/'!r}")
    return provider, name


@dataclass(frozen=True)
class JudgeRequest:
    """One call to the model, provider-neutral."""

    model: str
    """The provider's model id (no `provider/` prefix; Azure: the deployment name)."""
    system: str
    messages: list[dict[str, Any]]
    max_tokens: int
    temperature: float | None = None
    output_schema: dict[str, Any] | None = None
    """Native structured output: Anthropic `output_config.format`; OpenAI the schema its
    structured-output methods send (`json_schema`, a forced tool, `json_object`, the prompt)."""
    tool: dict[str, Any] | None = None
    """Forced tool call: `{"name", "description", "input_schema"}`."""
    api_key: str | None = field(default=None, repr=False)
    base_url: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    provider: str = "anthropic"
    """Which provider serves this request (`PROVIDERS`)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra HTTP headers sent with the request (e.g. an OpenAI-compatible proxy's)."""
    api_version: str | None = None
    """Azure OpenAI's `api-version` (the model is then the deployment name)."""


@dataclass(frozen=True)
class JudgeReply:
    """What the model answered."""

    text: str
    tool_input: Any = None
    """The forced tool call's input, when the request forced one and the model made it."""
    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None
    cached_input_tokens: int = 0
    """Input tokens served from the provider's prompt cache (0 when it reports none)."""
    reasoning_tokens: int = 0
    """Output tokens a reasoning model spent thinking (0 when it reports none)."""


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

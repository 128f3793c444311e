"""The LLM judge: settings (`Judge`), the provider seam, and one prompt step's judge call.

`Judge` fields all default to None, meaning "inherit": a step's judge is merged field by field
over the scorer's (processor lists replace, they do not merge), then the defaults apply (DESIGN
§4). The provider call sits behind `JudgeProvider`; the default one is `AnthropicProvider`
(`scorers._anthropic`). Providers never retry and classify their own failures (the
`scorers.errors` tree); this module's call loop only asks the error processors, which read
`retryable` / `retry_after` / the error type.

Structured output (`json_prompt_injection`):

- `"auto"` (default) and `False`: native. Anthropic structured outputs (`output_config` with a
  JSON schema) when the installed SDK has the parameter and the model is in its model list
  (`scorers._anthropic.native_output_schema`); else a forced tool call whose `input_schema` is
  the output schema. No schema text in the prompt.
- `"system"` / `True`: the schema is appended to the system prompt.
- `"inline"`: the schema is appended to the user prompt.

A reply that does not parse or validate gets exactly one more attempt with the schema injected
(where the mode put it for `inline`/`system`, else in the system prompt); then the step fails with
`JudgeParseError` — never a score of 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import re
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from scorers._anthropic import AnthropicProvider, default_model, native_output_schema
from scorers._openai import OpenAIProvider
from scorers._provider import (
    DEFAULT_TIMEOUT,
    JudgeProvider,
    JudgeReply,
    JudgeRequest,
    split_model,
)
from scorers.errors import JudgeParseError, ScorerError
from scorers.processors import RetryDecision, is_auth_error
from scorers.redact import PiiRedactor
from scorers.types import JudgeExecution, JudgeUsage, ScoreError

__all__ = [
    "AnthropicProvider",
    "DEFAULT_MAX_PROCESSOR_RETRIES",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT",
    "Judge",
    "JudgeProvider",
    "JudgeReply",
    "JudgeRequest",
    "OpenAIProvider",
    "RouterProvider",
    "default_model",
    "default_provider",
    "use_judge_provider",
]
# Internal, importable for the builder, the sidecar and bench/: call_judge, JudgeOutcome,
# ResolvedJudge, load_provider_sdk.

DEFAULT_MAX_TOKENS = 1024
DEFAULT_MAX_PROCESSOR_RETRIES = 10
"""The retry cap when error processors are configured without `max_processor_retries`."""
TOOL_NAME = "structured_output"
SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "number"}},
    "required": ["score"],
    "additionalProperties": False,
}
INLINE_TEMPLATE = ("Return your response as JSON matching this schema:\n\n{schema}\n\n"
                   "Return only valid JSON. Do not include markdown or explanatory text.")
SYSTEM_TEMPLATE = ("\n\nJSON schema:\n{schema}\n"
                   "You MUST answer with a JSON object that matches the JSON schema above.")

InjectionSetting = bool | Literal["auto", "system", "inline"]
Mode = Literal["native", "system", "inline"]


# ---------------------------------------------------------------------- settings


class Judge(BaseModel):
    """Judge settings for a scorer or one prompt step; every None field inherits.

    Attributes:
        model: `provider/model` (`anthropic/claude-haiku-4-5`, `openai/gpt-4.1-mini`); a bare
            name is Anthropic's (default: `default_model()`, Anthropic's).
        instructions: the judge's system prompt (required by the time a prompt step runs).
        json_prompt_injection: `"auto"` (default), `False`, `True`, `"system"` or `"inline"`.
        input_processors: objects with `process_input(messages) -> messages` (sync or async);
            `messages` is a list of `{"role": "system"|"user", "content": str}` dicts.
        output_processors: objects with `process_output(text) -> text` (sync or async).
        error_processors: e.g. `StreamErrorRetryProcessor(...)`; without any, no retries.
        max_processor_retries: cap on HTTP retries per judge call (10 when error processors are
            configured and this is unset).
        api_key: default the provider SDK's own variable (`ANTHROPIC_API_KEY`,
            `OPENAI_API_KEY`). Never logged.
        base_url: default the SDK's (`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`), else the
            provider's API; for OpenAI any OpenAI-compatible server (vLLM, Ollama, …), for
            Azure OpenAI the resource endpoint.
        headers: extra HTTP headers sent with every call (e.g. a proxy's).
        api_version: Azure OpenAI's `api-version` (the model is then the deployment name).
        redact_pii: pass the judge's input through a `PiiRedactor` first (before the
            `input_processors`).
        timeout: seconds per HTTP call (default 60).
        max_tokens: default 1024.
        temperature: not sent unless set (some current models reject it).
        provider: this judge's own provider; when None, the run's (`Scorer.run(judge_provider=)`
            or `use_judge_provider`), else `default_provider()` (`AnthropicProvider`). For tests:
            `scorers.testing.ScriptedProvider`.
        sleep: the coroutine function that waits between retries (default `asyncio.sleep`);
            for tests that check the waits without spending them.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    model: str | None = None
    instructions: str | None = None
    json_prompt_injection: InjectionSetting | None = None
    input_processors: Sequence[Any] | None = None
    output_processors: Sequence[Any] | None = None
    error_processors: Sequence[Any] | None = None
    max_processor_retries: int | None = Field(default=None, ge=0)
    api_key: SecretStr | None = Field(default=None, repr=False)
    base_url: str | None = None
    headers: Mapping[str, str] | None = None
    api_version: str | None = None
    redact_pii: bool | None = None
    timeout: float | None = Field(default=None, gt=0)
    max_tokens: int | None = Field(default=None, gt=0)
    temperature: float | None = Field(default=None, ge=0)
    provider: Any = Field(default=None, repr=False)
    sleep: Callable[[float], Awaitable[Any]] | None = Field(default=None, repr=False)

    @field_validator("input_processors", "output_processors", "error_processors")
    @classmethod
    def _processors_have_their_method(cls, value: Sequence[Any] | None,
                                      info: ValidationInfo) -> Sequence[Any] | None:
        # Fail when the judge is configured, not on the first judge call.
        method = {"input_processors": "process_input", "output_processors": "process_output",
                  "error_processors": "process_api_error"}[str(info.field_name)]
        if isinstance(value, (str, bytes)):
            raise ValueError(f"{info.field_name} must be a list of processors")
        for processor in value or ():
            if not callable(getattr(processor, method, None)):
                raise ValueError(f"{info.field_name}: {type(processor).__name__} has no "
                                 f"{method}() method")
        return value

    @field_validator("model")
    @classmethod
    def _router_form(cls, value: str | None) -> str | None:
        if value is not None:
            split_model(value)  # an unknown provider fails when the judge is configured
        return value

    @field_validator("headers")
    @classmethod
    def _string_headers(cls, value: Mapping[str, str] | None) -> Mapping[str, str] | None:
        if value is not None and not all(isinstance(k, str) and isinstance(v, str)
                                         for k, v in value.items()):
            raise ValueError("headers must map header names to string values")
        return value

    @field_validator("provider")
    @classmethod
    def _provider_has_complete(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "complete", None)):
            raise ValueError("provider must have an async complete(request) method")
        return value

    def merged_over(self, base: Judge | None) -> Judge:
        """This judge's set fields over `base`'s (field by field; lists replace)."""
        if base is None:
            return self
        values = {name: getattr(self, name) if getattr(self, name) is not None
                  else getattr(base, name) for name in Judge.model_fields}
        return Judge(**values)

    def resolve(self) -> ResolvedJudge:
        """Apply the defaults to the fields still unset."""
        injection = "auto" if self.json_prompt_injection is None else self.json_prompt_injection
        mode: Mode = ("system" if injection is True or injection == "system"
                      else "inline" if injection == "inline" else "native")
        errors = tuple(self.error_processors or ())
        cap = (self.max_processor_retries if self.max_processor_retries is not None
               else DEFAULT_MAX_PROCESSOR_RETRIES if errors else 0)
        inputs = tuple(self.input_processors or ())
        if self.redact_pii and not any(isinstance(p, PiiRedactor) for p in inputs):
            inputs = (PiiRedactor(), *inputs)
        model = self.model or default_model()
        provider_name, model_id = split_model(model)
        return ResolvedJudge(
            model=model,
            instructions=self.instructions,
            mode=mode,
            input_processors=inputs,
            output_processors=tuple(self.output_processors or ()),
            error_processors=errors,
            max_processor_retries=cap,
            api_key=self.api_key.get_secret_value() if self.api_key is not None else None,
            base_url=self.base_url,
            provider_name=provider_name,
            model_id=model_id,
            headers=tuple(sorted((self.headers or {}).items())),
            api_version=self.api_version,
            timeout=self.timeout if self.timeout is not None else DEFAULT_TIMEOUT,
            max_tokens=self.max_tokens if self.max_tokens is not None else DEFAULT_MAX_TOKENS,
            temperature=self.temperature,
            provider=(self.provider if self.provider is not None
                      else _CURRENT_PROVIDER.get() or _DEFAULT_PROVIDER),
            sleep=self.sleep if self.sleep is not None else asyncio.sleep,
        )


@dataclass(frozen=True)
class ResolvedJudge:
    """A judge with every default applied (what one call uses).

    `model` is the name as configured (router form or bare); `provider_name` and `model_id`
    its two parts (`split_model`).
    """

    model: str
    instructions: str | None
    mode: Mode
    input_processors: tuple[Any, ...]
    output_processors: tuple[Any, ...]
    error_processors: tuple[Any, ...]
    max_processor_retries: int
    api_key: str | None = field(repr=False)
    base_url: str | None
    timeout: float
    max_tokens: int
    temperature: float | None
    provider: JudgeProvider = field(repr=False)
    sleep: Callable[[float], Awaitable[Any]] = field(default=asyncio.sleep, repr=False)
    provider_name: str = "anthropic"
    model_id: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    api_version: str | None = None


# ---------------------------------------------------------------------- provider choice


class RouterProvider:
    """The default `JudgeProvider`: each request goes to the provider its model names
    (`JudgeRequest.provider`): `AnthropicProvider` or `OpenAIProvider`, each made on first use
    (so a judge that only talks to one never builds the other)."""

    def __init__(self) -> None:
        self._providers: dict[str, JudgeProvider] = {}

    def provider(self, name: str) -> JudgeProvider:
        """The provider serving `name` (`anthropic`, `openai`)."""
        found = self._providers.get(name)
        if found is None:
            found = self._providers[name] = (OpenAIProvider() if name == "openai"
                                             else AnthropicProvider())
        return found

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        """Make the call with the provider `request.provider` names."""
        return await self.provider(request.provider).complete(request)


_DEFAULT_PROVIDER = RouterProvider()
_CURRENT_PROVIDER: contextvars.ContextVar[JudgeProvider | None] = contextvars.ContextVar(
    "scorecar_judge_provider", default=None)


def default_provider() -> JudgeProvider:
    """The process-wide provider judges use when nothing else is set (a `RouterProvider`:
    Anthropic or OpenAI, by the model's `provider/` prefix)."""
    return _DEFAULT_PROVIDER


def load_provider_sdk(provider: str) -> None:
    """Import `provider`'s SDK (`anthropic`: and read its model list for `default_model`).

    Blocking (an SDK import takes ~1 s and tens of MiB): the sidecar calls it in a worker
    thread when the first judge job is picked up, never at start and never on the event loop.
    """
    if provider == "openai":
        from scorers._openai import _sdk

        _sdk()
    else:
        default_model()


@contextlib.contextmanager
def use_judge_provider(provider: JudgeProvider | None) -> Iterator[None]:
    """Within this block (this task and the tasks it starts), judges without a provider of
    their own call `provider` (e.g. the sidecar's rate-limited wrapper, or a scripted fake).

    A `Judge(provider=...)` set explicitly still wins. `None` restores the default.
    """
    token = _CURRENT_PROVIDER.set(provider)
    try:
        yield
    finally:
        _CURRENT_PROVIDER.reset(token)


# ---------------------------------------------------------------------- one judge call


@dataclass(frozen=True)
class JudgeOutcome:
    """A successful judge call: the parsed value and its execution record."""

    value: Any
    execution: JudgeExecution


class _ParseFailure(Exception):
    def __init__(self, code: str, message: str, raw: str) -> None:
        super().__init__(message)
        self.code = code
        self.raw = raw


class _ScoreOutput(BaseModel):
    model_config = ConfigDict(extra="ignore")
    score: float = Field(strict=True, allow_inf_nan=False)


class _Schema:
    """An output schema: its JSON schema, and how to validate a decoded reply."""

    def __init__(self, schema: type[BaseModel] | dict[str, Any] | None, kind: str) -> None:
        self.model: type[BaseModel] | None = None
        self.validator: Any = None
        if kind == "score":
            self.model = _ScoreOutput
            self.json_schema = SCORE_SCHEMA
        elif isinstance(schema, type) and issubclass(schema, BaseModel):
            self.model = schema
            self.json_schema = schema.model_json_schema()
        elif isinstance(schema, dict):
            self.json_schema = schema
            import jsonschema  # type: ignore[import-untyped]  # ~8 MiB: only for dict schemas

            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            self.validator = cls(schema)
        else:
            raise TypeError("output_schema must be a pydantic model class or a JSON-schema dict")
        self.text = json.dumps(self.json_schema)
        self.is_object = self.json_schema.get("type") == "object"

    def validate(self, value: Any, raw: str) -> Any:
        if self.model is not None:
            try:
                parsed = self.model.model_validate(value)
            except ValidationError as exc:
                raise _ParseFailure("STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED",
                                    f"reply does not match the schema: {exc.errors()[0]['msg']}",
                                    raw) from None
            if isinstance(parsed, _ScoreOutput):
                return {"score": parsed.score}
            return parsed
        errors = sorted(self.validator.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            raise _ParseFailure("STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED",
                                f"reply does not match the schema: {errors[0].message}", raw)
        return value


_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)


def _decode(raw: str) -> Any:
    stripped = raw.strip()
    fenced = _FENCE.match(stripped)
    if fenced:  # prompt-injected replies sometimes come in a markdown fence
        stripped = fenced.group(1).strip()
    if not stripped:
        raise _ParseFailure("STRUCTURED_OUTPUT_OBJECT_UNDEFINED", "the judge returned no JSON", raw)
    try:
        return json.loads(stripped, parse_constant=_reject_constant)
    except ValueError as exc:
        raise _ParseFailure("JSON_PARSE_ERROR", f"reply is not valid JSON: {exc}", raw) from None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _check_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str) for m in messages):
        raise TypeError("an input processor must return a list of "
                        "{'role': str, 'content': str} dicts")
    return messages


def _fail(exc: Exception, execution: JudgeExecution) -> NoReturn:
    """Raise `exc` carrying the failed call's record: a `ScorerError` as it is, anything else
    (a processor's own exception) as a `ScorerError` raised from it."""
    if isinstance(exc, ScorerError):
        exc.execution = execution
        raise exc
    raise ScorerError(str(exc), execution=execution) from exc


class _Call:
    """Bookkeeping of one judge call (all its format attempts and HTTP calls)."""

    def __init__(self, judge: ResolvedJudge) -> None:
        self.judge = judge
        self.started = time.perf_counter()
        self.attempts = 0
        self.http_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.raw: str | None = None

    def execution(self, error: BaseException | None = None) -> JudgeExecution:
        return JudgeExecution(
            status="failed" if error is not None else "success",
            judge_model_id=self.judge.model,
            usage=JudgeUsage(input_tokens=self.input_tokens, output_tokens=self.output_tokens),
            attempt_count=self.attempts,
            model_call_count=self.http_calls,
            duration_ms=(time.perf_counter() - self.started) * 1000.0,
            raw_output=self.raw if error is not None else None,
            error=None if error is None else ScoreError(
                name=type(error).__name__, message=str(error),
                code=error.code if isinstance(error, ScorerError) else None),
        )

    async def send(self, request: JudgeRequest) -> JudgeReply:
        """One HTTP call with the error processors' retries."""
        retries = 0
        while True:
            self.http_calls += 1
            try:
                reply = await self.judge.provider.complete(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                decision = await self._decide(exc, retries)
                if decision is None:
                    raise
                retries += 1
                if decision.delay > 0:
                    await self.judge.sleep(decision.delay)
                continue
            self.input_tokens += reply.input_tokens
            self.output_tokens += reply.output_tokens
            return reply

    async def _decide(self, exc: BaseException, retries: int) -> RetryDecision | None:
        if retries >= self.judge.max_processor_retries or is_auth_error(exc):
            return None
        for processor in self.judge.error_processors:
            decision = await _maybe_await(
                processor.process_api_error(error=exc, retry_count=retries))
            if isinstance(decision, RetryDecision) and decision.retry:
                return decision
        return None


async def call_judge(scorer_judge: Judge | None, step_judge: Judge | None, *, step: str,
                     prompt: str, kind: Literal["text", "score", "object"],
                     output_schema: type[BaseModel] | dict[str, Any] | None = None
                     ) -> JudgeOutcome:
    """Ask the judge for one prompt step's answer.

    Args:
        scorer_judge: the scorer-level settings (or None).
        step_judge: the step-level settings, merged field by field over `scorer_judge`.
        step: the step name (for messages).
        prompt: the user prompt.
        kind: `text` (plain answer), `score` (`{"score": number}`) or `object` (`output_schema`).
        output_schema: pydantic model class or JSON-schema dict, for `object`.

    Returns:
        The parsed value (a model instance for model schemas, `{"score": x}` for `score`, the
        text for `text`) and the execution record.

    Raises:
        ScorerError: `JudgeAuthError`, `JudgeUnavailableError`, `JudgeRequestError` (from the
            provider), `JudgeParseError`, a plain `ScorerError` for missing instructions, or
            one raised from a processor's own exception; `execution` holds the call's record
            (None when it failed before any attempt could start).
    """
    merged = (step_judge.merged_over(scorer_judge) if step_judge is not None
              else scorer_judge or Judge())
    judge = merged.resolve()
    if not judge.instructions:
        raise ScorerError(f'step "{step}" requires judge instructions')
    call = _Call(judge)
    try:
        schema = _Schema(output_schema, kind) if kind != "text" else None
        messages: list[dict[str, Any]] = [{"role": "system", "content": judge.instructions},
                                          {"role": "user", "content": prompt}]
        for processor in judge.input_processors:
            messages = _check_messages(await _maybe_await(processor.process_input(messages)))
    except Exception as exc:
        _fail(exc, call.execution(exc))
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    conversation = [{"role": m["role"], "content": m["content"]}
                    for m in messages if m["role"] != "system"]

    modes: list[Mode] = [judge.mode]
    if schema is not None:  # the single format fallback
        modes.append(judge.mode if judge.mode in ("system", "inline") else "system")
    failure: _ParseFailure | None = None
    for mode in modes:
        call.attempts += 1
        request = _build_request(judge, system, conversation, schema, mode)
        try:
            reply = await call.send(request)
            raw = (json.dumps(reply.tool_input) if reply.tool_input is not None
                   else reply.text)
            for processor in judge.output_processors:
                raw = await _maybe_await(processor.process_output(raw))
                if not isinstance(raw, str):
                    raise TypeError("an output processor must return a string")
        except Exception as exc:
            _fail(exc, call.execution(exc))
        call.raw = raw
        if schema is None:
            return JudgeOutcome(raw, call.execution())
        try:
            value = _decode(raw)
            wrapped = request.tool is not None or (request.provider == "openai"
                                                    and request.output_schema is not None)
            if wrapped and not schema.is_object and isinstance(value, dict):
                value = value.get("value")  # unwrap a non-object schema sent as a tool
            return JudgeOutcome(schema.validate(value, raw), call.execution())
        except _ParseFailure as exc:
            failure = exc
    assert failure is not None
    error = JudgeParseError(f'step "{step}": {failure} (after {call.attempts} attempts)',
                            code=failure.code)
    error.execution = call.execution(error)
    raise error


def _build_request(judge: ResolvedJudge, system: str, conversation: list[dict[str, Any]],
                   schema: _Schema | None, mode: Mode) -> JudgeRequest:
    messages = [dict(m) for m in conversation]
    output_schema: dict[str, Any] | None = None
    tool: dict[str, Any] | None = None
    if schema is not None:
        if mode == "system":
            system = system + SYSTEM_TEMPLATE.format(schema=schema.text)
        elif mode == "inline":
            last = next((m for m in reversed(messages) if m["role"] == "user"), None)
            injection = {"type": "text", "text": INLINE_TEMPLATE.format(schema=schema.text)}
            if last is None:
                messages.append({"role": "user", "content": [injection]})
            else:  # appended as a text part of the last user message, as Mastra does
                last["content"] = [{"type": "text", "text": last["content"]}, injection]
        elif judge.provider_name == "openai":
            # the provider picks its structured-output method (json_schema → tool →
            # json_object → the prompt); its root must be an object
            output_schema = schema.json_schema if schema.is_object else _wrapped(schema)
        else:
            output_schema = native_output_schema(judge.model_id, schema.json_schema)
        if mode == "native" and output_schema is None:
            input_schema = schema.json_schema if schema.is_object else _wrapped(schema)
            tool = {"name": TOOL_NAME, "description": "Return the answer as structured output.",
                    "input_schema": input_schema}
    return JudgeRequest(model=judge.model_id, system=system, messages=messages,
                        max_tokens=judge.max_tokens, temperature=judge.temperature,
                        output_schema=output_schema, tool=tool, api_key=judge.api_key,
                        base_url=judge.base_url, timeout=judge.timeout,
                        provider=judge.provider_name, headers=judge.headers,
                        api_version=judge.api_version)


def _wrapped(schema: _Schema) -> dict[str, Any]:
    """A non-object schema as the object `{"value": …}` (tools and OpenAI's formats need an
    object root; the reply is unwrapped again)."""
    return {"type": "object", "properties": {"value": schema.json_schema}, "required": ["value"]}


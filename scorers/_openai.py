"""The OpenAI judge provider: OpenAI, Azure OpenAI and every OpenAI-compatible server (vLLM,
Ollama, LiteLLM proxy, OpenRouter) through `base_url`.

Everything that knows the `openai` SDK is here, imported on first use (a sidecar that never
calls an OpenAI judge never pays for it). `OpenAIProvider.complete` makes `chat.completions`
calls with the SDK's own retries off (only the judge's error processors retry) and raises the
`scorers.errors` tree, the SDK error kept as `__cause__`:

- 401/403 or no API key: `JudgeAuthError` (never retried).
- 408, 409, 429 (not `insufficient_quota`), 5xx, connection errors, timeouts:
  `JudgeUnavailableError(retry_after=…)`: `retry-after-ms`, `retry-after` (seconds or an HTTP
  date), else the largest `x-ratelimit-reset-requests` / `-tokens` (`1m30s`, `250ms`). The
  server's `x-should-retry: true|false` wins, as in the SDK.
- 400, 402, 404, 422, quota exhaustion (`insufficient_quota`) and every other status:
  `JudgeRequestError` (`code`: the API's error code, else `http_<status>`).
- a refusal (`message.refusal`): `JudgeRequestError(code="refusal")` carrying its text;
  `finish_reason: "length"` with no content: `JudgeRequestError(code="max_tokens")` saying to
  raise `max_tokens`.

Structured output degrades instead of failing: `response_format` `json_schema` + `strict` (the
schema made strict-compatible, `strict_schema`) → only on 400/422, a forced tool call →
`json_object` → the schema in the system prompt. The first method that works is remembered per
(endpoint, api version, model); a 429, 5xx or timeout never degrades. The judge validates every
reply locally whatever the method.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
import re
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from scorers._provider import JudgeReply, JudgeRequest
from scorers._retry import http_retry_hint
from scorers.errors import (
    JudgeAuthError,
    JudgeRequestError,
    JudgeUnavailableError,
    ScorerError,
)

if TYPE_CHECKING:
    import openai

__all__ = ["METHODS", "OpenAIProvider", "judge_error", "reset_duration", "retry_hint",
           "strict_schema"]

METHODS = ("json_schema", "tool", "json_object", "prompt")
"""Structured-output methods, best first; each is tried only after a 400/422 to the one before."""
TOOL_NAME = "structured_output"
SCHEMA_PROMPT = ("\n\nJSON schema:\n{schema}\n"
                 "You MUST answer with a JSON object that matches the JSON schema above.")
NO_KEY = "EMPTY"
"""The key sent to an OpenAI-compatible server at a `base_url` when none is configured (what
vLLM's documentation uses; such servers usually ignore it)."""
QUOTA_CODES = frozenset({"insufficient_quota", "billing_hard_limit_reached",
                         "billing_not_active"})
UNKNOWN_MODEL_CODES = frozenset({"model_not_found", "deploymentnotfound"})
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_DEGRADE_STATUS = frozenset({400, 422})
_UNSUPPORTED_KEYWORDS = frozenset({
    "default", "examples", "format", "pattern", "minLength", "maxLength", "minItems", "maxItems",
    "uniqueItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minProperties", "maxProperties", "patternProperties", "propertyNames",
    "unevaluatedProperties", "unevaluatedItems", "dependentRequired", "dependentSchemas",
    "if", "then", "else", "not", "contains", "minContains", "maxContains", "$schema", "$id",
    "readOnly", "writeOnly", "deprecated", "contentEncoding", "contentMediaType"})


@functools.cache
def _sdk() -> Any:
    """The `openai` module, imported on first use (tens of MiB a code-scorer sidecar never
    needs)."""
    import openai

    return openai


# ---------------------------------------------------------------------- schemas


def strict_schema(schema: Any) -> Any:
    """`schema` as OpenAI's strict structured outputs take it: every object closed
    (`additionalProperties: false`) with every property required, `oneOf` as `anyOf`, a
    single-member `allOf` inlined, `$ref` without siblings, and the keywords strict mode (and
    most OpenAI-compatible servers) refuse stripped. The reply is still validated against the
    original schema."""
    if isinstance(schema, list):
        return [strict_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return {"$ref": schema["$ref"]}
    node = {k: v for k, v in schema.items() if k not in _UNSUPPORTED_KEYWORDS}
    all_of = node.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1:
        del node["allOf"]
        inner = strict_schema(all_of[0])
        if isinstance(inner, dict):
            return {**inner, **{k: strict_schema(v) for k, v in node.items()}}
    if "oneOf" in node:
        node["anyOf"] = node.pop("oneOf")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {name: strict_schema(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf", "allOf", "prefixItems"):
            out[key] = strict_schema(value)
        else:
            out[key] = value
    kind = out.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in out:
        properties = out.setdefault("properties", {})
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


# ---------------------------------------------------------------------- errors

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")


def reset_duration(value: str | None) -> float | None:
    """An `x-ratelimit-reset-*` value in seconds: `1m30s`, `250ms`, `6s`, `0.5s`, `1h2m`, or a
    plain number of seconds; None when it is not one."""
    if not value:
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in parts)


def retry_hint(headers: Mapping[str, Any]) -> float | None:
    """The wait a reply's headers ask for: `retry-after-ms`, `retry-after` (seconds or an
    HTTP date), else the largest of `x-ratelimit-reset-requests` / `-tokens`; None without
    any. (The error processor caps it with `max_retry_after`.)"""
    try:
        hint = http_retry_hint(headers)
    except ValueError:
        hint = None
    if hint is not None:
        return hint
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    resets = [reset_duration(lowered.get(name))
              for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")]
    found = [r for r in resets if r is not None]
    return max(found) if found else None


def _codes(error: BaseException) -> set[str]:
    codes: set[str] = set()
    for attr in ("code", "type"):
        value = getattr(error, attr, None)
        if isinstance(value, str):
            codes.add(value.lower())
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("code", "type"):
                value = inner.get(key)
                if isinstance(value, str):
                    codes.add(value.lower())
    return codes


def _code(error: BaseException, status: int | None) -> str | None:
    for attr in ("code", "type"):
        value = getattr(error, attr, None)
        if isinstance(value, str) and value:
            return value
    return f"http_{status}" if status is not None else None


def _retryable_status(error: Any) -> bool:
    headers = getattr(getattr(error, "response", None), "headers", None) or {}
    hint = headers.get("x-should-retry")
    if hint in ("true", "false"):
        return bool(hint == "true")
    status: int = error.status_code
    return status in _RETRYABLE_STATUS or status >= 500


def judge_error(exc: BaseException) -> BaseException:
    """The `scorers.errors` error for an `openai` SDK failure (`exc` itself when nothing
    applies); the caller raises it `from exc`."""
    if isinstance(exc, ScorerError):
        return exc
    sdk = _sdk()
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        codes = _codes(exc)
        code = _code(exc, status)
        if status in (401, 403) or isinstance(exc, (sdk.AuthenticationError,
                                                    sdk.PermissionDeniedError)):
            return JudgeAuthError(f"the judge refused our credentials (HTTP {status}): check "
                                  "the API key and its permissions", code=code)
        if codes & QUOTA_CODES or status == 402:
            return JudgeRequestError(f"the judge's quota is used up (HTTP {status}): check the "
                                     f"plan and billing of this API key: {exc}",
                                     code=next(iter(codes & QUOTA_CODES), "insufficient_quota"))
        if status == 404 or codes & UNKNOWN_MODEL_CODES:
            return JudgeRequestError(f"the judge does not know this model or deployment "
                                     f"(HTTP {status}): {exc}", code="model_not_found")
        if _retryable_status(exc):
            headers = exc.response.headers
            return JudgeUnavailableError(f"judge unavailable (HTTP {status}): {exc}",
                                         retry_after=retry_hint(headers), code=code)
        return JudgeRequestError(f"the judge refused the request (HTTP {status}): {exc}",
                                 code=code)
    if isinstance(exc, sdk.APITimeoutError) or isinstance(exc, TimeoutError):
        return JudgeUnavailableError(f"judge timed out: {exc}", code="timeout")
    if isinstance(exc, sdk.APIConnectionError):
        return JudgeUnavailableError(f"judge unreachable: {type(exc).__name__}: {exc}",
                                     code="connection_error")
    if isinstance(exc, (ValueError, sdk.APIResponseValidationError)):
        return JudgeUnavailableError(f"the judge's response was not a valid API reply: "
                                     f"{type(exc).__name__}: {exc}", retryable=False)
    return exc


def _degradable(exc: BaseException) -> bool:
    """A 400/422 to a structured-output method: try the next one (never on 429/5xx/timeouts)."""
    status = getattr(exc, "status_code", None)
    return status in _DEGRADE_STATUS and not (_codes(exc) & QUOTA_CODES)


# ---------------------------------------------------------------------- the provider


def _no_credentials(detail: str) -> JudgeAuthError:
    return JudgeAuthError("cannot create the OpenAI client: set OPENAI_API_KEY (Azure: "
                          "AZURE_OPENAI_API_KEY), the judge's api_key_env, or "
                          f"Judge(api_key=...) ({detail})")


class OpenAIProvider:
    """`JudgeProvider` over `openai.AsyncOpenAI(max_retries=0)`, or `AsyncAzureOpenAI` when
    the request has an `api_version` (the model is then the deployment name).

    Clients are kept per event loop and per (key, base URL, api version, headers). The working
    structured-output method is remembered per (endpoint, api version, model) in
    `self.methods`.
    """

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[tuple[Any, ...], openai.AsyncOpenAI]] = (
            weakref.WeakKeyDictionary())
        self.methods: dict[tuple[str | None, str | None, str], int] = {}

    def _client(self, request: JudgeRequest) -> openai.AsyncOpenAI:
        per_loop = self._clients.setdefault(asyncio.get_running_loop(), {})
        key = (request.api_key, request.base_url, request.api_version, request.headers)
        client = per_loop.get(key)
        if client is not None:
            return client
        sdk = _sdk()
        headers = dict(request.headers) or None
        api_key = request.api_key
        try:
            if request.api_version is not None:
                client = sdk.AsyncAzureOpenAI(api_key=api_key, azure_endpoint=request.base_url,
                                              api_version=request.api_version, max_retries=0,
                                              default_headers=headers)
            else:
                if api_key is None and request.base_url is not None \
                        and not os.environ.get("OPENAI_API_KEY"):
                    api_key = NO_KEY  # a local server (vLLM, Ollama) that needs none
                client = sdk.AsyncOpenAI(api_key=api_key, base_url=request.base_url,
                                         max_retries=0, default_headers=headers)
        except sdk.OpenAIError as exc:
            raise _no_credentials(str(exc).split(".")[0]) from None
        per_loop[key] = client
        made: openai.AsyncOpenAI = client
        return made

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        """One chat completion (more only while degrading the structured-output method).

        Raises:
            JudgeUnavailableError: busy, unreachable, timed out, or not an API reply.
            JudgeAuthError: no key, or the key was refused (401/403).
            JudgeRequestError: refused (400, 402, 404, 422, quota), a refusal, or a reply cut
                at `max_tokens` before any content.
        """
        client = self._client(request)
        if request.output_schema is None:
            return await self._converted(client, request, None)
        remembered = (request.base_url, request.api_version, request.model)
        start = self.methods.get(remembered, 0)
        for index in range(start, len(METHODS)):
            try:
                reply = await self._call(client, request, METHODS[index])
            except Exception as exc:
                if index + 1 < len(METHODS) and _degradable(exc):
                    continue
                error = judge_error(exc)
                if error is exc:
                    raise
                raise error from exc
            if index != start:
                self.methods[remembered] = index
            return reply
        raise AssertionError("unreachable")  # pragma: no cover - the last method raises

    async def _converted(self, client: openai.AsyncOpenAI, request: JudgeRequest,
                         method: str | None) -> JudgeReply:
        try:
            return await self._call(client, request, method)
        except Exception as exc:
            error = judge_error(exc)
            if error is exc:
                raise
            raise error from exc

    async def _call(self, client: openai.AsyncOpenAI, request: JudgeRequest,
                    method: str | None) -> JudgeReply:
        system = request.system
        schema = request.output_schema
        kwargs: dict[str, Any] = {"model": request.model}
        # Servers at a base_url (vLLM, Ollama, older proxies) know max_tokens; OpenAI's
        # reasoning models accept only max_completion_tokens.
        if request.base_url is not None and request.api_version is None:
            kwargs["max_tokens"] = request.max_tokens
        else:
            kwargs["max_completion_tokens"] = request.max_tokens
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if schema is not None and method == "json_schema":
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {
                "name": TOOL_NAME, "schema": strict_schema(schema), "strict": True}}
        elif schema is not None and method == "tool":
            kwargs["tools"] = [{"type": "function", "function": {
                "name": TOOL_NAME, "description": "Return the answer as structured output.",
                "parameters": schema}}]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": TOOL_NAME}}
        elif schema is not None:
            system = system + SCHEMA_PROMPT.format(schema=json.dumps(schema))
            if method == "json_object":
                kwargs["response_format"] = {"type": "json_object"}
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system \
            else []
        messages += [{"role": m["role"], "content": m["content"]} for m in request.messages]
        create: Any = client.chat.completions.create  # keyword arguments built above
        completion = await create(messages=messages, timeout=request.timeout, **kwargs)
        if not isinstance(completion, _sdk().types.chat.ChatCompletion) or not completion.choices:
            raise ValueError(f"expected a chat completion, got {type(completion).__name__}")
        return _reply(completion, request, method)


def _reply(completion: Any, request: JudgeRequest, method: str | None) -> JudgeReply:
    choice = completion.choices[0]
    message = choice.message
    usage = completion.usage
    input_tokens = getattr(usage, "prompt_tokens", 0) or 0
    output_tokens = getattr(usage, "completion_tokens", 0) or 0
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0
    reasoning = getattr(getattr(usage, "completion_tokens_details", None),
                        "reasoning_tokens", 0) or 0
    refusal = getattr(message, "refusal", None)
    if refusal:
        raise JudgeRequestError(f"the judge refused to answer: {refusal}", code="refusal")
    text = message.content or ""
    tool_input: Any = None
    if method == "tool":
        for call in message.tool_calls or ():
            function = getattr(call, "function", None)
            if function is not None and function.name == TOOL_NAME:
                try:
                    tool_input = json.loads(function.arguments)
                except ValueError:
                    text = function.arguments  # the judge's parse check sees it and falls back
                break
    if choice.finish_reason == "length" and not text.strip() and tool_input is None:
        raise JudgeRequestError(
            f"the judge's reply was cut at max_tokens ({request.max_tokens}) before any "
            f"content ({output_tokens} output tokens, {reasoning} of them reasoning): raise "
            "the judge's max_tokens", code="max_tokens")
    return JudgeReply(text=text, tool_input=tool_input, input_tokens=input_tokens,
                      output_tokens=output_tokens, stop_reason=choice.finish_reason,
                      cached_input_tokens=cached, reasoning_tokens=reasoning)


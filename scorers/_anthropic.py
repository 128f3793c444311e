"""The Anthropic judge provider: the SDK client, its model list, and its errors classified.

Everything that knows the `anthropic` SDK is here. `AnthropicProvider.complete` makes one
`messages.create` call with the SDK's own retries off (only the judge's error processors retry)
and raises the `scorers.errors` tree, the SDK error kept as `__cause__`:

- 401/403, `authentication_error`, `permission_error`, `invalid_api_key`, …, or no API key:
  `JudgeAuthError` (never retried).
- 408, 409, 429, 5xx (529 `overloaded_error` included), connection errors and timeouts:
  `JudgeUnavailableError(retry_after=…)`, from `retry-after-ms` (wins) or `retry-after`
  (seconds or an HTTP date). The server's `x-should-retry: true|false` wins, as in the SDK.
- any other status: `JudgeRequestError`.
- a 200 that is not a Messages API reply (a broken proxy):
  `JudgeUnavailableError(retryable=False)`.

`code` on the error is the API's error type (`overloaded_error`), else `http_<status>`,
`timeout` or `connection_error`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import re
import typing
import weakref
from typing import TYPE_CHECKING, Any

from scorers._provider import JudgeReply, JudgeRequest
from scorers._retry import http_retry_hint
from scorers.errors import (
    JudgeAuthError,
    JudgeRequestError,
    JudgeUnavailableError,
    ScorecarError,
    ScorerError,
    error_chain,
)

if TYPE_CHECKING:
    import anthropic

__all__ = ["AnthropicProvider", "default_model", "native_output_schema"]


@functools.cache
def _sdk() -> Any:
    """The `anthropic` module, imported on first use: it weighs ~70 MiB of memory, which a
    sidecar running only code scorers never needs to pay."""
    import anthropic

    return anthropic

_AUTH_CODES = frozenset({"access_denied", "authentication_error", "forbidden", "invalid_api_key",
                         "permission_denied", "permission_error"})
_RETRYABLE_STATUS = frozenset({408, 409, 429})


# ---------------------------------------------------------------------- models


@functools.cache
def _sdk_models() -> tuple[str, ...]:
    names: list[str] = []
    for arg in typing.get_args(_sdk().types.Model):
        names.extend(a for a in typing.get_args(arg) if isinstance(a, str))
    return tuple(names)


def _deprecated_models() -> set[str]:
    try:
        from anthropic._data import DEPRECATED_MODELS  # the SDK's own list (private module)
    except ImportError:
        return set()
    return set(DEPRECATED_MODELS)


def default_model() -> str:
    """The default judge model: the newest Haiku alias in the installed SDK's model list
    that the SDK does not mark deprecated (inexpensive and current)."""
    deprecated = _deprecated_models()
    for name in _sdk_models():  # the SDK lists newest first
        if "haiku" in name and not re.search(r"\d{8}$", name) and name not in deprecated:
            return name
    return "claude-haiku-4-5"


@functools.cache
def _sdk_has_output_config() -> bool:
    return "output_config" in inspect.signature(
        _sdk().resources.messages.AsyncMessages.create).parameters


@functools.cache
def _structured_output_models() -> frozenset[str]:
    """Every Claude model this SDK lists supports structured outputs; other ids (proxies,
    custom deployments) get the forced tool call, which every Claude model supports."""
    return frozenset(_sdk_models())


def native_output_schema(model: str, json_schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema to send as Anthropic structured output for `model`, or None when the
    installed SDK or the model does not take one (the judge then forces a tool call)."""
    if not (_sdk_has_output_config() and model in _structured_output_models()):
        return None
    try:
        schema: dict[str, Any] = _sdk().transform_schema(json_schema)
        return schema
    except (ValueError, TypeError):
        return None


# ---------------------------------------------------------------------- errors


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    if status is None:
        status = getattr(error, "status", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _headers(error: BaseException) -> Any:
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        headers = getattr(error, "response_headers", None)
    return headers


def _codes(error: BaseException) -> set[str]:
    codes: set[str] = set()
    for attr in ("type", "code", "error_code"):
        value = getattr(error, attr, None)
        if isinstance(value, str):
            codes.add(value.lower())
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            for key in ("type", "code"):
                value = inner.get(key)
                if isinstance(value, str):
                    codes.add(value.lower())
    return codes


def is_auth_error(error: BaseException) -> bool:
    """True for `JudgeAuthError`, 401/403 and authentication/permission errors anywhere in the
    cause chain."""
    for err in error_chain(error):
        if isinstance(err, (JudgeAuthError, _sdk().AuthenticationError,
                            _sdk().PermissionDeniedError)):
            return True
        if _status(err) in (401, 403) or _codes(err) & _AUTH_CODES:
            return True
    return False


def is_retryable(error: BaseException) -> bool:
    """True when the error may succeed later: a retryable scorecar error, or an SDK error for
    408, 409, 429, 5xx, a connection error or a timeout (`x-should-retry` from the server wins)."""
    for err in error_chain(error):
        if isinstance(err, ScorecarError):
            return err.retryable
        if isinstance(err, _sdk().APIConnectionError):  # includes APITimeoutError
            return True
        if isinstance(err, TimeoutError):
            return True
        if getattr(err, "is_retryable", None) is True:
            return True
        status = _status(err)
        if status is not None:
            headers = _headers(err)
            hint = headers.get("x-should-retry") if headers is not None else None
            if hint in ("true", "false"):
                return bool(hint == "true")
            return status in _RETRYABLE_STATUS or status >= 500
    return False


def _retry_after(error: BaseException) -> float | None:
    """The server's requested wait in seconds, or None: the first reply in the chain whose
    headers hold a usable hint (`retry-after-ms` wins over `retry-after`, seconds or an HTTP
    date; `scorers._retry.http_retry_hint`).
    """
    for err in error_chain(error):
        headers = _headers(err)
        if headers is None:
            continue
        wait = http_retry_hint(headers)
        if wait is not None:
            return wait
    return None


def _error_code(exc: BaseException) -> str | None:
    for attr in ("type", "code"):
        value = getattr(exc, attr, None)
        if isinstance(value, str):
            return value
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return f"http_{status}"
    if isinstance(exc, _sdk().APITimeoutError):
        return "timeout"
    if isinstance(exc, _sdk().APIConnectionError):
        return "connection_error"
    return None


def judge_error(exc: BaseException) -> BaseException:
    """The `scorers.errors` error for an SDK failure (`exc` itself when nothing applies).

    The caller raises it `from exc`, so matchers still see the SDK error in the chain.
    """
    if isinstance(exc, ScorerError):
        return exc
    code = _error_code(exc)
    if is_auth_error(exc):
        return JudgeAuthError(f"the judge refused our credentials (HTTP {_status(exc)}): "
                              "check the API key and its permissions", code=code)
    if isinstance(exc, _sdk().APIStatusError):
        if is_retryable(exc):
            return JudgeUnavailableError(f"judge unavailable (HTTP {exc.status_code}): {exc}",
                                         retry_after=_retry_after(exc), code=code)
        return JudgeRequestError(f"the judge refused the request (HTTP {exc.status_code}): "
                                 f"{exc}", code=code)
    if is_retryable(exc):
        return JudgeUnavailableError(f"judge unreachable: {type(exc).__name__}: {exc}",
                                     retry_after=_retry_after(exc), code=code)
    if isinstance(exc, (ValueError, _sdk().APIResponseValidationError)):
        # A 200 whose body is not a Messages API reply (a broken proxy): not transient.
        return JudgeUnavailableError(f"the judge's response was not a valid API reply: "
                                     f"{type(exc).__name__}: {exc}", retryable=False, code=code)
    return exc


# ---------------------------------------------------------------------- the provider


def _no_credentials(detail: str) -> JudgeAuthError:
    # No API key anywhere: a configuration error, never retried.
    return JudgeAuthError("cannot create the Anthropic client: set ANTHROPIC_API_KEY or "
                          f"Judge(api_key=...) ({detail})")


class AnthropicProvider:
    """`JudgeProvider` over `anthropic.AsyncAnthropic(max_retries=0)`.

    Clients are kept per event loop and per (api key, base url), so connections are reused
    across calls; the timeout is set per request. Failures are raised as the
    `scorers.errors` tree with the SDK error as `__cause__` (see the module docstring).
    """

    def __init__(self) -> None:
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop,
            dict[tuple[str | None, str | None], anthropic.AsyncAnthropic]] = (
            weakref.WeakKeyDictionary())

    def _client(self, request: JudgeRequest) -> anthropic.AsyncAnthropic:
        per_loop = self._clients.setdefault(asyncio.get_running_loop(), {})
        key = (request.api_key, request.base_url)
        client = per_loop.get(key)
        if client is None:
            try:
                client = _sdk().AsyncAnthropic(api_key=request.api_key,
                                                  base_url=request.base_url, max_retries=0)
            except _sdk().AnthropicError as exc:
                raise _no_credentials(type(exc).__name__) from None
            if client.api_key is None and client.auth_token is None and getattr(
                    client, "credentials", None) is None:
                # the SDK would only fail at request time, with a TypeError
                raise _no_credentials("no API key, auth token or credentials found")
            per_loop[key] = client
        return client

    async def complete(self, request: JudgeRequest) -> JudgeReply:
        """Call `messages.create` once and return its text, tool input and usage.

        Raises:
            JudgeUnavailableError: busy, unreachable, timed out (`retry_after` when the API
                said), or a reply that is not a Messages API reply (`retryable=False`).
            JudgeAuthError: no API key, or the key was refused (401/403).
            JudgeRequestError: the API refused the request (400, 404, 413 …).
        """
        client = self._client(request)
        try:
            return await self._create(client, request)
        except Exception as exc:
            error = judge_error(exc)
            if error is exc:
                raise
            raise error from exc

    async def _create(self, client: anthropic.AsyncAnthropic, request: JudgeRequest
                      ) -> JudgeReply:
        kwargs: dict[str, Any] = {"model": request.model, "max_tokens": request.max_tokens,
                                  "system": request.system, "messages": request.messages}
        if request.temperature is not None:
            # this SDK's create() has no `temperature` parameter any more; the API still takes it
            kwargs["extra_body"] = {"temperature": request.temperature}
        if request.output_schema is not None:
            kwargs["output_config"] = {"format": {"type": "json_schema",
                                                  "schema": request.output_schema}}
        if request.tool is not None:
            kwargs["tools"] = [request.tool]
            kwargs["tool_choice"] = {"type": "tool", "name": request.tool["name"]}
        message = await client.messages.create(**kwargs, timeout=request.timeout)
        if not isinstance(message, _sdk().types.Message):
            # e.g. a proxy's HTML page with status 200: not retryable unless told so
            raise ValueError(f"expected a Messages API reply, got {type(message).__name__}")
        texts: list[str] = []
        tool_input: Any = None
        for block in message.content:
            if block.type == "text":
                texts.append(block.text)
            elif (block.type == "tool_use" and request.tool is not None
                  and block.name == request.tool["name"]):
                tool_input = block.input
        usage = message.usage
        return JudgeReply(text="".join(texts), tool_input=tool_input,
                          input_tokens=usage.input_tokens or 0,
                          output_tokens=usage.output_tokens or 0,
                          stop_reason=message.stop_reason,
                          cached_input_tokens=getattr(usage, "cache_read_input_tokens", 0) or 0)

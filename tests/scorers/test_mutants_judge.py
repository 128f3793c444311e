"""Judge behaviour the HTTP tests left open (found by bench/mutation.py), in process.

`call_judge` is driven with `ScriptedProvider`: the requests it builds, the errors a caller
gets (their messages end up in the score record), and the retry loop's counts and waits.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from scorers import JudgeAuthError, JudgeParseError, JudgeUnavailableError, ScorerError
from scorers.judge import Judge, JudgeReply, JudgeRequest, call_judge
from scorers.processors import RetryDecision
from scorers.testing import ScriptedProvider

UNLISTED_MODEL = "my-gateway-claude"  # not an SDK model: native output is a forced tool call


def judge(provider: ScriptedProvider, **fields: Any) -> Judge:
    return Judge(instructions="You are a strict evaluator.", provider=provider, **fields)


class DropUser:
    """An input processor that keeps only the system message."""

    def process_input(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [m for m in messages if m["role"] == "system"]


async def test_inline_schema_without_a_user_message_becomes_a_user_message() -> None:
    provider = ScriptedProvider(['{"score": 0.5}'])
    outcome = await call_judge(judge(provider, json_prompt_injection="inline",
                                     input_processors=[DropUser()]),
                               None, step="s", prompt="Rate it.", kind="score")
    assert outcome.value == {"score": 0.5}
    (request,) = provider.requests
    (message,) = request.messages
    assert message["role"] == "user"
    (part,) = message["content"]
    assert part["type"] == "text"
    assert part["text"].startswith("Return your response as JSON matching this schema:")
    assert '"required": ["score"]' in part["text"]


async def test_a_non_object_schema_goes_as_the_tools_value_and_comes_back_unwrapped() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    provider = ScriptedProvider([["Paris", "Lyon"]])
    outcome = await call_judge(judge(provider, model=UNLISTED_MODEL), None, step="cities",
                               prompt="List them.", kind="object", output_schema=schema)
    assert outcome.value == ["Paris", "Lyon"]
    (request,) = provider.requests
    assert request.output_schema is None
    assert request.tool == {
        "name": "structured_output",
        "description": "Return the answer as structured output.",
        "input_schema": {"type": "object", "properties": {"value": schema},
                         "required": ["value"]},
    }


async def test_an_object_schema_goes_as_the_tool_schema_itself() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    provider = ScriptedProvider([{"ok": True}])
    outcome = await call_judge(judge(provider, model=UNLISTED_MODEL), None, step="s",
                               prompt="Ok?", kind="object", output_schema=schema)
    assert outcome.value == {"ok": True}
    assert provider.requests[0].tool is not None
    assert provider.requests[0].tool["input_schema"] == schema


class WrongContent:
    def process_input(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"role": m["role"], "content": [m["content"]]} for m in messages]


async def test_an_input_processor_returning_non_text_content_fails_before_any_request() -> None:
    provider = ScriptedProvider([])
    with pytest.raises(ScorerError) as info:
        await call_judge(judge(provider, input_processors=[WrongContent()]), None, step="s",
                         prompt="Rate it.", kind="score")
    assert str(info.value) == ("an input processor must return a list of "
                               "{'role': str, 'content': str} dicts")
    assert isinstance(info.value.__cause__, TypeError)
    assert info.value.execution is not None
    assert info.value.execution.model_call_count == 0
    assert info.value.execution.raw_output is None  # no reply was ever received
    assert info.value.execution.error is not None
    assert info.value.execution.error.name == "TypeError"
    assert provider.requests == []


class Boom:
    def process_output(self, text: str) -> str:
        raise ValueError("output processor exploded")


async def test_a_processors_own_exception_keeps_its_message() -> None:
    provider = ScriptedProvider(["fine"])
    with pytest.raises(ScorerError) as info:
        await call_judge(judge(provider, output_processors=[Boom()]), None, step="s",
                         prompt="Say it.", kind="text")
    assert str(info.value) == "output processor exploded"
    assert info.value.execution is not None
    assert info.value.execution.model_call_count == 1


@pytest.mark.parametrize(("reply", "code", "detail"), [
    ("   ", "STRUCTURED_OUTPUT_OBJECT_UNDEFINED", "the judge returned no JSON"),
    ('{"score": NaN}', "JSON_PARSE_ERROR", "reply is not valid JSON: NaN is not JSON"),
    ('{"score": "high"}', "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED",
     "reply does not match the schema"),
])
async def test_a_parse_failure_names_the_step_the_cause_and_the_attempts(
        reply: str, code: str, detail: str) -> None:
    provider = ScriptedProvider([reply, reply])
    with pytest.raises(JudgeParseError) as info:
        await call_judge(judge(provider, json_prompt_injection="system"), None, step="analyze",
                         prompt="Rate it.", kind="score")
    message = str(info.value)
    assert message.startswith(f'step "analyze": {detail}')
    assert message.endswith("(after 2 attempts)")
    assert info.value.code == code
    assert info.value.execution is not None
    assert info.value.execution.raw_output == reply


async def test_a_dict_schema_failure_says_what_does_not_match() -> None:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    provider = ScriptedProvider(['{"ok": 3}', '{"ok": 3}'])
    with pytest.raises(JudgeParseError) as info:
        await call_judge(judge(provider, json_prompt_injection="system"), None, step="s",
                         prompt="Ok?", kind="object", output_schema=schema)
    assert "reply does not match the schema: 3 is not of type 'boolean'" in str(info.value)
    assert info.value.code == "STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED"


class AlwaysRetry:
    """An error processor that retries everything after `delay` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.retry_counts: list[int] = []

    def process_api_error(self, *, error: BaseException, retry_count: int) -> RetryDecision:
        self.retry_counts.append(retry_count)
        return RetryDecision(retry=True, delay=self.delay)


async def test_max_processor_retries_set_on_the_judge_is_the_cap() -> None:
    busy = JudgeUnavailableError("busy")
    provider = ScriptedProvider([busy, busy, '{"score": 1}'])
    processor = AlwaysRetry()
    with pytest.raises(JudgeUnavailableError) as info:
        await call_judge(judge(provider, error_processors=[processor], max_processor_retries=1),
                         None, step="s", prompt="Rate it.", kind="score")
    assert len(provider.requests) == 2
    assert processor.retry_counts == [0]  # asked once; the second failure hits the cap
    assert info.value.execution is not None
    assert info.value.execution.model_call_count == 2


async def test_each_retry_is_counted_once_and_waits_with_the_judges_sleep() -> None:
    busy = JudgeUnavailableError("busy")
    provider = ScriptedProvider([busy, busy, '{"score": 0.25}'])
    processor = AlwaysRetry(delay=2.5)
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    outcome = await call_judge(judge(provider, error_processors=[processor], sleep=sleep),
                               None, step="s", prompt="Rate it.", kind="score")
    assert outcome.value == {"score": 0.25}
    assert processor.retry_counts == [0, 1]
    assert waits == [2.5, 2.5]
    assert outcome.execution.model_call_count == 3
    assert outcome.execution.attempt_count == 1


class Declines:
    def process_api_error(self, *, error: BaseException, retry_count: int) -> None:
        return None


async def test_the_first_processor_that_says_retry_wins() -> None:
    busy = JudgeUnavailableError("busy")
    provider = ScriptedProvider([busy, '{"score": 1}'])
    later = AlwaysRetry()
    outcome = await call_judge(judge(provider, error_processors=[Declines(), later]), None,
                               step="s", prompt="Rate it.", kind="score")
    assert outcome.value == {"score": 1.0}
    assert later.retry_counts == [0]


async def test_a_successful_call_records_success_without_raw_output_or_error() -> None:
    for kind, reply in (("text", "Fine."), ("score", '{"score": 0.5}')):
        provider = ScriptedProvider([reply])
        outcome = await call_judge(judge(provider), None, step="s", prompt="Go.",
                                   kind=kind)  # type: ignore[arg-type]
        execution = outcome.execution
        assert (execution.status, execution.raw_output, execution.error) == (
            "success", None, None)
        assert (execution.attempt_count, execution.model_call_count) == (1, 1)


async def test_tokens_add_up_over_the_format_fallback() -> None:
    provider = ScriptedProvider([JudgeReply(text="not json", input_tokens=10, output_tokens=5),
                                 JudgeReply(text='{"score": 1}', input_tokens=7,
                                            output_tokens=3)])
    outcome = await call_judge(judge(provider), None, step="s", prompt="Go.", kind="score")
    assert outcome.value == {"score": 1.0}
    usage = outcome.execution.usage
    assert (usage.input_tokens, usage.output_tokens) == (17, 8)
    assert outcome.execution.attempt_count == 2


async def test_duration_is_in_milliseconds_of_the_call() -> None:
    async def slow(request: JudgeRequest) -> str:
        await asyncio.sleep(0.02)
        return "ok"

    before = time.perf_counter()
    outcome = await call_judge(judge(ScriptedProvider(slow)), None, step="s", prompt="Go.",
                               kind="text")
    elapsed_ms = (time.perf_counter() - before) * 1000.0
    assert 20.0 <= outcome.execution.duration_ms <= elapsed_ms


async def test_an_auth_error_is_never_retried_whatever_the_processors_say() -> None:
    processor = AlwaysRetry()
    provider = ScriptedProvider([JudgeAuthError("bad key"), '{"score": 1}'])
    with pytest.raises(JudgeAuthError):
        await call_judge(judge(provider, error_processors=[processor]), None, step="s",
                         prompt="Go.", kind="score")
    assert len(provider.requests) == 1
    assert processor.retry_counts == []


async def test_a_zero_delay_retries_without_sleeping() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    provider = ScriptedProvider([JudgeUnavailableError("busy"), '{"score": 1}'])
    await call_judge(judge(provider, error_processors=[AlwaysRetry(0.0)], sleep=sleep), None,
                     step="s", prompt="Go.", kind="score")
    assert waits == []


async def test_without_a_sleep_of_its_own_the_judge_waits_with_asyncio() -> None:
    provider = ScriptedProvider([JudgeUnavailableError("busy"), '{"score": 1}'])
    outcome = await call_judge(judge(provider, error_processors=[AlwaysRetry(0.001)]), None,
                               step="s", prompt="Go.", kind="score")
    assert outcome.value == {"score": 1.0}
    assert outcome.execution.model_call_count == 2


class Uppercase:
    def process_output(self, text: str) -> bytes:
        return text.encode()


async def test_an_output_processor_must_return_text() -> None:
    with pytest.raises(ScorerError) as info:
        await call_judge(judge(ScriptedProvider(["fine"]), output_processors=[Uppercase()]),
                         None, step="s", prompt="Go.", kind="text")
    assert str(info.value) == "an output processor must return a string"


async def test_an_output_schema_of_another_kind_is_refused() -> None:
    with pytest.raises(ScorerError) as info:
        await call_judge(judge(ScriptedProvider([])), None, step="s", prompt="Go.",
                         kind="object", output_schema=list)  # type: ignore[arg-type]
    assert str(info.value) == ("output_schema must be a pydantic model class or a "
                               "JSON-schema dict")


async def test_of_several_schema_errors_the_first_by_path_is_reported() -> None:
    schema = {"type": "object", "properties": {"b": {"type": "integer"},
                                               "a": {"type": "integer"}}}
    reply = '{"b": "bee", "a": "ay"}'
    provider = ScriptedProvider([reply, reply])
    with pytest.raises(JudgeParseError) as info:
        await call_judge(judge(provider, json_prompt_injection="system"), None, step="s",
                         prompt="Go.", kind="object", output_schema=schema)
    assert "reply does not match the schema: 'ay' is not of type 'integer'" in str(info.value)

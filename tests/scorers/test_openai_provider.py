"""The OpenAI judge provider over HTTP against the strict fake OpenAI server (the real `openai`
client): structured output and its fallbacks, error classification, wait hints, Azure OpenAI,
usage, refusals and replies cut at max_tokens."""

from __future__ import annotations

import time
from email.utils import formatdate
from typing import Any

import pytest
from pydantic import BaseModel

from scorers import (
    Judge,
    JudgeAuthError,
    JudgeRequestError,
    JudgeUnavailableError,
    PromptStep,
    ScorerRun,
    ScorerRunError,
    StreamErrorRetryProcessor,
    create_scorer,
)
from scorers._openai import OpenAIProvider, reset_duration, strict_schema
from scorers.judge import JudgeRequest
from tests.fakes.fake_openai import (
    ErrorReply,
    FakeOpenAI,
    TextReply,
    cut_at_length,
    insufficient_quota,
    rate_limited,
    refusal,
    structured,
)


class Verdict(BaseModel):
    verdict: str
    reason: str = ""


def make_run() -> ScorerRun:
    return ScorerRun(input="question", output="answer")


def judge_for(fake: FakeOpenAI, **fields: Any) -> Judge:
    return Judge(model=fields.pop("model", "openai/gpt-4.1-mini"), instructions="Judge.",
                 base_url=fields.pop("base_url", fake.base_url),
                 api_key=fields.pop("api_key", fake.api_key), **fields)


def scorer(judge: Judge) -> Any:
    return (create_scorer(id="q", description="", judge=judge)
            .analyze(PromptStep(description="v", output_schema=Verdict,
                                create_prompt=lambda run, results: "Is it good?"))
            .generate_score(lambda run, results: 1.0 if results.analyze_step_result.verdict
                            == "yes" else 0.0))


def request(fake: FakeOpenAI, **fields: Any) -> JudgeRequest:
    return JudgeRequest(model="gpt-4.1-mini", system="s", max_tokens=50,
                        messages=[{"role": "user", "content": "x"}], api_key=fake.api_key,
                        base_url=fake.base_url, timeout=5, provider="openai", **fields)


async def provider_error(fake: FakeOpenAI, reply: Any) -> BaseException:
    fake.enqueue(reply)
    with pytest.raises(Exception) as info:  # noqa: B017 - whatever the provider raised
        await OpenAIProvider().complete(request(fake))
    return info.value


# --------------------------------------------------------------------------- structured output


async def test_json_schema_strict_is_sent_and_the_reply_validated(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(structured({"verdict": "yes", "reason": "fine"}))
    result = await scorer(judge_for(fake_openai)).run(make_run())
    assert result.score == 1.0
    [sent] = fake_openai.chat_requests
    fmt = sent.body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["verdict", "reason"]  # every key required, defaults stripped
    assert "default" not in schema["properties"]["reason"]
    assert sent.body["model"] == "gpt-4.1-mini"  # the provider prefix is not sent
    assert sent.system_text.startswith("Judge.") and "JSON schema" not in sent.system_text


async def test_a_400_to_json_schema_falls_back_and_the_method_is_remembered() -> None:
    with FakeOpenAI(strict=True, reject_json_schema=True) as fake:
        fake.enqueue(structured({"verdict": "yes"}), structured({"verdict": "no"}))
        judge = judge_for(fake, model="openai/local-model")
        assert (await scorer(judge).run(make_run())).score == 1.0
        assert (await scorer(judge).run(make_run())).score == 0.0
        first, second, third = fake.chat_requests
        assert first.response_format == "json_schema" and second.forced_tool is not None
        assert third.forced_tool is not None  # remembered: no json_schema attempt again
        assert len(fake.take_rejections()) == 1
        fake.verify()


async def test_without_tools_it_falls_back_to_json_object_then_the_prompt() -> None:
    with FakeOpenAI(strict=True, reject_json_schema=True, reject_tools=True) as fake:
        fake.enqueue(structured({"verdict": "yes"}))
        assert (await scorer(judge_for(fake, model="openai/tiny")).run(make_run())).score == 1.0
        formats = [r.response_format for r in fake.chat_requests]
        assert formats == ["json_schema", None, "json_object"]
        assert "JSON schema" in fake.chat_requests[-1].system_text
        assert len(fake.take_rejections()) == 2
        fake.verify()


async def test_never_degraded_on_429_5xx(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(rate_limited(retry_after=0), ErrorReply(503, "busy"),
                        structured({"verdict": "yes"}))
    judge = judge_for(fake_openai, error_processors=[StreamErrorRetryProcessor(max_retries=2)])
    assert (await scorer(judge).run(make_run())).score == 1.0
    assert [r.response_format for r in fake_openai.chat_requests] == ["json_schema"] * 3


def test_strict_schema_closes_every_object() -> None:
    schema = {"type": "object", "properties": {
        "items": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/V"}},
        "note": {"type": "string", "default": "", "maxLength": 9}},
        "$defs": {"V": {"type": "object", "properties": {"ok": {"type": "boolean"}},
                        "description": "d"}}}
    strict = strict_schema(schema)
    assert strict["required"] == ["items", "note"] and strict["additionalProperties"] is False
    assert strict["properties"]["note"] == {"type": "string"}
    assert strict["properties"]["items"] == {"type": "array", "items": {"$ref": "#/$defs/V"}}
    assert strict["$defs"]["V"]["required"] == ["ok"]
    assert strict["$defs"]["V"]["additionalProperties"] is False


# --------------------------------------------------------------------------- errors and waits


@pytest.mark.parametrize(("reply", "wait"), [
    (rate_limited(retry_after_ms=1500, retry_after=5), 1.5),
    (rate_limited(retry_after=4), 4.0),
    (rate_limited(reset_requests="1m30s", reset_tokens="250ms"), 90.0),
    (rate_limited(reset_tokens="250ms"), 0.25),
    (rate_limited(), None),
])
async def test_429_wait_hints(fake_openai: FakeOpenAI, reply: Any, wait: float | None) -> None:
    error = await provider_error(fake_openai, reply)
    assert isinstance(error, JudgeUnavailableError) and error.retryable
    assert error.retry_after == wait


async def test_retry_after_as_an_http_date(fake_openai: FakeOpenAI) -> None:
    error = await provider_error(fake_openai, rate_limited(retry_after=formatdate(
        time.time() + 30, usegmt=True)))
    assert isinstance(error, JudgeUnavailableError)
    assert error.retry_after is not None and 20 < error.retry_after <= 30


def test_reset_durations() -> None:
    assert reset_duration("1m30s") == 90 and reset_duration("250ms") == 0.25
    assert reset_duration("1h2m") == 3720 and reset_duration("6") == 6
    assert reset_duration("soon") is None and reset_duration("") is None


@pytest.mark.parametrize(("reply", "kind", "code", "retryable"), [
    (insufficient_quota(), JudgeRequestError, "insufficient_quota", False),
    (ErrorReply(401, "bad key", "invalid_request_error", "invalid_api_key"), JudgeAuthError,
     "invalid_api_key", False),
    (ErrorReply(404, "The model does not exist", "invalid_request_error", "model_not_found"),
     JudgeRequestError, "model_not_found", False),
    (ErrorReply(422, "unprocessable", "invalid_request_error"), JudgeRequestError, None, False),
    (ErrorReply(402, "pay", "billing"), JudgeRequestError, "insufficient_quota", False),
    (ErrorReply(408, "timeout", "timeout"), JudgeUnavailableError, None, True),
    (ErrorReply(409, "conflict", "conflict"), JudgeUnavailableError, None, True),
    (ErrorReply(500, "oops"), JudgeUnavailableError, None, True),
])
async def test_errors_are_classified(fake_openai: FakeOpenAI, reply: Any, kind: type,
                                     code: str | None, retryable: bool) -> None:
    error = await provider_error(fake_openai, reply)
    assert type(error) is kind
    assert getattr(error, "retryable", False) is retryable
    if code is not None:
        assert getattr(error, "code", None) == code


async def test_a_wrong_key_is_an_auth_error_never_retried(fake_openai: FakeOpenAI) -> None:
    judge = judge_for(fake_openai, api_key="sk-wrong",
                      error_processors=[StreamErrorRetryProcessor(max_retries=3)])
    with pytest.raises(ScorerRunError) as info:
        await scorer(judge).run(make_run())
    assert isinstance(info.value.__cause__, JudgeAuthError)
    assert len(fake_openai.chat_requests) == 1
    assert [r.status for r in fake_openai.take_rejections()] == [401]


async def test_cut_at_max_tokens_says_to_raise_it_and_is_not_retried(
        fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(cut_at_length())
    judge = judge_for(fake_openai, error_processors=[StreamErrorRetryProcessor(max_retries=3)])
    with pytest.raises(ScorerRunError) as info:
        await scorer(judge).run(make_run())
    assert "raise the judge's max_tokens" in str(info.value.__cause__)
    assert len(fake_openai.chat_requests) == 1


async def test_a_refusal_fails_the_step_with_its_text(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(refusal("I can't help with grading that."))
    with pytest.raises(ScorerRunError) as info:
        await scorer(judge_for(fake_openai)).run(make_run())
    assert info.value.failed_step == "analyze"
    assert "I can't help with grading that." in str(info.value.__cause__)


# --------------------------------------------------------------------------- endpoints, usage


async def test_azure_openai_deployment_route_and_key_header(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(structured({"verdict": "yes"}))
    judge = judge_for(fake_openai, model="openai/my-deployment", api_version="2024-10-21",
                      base_url=f"http://127.0.0.1:{fake_openai.port}")  # the resource endpoint
    assert (await scorer(judge).run(make_run())).score == 1.0
    [sent] = fake_openai.chat_requests
    assert sent.path.startswith("/openai/deployments/my-deployment/chat/completions?")
    assert "api-version=2024-10-21" in sent.path
    assert {k.lower(): v for k, v in sent.headers.items()}["api-key"] == fake_openai.api_key


async def test_extra_headers_and_usage_details(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(TextReply("fine", prompt_tokens=30, completion_tokens=12,
                                  cached_tokens=8, reasoning_tokens=5))
    reply = await OpenAIProvider().complete(request(fake_openai,
                                                    headers=(("X-Team", "evals"),)))
    assert (reply.text, reply.input_tokens, reply.output_tokens) == ("fine", 30, 12)
    assert (reply.cached_input_tokens, reply.reasoning_tokens) == (8, 5)
    [sent] = fake_openai.chat_requests
    assert {k.lower(): v for k, v in sent.headers.items()}["x-team"] == "evals"
    fake_openai.enqueue(TextReply("again"))
    reply = await OpenAIProvider().complete(request(fake_openai))
    assert (reply.cached_input_tokens, reply.reasoning_tokens) == (0, 0)  # absent: 0


async def test_script_exhausted_is_a_500_and_a_problem() -> None:
    with FakeOpenAI(strict=True) as fake:
        with pytest.raises(JudgeUnavailableError):
            await OpenAIProvider().complete(request(fake))
        assert fake.problems and "script exhausted" in fake.problems[0]


async def test_unknown_keys_are_refused_by_the_strict_fake(fake_openai: FakeOpenAI) -> None:
    import openai

    client = openai.AsyncOpenAI(base_url=fake_openai.base_url, api_key=fake_openai.api_key,
                                max_retries=0)
    with pytest.raises(openai.BadRequestError, match="not_a_parameter"):
        await client.chat.completions.create(model="m", messages=[{"role": "user",
                                                                   "content": "x"}],
                                             extra_body={"not_a_parameter": 1})
    with pytest.raises(openai.BadRequestError, match="messages"):
        await client.chat.completions.create(model="m", messages=[{"role": "robot",  # type: ignore[list-item, misc]
                                                                   "content": "x"}])
    assert len(fake_openai.take_rejections()) == 2


def test_router_form_names_the_provider() -> None:
    judge = Judge(model="openai/meta-llama/Llama-3.1-8B-Instruct").resolve()
    assert (judge.provider_name, judge.model_id) == ("openai", "meta-llama/Llama-3.1-8B-Instruct")
    assert Judge(model="claude-haiku-4-5").resolve().provider_name == "anthropic"
    assert Judge(model="anthropic/claude-haiku-4-5").resolve().model_id == "claude-haiku-4-5"
    with pytest.raises(ValueError, match="unknown judge provider 'mistral'"):
        Judge(model="mistral/large")

"""The judge adapter over HTTP: the real `anthropic` client against the fake Messages API."""

from __future__ import annotations

import json
import typing
from typing import Any

import anthropic
import pytest
from anthropic._data import DEPRECATED_MODELS
from pydantic import BaseModel

from scorers import (
    AgentRunInput,
    Judge,
    JudgeAuthError,
    JudgeParseError,
    JudgeProvider,
    JudgeReply,
    JudgeRequestError,
    JudgeUnavailableError,
    Message,
    PromptStep,
    ScorerRun,
    ScorerRunError,
    create_scorer,
    default_model,
)
from scorers.testing import ScriptedProvider
from tests.fakes.fake_anthropic import (
    FakeAnthropic,
    context_too_long,
    disconnect,
    overloaded,
    raw,
    structured,
    text,
    tool_use,
    unauthorized,
)

SCHEMA_MARKER = '"properties"'  # present in any JSON schema we inject


class Verdict(BaseModel):
    relevant: bool
    confidence: float


def make_run() -> ScorerRun:
    return ScorerRun(
        input=AgentRunInput(input_messages=[Message.from_text("user", "Capital of France?")]),
        output=[Message.from_text("assistant", "Paris.")])


def judge_for(fake: FakeAnthropic, **fields: Any) -> Judge:
    return Judge(instructions="You are a strict evaluator.", base_url=fake.base_url,
                 api_key=fake.api_key, **fields)


def analyze_scorer(judge: Judge, step_judge: Judge | None = None) -> Any:
    return (create_scorer(id="verdict", description="", judge=judge)
            .analyze(PromptStep(description="judge", output_schema=Verdict, judge=step_judge,
                                create_prompt=lambda run, results:
                                f"Question: {run.input.input_messages[0].text}\n"
                                f"Answer: {run.output[0].text}"))
            .generate_score(lambda run, results: results.analyze_step_result.confidence))


def prompt_score_scorer(judge: Judge) -> Any:
    return create_scorer(id="s", description="", judge=judge).generate_score(
        PromptStep(description="score", create_prompt=lambda run, results: "Rate the answer."))


# --------------------------------------------------------------------------- defaults


def test_default_model_is_a_current_inexpensive_sdk_model() -> None:
    sdk_models = [name for arg in typing.get_args(anthropic.types.Model)
                  for name in typing.get_args(arg)]
    model = default_model()
    assert model == "claude-haiku-5-5"
    assert model in sdk_models
    assert model not in DEPRECATED_MODELS


async def test_defaults_are_sent(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(structured({"score": 0.5}))
    await prompt_score_scorer(judge_for(fake_anthropic)).run(make_run())
    (request,) = fake_anthropic.message_requests
    assert request.body["model"] == "claude-haiku-5-5"
    assert request.body["max_tokens"] == 1024
    assert "temperature" not in request.body
    assert float(request.headers["x-stainless-timeout"]) == 60.0
    assert request.headers["x-stainless-retry-count"] == "0"
    assert request.system_text == "You are a strict evaluator."
    assert request.body["messages"] == [{"role": "user", "content": "Rate the answer."}]


async def test_api_key_and_base_url_come_from_the_sdk_env_vars(
        fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_anthropic.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    fake_anthropic.api_key = "sk-ant-from-env"  # the only key the server accepts now
    fake_anthropic.enqueue(structured({"score": 0.25}))
    result = await prompt_score_scorer(Judge(instructions="Judge.")).run(make_run())
    assert result.score == 0.25
    (request,) = fake_anthropic.message_requests
    auth = request.headers.get("x-api-key") or request.headers.get("authorization", "")
    assert "sk-ant-from-env" in auth


def test_the_api_key_never_shows_in_repr() -> None:
    judge = Judge(api_key="sk-ant-very-secret", instructions="x")
    assert "very-secret" not in repr(judge)
    assert "very-secret" not in repr(judge.resolve())
    assert "very-secret" not in str(judge.model_dump())


# --------------------------------------------------------------------------- overrides


async def test_step_judge_overrides_field_by_field(fake_anthropic: FakeAnthropic) -> None:
    scorer_judge = judge_for(fake_anthropic, model="claude-sonnet-5-5", max_tokens=300,
                             temperature=0.2)
    step_judge = Judge(model="claude-opus-5-5", json_prompt_injection="system")
    # the schema is in the system prompt, not a structured-output request: the model answers text
    fake_anthropic.enqueue(text(json.dumps({"relevant": True, "confidence": 0.9})))
    result = await analyze_scorer(scorer_judge, step_judge).run(make_run())
    assert result.score == 0.9
    (request,) = fake_anthropic.message_requests
    assert request.body["model"] == "claude-opus-5-5"              # from the step
    assert request.system_text.startswith("You are a strict evaluator.")  # inherited
    assert request.body["max_tokens"] == 300                       # inherited
    assert request.body["temperature"] == 0.2                      # inherited, sent when set
    assert "JSON schema:" in request.system_text                   # step's injection mode
    assert result.judge["analyze"].executions[0].judge_model_id == "claude-opus-5-5"


def test_merge_rules() -> None:
    class Redact:
        def process_input(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
            return messages

    a, b = Redact(), Redact()
    base = Judge(model="m1", instructions="base", input_processors=[a], timeout=5.0)
    step = Judge(instructions="step", input_processors=[b])
    merged = step.merged_over(base)
    assert merged.model == "m1"
    assert merged.instructions == "step"
    assert list(merged.input_processors or []) == [b]  # lists replace, not merge
    assert merged.timeout == 5.0
    resolved = Judge().merged_over(None).resolve()
    assert (resolved.mode, resolved.timeout, resolved.max_tokens, resolved.temperature) == (
        "native", 60.0, 1024, None)
    assert resolved.max_processor_retries == 0


async def test_a_step_without_instructions_fails_before_any_request(
        fake_anthropic: FakeAnthropic) -> None:
    judge = Judge(base_url=fake_anthropic.base_url, api_key=fake_anthropic.api_key)
    with pytest.raises(ScorerRunError) as info:
        await prompt_score_scorer(judge).run(make_run())
    assert info.value.failed_step == "generate_score"
    assert "requires judge instructions" in str(info.value)
    assert fake_anthropic.requests == []
    # a scorer with no judge at all fails the same way
    bare = create_scorer(id="b", description="").generate_score(
        PromptStep(description="s", create_prompt=lambda run: "x"))
    with pytest.raises(ScorerRunError, match="requires judge instructions"):
        await bare.run(make_run())
    assert fake_anthropic.requests == []


# --------------------------------------------------------------------------- injection modes


async def test_auto_uses_native_structured_output_and_no_schema_text(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(structured({"relevant": True, "confidence": 0.8}))
    result = await analyze_scorer(judge_for(fake_anthropic)).run(make_run())
    assert result.score == 0.8
    assert isinstance(result.analyze_step_result, Verdict)
    (request,) = fake_anthropic.message_requests
    fmt = request.body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert set(fmt["schema"]["properties"]) == {"relevant", "confidence"}
    assert "tools" not in request.body
    assert SCHEMA_MARKER not in request.system_text
    assert SCHEMA_MARKER not in request.user_text
    assert request.user_text == "Question: Capital of France?\nAnswer: Paris."
    assert result.analyze_prompt == "Question: Capital of France?\nAnswer: Paris."


@pytest.mark.parametrize("injection", ["auto", False])
async def test_native_for_an_unlisted_model_is_a_forced_tool_call(
        fake_anthropic: FakeAnthropic, injection: Any) -> None:
    fake_anthropic.enqueue(structured({"relevant": False, "confidence": 0.3}))
    judge = judge_for(fake_anthropic, model="my-gateway-claude", json_prompt_injection=injection)
    result = await analyze_scorer(judge).run(make_run())
    assert result.score == 0.3
    (request,) = fake_anthropic.message_requests
    assert "output_config" not in request.body
    (tool,) = request.body["tools"]
    assert request.body["tool_choice"] == {"type": "tool", "name": tool["name"]}
    assert set(tool["input_schema"]["properties"]) == {"relevant", "confidence"}
    assert SCHEMA_MARKER not in request.system_text + request.user_text


async def test_false_is_native_too(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(structured({"score": 0.4}))
    result = await prompt_score_scorer(
        judge_for(fake_anthropic, json_prompt_injection=False)).run(make_run())
    assert result.score == 0.4
    (request,) = fake_anthropic.message_requests
    assert request.body["output_config"]["format"]["schema"]["required"] == ["score"]
    assert SCHEMA_MARKER not in request.system_text + request.user_text


@pytest.mark.parametrize("injection", ["system", True])
async def test_system_injection_appends_the_schema_to_the_system_prompt(
        fake_anthropic: FakeAnthropic, injection: Any) -> None:
    fake_anthropic.enqueue(text('{"score": 0.7}'))
    result = await prompt_score_scorer(
        judge_for(fake_anthropic, json_prompt_injection=injection)).run(make_run())
    assert result.score == 0.7
    (request,) = fake_anthropic.message_requests
    assert "output_config" not in request.body and "tools" not in request.body
    assert request.system_text.startswith("You are a strict evaluator.\n\nJSON schema:\n")
    assert '"score"' in request.system_text
    assert request.system_text.endswith(
        "You MUST answer with a JSON object that matches the JSON schema above.")
    assert request.user_text == "Rate the answer."


async def test_inline_injection_appends_the_schema_to_the_user_prompt(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(text('```json\n{"relevant": true, "confidence": 0.6}\n```'))
    result = await analyze_scorer(
        judge_for(fake_anthropic, json_prompt_injection="inline")).run(make_run())
    assert result.score == 0.6
    (request,) = fake_anthropic.message_requests
    assert "output_config" not in request.body and "tools" not in request.body
    assert request.system_text == "You are a strict evaluator."
    content = request.body["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "Question: Capital of France?\nAnswer: Paris."}
    assert content[1]["text"].startswith("Return your response as JSON matching this schema:")
    assert '"confidence"' in content[1]["text"]


# --------------------------------------------------------------------------- format fallback


async def test_one_fallback_attempt_with_the_schema_in_the_system_prompt(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(text("I think it is quite good!"), text('{"score": 0.65}'))
    result = await prompt_score_scorer(judge_for(fake_anthropic)).run(make_run())
    assert result.score == 0.65
    first, second = fake_anthropic.message_requests
    assert "output_config" in first.body
    assert "output_config" not in second.body and "tools" not in second.body
    assert "JSON schema:" in second.system_text
    execution = result.judge["generate_score"].executions[0]
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "success", 2, 2)


async def test_inline_fallback_stays_inline(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(text("not json"), text('{"score": 1}'))
    result = await prompt_score_scorer(
        judge_for(fake_anthropic, json_prompt_injection="inline")).run(make_run())
    assert result.score == 1.0
    second = fake_anthropic.message_requests[1]
    assert "JSON schema:" not in second.system_text
    assert "Return your response as JSON" in second.user_text


@pytest.mark.parametrize("replies", [
    [text("not json at all"), text("still not json")],
    [structured({"score": "high"}), text('{"score": "high"}')],       # schema-invalid
    [structured({"score": True}), text('{"score": NaN}')],            # bool, NaN
    [structured({"verdict": 1}), text("")],                           # missing key, empty
])
async def test_a_reply_that_never_parses_fails_the_step_and_is_never_a_zero(
        fake_anthropic: FakeAnthropic, replies: list[Any]) -> None:
    fake_anthropic.enqueue(*replies)
    with pytest.raises(ScorerRunError) as info:
        await prompt_score_scorer(judge_for(fake_anthropic)).run(make_run())
    err = info.value
    assert isinstance(err.__cause__, JudgeParseError)
    assert err.failed_step == "generate_score"
    assert err.partial_result.score is None
    assert len(fake_anthropic.message_requests) == 2  # exactly one fallback
    execution = err.partial_result.judge["generate_score"].executions[0]
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "failed", 2, 2)
    assert execution.raw_output is not None
    assert execution.error is not None and execution.error.name == "JudgeParseError"
    assert err.partial_result.generate_score_prompt == "Rate the answer."


async def test_tool_reply_parse_failure_falls_back(fake_anthropic: FakeAnthropic) -> None:
    # The model answers text instead of calling the forced tool: fallback, then success.
    fake_anthropic.enqueue(text("sure"), text('{"relevant": true, "confidence": 0.5}'))
    result = await analyze_scorer(judge_for(fake_anthropic, model="proxy-model")).run(make_run())
    assert result.score == 0.5
    assert "tools" in fake_anthropic.message_requests[0].body
    assert "tools" not in fake_anthropic.message_requests[1].body


async def test_json_schema_dict_output_is_validated(fake_anthropic: FakeAnthropic) -> None:
    schema = {"type": "object", "properties": {"claims": {"type": "array",
                                                          "items": {"type": "string"}}},
              "required": ["claims"]}
    scorer = (create_scorer(id="c", description="", judge=judge_for(fake_anthropic))
              .preprocess(PromptStep(description="extract", output_schema=schema,
                                     create_prompt=lambda run: "Extract claims."))
              .generate_score(lambda run, results:
                              float(len(results.preprocess_step_result["claims"]))))
    # the fallback asks for the schema in the prompt: its answer is text
    fake_anthropic.enqueue(structured({"claims": "one"}), text('{"claims": ["a", "b"]}'))
    result = await scorer.run(make_run())
    assert result.score == 2.0
    assert result.preprocess_step_result == {"claims": ["a", "b"]}
    assert result.judge["preprocess"].executions[0].attempt_count == 2


async def test_calculate_score_turns_structured_output_into_the_score(
        fake_anthropic: FakeAnthropic) -> None:
    seen: dict[str, Any] = {}

    def calculate(run: ScorerRun, results: Any, output: Verdict) -> float:
        seen["output"] = output
        return output.confidence if output.relevant else 0.0

    scorer = create_scorer(id="cs", description="", judge=judge_for(fake_anthropic)).generate_score(
        PromptStep(description="s", output_schema=Verdict, calculate_score=calculate,
                   create_prompt=lambda run: "Judge it."))
    fake_anthropic.enqueue(structured({"relevant": True, "confidence": 0.55}))
    result = await scorer.run(make_run())
    assert result.score == 0.55
    assert isinstance(seen["output"], Verdict)


async def test_generate_reason_prompt_is_plain_text(fake_anthropic: FakeAnthropic) -> None:
    scorer = (create_scorer(id="r", description="", judge=judge_for(fake_anthropic))
              .generate_score(lambda run, results: 0.5)
              .generate_reason(PromptStep(description="why", create_prompt=lambda run, results, score:
                                          f"Explain the score {score}.")))
    fake_anthropic.enqueue(text("Because the answer is short but right."))
    result = await scorer.run(make_run())
    assert result.reason == "Because the answer is short but right."
    assert result.generate_reason_prompt == "Explain the score 0.5."
    (request,) = fake_anthropic.message_requests
    assert "output_config" not in request.body and "tools" not in request.body
    assert SCHEMA_MARKER not in request.system_text + request.user_text


async def test_usage_and_executions_are_recorded(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(structured({"score": 0.5}, input_tokens=321, output_tokens=12))
    result = await prompt_score_scorer(judge_for(fake_anthropic)).run(make_run())
    execution = result.judge["generate_score"].executions[0]
    assert execution.usage.input_tokens == 321
    assert execution.usage.output_tokens == 12
    assert execution.status == "success"
    assert execution.duration_ms > 0
    dumped = result.model_dump(mode="json")["judge"]["generate_score"]["executions"][0]
    assert dumped["judgeModelId"] == "claude-haiku-5-5"
    assert dumped["usage"] == {"inputTokens": 321, "outputTokens": 12}
    assert (dumped["attemptCount"], dumped["modelCallCount"]) == (1, 1)


# --------------------------------------------------------------------------- processors


async def test_input_and_output_processors_run_on_every_call(
        fake_anthropic: FakeAnthropic) -> None:
    class Redact:
        async def process_input(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
            return [{**m, "content": m["content"].replace("Paris", "[CITY]")} for m in messages]

    class Tag:
        def __init__(self) -> None:
            self.calls = 0

        def process_input(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
            self.calls += 1
            return [*messages[:1], {"role": "system", "content": "Be brief."}, *messages[1:]]

    class Unfence:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def process_output(self, value: str) -> str:
            self.seen.append(value)
            return value.replace("<<", "").replace(">>", "")

    tag, unfence = Tag(), Unfence()
    judge = judge_for(fake_anthropic, input_processors=[Redact(), tag],
                      output_processors=[unfence])
    scorer = (create_scorer(id="p", description="", judge=judge)
              .analyze(PromptStep(description="a", output_schema=Verdict,
                                  create_prompt=lambda run: f"Answer: {run.output[0].text}"))
              .generate_score(lambda run, results: results.analyze_step_result.confidence)
              .generate_reason(PromptStep(description="r",
                                          create_prompt=lambda run: "Why? Paris?")))
    fake_anthropic.enqueue(text('<<{"relevant": true, "confidence": 0.4}>>'),
                           text("<<short>>"))
    result = await scorer.run(make_run())
    assert result.score == 0.4
    assert result.reason == "short"
    first, second = fake_anthropic.message_requests
    assert first.user_text == "Answer: [CITY]."
    assert second.user_text == "Why? [CITY]?"
    assert first.system_text == "You are a strict evaluator.\n\nBe brief."
    assert tag.calls == 2
    assert unfence.seen == ['<<{"relevant": true, "confidence": 0.4}>>', "<<short>>"]
    # prompts are recorded as the step created them (before redaction)
    assert result.analyze_prompt == "Answer: Paris."


async def test_a_broken_input_processor_fails_the_step_without_a_request(
        fake_anthropic: FakeAnthropic) -> None:
    class Broken:
        def process_input(self, messages: list[dict[str, str]]) -> str:
            return "oops"

    judge = judge_for(fake_anthropic, input_processors=[Broken()])
    with pytest.raises(ScorerRunError) as info:
        await prompt_score_scorer(judge).run(make_run())
    assert isinstance(info.value.__cause__, TypeError)
    assert fake_anthropic.requests == []


# --------------------------------------------------------------------------- HTTP failures


@pytest.mark.parametrize(("reply", "error"), [
    (unauthorized(), JudgeAuthError),
    (context_too_long(), JudgeRequestError),
    (overloaded(), JudgeUnavailableError),
    (raw(200, "this is not json"), JudgeUnavailableError),
    (disconnect(), JudgeUnavailableError),
])
async def test_http_failures_map_to_judge_errors_and_are_not_retried_without_processors(
        fake_anthropic: FakeAnthropic, reply: Any, error: type[Exception]) -> None:
    fake_anthropic.enqueue(reply)  # a retry would find the script exhausted
    with pytest.raises(ScorerRunError) as info:
        await prompt_score_scorer(judge_for(fake_anthropic)).run(make_run())
    assert isinstance(info.value.__cause__, error)
    assert len(fake_anthropic.message_requests) == 1
    execution = info.value.partial_result.judge["generate_score"].executions[0]
    assert execution.status == "failed"
    assert execution.model_call_count == 1
    assert execution.error is not None and execution.error.name == error.__name__
    assert fake_anthropic.api_key not in str(info.value)


async def test_auth_error_code_is_recorded(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(unauthorized())
    with pytest.raises(ScorerRunError) as info:
        await prompt_score_scorer(judge_for(fake_anthropic)).run(make_run())
    execution = info.value.partial_result.judge["generate_score"].executions[0]
    assert execution.error is not None
    assert execution.error.code == "authentication_error"
    assert "check the API key" in execution.error.message


async def test_a_slow_reply_times_out(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(structured({"score": 1.0}, delay=2.0))
    with pytest.raises(ScorerRunError) as info:
        await prompt_score_scorer(judge_for(fake_anthropic, timeout=0.2)).run(make_run())
    assert isinstance(info.value.__cause__, JudgeUnavailableError)
    execution = info.value.partial_result.judge["generate_score"].executions[0]
    assert execution.error is not None and execution.error.code == "timeout"


def test_processors_without_their_method_are_refused_at_configuration() -> None:
    class Nothing:
        pass

    for field_name, method in (("input_processors", "process_input"),
                               ("output_processors", "process_output"),
                               ("error_processors", "process_api_error")):
        with pytest.raises(ValueError, match=f"has no {method}"):
            Judge(**{field_name: [Nothing()]})
    with pytest.raises(ValueError, match="complete"):
        Judge(provider=Nothing())


async def test_auto_falls_back_to_a_forced_tool_without_sdk_structured_outputs(
        fake_anthropic: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    import scorers._anthropic

    monkeypatch.setattr(scorers._anthropic, "_sdk_has_output_config", lambda: False)
    fake_anthropic.enqueue(structured({"score": 0.45}))
    result = await prompt_score_scorer(judge_for(fake_anthropic)).run(make_run())
    assert result.score == 0.45
    (request,) = fake_anthropic.message_requests
    assert "output_config" not in request.body
    assert request.forced_tool == request.body["tools"][0]["name"]
    assert request.body["tools"][0]["input_schema"]["required"] == ["score"]


async def test_concurrent_judge_calls_share_one_client(fake_anthropic: FakeAnthropic) -> None:
    import asyncio

    fake_anthropic.default_reply = structured({"score": 0.5}, delay=0.05)
    scorer = prompt_score_scorer(judge_for(fake_anthropic))
    results = await asyncio.gather(*(scorer.run(make_run()) for _ in range(20)))
    assert [r.score for r in results] == [0.5] * 20
    assert len(fake_anthropic.message_requests) == 20
    assert len({r.run_id for r in results}) == 20


# --------------------------------------------------------------------------- provider seam


async def test_the_provider_seam_takes_an_in_process_provider() -> None:
    scorer_level = ScriptedProvider([JudgeReply(text='{"score": 0.3}', input_tokens=5,
                                                output_tokens=2)])
    step_level = ScriptedProvider([JudgeReply(text="because")])
    assert isinstance(scorer_level, JudgeProvider)
    scorer = (create_scorer(id="seam", description="",
                            judge=Judge(instructions="Judge.", provider=scorer_level))
              .generate_score(PromptStep(description="s", create_prompt=lambda run: "score?"))
              .generate_reason(PromptStep(description="r", create_prompt=lambda run: "why?",
                                          judge=Judge(provider=step_level))))
    result = await scorer.run(make_run())
    assert (result.score, result.reason) == (0.3, "because")
    (request,) = scorer_level.requests
    assert request.model == "claude-haiku-5-5"
    assert request.output_schema is not None and request.output_schema["required"] == ["score"]
    assert request.tool is None
    assert request.messages == [{"role": "user", "content": "score?"}]
    assert [r.messages for r in step_level.requests] == [[{"role": "user", "content": "why?"}]]
    assert result.judge["generate_score"].executions[0].usage.input_tokens == 5


# --------------------------------------------------------------------------- the fake itself


async def test_fake_streams_server_sent_events(fake_anthropic: FakeAnthropic) -> None:
    client = anthropic.AsyncAnthropic(base_url=fake_anthropic.base_url,
                                      api_key=fake_anthropic.api_key, max_retries=0)
    fake_anthropic.enqueue(text("streamed hello", output_tokens=3),
                           tool_use("get_weather", {"city": "Paris"}))
    async with client.messages.stream(model="claude-haiku-5-5", max_tokens=50,
                                      messages=[{"role": "user", "content": "hi"}]) as stream:
        chunks = [chunk async for chunk in stream.text_stream]
        final = await stream.get_final_message()
    assert "".join(chunks) == "streamed hello"
    assert final.usage.output_tokens == 3
    async with client.messages.stream(model="claude-haiku-5-5", max_tokens=50,
                                      messages=[{"role": "user", "content": "hi"}]) as stream:
        final = await stream.get_final_message()
    assert final.content[0].type == "tool_use"
    assert final.content[0].input == {"city": "Paris"}
    assert all(r.body["stream"] is True for r in fake_anthropic.message_requests)
    await client.close()


def test_fake_works_as_a_context_manager_outside_pytest() -> None:
    import urllib.request

    with FakeAnthropic() as fake:
        fake.enqueue(text("hello"))
        body = json.dumps({"model": "m", "max_tokens": 5,
                           "messages": [{"role": "user", "content": "x"}]}).encode()
        request = urllib.request.Request(f"{fake.base_url}/v1/messages", data=body,
                                         headers={"content-type": "application/json",
                                                  "x-api-key": fake.api_key,
                                                  "anthropic-version": "2023-06-01"})
        with urllib.request.urlopen(request) as response:
            reply = json.loads(response.read())
        assert reply["type"] == "message"
        assert reply["content"] == [{"type": "text", "text": "hello"}]
        assert fake.requests[0].body["model"] == "m"
        fake.verify()
        port = fake.port
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/messages", timeout=1)


# --------------------------------------------------------------------------- failures carry their execution


async def test_a_failed_judge_call_carries_its_execution(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(text("not json"), text("still not json"))
    with pytest.raises(ScorerRunError) as info:
        await prompt_score_scorer(judge_for(fake_anthropic)).run(make_run())
    parse_error = info.value.__cause__
    assert isinstance(parse_error, JudgeParseError)
    execution = parse_error.execution
    assert execution is not None and info.value.execution is execution
    assert (execution.status, execution.attempt_count, execution.model_call_count) == (
        "failed", 2, 2)
    assert execution.raw_output == "still not json"
    assert execution.error is not None and execution.error.code == "JSON_PARSE_ERROR"
    assert info.value.partial_result.judge["generate_score"].executions == [execution]


async def test_a_broken_output_processor_keeps_the_paid_calls_tokens(
        fake_anthropic: FakeAnthropic) -> None:
    class Broken:
        def process_output(self, value: str) -> int:
            return 3

    fake_anthropic.enqueue(structured({"score": 0.5}, input_tokens=40, output_tokens=4))
    with pytest.raises(ScorerRunError) as info:
        await prompt_score_scorer(judge_for(fake_anthropic, output_processors=[Broken()])).run(
            make_run())
    assert isinstance(info.value.__cause__, TypeError)  # the processor's own error
    execution = info.value.partial_result.judge["generate_score"].executions[0]
    assert (execution.usage.input_tokens, execution.usage.output_tokens) == (40, 4)
    assert execution.error is not None and execution.error.name == "TypeError"

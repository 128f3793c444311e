"""The fake Messages API is as strict as the real one: what it refuses, and what it answers.

The judge tests are only as good as this fake: a request the real API would refuse, a stray
extra judge call, or a structured reply to a request that asked for none must not pass.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import anthropic
import pytest

from tests.fakes.fake_anthropic import FakeAnthropic, structured, text

BODY: dict[str, Any] = {"model": "claude-haiku-5-5", "max_tokens": 16,
                        "messages": [{"role": "user", "content": "Rate it."}]}
SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}},
          "required": ["score"], "additionalProperties": False}


def post(fake: FakeAnthropic, body: Any, **headers: str) -> tuple[int, Any]:
    """POST /v1/messages with exactly these headers (names with `_` for `-`)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{fake.base_url}/v1/messages", data=data, method="POST",
        headers={"content-type": "application/json",
                 **{k.replace("_", "-"): v for k, v in headers.items()}})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def good_headers(fake: FakeAnthropic) -> dict[str, str]:
    return {"x_api_key": fake.api_key, "anthropic_version": "2023-06-01"}


def refusal(reply: Any) -> tuple[str, str]:
    assert reply["type"] == "error"
    return reply["error"]["type"], reply["error"]["message"]


def test_the_request_schema_is_the_sdks_own(fake_anthropic: FakeAnthropic) -> None:
    assert fake_anthropic.schema == (
        f"anthropic.types.MessageCreateParams (anthropic {anthropic.__version__})")


@pytest.mark.parametrize(("headers", "status", "error"), [
    ({"anthropic_version": "2023-06-01"}, 401,
     ("authentication_error", "x-api-key header is required")),
    ({"x_api_key": "sk-ant-someone-else", "anthropic_version": "2023-06-01"}, 401,
     ("authentication_error", "invalid x-api-key")),
    ({"authorization": "Bearer sk-ant-someone-else", "anthropic_version": "2023-06-01"}, 401,
     ("authentication_error", "invalid x-api-key")),
    ({"x_api_key": "KEY"}, 400,
     ("invalid_request_error", "anthropic-version: header is required")),
    ({"x_api_key": "KEY", "anthropic_version": "1999-01-01"}, 400,
     ("invalid_request_error", "anthropic-version: invalid version '1999-01-01'")),
])
def test_headers_the_api_requires(fake_anthropic: FakeAnthropic, headers: dict[str, str],
                                  status: int, error: tuple[str, str]) -> None:
    fake_anthropic.enqueue(text("never sent"))
    headers = {k: fake_anthropic.api_key if v == "KEY" else v for k, v in headers.items()}
    code, reply = post(fake_anthropic, BODY, **headers)
    assert (code, refusal(reply)) == (status, error)
    assert fake_anthropic.pending == 1  # a refused request takes no scripted reply
    [rejection] = fake_anthropic.take_rejections()
    assert (rejection.status, rejection.message) == (status, error[1])
    fake_anthropic.clear()


def test_both_ways_of_sending_the_key_are_accepted(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(text("a"), text("b"))
    assert post(fake_anthropic, BODY, **good_headers(fake_anthropic))[0] == 200
    assert post(fake_anthropic, BODY, authorization=f"Bearer {fake_anthropic.api_key}",
                anthropic_version="2023-06-01")[0] == 200


@pytest.mark.parametrize(("body", "message"), [
    ({k: v for k, v in BODY.items() if k != "model"}, "model: Field required"),
    ({k: v for k, v in BODY.items() if k != "max_tokens"}, "max_tokens: Field required"),
    ({k: v for k, v in BODY.items() if k != "messages"}, "messages: Field required"),
    ({**BODY, "max_tokens": "many"}, "max_tokens: Input should be a valid integer"),
    ({**BODY, "prompt": "Human: hi"}, "prompt: Extra inputs are not permitted"),
    ({**BODY, "messages": [{"role": "user", "content": [{"type": "text", "text": "x",
                                                          "colour": "red"}]}]},
     "messages.0.content.0.colour: Extra inputs are not permitted"),
    ({**BODY, "messages": [{"role": "user", "content": [{"type": "txt", "text": "x"}]}]},
     "messages.0.content.0"),
    ({**BODY, "tool_choice": {"type": "tool"}}, "tool_choice"),
    ({**BODY, "output_config": {"format": {"type": "json", "schema": SCHEMA}}},
     "output_config.format.type"),
    ([BODY], "There was an error parsing the body as a JSON object"),
])
def test_bodies_that_do_not_match_the_sdk_schema_are_refused(
        fake_anthropic: FakeAnthropic, body: Any, message: str) -> None:
    code, reply = post(fake_anthropic, body, **good_headers(fake_anthropic))
    assert code == 400
    error_type, text_ = refusal(reply)
    assert error_type == "invalid_request_error"
    assert text_.startswith(message)
    [rejection] = fake_anthropic.take_rejections()
    assert rejection.message == text_


def test_a_body_the_api_takes_is_accepted(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(text("ok"))
    body = {**BODY, "system": [{"type": "text", "text": "You judge."}], "temperature": 0.2,
            "messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "w", "input": {"city": "P"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "rain",
                     "is_error": False}]}]}
    assert post(fake_anthropic, body, **good_headers(fake_anthropic))[0] == 200


def test_a_beta_request_is_checked_against_the_beta_schema(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(text("ok"))
    beta = {**BODY, "mcp_servers": []}  # a field only the beta Messages API has
    assert post(fake_anthropic, beta, **good_headers(fake_anthropic))[0] == 400
    fake_anthropic.take_rejections()
    assert post(fake_anthropic, beta, anthropic_beta="mcp-client-2025-04-04",
                **good_headers(fake_anthropic))[0] == 200


def test_structured_replies_take_the_form_the_request_asked_for(
        fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(structured({"score": 0.5}), structured({"score": 0.25}))
    tool = {"name": "submit", "input_schema": SCHEMA}
    code, forced = post(fake_anthropic, {**BODY, "tools": [tool],
                                         "tool_choice": {"type": "tool", "name": "submit"}},
                        **good_headers(fake_anthropic))
    assert code == 200 and forced["stop_reason"] == "tool_use"
    assert [(b["type"], b["name"], b["input"]) for b in forced["content"]] == [
        ("tool_use", "submit", {"score": 0.5})]
    code, native = post(fake_anthropic, {**BODY, "output_config": {
        "format": {"type": "json_schema", "schema": SCHEMA}}}, **good_headers(fake_anthropic))
    assert code == 200 and native["content"] == [{"type": "text", "text": '{"score": 0.25}'}]


def test_a_structured_reply_to_an_unstructured_request_is_an_error() -> None:
    with FakeAnthropic() as fake:
        fake.enqueue(structured({"score": 1.0}))
        code, reply = post(fake, BODY, **good_headers(fake))
        assert code == 500
        assert refusal(reply)[1].startswith("fake Anthropic: structured() scripted for request #1")
        with pytest.raises(AssertionError, match="asked for no structured output"):
            fake.verify()


def test_an_exhausted_script_is_an_error_not_a_default_score() -> None:
    with FakeAnthropic() as fake:
        fake.enqueue(text("the only reply"))
        assert post(fake, BODY, **good_headers(fake))[0] == 200
        code, reply = post(fake, BODY, **good_headers(fake))
        assert code == 500
        assert refusal(reply) == ("api_error", "fake Anthropic: script exhausted: request #2 "
                                  "has no scripted reply (enqueue one, or opt in to "
                                  "default_reply=)")
        with pytest.raises(AssertionError, match="script exhausted"):
            fake.verify()


def test_an_unused_scripted_reply_fails_verify() -> None:
    with FakeAnthropic() as fake:
        fake.enqueue(text("a"), text("b"))
        assert post(fake, BODY, **good_headers(fake))[0] == 200
        with pytest.raises(AssertionError, match="1 scripted reply was never requested"):
            fake.verify()


def test_default_reply_is_an_explicit_opt_in() -> None:
    with FakeAnthropic(default_reply=text("always")) as fake:
        for _ in range(3):
            code, reply = post(fake, BODY, **good_headers(fake))
            assert (code, reply["content"][0]["text"]) == (200, "always")
        fake.verify()

"""`scorecar serve` with an OpenAI judge (the `judge:` block, `openai/…`) and a named second
judge on Anthropic: each scorer's calls reach its own judge's server with that judge's key,
and /metrics counts them by provider."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from collector.cli import inspect_files
from tests.e2e._serve import ServeProcess, base_config, metrics, total, wait_for_records
from tests.e2e.test_serve_e2e import replay
from tests.fakes import fake_anthropic as anthropic_fake
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_openai import FakeOpenAI, RecordedRequest, StructuredReply, TextReply

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = {"results": [{"statement": "it is raining", "result": "yes", "reason": "on topic"}],
            "verdicts": [{"opinion": "fine", "verdict": "no", "reason": "polite"}]}


def _openai_reply(request: RecordedRequest) -> Any:
    if request.response_format == "json_schema" or request.forced_tool:
        return StructuredReply(VERDICTS, prompt_tokens=40, completion_tokens=9,
                               cached_tokens=16)
    return TextReply("The answer addresses the question.")


def _anthropic_reply(request: anthropic_fake.RecordedRequest) -> anthropic_fake.Reply:
    if request.asks_structured_output:
        return anthropic_fake.structured(VERDICTS)
    return anthropic_fake.text("No toxicity found.")


def test_serve_with_an_openai_judge_and_a_named_anthropic_judge(tmp_path: Path) -> None:
    examples = [ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"]
    runs = inspect_files(examples).runs
    oai_key, ant_key = "sk-openai-e2e-SECRET-42", "sk-ant-e2e-SECRET-43"
    with FakeOpenAI(strict=True, api_key=oai_key, default_reply=_openai_reply) as oai, \
            FakeAnthropic(api_key=ant_key, default_reply=_anthropic_reply) as ant:
        config = base_config(tmp_path, scorers=[
            {"scorer": "builtin:answer_relevancy"},
            {"scorer": "builtin:toxicity", "judge": "claude"}])
        config["judge"] = {"model": "openai/gpt-4.1-mini", "base_url": oai.base_url,
                           "api_key_env": "OAI_KEY", "max_retries": 0}
        config["judges"] = {"claude": {"model": "anthropic/claude-haiku-4-5",
                                       "base_url": ant.base_url, "api_key_env": "ANT_KEY",
                                       "max_concurrency": 2, "max_retries": 0}}
        with ServeProcess(config, tmp_path, env={"OAI_KEY": oai_key,
                                                 "ANT_KEY": ant_key}) as serve:
            replay(examples, serve.grpc_endpoint, "grpc")
            records = wait_for_records(tmp_path / "scores.jsonl", 2 * len(runs), 60, serve)
            samples = metrics(serve.metrics_url)
            serve.terminate()
        oai_requests, ant_requests = oai.chat_requests, ant.message_requests
        assert not oai.take_rejections() and not oai.problems
        ant.verify()
    by_scorer = {r["scorer"]["id"]: r for r in records}
    assert {r["status"] for r in records} == {"scored"}, json.dumps(records)[:2000]
    assert set(by_scorer) == {"answer_relevancy", "toxicity"}
    assert oai_requests and all(r.body["model"] == "gpt-4.1-mini" for r in oai_requests)
    assert all(r.headers.get("Authorization", r.headers.get("authorization")) ==
               f"Bearer {oai_key}" for r in oai_requests)
    assert ant_requests and all(r.body["model"] == "claude-haiku-4-5" for r in ant_requests)
    assert total(samples, "scorecar_judge_requests_total", provider="openai",
                 outcome="ok") == len(oai_requests)
    assert total(samples, "scorecar_judge_requests_total", provider="anthropic",
                 outcome="ok") == len(ant_requests)
    assert total(samples, "scorecar_judge_tokens_total", provider="openai",
                 type="cached_input") > 0
    logs = "\n".join(serve.lines)
    assert oai_key not in logs and ant_key not in logs

"""A live app on the official OTel SDK with its default batch processors for spans (5 s) and
logs (1 s), the OTel GenAI instrumentation of the OpenAI client putting the conversation into log
events, and a tool that takes 8 s: the first model call and its log events reach the sidecar
seconds before the agent span and the rest. Each run is scored once, whole — exactly the run
`scorecar inspect` rebuilds from everything the app exported."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from collector.otlp import read_otlp_file
from tests.e2e._serve import ServeProcess, base_config, metrics, total, wait_for_records
from tests.fakes.fake_openai import FakeOpenAI, TextReply, ToolCall, ToolCallReply
from tests.fakes.otlp_capture import OtlpCaptureServer
from transforms import Trace, build_runs

APP = Path(__file__).resolve().parent / "apps" / "events_agent.py"


@pytest.mark.slow
def test_a_live_app_with_content_in_log_events_and_an_8_s_tool_is_scored_once_whole(
        tmp_path: Path) -> None:
    import opentelemetry.instrumentation.openai_v2  # noqa: F401 - the app's (a test dependency)

    config = base_config(tmp_path)
    # the shipped readiness defaults, except a shorter quiet period to keep the test short
    config["assembly"] = {"quiet_period": 1.0}
    replies = [ToolCallReply(tool_calls=(ToolCall("call_paris_1", "get_weather",
                                                  '{"city": "Paris"}'),)),
               TextReply("It is 14°C and raining in Paris."),
               TextReply("Yes, take an umbrella: it is raining in Paris.")]
    capture_path = tmp_path / "app.otlp.jsonl"
    with ServeProcess(config, tmp_path) as serve, FakeOpenAI(replies) as provider, \
            OtlpCaptureServer(capture_path) as capture:
        started = time.monotonic()
        subprocess.run([sys.executable, str(APP), serve.grpc_endpoint, capture.endpoint,
                        provider.base_url, "8"], check=True, timeout=120)
        assert time.monotonic() - started > 8  # the tool did take its 8 s
        # 2 runs x 2 scorers; a second, partial scoring would come within the quiet period
        wait_for_records(tmp_path / "scores.jsonl", 4, 60, serve)
        time.sleep(3.0)
        records = wait_for_records(tmp_path / "scores.jsonl", 4, 1, serve)
        samples = metrics(serve.metrics_url)
    decoded = read_otlp_file(capture_path)
    assert decoded.logs, "the instrumentation sent its content as log records"
    assert not any(s.attributes.get("gen_ai.input.messages") for s in decoded.spans)
    runs = [run for tid in sorted({s.trace_id for s in decoded.spans})  # a trace per turn
            for run in build_runs(Trace(tid, [s for s in decoded.spans if s.trace_id == tid],
                                        [lg for lg in decoded.logs if lg.trace_id == tid])).runs]
    assert len(runs) == 2
    assert len(records) == 4, Counter(r["spanId"] for r in records)
    assert Counter(r["id"] for r in records) == Counter({r["id"]: 1 for r in records})
    by_span = {r.target.span_id: r for r in runs}
    for record in records:
        run = by_span[record["spanId"]]  # an agent span's run, not a bare model call
        assert record["input"] == run.input.model_dump(mode="json", by_alias=True)
        assert record["output"] == [m.model_dump(mode="json", by_alias=True) for m in run.output]
    first = next(r for r in runs if r.input.input_messages[0].content.content
                 == "What is the weather in Paris?")
    assert first.input.system_messages and first.output
    for reason in ("partial", "late", "rescored"):
        assert total(samples, "scorecar_transform_reasons_total", reason=reason) == 0, reason

"""OtlpSink through the SDK's OTLP exporters into a real OTLP backend on loopback (gRPC, HTTP):
what a tracing backend receives for each score; spans and log records confirmed separately (a
real WorkerPool), and a backend without a logs service."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from collector._telemetry import Metrics
from collector.scoring import MemoryQueue, Scheduler, ScorerSpec, WorkerPool
from exporters import OtlpSink, ScoreSink
from scorers import ScorerRun, create_scorer
from scorers.errors import ExportError
from scorers.types import run_id_for
from tests.exporters._records import (
    AGENT,
    REASON,
    REASON_PROMPT,
    SCORE_PROMPT,
    SPAN_ID,
    TRACE_ID,
    Records,
    make_records,
    make_run,
)
from tests.fakes.otlp_backend import OtlpBackend

SECRET = "Bearer s3cr3t-token-value"
SEVERITY_INFO, SEVERITY_WARN = 9, 13
KIND_INTERNAL, KIND_CLIENT = 1, 3
STATUS_ERROR = 2


@pytest.fixture
def backend() -> Iterator[OtlpBackend]:
    with OtlpBackend() as server:
        yield server


@pytest.fixture
async def records() -> Records:
    return await make_records()


def by_name(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in items}


def sink_for(backend: OtlpBackend, protocol: str, **kwargs: Any) -> OtlpSink:
    endpoint = backend.endpoint if protocol == "grpc" else backend.http_endpoint
    return OtlpSink(endpoint=endpoint, protocol=protocol, **kwargs)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_each_score_arrives_as_an_evaluation_span_under_the_scored_span(
        backend: OtlpBackend, records: Records, protocol: str) -> None:
    sink = sink_for(backend, protocol)
    assert isinstance(sink, ScoreSink) and sink.name == "otlp"
    await sink.export(records.traced)
    await sink.shutdown()

    spans = backend.spans()
    assert {s["transport"] for s in spans} == {protocol}
    evaluations = by_name([s for s in spans if s["name"].startswith("evaluation ")])
    assert set(evaluations) == {"evaluation completeness", "evaluation answer-quality",
                                "evaluation broken-judge"}
    for span in evaluations.values():
        assert span["trace_id"] == TRACE_ID
        assert span["parent_span_id"] == SPAN_ID
        assert span["scope"] == "scorecar"
        assert span["kind"] == KIND_INTERNAL
        assert span["resource"]["service.name"] == "scorecar"
        assert span["start_time_unix_nano"] <= span["end_time_unix_nano"]
        (event,) = span["events"]
        assert event["name"] == "gen_ai.evaluation.result"
        assert span["attributes"]["gen_ai.agent.name"] == AGENT

    judged = evaluations["evaluation answer-quality"]
    event = judged["events"][0]["attributes"]
    assert event["gen_ai.evaluation.name"] == "answer-quality"
    assert event["gen_ai.evaluation.score.value"] == 0.75
    assert event["gen_ai.evaluation.explanation"] == REASON
    assert event["scorecar.score.id"] == records.judge.id
    assert event["scorecar.scorer.id"] == "answer-quality"
    assert "error.type" not in event
    assert judged["attributes"]["scorecar.status"] == "scored"
    assert judged["attributes"]["scorecar.run.id"] == records.judge.run_id
    assert judged["end_time_unix_nano"] == int(records.judge.created_at.timestamp() * 1e6) * 1000

    code = evaluations["evaluation completeness"]["events"][0]["attributes"]
    assert code["gen_ai.evaluation.score.value"] == pytest.approx(records.code.score)

    failed = evaluations["evaluation broken-judge"]
    event = failed["events"][0]["attributes"]
    assert event["error.type"] == "JudgeParseError"
    assert "gen_ai.evaluation.score.value" not in event
    assert "not valid JSON" in event["gen_ai.evaluation.explanation"]
    assert failed["status"]["code"] == STATUS_ERROR


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_each_score_arrives_as_a_log_event_with_the_scored_span_ids(
        backend: OtlpBackend, records: Records, protocol: str) -> None:
    sink = sink_for(backend, protocol)
    await sink.export([*records.traced, records.offline])
    await sink.shutdown()

    logs = {log["attributes"]["scorecar.score.id"]: log for log in backend.log_records()}
    assert len(logs) == 4
    for record in records.traced:
        log = logs[record.id]
        assert (log["trace_id"], log["span_id"]) == (TRACE_ID, SPAN_ID)
        assert log["scope"] == "scorecar"
        assert log["event_name"] == "gen_ai.evaluation.result"
        assert log["attributes"]["event.name"] == "gen_ai.evaluation.result"
        assert log["attributes"]["gen_ai.evaluation.name"] == record.scorer_id
        assert log["time_unix_nano"] == int(record.created_at.timestamp() * 1e6) * 1000
    judged = logs[records.judge.id]["attributes"]
    assert judged["gen_ai.evaluation.score.value"] == 0.75
    assert judged["gen_ai.evaluation.explanation"] == REASON
    assert judged["gen_ai.agent.name"] == AGENT
    assert logs[records.judge.id]["severity_number"] == SEVERITY_INFO
    assert logs[records.failed.id]["severity_number"] == SEVERITY_WARN
    assert logs[records.failed.id]["attributes"]["error.type"] == "JudgeParseError"

    # A record from no trace (offline scoring): a log record without ids, and no span.
    offline = logs[records.offline.id]
    assert (offline["trace_id"], offline["span_id"]) == ("", "")
    assert offline["attributes"]["scorecar.source"] == "TEST"
    assert not [s for s in backend.spans()
                if s["attributes"].get("scorecar.score.id") == records.offline.id]


async def test_judge_calls_are_child_spans_of_the_evaluation_span(
        backend: OtlpBackend, records: Records) -> None:
    sink = sink_for(backend, "grpc")
    await sink.export([records.judge, records.failed])
    await sink.shutdown()

    spans = backend.spans()
    evaluation = {s["attributes"]["scorecar.score.id"]: s for s in spans
                  if s["name"].startswith("evaluation ")}
    chats = [s for s in spans if s["name"].startswith("chat ")]
    assert len(chats) == 3  # score + reason of the judge scorer, the failed call of the other
    judged = [s for s in chats if s["parent_span_id"] == evaluation[records.judge.id]["span_id"]]
    steps = {s["attributes"]["scorecar.judge.step"]: s for s in judged}
    assert set(steps) == {"generate_score", "generate_reason"}
    score_call = steps["generate_score"]
    assert score_call["name"] == "chat claude-test-1"
    assert score_call["trace_id"] == TRACE_ID
    assert score_call["kind"] == KIND_CLIENT
    assert score_call["scope"] == "scorecar"
    attrs = score_call["attributes"]
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "claude-test-1"
    assert (attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]) == (120, 8)
    assert attrs["scorecar.judge.outcome"] == "success"
    assert (attrs["scorecar.judge.attempts"], attrs["scorecar.judge.model_calls"]) == (1, 1)
    # The calls lie inside the evaluation span, one after the other.
    parent = evaluation[records.judge.id]
    assert parent["start_time_unix_nano"] == score_call["start_time_unix_nano"]
    assert score_call["end_time_unix_nano"] == steps["generate_reason"]["start_time_unix_nano"]
    assert steps["generate_reason"]["end_time_unix_nano"] == parent["end_time_unix_nano"]

    (failed_call,) = [s for s in chats
                      if s["parent_span_id"] == evaluation[records.failed.id]["span_id"]]
    assert failed_call["attributes"]["scorecar.judge.outcome"] == "failed"
    assert failed_call["attributes"]["error.type"] == "JSON_PARSE_ERROR"
    assert failed_call["attributes"]["scorecar.judge.attempts"] == 2
    assert failed_call["status"]["code"] == STATUS_ERROR

    # Prompts and replies stay out unless judge_content is on.
    for span in spans:
        flat = json.dumps(span["attributes"])
        assert "gen_ai.input.messages" not in span["attributes"]
        assert "gen_ai.output.messages" not in span["attributes"]
        assert SCORE_PROMPT not in flat and "Score: 5" not in flat


async def test_judge_content_puts_prompts_and_replies_on_the_judge_spans(
        backend: OtlpBackend, records: Records) -> None:
    sink = sink_for(backend, "grpc", judge_content=True)
    await sink.export([records.judge, records.failed])
    await sink.shutdown()

    chats = [s for s in backend.spans() if s["name"].startswith("chat ")]
    by_step = {(s["attributes"]["scorecar.scorer.id"], s["attributes"]["scorecar.judge.step"]): s
               for s in chats}

    def text(span: dict[str, Any], key: str) -> str:
        (message,) = json.loads(span["attributes"][key])
        return str(message["parts"][0]["content"])

    assert text(by_step["answer-quality", "generate_score"], "gen_ai.input.messages") == \
        SCORE_PROMPT
    reason_call = by_step["answer-quality", "generate_reason"]
    assert text(reason_call, "gen_ai.input.messages") == REASON_PROMPT
    assert text(reason_call, "gen_ai.output.messages") == REASON
    failed_call = by_step["broken-judge", "generate_score"]
    assert text(failed_call, "gen_ai.output.messages") == "Score: 5"


async def test_a_re_export_repeats_the_same_span_ids(backend: OtlpBackend,
                                                     records: Records) -> None:
    sink = sink_for(backend, "grpc")
    await sink.export([records.judge])
    await sink.export([records.judge])
    await sink.shutdown()
    spans = backend.spans()
    assert len(spans) == 6
    first, second = spans[:3], spans[3:]
    assert [s["span_id"] for s in first] == [s["span_id"] for s in second]


async def test_a_failing_backend_is_a_retryable_error_then_delivery_after_it_recovers(
        backend: OtlpBackend, records: Records) -> None:
    sink = sink_for(backend, "grpc", timeout=1.0)
    backend.fail_with(grpc.StatusCode.UNAVAILABLE, times=None)
    with pytest.raises(ExportError) as info:
        await sink.export([records.judge])
    assert info.value.retryable
    assert backend.refused and not backend.received
    backend.clear_faults()

    backend.down()
    with pytest.raises(ExportError) as info:
        await sink.export([records.judge])
    assert info.value.retryable

    backend.up()
    await sink.export([records.judge])
    await sink.shutdown()
    assert len(backend.wait_for_spans(3)) == 3
    assert len(backend.log_records()) == 1


async def test_an_http_backend_down_is_retryable_too(backend: OtlpBackend,
                                                     records: Records) -> None:
    sink = sink_for(backend, "http", timeout=1.0)
    backend.down()
    with pytest.raises(ExportError) as info:
        await sink.export([records.code])
    assert info.value.retryable
    backend.up()
    await sink.export([records.code])
    await sink.shutdown()
    assert [s["name"] for s in backend.spans()] == ["evaluation completeness"]


async def test_a_shut_down_sink_refuses_retryably(backend: OtlpBackend, records: Records) -> None:
    sink = sink_for(backend, "grpc")
    await sink.shutdown()
    await sink.shutdown()  # idempotent
    with pytest.raises(ExportError) as info:
        await sink.export([records.code])
    assert info.value.retryable


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_the_standard_otlp_env_vars_are_honoured(
        backend: OtlpBackend, records: Records, protocol: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    endpoint = (f"http://{backend.endpoint}" if protocol == "grpc" else backend.http_endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL",
                       "grpc" if protocol == "grpc" else "http/protobuf")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
    sink = OtlpSink(endpoint=None, protocol=None)
    await sink.export([records.code])
    await sink.shutdown()
    (span,) = backend.spans()
    assert span["transport"] == protocol
    assert span["resource"]["deployment.environment"] == "test"
    assert span["resource"]["service.name"] == "scorecar"
    assert all(r.headers.get("x-tenant") == "acme" for r in backend.received)


async def test_header_values_reach_the_backend_but_never_the_logs(
        backend: OtlpBackend, records: Records, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sink = sink_for(backend, "grpc", headers={"authorization": SECRET}, timeout=1.0)
    await sink.export([records.code])
    assert all(r.headers["authorization"] == SECRET for r in backend.received)

    backend.fail_with(grpc.StatusCode.UNAUTHENTICATED, times=None, message="bad token")
    with pytest.raises(ExportError) as info:
        await sink.export([records.code])
    backend.down()
    with pytest.raises(ExportError):
        await sink.export([records.code])
    await sink.shutdown()
    assert caplog.records, "the failures were logged"
    assert "s3cr3t" not in caplog.text
    assert "s3cr3t" not in str(info.value) and "s3cr3t" not in repr(sink)


async def test_user_info_in_the_endpoint_url_is_not_shown(records: Records) -> None:
    sink = OtlpSink(endpoint="https://user:s3cr3t@collector.example:4318", protocol="http")
    assert "s3cr3t" not in sink.target and "collector.example:4318" in sink.target
    await sink.shutdown()


# ------------------------------------------------------------------ one sink per signal

LOGS_UNSUPPORTED = "does not accept logs"


def per_signal(backend: OtlpBackend, protocol: str, **kwargs: Any) -> list[OtlpSink]:
    endpoint = backend.endpoint if protocol == "grpc" else backend.http_endpoint
    return OtlpSink.per_signal(endpoint=endpoint, protocol=protocol, **kwargs)


def traced_runs(n: int) -> list[ScorerRun]:
    runs = []
    for i in range(n):
        trace_id, span_id = f"{i + 1:032x}", f"{i + 1:016x}"
        run = make_run(trace_id=trace_id, span_id=span_id)
        runs.append(run.model_copy(update={"run_id": run_id_for(trace_id, span_id)}))
    return runs


def export_total(metrics: Metrics, exporter: str, outcome: str) -> float:
    value = metrics.registry.get_sample_value(
        "scorecar_export_total", {"exporter": exporter, "outcome": outcome})
    return value or 0.0


class Pool:
    """A real WorkerPool over a memory queue: one code scorer, the given sinks."""

    def __init__(self, sinks: list[OtlpSink], runs: list[ScorerRun], **pool_kw: Any) -> None:
        self.metrics = Metrics()
        self.queue = MemoryQueue()
        scorer = create_scorer(id="const", description="constant").generate_score(
            lambda run, results: 0.5)
        specs = [ScorerSpec(scorer)]
        Scheduler(specs, self.queue, self.metrics).schedule(runs)
        self.pool = WorkerPool(specs, self.queue, sinks, self.metrics, poll_interval=0.02,
                               backoff_initial=0.01, backoff_max=0.05, **pool_kw)
        self.sinks = sinks

    async def __aenter__(self) -> Pool:
        await self.pool.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.pool.stop(grace=5)
        for sink in self.sinks:
            await sink.shutdown()


def test_per_signal_builds_a_spans_sink_and_a_logs_sink(backend: OtlpBackend) -> None:
    sinks = per_signal(backend, "grpc")
    assert [(s.name, s.signals) for s in sinks] == [("otlp", ("traces",)),
                                                    ("otlp_logs", ("logs",))]
    assert all(isinstance(s, ScoreSink) for s in sinks)
    with pytest.raises(ValueError, match="signals"):
        OtlpSink(endpoint=backend.endpoint, signals=("metrics",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="signals"):
        OtlpSink(endpoint=backend.endpoint, signals=())


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_spans_are_delivered_once_while_log_records_keep_failing(
        backend: OtlpBackend, protocol: str) -> None:
    n = 3
    backend.fail_with(grpc.StatusCode.UNAVAILABLE, times=None, signal="logs")
    async with Pool(per_signal(backend, protocol, timeout=0.5), traced_runs(n),
                    export_batch=2) as pool:
        spans = await asyncio.to_thread(backend.wait_for_spans, n)
        # The logs sink keeps retrying with backoff; the spans sink is done with these jobs.
        await asyncio.to_thread(wait_until, lambda: len(backend.refused) >= 3 * 2)
        assert pool.queue.depth() == n  # not acknowledged: the log records are not delivered
        assert export_total(pool.metrics, "otlp_logs", "retry") >= n
        assert len(backend.spans()) == n  # ... but no span was sent a second time
        assert sorted(s["trace_id"] for s in spans) == [f"{i + 1:032x}" for i in range(n)]
        assert not backend.log_records()

        backend.clear_faults()
        await pool.pool.drain(timeout=20)
        assert len(backend.log_records()) == n
        assert len(backend.spans()) == n
        assert export_total(pool.metrics, "otlp", "ok") == n
        assert export_total(pool.metrics, "otlp_logs", "ok") == n
        assert pool.queue.depth() == 0


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_a_traces_only_backend_costs_a_counted_drop_of_the_log_records(
        protocol: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="exporters.otlp")
    n = 4
    with OtlpBackend(logs=False) as backend:
        async with Pool(per_signal(backend, protocol, timeout=2.0), traced_runs(n),
                        export_batch=1) as pool:
            await pool.pool.drain(timeout=20)
            assert pool.queue.depth() == 0  # nothing piles up
            assert len(backend.spans()) == n
            assert not backend.log_records()
            assert export_total(pool.metrics, "otlp", "ok") == n
            assert export_total(pool.metrics, "otlp_logs", "dropped") == n
            assert export_total(pool.metrics, "otlp_logs", "retry") == 0
        # The backend was asked once (gRPC: the failed export and one probe), not per batch.
        assert {signal for signal, _ in backend.unserved} == {"logs"}
        assert len(backend.unserved) == (2 if protocol == "grpc" else 1)
    warnings = [r.getMessage() for r in caplog.records
                if r.name == "exporters.otlp" and LOGS_UNSUPPORTED in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert ("gRPC UNIMPLEMENTED" if protocol == "grpc" else "HTTP 404") in warnings[0]
    assert 'exporter="otlp_logs",outcome="dropped"' in warnings[0]


@pytest.mark.parametrize(("protocol", "unserved"), [
    ("grpc", "no service"), ("grpc", "UNIMPLEMENTED"), ("http", "404"), ("http", "501")])
async def test_a_backend_without_the_logs_service_is_a_non_retryable_error(
        records: Records, protocol: str, unserved: str) -> None:
    with OtlpBackend(logs=unserved not in ("no service", "404")) as backend:
        if unserved in ("UNIMPLEMENTED", "501"):
            backend.fail_with(grpc.StatusCode.UNIMPLEMENTED, times=None, signal="logs")
        (sink,) = [s for s in per_signal(backend, protocol, timeout=2.0) if s.name == "otlp_logs"]
        with pytest.raises(ExportError) as info:
            await sink.export(records.traced)
        assert not info.value.retryable
        assert LOGS_UNSUPPORTED in str(info.value) and "3 log records dropped" in str(info.value)
        asked = len(backend.unserved) + len(backend.refused)
        # Until the re-check, nothing more is sent: the records are dropped at once.
        with pytest.raises(ExportError) as again:
            await sink.export([records.code])
        assert not again.value.retryable
        assert len(backend.unserved) + len(backend.refused) == asked
        await sink.shutdown()


async def test_log_records_flow_again_once_the_backend_serves_logs(
        records: Records, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="exporters.otlp")
    with OtlpBackend(logs=False) as backend:
        sink = OtlpSink(endpoint=backend.endpoint, signals=("logs",), timeout=2.0,
                        recheck_unsupported=0.0)
        for _ in range(2):
            with pytest.raises(ExportError) as info:
                await sink.export([records.code])
            assert not info.value.retryable
        backend.logs = True
        backend.down()
        backend.up()  # reconfigured with a logs service
        await sink.export([records.code])
        await sink.shutdown()
        assert len(backend.log_records()) == 1
    messages = [r.getMessage() for r in caplog.records if r.name == "exporters.otlp"]
    assert sum(LOGS_UNSUPPORTED in m for m in messages) == 1  # warned once, not per batch
    assert any("accepts logs again" in m for m in messages)


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_transient_log_failures_stay_retryable(records: Records, protocol: str) -> None:
    with OtlpBackend() as backend:
        (sink,) = [s for s in per_signal(backend, protocol, timeout=0.5) if s.name == "otlp_logs"]
        backend.fail_with(grpc.StatusCode.UNAVAILABLE, times=None, signal="logs")  # 503 / HTTP
        with pytest.raises(ExportError) as info:
            await sink.export([records.code])
        assert info.value.retryable

        backend.clear_faults()
        backend.down()  # connection refused
        with pytest.raises(ExportError) as info:
            await sink.export([records.code])
        assert info.value.retryable

        backend.up()
        await sink.export([records.code])
        await sink.shutdown()
        assert len(backend.log_records()) == 1


@pytest.mark.parametrize("protocol", ["grpc", "http"])
async def test_secrets_stay_out_of_the_unsupported_signal_messages(
        records: Records, protocol: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with OtlpBackend(logs=False) as backend:
        sinks = per_signal(backend, protocol, headers={"authorization": SECRET}, timeout=2.0)
        errors = []
        for sink in sinks:
            try:
                await sink.export([records.code])
            except ExportError as exc:
                errors.append(exc)
            await sink.shutdown()
        assert [e.retryable for e in errors] == [False]  # spans delivered, logs dropped
        assert all(r.headers["authorization"] == SECRET for r in backend.received)
    assert LOGS_UNSUPPORTED in caplog.text
    for shown in (caplog.text, str(errors[0]), *(repr(s) for s in sinks)):
        assert "s3cr3t" not in shown


def test_per_signal_follows_the_signal_env_vars(backend: OtlpBackend, records: Records,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    assert OtlpSink.per_signal() == []  # no endpoint anywhere: no OTLP export

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"http://{backend.endpoint}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc")
    assert [s.name for s in OtlpSink.per_signal()] == ["otlp"]

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", f"{backend.http_endpoint}/v1/logs")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/protobuf")
    sinks = OtlpSink.per_signal()
    assert [s.name for s in sinks] == ["otlp", "otlp_logs"]

    async def send() -> None:
        for sink in sinks:
            await sink.export([records.code])
            await sink.shutdown()

    asyncio.run(send())
    assert {s["transport"] for s in backend.spans()} == {"grpc"}
    assert {lg["transport"] for lg in backend.log_records()} == {"http"}

    monkeypatch.setenv("OTEL_LOGS_EXPORTER", "none")
    assert [s.name for s in OtlpSink.per_signal(endpoint=backend.endpoint)] == ["otlp"]


def wait_until(condition: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(0.01)

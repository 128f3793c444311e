"""`scorecar serve` as a real process: agents export with the official OTel exporters, scores
arrive at a real OTLP backend, on /metrics and in the JSON-lines file, and the runs scored are
exactly the runs `scorecar inspect` rebuilds from the same files."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import pytest

from collector.cli import (
    inspect_files,
    otlp_log_exporter,
    otlp_span_exporter,
    send_logs,
    send_spans,
)
from collector.otlp import read_otlp_file
from tests.e2e._serve import (
    ServeProcess,
    base_config,
    metrics,
    read_jsonl,
    total,
    wait_for_records,
)
from tests.fakes.fake_anthropic import FakeAnthropic, structured, text
from tests.fakes.otlp_backend import OtlpBackend

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = sorted((ROOT / "tests" / "testdata" / "captures").glob("*/*.otlp.jsonl"))


def replay(files: list[Path], endpoint: str, protocol: Literal["grpc", "http"]) -> tuple[int, int]:
    """Send every span and log record of `files` unchanged through the official exporters."""
    spans = [s for f in files for s in read_otlp_file(f).spans]
    logs = [lg for f in files for lg in read_otlp_file(f).logs]
    span_exporter = otlp_span_exporter(endpoint, protocol)
    send_spans(spans, span_exporter, recent=False, batch=64)
    span_exporter.shutdown()
    if logs:
        log_exporter = otlp_log_exporter(endpoint, protocol)
        send_logs(logs, log_exporter, batch=64)
        log_exporter.shutdown()
    return len(spans), len(logs)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_every_capture_is_scored_like_inspect_rebuilds_it(tmp_path: Path,
                                                          protocol: Literal["grpc", "http"]
                                                          ) -> None:
    expected = inspect_files(CAPTURES).runs
    assert len(expected) > 100
    with OtlpBackend() as backend:
        config = base_config(tmp_path)
        config["exporters"]["otlp"] = {"endpoint": backend.endpoint, "protocol": "grpc"}
        # runs built in the event loop's thread pool (gRPC) or in a build process (HTTP)
        config["assembly"]["build_processes"] = 0 if protocol == "grpc" else 1
        with ServeProcess(config, tmp_path) as serve:
            endpoint = serve.grpc_endpoint if protocol == "grpc" else serve.http_endpoint
            n_spans, n_logs = replay(CAPTURES, endpoint, protocol)
            records = wait_for_records(tmp_path / "scores.jsonl", 2 * len(expected), 120, serve)
            spans = backend.wait_for_spans(2 * len(expected), timeout=60)
            logs = backend.wait_for_logs(2 * len(expected), timeout=60)
            samples = metrics(serve.metrics_url)
            code = serve.terminate()
    assert code == 0

    # The same runs, with the same ids and the same content, as `scorecar inspect`.
    by_run = {r.run_id: r for r in expected}
    assert {r["runId"] for r in records} == set(by_run)
    assert Counter(r["scorerId"] for r in records) == {"completeness": len(expected),
                                                       "tone": len(expected)}
    for record in records:
        run = by_run[record["runId"]]
        assert record["traceId"] == run.target.trace_id
        assert record["spanId"] == run.target.span_id
        assert record["input"] == run.input.model_dump(mode="json", by_alias=True)
        assert record["output"] == [m.model_dump(mode="json", by_alias=True) for m in run.output]
        assert record["source"] == "LIVE"
        assert record["status"] in {"scored", "not_scorable"}

    # Evaluation spans: children of the scored agent span, in its trace, scope `scorecar`.
    evaluations = [s for s in spans if s["name"].startswith("evaluation ")]
    assert len(evaluations) == len(records)
    by_score_id = {r["id"]: r for r in records}
    for span in evaluations:
        assert span["scope"] == "scorecar"
        event = next(e for e in span["events"] if e["name"] == "gen_ai.evaluation.result")
        record = by_score_id[event["attributes"]["scorecar.score.id"]]
        assert span["trace_id"] == record["traceId"]
        assert span["parent_span_id"] == record["spanId"]
        assert span["name"] == f"evaluation {record['scorerId']}"
        assert event["attributes"]["gen_ai.evaluation.name"] == record["scorerId"]
        assert event["attributes"]["scorecar.scorer.id"] == record["scorerId"]
        if record["status"] == "scored":
            assert event["attributes"]["gen_ai.evaluation.score.value"] == pytest.approx(
                record["score"])
    # Log records carry the scored span's ids.
    assert len(logs) == len(records)
    for lg in logs:
        record = by_score_id[lg["attributes"]["scorecar.score.id"]]
        assert (lg["trace_id"], lg["span_id"]) == (record["traceId"], record["spanId"])
        assert lg["event_name"] == "gen_ai.evaluation.result"
        assert lg["scope"] == "scorecar"

    # /metrics counts what happened.
    assert total(samples, "scorecar_spans_received_total", transport=protocol) == n_spans + n_logs
    assert total(samples, "scorecar_scorer_runs_total") == len(records)
    assert total(samples, "scorecar_score_count") == sum(r["status"] == "scored"
                                                         for r in records)
    assert total(samples, "scorecar_agent_runs_total") == len(expected)
    assert total(samples, "scorecar_export_total", exporter="otlp", outcome="ok") >= 1
    assert total(samples, "scorecar_queue_depth") == 0


def _judge_reply(request: Any) -> Any:
    """Answer relevancy's two prompts: a statement verdict list, then the reason."""
    if request.asks_structured_output:
        return structured({"results": [
            {"statement": "it is raining", "result": "yes", "reason": "on topic"},
            {"statement": "take an umbrella", "result": "yes", "reason": "answers it"}]})
    return text("The answer addresses the question.")


def test_judge_scorer_runs_against_the_judge_and_the_key_never_leaks(tmp_path: Path) -> None:
    key = "sk-ant-e2e-SECRET-0123456789"
    examples = [ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"]
    runs = inspect_files(examples).runs
    with FakeAnthropic(api_key=key) as fake:
        fake.enqueue(*[_judge_reply] * (2 * len(runs)))  # analyze + reason per run, no more
        config = base_config(tmp_path, scorers=[{"scorer": "builtin:answer_relevancy"}])
        config["judge"] = {"api_key_env": "E2E_JUDGE_KEY", "base_url": fake.base_url,
                           "max_retries": 0}
        with ServeProcess(config, tmp_path, env={"E2E_JUDGE_KEY": key}) as serve:
            replay(examples, serve.grpc_endpoint, "grpc")
            records = wait_for_records(tmp_path / "scores.jsonl", len(runs), 60, serve)
            samples = metrics(serve.metrics_url)
            with urllib.request.urlopen(f"{serve.metrics_url}/metrics", timeout=10) as resp:
                metrics_text = resp.read().decode()
            serve.terminate()
        requests = fake.message_requests
        fake.verify()  # every scripted reply used; nothing refused; no stray call
    assert {r["status"] for r in records} == {"scored"}
    assert all(r["score"] == 1.0 for r in records)
    assert all(r["scorer"]["hasJudge"] for r in records)
    # the key reached the judge, and nothing else
    # (this SDK sends the key as `Authorization: Bearer`, older ones as `x-api-key`)
    assert requests and all(key in (r.headers.get("x-api-key"), r.headers.get("authorization",
                                                                            "")[7:])
                            for r in requests)
    assert total(samples, "scorecar_judge_requests_total", outcome="ok") == len(requests)
    assert total(samples, "scorecar_judge_tokens_total") > 0
    everything = "\n".join(serve.lines) + (tmp_path / "scores.jsonl").read_text() + metrics_text
    assert key not in everything


def test_judge_401_fails_once_without_retries(tmp_path: Path) -> None:
    examples = [ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"]
    runs = inspect_files(examples).runs
    with FakeAnthropic() as fake:  # it refuses the wrong key itself, as the API does
        config = base_config(tmp_path, scorers=[{"scorer": "builtin:answer_relevancy"},
                                                {"scorer": "builtin:tone"}])
        config["judge"] = {"api_key_env": "E2E_JUDGE_KEY", "base_url": fake.base_url,
                           "max_retries": 3}
        with ServeProcess(config, tmp_path, env={"E2E_JUDGE_KEY": "sk-bad"}) as serve:
            replay(examples, serve.grpc_endpoint, "grpc")
            records = wait_for_records(tmp_path / "scores.jsonl", 2 * len(runs), 60, serve)
            serve.terminate()
        calls = len(fake.message_requests)
        refused = fake.take_rejections()
        fake.verify()
    assert {(r.status, r.message) for r in refused} == {(401, "invalid x-api-key")}
    assert len(refused) == calls
    judged = [r for r in records if r["scorerId"] == "answer_relevancy"]
    assert {r["status"] for r in judged} == {"failed"}
    assert all(r["error"]["name"] == "JudgeAuthError" for r in judged)
    assert calls == len(judged)  # one call per job: a 401 is never retried
    assert {r["status"] for r in records if r["scorerId"] == "tone"} == {"scored"}
    auth_lines = [r for r in serve.records() if r.get("level") == "error"
                  and "401" in r.get("message", "") + r.get("exception", "")
                  or "JudgeAuthError" in r.get("message", "")]
    assert len(auth_lines) == 1, serve.lines[-20:]


def test_a_hanging_or_raising_scorer_fails_alone(tmp_path: Path) -> None:
    examples = [ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"]
    runs = inspect_files(examples).runs
    config = base_config(tmp_path, scorers=[
        {"scorer": "tests.e2e.e2e_scorers:hang", "timeout": 0.5},
        {"scorer": "tests.e2e.e2e_scorers:boom"},
        {"scorer": "builtin:completeness"}])
    with ServeProcess(config, tmp_path) as serve:
        replay(examples, serve.http_endpoint, "http")
        records = wait_for_records(tmp_path / "scores.jsonl", 3 * len(runs), 60, serve)
        samples = metrics(serve.metrics_url)
        serve.terminate()
    status = {(r["scorerId"], r["status"]) for r in records}
    assert status == {("hang", "failed"), ("boom", "failed"), ("completeness", "scored")}
    hang = next(r for r in records if r["scorerId"] == "hang")
    assert hang["error"]["message"] == "scorer 'hang' did not finish within 0.5 s"
    assert hang["error"]["name"] == "TimeoutError"
    boom = next(r for r in records if r["scorerId"] == "boom")
    assert "always raises" in boom["error"]["message"]
    assert total(samples, "scorecar_scorer_runs_total", scorer="hang", status="failed") == len(runs)


def test_scores_wait_for_a_dead_backend_and_arrive_when_it_returns(tmp_path: Path) -> None:
    examples = [ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"]
    runs = inspect_files(examples).runs
    with OtlpBackend() as backend:
        backend.down()
        config = base_config(tmp_path, scorers=[{"scorer": "builtin:tone"}])
        config["exporters"]["otlp"] = {"endpoint": backend.endpoint, "timeout": 1}
        with ServeProcess(config, tmp_path) as serve:
            replay(examples, serve.grpc_endpoint, "grpc")
            # scored and stored, but held in the queue while the backend is down
            wait_for_records(tmp_path / "scores.jsonl", len(runs), 60, serve)

            def retried() -> bool:
                return total(metrics(serve.metrics_url), "scorecar_export_total",
                             exporter="otlp", outcome="retry") >= 1

            _wait(retried, 30)
            assert total(metrics(serve.metrics_url), "scorecar_queue_depth") == len(runs)
            backend.up()
            spans = backend.wait_for_spans(len(runs), timeout=90)
            _wait(lambda: total(metrics(serve.metrics_url), "scorecar_queue_depth") == 0, 30)
            serve.terminate()
    assert len([s for s in spans if s["name"] == "evaluation tone"]) == len(runs)


def _wait(condition: Any, timeout: float) -> None:
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_a_full_queue_refuses_retryably(tmp_path: Path) -> None:
    examples = [ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"]
    config = base_config(tmp_path, scorers=[{"scorer": "tests.e2e.e2e_scorers:hang",
                                             "timeout": 600}])
    config["storage"]["max_jobs"] = 1
    with ServeProcess(config, tmp_path) as serve:
        replay(examples, serve.grpc_endpoint, "grpc")
        _wait(lambda: total(metrics(serve.metrics_url), "scorecar_queue_depth") >= 1, 30)
        body = (ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl").read_bytes()
        first = body.splitlines()[0]
        request = urllib.request.Request(f"http://{serve.http_endpoint}/v1/traces", data=first,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 503
        assert int(refused.value.headers["Retry-After"]) >= 1
        samples = metrics(serve.metrics_url)
        serve.terminate()
    assert total(samples, "scorecar_spans_refused_total", reason="queue_full") >= 1


def test_a_bad_config_reports_every_problem_and_opens_no_socket(tmp_path: Path) -> None:
    import socket
    import subprocess
    import sys

    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    port = holder.getsockname()[1]
    holder.close()
    config = tmp_path / "bad.yaml"
    config.write_text(json.dumps({
        "receivers": {"grpc": {"endpoint": f"127.0.0.1:{port}"}},
        "assembly": {"quiet_period": -1, "bogus": 1},
        "scorers": [{"scorer": "builtin:nope"}, {"scorer": "no_such_module:x"}],
    }))
    proc = subprocess.run([sys.executable, "-m", "collector.cli", "serve", "-c", str(config)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    for needle in ("assembly.quiet_period", "assembly.bogus", "scorers[0]", "scorers[1]"):
        assert needle in proc.stderr, proc.stderr
    assert "listening" not in proc.stderr
    probe = socket.socket()
    try:
        probe.bind(("127.0.0.1", port))  # still free: nothing ever bound it
    finally:
        probe.close()


def test_sigterm_stops_cleanly_and_buffered_spans_survive_the_restart(tmp_path: Path) -> None:
    examples = [ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"]
    runs = inspect_files(examples).runs
    config = base_config(tmp_path, scorers=[{"scorer": "builtin:tone"}])
    config["assembly"] = {"quiet_period": 30.0, "max_wait": 60.0}  # nothing gets ready
    serve = ServeProcess(config, tmp_path).start()
    try:
        replay(examples, serve.grpc_endpoint, "grpc")
        assert serve.terminate() == 0
        assert read_jsonl(tmp_path / "scores.jsonl") == []
        config["assembly"] = {"quiet_period": 0.2, "max_wait": 5.0}
        restarted = ServeProcess(config, tmp_path, name="restart.yaml").start()
        try:
            records = wait_for_records(tmp_path / "scores.jsonl", len(runs), 60, restarted)
        finally:
            restarted.terminate()
    finally:
        serve.kill()
    assert {r["runId"] for r in records} == {r.run_id for r in runs}


def test_over_the_memory_limit_receivers_refuse_retryably(tmp_path: Path) -> None:
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    config = base_config(tmp_path)
    config["limits"] = {"memory_mib": 1}  # far below what any Python process uses
    body = (ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl").read_bytes().splitlines()[0]
    with ServeProcess(config, tmp_path) as serve:
        request = urllib.request.Request(f"http://{serve.http_endpoint}/v1/traces", data=body,
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 503 and int(refused.value.headers["Retry-After"]) >= 1
        with grpc.insecure_channel(serve.grpc_endpoint) as channel:
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as unavailable:
                stub.Export(trace_service_pb2.ExportTraceServiceRequest(), timeout=10)
        assert unavailable.value.code() == grpc.StatusCode.UNAVAILABLE
        trailers = dict(unavailable.value.trailing_metadata() or ())
        assert "google.rpc.retryinfo-bin" in trailers
        samples = metrics(serve.metrics_url)
        serve.terminate()
    assert total(samples, "scorecar_spans_refused_total", reason="memory") == 2
    assert read_jsonl(tmp_path / "scores.jsonl") == []


def test_health_and_readiness_endpoints(tmp_path: Path) -> None:
    with ServeProcess(base_config(tmp_path), tmp_path) as serve:
        for path, body in (("/healthz", "ok"), ("/readyz", "ready")):
            with urllib.request.urlopen(f"{serve.metrics_url}{path}", timeout=10) as resp:
                assert resp.status == 200 and resp.read().decode().strip() == body
        serve.terminate()

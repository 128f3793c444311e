"""`scorecar serve` inline between agents and their collector (`forward.endpoint`): what the
agents' official exporters send arrives at the next collector unchanged, and is scored too."""

from __future__ import annotations

from pathlib import Path

from collector.cli import (
    demo_trace_files,
    inspect_files,
    otlp_log_exporter,
    otlp_span_exporter,
    send_logs,
    send_spans,
)
from collector.otlp import read_otlp_file
from tests.e2e._serve import ServeProcess, base_config, wait_for_records
from tests.e2e.test_serve_e2e import metrics, total
from tests.fakes.otlp_backend import OtlpBackend

ROOT = Path(__file__).resolve().parents[2]
SECRET = "forward-header-secret-5b2e"
# one capture with log records (events as logs) beside the demo's captures
EVENTS = ROOT / "tests" / "testdata" / "captures" / "genai-openai-v2-events" / "two_turns_tool.otlp.jsonl"


def _send(files: list[Path], endpoint: str) -> tuple[int, int]:
    """What the agents send: every span and log record of `files`, official gRPC exporters."""
    spans = [s for f in files for s in read_otlp_file(f).spans]
    logs = [lg for f in files for lg in read_otlp_file(f).logs]
    exporter = otlp_span_exporter(endpoint, "grpc")
    send_spans(spans, exporter, recent=False, batch=64)
    exporter.shutdown()
    if logs:
        log_exporter = otlp_log_exporter(endpoint, "grpc")
        send_logs(logs, log_exporter, batch=64)
        log_exporter.shutdown()
    return len(spans), len(logs)


def test_agent_telemetry_is_forwarded_unchanged_and_scored(tmp_path: Path) -> None:
    files = [*demo_trace_files(), EVENTS]
    expected_runs = inspect_files(files).runs
    assert expected_runs
    with OtlpBackend() as direct, OtlpBackend() as upstream:
        # The same agents exporting straight to a collector: what "unchanged" means.
        n_spans, n_logs = _send(files, direct.endpoint)
        assert n_logs > 0
        config = base_config(tmp_path, forward={
            "endpoint": upstream.endpoint, "protocol": "grpc", "headers": {"x-token": SECRET},
            "initial_backoff": 0.1, "max_backoff": 1.0})
        with ServeProcess(config, tmp_path) as serve:
            _send(files, serve.grpc_endpoint)
            records = wait_for_records(tmp_path / "scores.jsonl", 2 * len(expected_runs), 60,
                                       serve)
            upstream.wait_for_spans(n_spans, timeout=30)
            upstream.wait_for_logs(n_logs, timeout=30)
            samples = metrics(serve.metrics_url)
            code = serve.terminate()
            lines = "\n".join(serve.lines)
    assert code == 0

    def requests(backend: OtlpBackend, signal: str) -> list[bytes]:
        # consumers deliver concurrently: compare as multisets of whole requests
        return sorted(r.request.SerializeToString(deterministic=True)
                      for r in backend.received if r.signal == signal)

    assert requests(upstream, "traces") == requests(direct, "traces")
    assert requests(upstream, "logs") == requests(direct, "logs")
    assert {r.headers.get("x-token") for r in upstream.received} == {SECRET}
    # scored as well
    assert {r["runId"] for r in records} == {r.run_id for r in expected_runs}
    assert total(samples, "scorecar_forward_total", signal="traces",
                 outcome="forwarded") == n_spans
    assert total(samples, "scorecar_forward_total", signal="logs",
                 outcome="forwarded") == n_logs
    assert total(samples, "scorecar_forward_total", outcome="dropped_full") == 0
    assert SECRET not in lines

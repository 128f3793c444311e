"""Secrets figure (issue 12): a recognisable judge API key and OTLP exporter header value are
grepped for in everything the sidecar writes. Run: python bench/faults.py secrets [--quick]

The scenario (loopback only, `scorecar serve` as a real process at `--log-level debug`):

1. the judge (`builtin:answer_relevancy`) calls the strict fake Messages API with the key, one
   call answered 429 then 500 first (retries, logged), the rest scripted valid replies;
2. scores go to a real OTLP backend with the header; its first exports fail (UNAUTHENTICATED,
   then UNAVAILABLE: error and retry paths log), then it accepts;
3. bad configurations that hold both secrets (the key inline under `judge:`, the header next to
   an invalid field) are given to `scorecar check-config` and `scorecar serve`, and a valid one
   to `check-config` (which prints the resolved config).

Everything is then searched for both values (and the key without its prefix): every log line
(stderr), /metrics, every JSON-lines score record (errors included), what the OTLP backend
received (score spans, events and log records), the check-config / failed-start outputs, and
every file under the data directory (SQLite queue, span log). Figure: hits (goal 0). The
scenario also checks that the secrets did reach where they belong (the judge's requests, the
backend's request headers), so a hit count of 0 is not a scenario that never used them.
"""

from __future__ import annotations

import os
import secrets
import sys
import tempfile
import time
import traceback
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import grpc  # type: ignore[import-untyped,unused-ignore]  # noqa: E402
import yaml  # noqa: E402

from collector.cli import inspect_files  # noqa: E402
from collector.cli._replay import otlp_span_exporter, send_spans  # noqa: E402
from collector.otlp import read_otlp_file  # noqa: E402
from tests.e2e._serve import ServeProcess, base_config, wait_for_records  # noqa: E402
from tests.fakes.fake_anthropic import (  # noqa: E402
    FakeAnthropic,
    rate_limited,
    server_error,
    structured,
    text,
)
from tests.fakes.otlp_backend import OtlpBackend  # noqa: E402

EXAMPLE = ROOT / "examples" / "traces" / "weather-agent.otlp.jsonl"
KEY_ENV = "SCORECAR_SECRETS_JUDGE_KEY"


def canaries() -> tuple[str, str]:
    """A fresh, recognisable judge key and exporter header value."""
    tag = secrets.token_hex(8)
    return f"sk-ant-api03-CANARYKEY{tag}-scorecar", f"Bearer CANARYHDR{tag}"


@dataclass
class Outcome:
    """What the scenario produced, by where it came from, and the checks that it ran."""

    key: str
    header: str
    texts: dict[str, str] = field(default_factory=dict)
    judge_requests: int = 0
    key_reached_judge: bool = False
    header_reached_backend: bool = False
    records: int = 0
    failed_configs: int = 0

    def needles(self) -> list[str]:
        # The header value without "Bearer ", the key without its well-known prefix.
        return [self.key, self.header, self.header.split(" ", 1)[1],
                self.key.removeprefix("sk-ant-api03-")]

    def hits(self) -> dict[str, int]:
        """Occurrences of either secret, by source."""
        return {where: sum(text.count(n) for n in set(self.needles()))
                for where, text in self.texts.items()}


def _judge_reply(request: Any) -> Any:
    if request.asks_structured_output:
        return structured({"results": [
            {"statement": "it is raining", "result": "yes", "reason": "on topic"}]})
    return text("The answer addresses the question.")


def _run_cli(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """`scorecar ARGS` in process (click's runner: stdout, stderr and log lines captured)."""
    from click.testing import CliRunner

    from collector.cli import main as cli
    result = CliRunner().invoke(cli, args, env=env, catch_exceptions=True)
    tail = "".join(traceback.format_exception(result.exception)) \
        if result.exception is not None and not isinstance(result.exception, SystemExit) else ""
    return result.exit_code, result.output + tail


def _bad_configs(tmp: Path, key: str, header: str, backend: str) -> dict[str, dict[str, Any]]:
    base = base_config(tmp)
    inline_key = {**base, "judge": {"api_key": key}}  # not a field: the key must come from env
    bad_headers = {**base, "exporters": {**base["exporters"], "otlp": {
        "endpoint": backend, "headers": {"authorization": header}, "timeout": -1}}}
    header_as_list = {**base, "exporters": {**base["exporters"], "otlp": {
        "endpoint": backend, "headers": {"authorization": [header]}}}}
    key_as_endpoint = {**base, "exporters": {**base["exporters"], "otlp": {
        "endpoint": f"http://user:{key}@127.0.0.1:1", "headers": {"authorization": header},
        "protocol": "nope"}}}
    return {"inline_key": inline_key, "bad_headers": bad_headers,
            "header_as_list": header_as_list, "key_in_endpoint": key_as_endpoint}


def run_scenario(tmp: Path) -> Outcome:
    """Run the scenario in `tmp` (a fresh directory)."""
    key, header = canaries()
    out = Outcome(key, header)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env[KEY_ENV] = key
    spans = read_otlp_file(EXAMPLE).spans
    runs = len(inspect_files([EXAMPLE]).runs)
    with FakeAnthropic(api_key=key) as fake, OtlpBackend() as backend:
        # one retried call: a 429, then a 500, then the valid replies
        fake.enqueue(rate_limited(retry_after=0), server_error(),
                     *[_judge_reply] * (2 * runs))
        backend.fail_with(grpc.StatusCode.UNAUTHENTICATED, times=1)
        backend.fail_with(grpc.StatusCode.UNAVAILABLE, times=2)
        config = base_config(tmp, scorers=[{"scorer": "builtin:answer_relevancy"},
                                           {"scorer": "builtin:tone"}])
        config["judge"] = {"api_key_env": KEY_ENV, "base_url": fake.base_url,
                           "max_retries": 3, "max_retry_after": 1}
        config["exporters"]["otlp"] = {"endpoint": backend.endpoint, "protocol": "grpc",
                                       "headers": {"authorization": header}, "timeout": 5}
        # at debug level: the most log lines a secret could land in
        serve = ServeProcess(config, tmp, env={KEY_ENV: key}, args=("--log-level", "debug"))
        with serve:
            exporter = otlp_span_exporter(serve.grpc_endpoint, "grpc")
            send_spans(spans, exporter, recent=False, batch=64)
            exporter.shutdown()
            wait_for_records(tmp / "scores.jsonl", 2 * runs, 120, serve)
            backend.wait_for_spans(2 * runs, timeout=60)
            with urllib.request.urlopen(f"{serve.metrics_url}/metrics", timeout=10) as resp:
                out.texts["/metrics"] = resp.read().decode()
            serve.terminate()
        out.texts["serve log lines"] = "\n".join(serve.lines)
        requests = fake.message_requests
        out.judge_requests = len(requests)
        out.key_reached_judge = bool(requests) and all(
            key in (r.headers.get("x-api-key", ""), r.headers.get("authorization", "")[7:])
            for r in requests)
        out.header_reached_backend = any(r.headers.get("authorization") == header
                                         for r in backend.trace_requests)
        out.texts["OTLP backend (spans, logs)"] = repr(backend.spans()) + repr(
            backend.log_records())
    scores = (tmp / "scores.jsonl").read_text(encoding="utf-8")
    out.records = len(scores.splitlines())
    out.texts["score records (jsonl)"] = scores
    data = b"".join(p.read_bytes() for p in sorted((tmp / "data").rglob("*")) if p.is_file())
    out.texts["data dir (queue, span log)"] = data.decode("utf-8", "replace")
    # the configuration paths: a valid config printed, bad ones refused
    _, printed = _run_cli(["check-config", "-c", str(serve.config_path)], env)
    out.texts["check-config (valid)"] = printed
    for name, bad in _bad_configs(tmp, key, header, "127.0.0.1:1").items():
        path = tmp / f"bad-{name}.yaml"
        path.write_text(yaml.safe_dump(bad), encoding="utf-8")
        code1, checked = _run_cli(["check-config", "-c", str(path)], env)
        code2, started = 0, ""
        if code1 != 0:  # (a config check-config takes would start a server here: not run)
            code2, started = _run_cli(["serve", "-c", str(path), "--log-level", "debug"], env)
        out.failed_configs += (code1 != 0) + (code2 != 0)
        out.texts[f"bad config {name} (check-config, serve)"] = checked + started
    return out


def main(quick: bool = False) -> int:
    """Print the secrets figure; 0 when neither value was found anywhere."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="scorecar-secrets-") as tmp:
        out = run_scenario(Path(tmp))
    hits = out.hits()
    print(f"judge requests {out.judge_requests} (key reached the judge: {out.key_reached_judge});"
          f" header reached the OTLP backend: {out.header_reached_backend}; score records "
          f"{out.records}; bad configs refused {out.failed_configs}/8")
    for where, n in hits.items():
        size = len(out.texts[where])
        print(f"  {where:<48} {size:>9,} chars  hits {n}")
    total = sum(hits.values())
    ran = out.key_reached_judge and out.header_reached_backend and out.failed_configs == 8
    print(f"TOTAL hits {total} (goal 0){'' if ran else '  -- SCENARIO INCOMPLETE'} "
          f"[{time.monotonic() - started:.0f} s]")
    return 0 if total == 0 and ran else 1

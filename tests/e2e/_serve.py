"""`scorecar serve` as a real subprocess on free loopback ports, for end-to-end tests.

The config is written to a file; every endpoint is `127.0.0.1:0` unless the test says otherwise,
and the bound ports are read from the JSON log line the sidecar prints once it listens.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

ROOT = Path(__file__).resolve().parents[2]


def base_config(tmp: Path, **overrides: Any) -> dict[str, Any]:
    """A config on free loopback ports with SQLite storage and a JSON-lines file under `tmp`."""
    config: dict[str, Any] = {
        "receivers": {"grpc": {"endpoint": "127.0.0.1:0"}, "http": {"endpoint": "127.0.0.1:0"}},
        "assembly": {"quiet_period": 0.2, "max_wait": 10.0},
        "storage": {"kind": "sqlite", "path": str(tmp / "data")},
        "exporters": {"prometheus": {"endpoint": "127.0.0.1:0"},
                      "jsonl": {"path": str(tmp / "scores.jsonl")}},
        "scorers": [{"scorer": "builtin:completeness"}, {"scorer": "builtin:tone"}],
    }
    for key, value in overrides.items():
        config[key] = value
    return config


class ServeProcess:
    """A running `scorecar serve -c FILE --log-format json`.

    Attributes:
        grpc_port, http_port, metrics_port: the bound ports, once `start()` returned.
        lines: every stderr line so far (JSON log records, or tracebacks).
    """

    def __init__(self, config: dict[str, Any], tmp: Path, *,
                 env: dict[str, str] | None = None, name: str = "scorecar.yaml",
                 args: tuple[str, ...] = ()) -> None:
        self.args = args  # more `scorecar serve` options, e.g. ("--log-level", "debug")
        self.config_path = tmp / name
        self.config_path.write_text(yaml.safe_dump(config), encoding="utf-8")
        self.tmp = tmp
        # The machine's own OTEL_* settings never leak into the sidecar under test.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
        self.env = {**inherited, **(env or {})}
        self.lines: list[str] = []
        self.proc: subprocess.Popen[str] | None = None
        self.grpc_port = self.http_port = self.metrics_port = 0
        self._reader: threading.Thread | None = None

    def start(self, timeout: float = 30.0) -> Self:
        """Launch and wait until it listens."""
        self.lines = []
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "collector.cli", "serve", "-c", str(self.config_path),
             "--log-format", "json", "--grace", "2", *self.args],
            cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        listening = self.wait_for_log(lambda r: "grpc_port" in r, timeout)
        self.grpc_port = int(listening["grpc_port"])
        self.http_port = int(listening["http_port"])
        self.metrics_port = int(listening["metrics_port"])
        return self

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def records(self) -> list[dict[str, Any]]:
        """The JSON log records printed so far (non-JSON lines skipped)."""
        out = []
        for line in list(self.lines):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
        return out

    def wait_for_log(self, match: Callable[[dict[str, Any]], bool],
                     timeout: float = 30.0) -> dict[str, Any]:
        """The first JSON log record that `match`es; fails with the log when none comes."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for record in self.records():
                if match(record):
                    return record
            if self.proc is not None and self.proc.poll() is not None:
                time.sleep(0.2)  # let the reader drain the last lines
                raise AssertionError(f"scorecar serve exited {self.proc.returncode}:\n"
                                     + "\n".join(self.lines[-40:]))
            time.sleep(0.05)
        raise AssertionError("timed out waiting for a log line:\n" + "\n".join(self.lines[-40:]))

    @property
    def grpc_endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def http_endpoint(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}"

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("scorecar serve did not stop within "
                                 f"{timeout}s of SIGTERM:\n" + "\n".join(self.lines[-40:])) from exc
        if self._reader is not None:
            self._reader.join(5)
        return code

    def kill(self) -> None:
        """SIGKILL (kill -9) and reap."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self._reader is not None:
            self._reader.join(5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill() if exc_type is not None else self.terminate()


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every complete JSON line of `path` (none when it does not exist yet)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line being written right now
    return out


def wait_for_records(path: Path, count: int, timeout: float = 60.0,
                     proc: ServeProcess | None = None) -> list[dict[str, Any]]:
    """Wait until `path` holds at least `count` records."""
    end = time.monotonic() + timeout
    records: list[dict[str, Any]] = []
    while time.monotonic() < end:
        records = read_jsonl(path)
        if len(records) >= count:
            return records
        time.sleep(0.1)
    log = "\n".join(proc.lines[-30:]) if proc else ""
    raise AssertionError(f"{len(records)} of {count} records after {timeout}s\n{log}")


def metrics(url: str) -> dict[str, float]:
    """`/metrics` at `url` parsed with prometheus_client's parser: `name{k=v,...}` -> value."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as resp:
        body = resp.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(body):
        for s in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            out[f"{s.name}{{{labels}}}"] = s.value
    return out


def total(samples: dict[str, float], name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    want = [f"{k}={v}" for k, v in labels.items()]
    return sum(v for k, v in samples.items()
               if k.split("{")[0] == name and all(w in k.split("{", 1)[1] for w in want))


def export_or_die(serve: ServeProcess, spans: Any, kill_after: float | None = None) -> bool:
    """Send `spans` to `serve` over OTLP/gRPC with the official exporter, as an agent would;
    with `kill_after`, `kill -9` the sidecar that many seconds into the request.

    Returns:
        True when the request was acknowledged (its runs must then be scored whatever happens
        next), False when it was not (the agent sends it again).
    """
    from collector.cli import otlp_span_exporter, send_spans

    killer = threading.Timer(kill_after, serve.kill) if kill_after is not None else None
    exporter = otlp_span_exporter(serve.grpc_endpoint, "grpc", timeout=3)
    if killer:
        killer.start()
    try:
        send_spans(spans, exporter, recent=False)
        return True
    except RuntimeError:
        return False
    finally:
        exporter.shutdown()
        if killer:
            killer.join()

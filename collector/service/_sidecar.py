"""The sidecar: every component wired in one asyncio process (DESIGN §5–§7).

```
receivers ─accept→ Ingest (span log, then Assembly) ─ready traces→ build_runs ─→ Scheduler
   ─jobs→ queue ─→ WorkerPool (scorers under judge limits) ─records→ sinks (OTLP, Prometheus,
   JSON lines) ─all confirmed→ ack
```

Start order is downstream first (queue, sinks, workers, the assembly loop (`Handover`), the admin port,
replay of the span log, receivers last); stop is the reverse, so nothing upstream outlives what
it feeds. Only this module (and the CLI) wires; every component is testable alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from collector._telemetry import Metrics
from collector.config import Config, JudgeConfig
from collector.forward import Forwarder, ForwardingSink
from collector.intake import (
    Assembly,
    Ingest,
    MemorySpanLog,
    Overloaded,
    ReadyTrace,
    SpanLog,
    SpanSink,
    open_spanlog,
)
from collector.receivers import GrpcReceiver, HttpReceiver
from collector.scoring import (
    BuildPool,
    Handover,
    JobQueue,
    LimitedProvider,
    LiveCache,
    MemoryQueue,
    Scheduler,
    ScorerSpec,
    SqliteQueue,
    TokenBudget,
    WorkerPool,
    default_processes,
)
from collector.service._admin import AdminServer
from exporters import JsonlSink, PrometheusSink, ScoreSink, otlp_enabled
from scorers.judge import default_provider

__all__ = ["Ports", "Sidecar", "build_sinks"]

log = logging.getLogger("scorecar")


@dataclass(frozen=True, slots=True)
class Ports:
    """Where the sidecar listens (the bound ports, useful when configured as port 0)."""

    grpc: int | None
    http: int | None
    metrics: int | None


def build_sinks(config: Config, metrics: Metrics) -> list[ScoreSink]:
    """The enabled score sinks: Prometheus always; OTLP evaluation spans (`otlp`) and log
    records (`otlp_logs`), each confirmed on its own, when an endpoint is configured (or the
    standard `OTEL_EXPORTER_OTLP_{,TRACES_,LOGS_}ENDPOINT` variables name one); JSON lines when a
    path is set. OTLP settings left at their defaults yield to the `OTEL_EXPORTER_OTLP_*`
    variables, as in the SDK."""
    sinks: list[ScoreSink] = [PrometheusSink(metrics.scores)]
    otlp = config.exporters.otlp
    given = otlp.model_fields_set
    if otlp_enabled(otlp.endpoint):
        from exporters.otlp import OtlpSink  # the OpenTelemetry SDK: only when it sends

        sinks.extend(OtlpSink.per_signal(
            endpoint=otlp.endpoint, protocol=otlp.protocol if "protocol" in given else None,
            headers=dict(otlp.headers), insecure=otlp.insecure,
            timeout=otlp.timeout if "timeout" in given else None,
            judge_content=otlp.judge_content))
    if config.exporters.jsonl.path:
        sinks.append(JsonlSink(Path(config.exporters.jsonl.path)))
    return sinks


class Sidecar:
    """The whole process, as an async context manager or with `start()` / `stop()`.

    Args:
        config: the validated configuration.
        specs: the scorers to run (from `collector.config.build_scorer_specs`).
        metrics: the metrics registry (a new one by default).
        sinks: score sinks (default: `build_sinks(config, metrics)`).
        receive: which receivers to start (`score` and some tests need none).
        admin: start the `/metrics` port.
    """

    def __init__(self, config: Config, specs: list[ScorerSpec], *,
                 metrics: Metrics | None = None, sinks: list[ScoreSink] | None = None,
                 receive: tuple[Literal["grpc", "http"], ...] = ("grpc", "http"),
                 admin: bool = True) -> None:
        self.config = config
        self.specs = specs
        self.metrics = metrics or Metrics()
        self.sinks = sinks if sinks is not None else build_sinks(config, self.metrics)
        self._receive = receive
        self._admin_enabled = admin
        storage = config.storage
        self.queue: JobQueue
        self.spanlog: SpanLog | MemorySpanLog
        if storage.kind == "memory":
            self.queue = MemoryQueue(max_jobs=storage.max_jobs)
            self.spanlog = open_spanlog(None)
        else:
            root = Path(storage.path)
            root.mkdir(parents=True, exist_ok=True)
            self.queue = SqliteQueue(root / "queue.sqlite3", max_jobs=storage.max_jobs)
            self.spanlog = open_spanlog(root)
        a = config.assembly
        self.assembly = Assembly(quiet_period=a.quiet_period, max_wait=a.max_wait,
                                 max_pending_spans=a.max_pending_spans,
                                 max_traces=a.max_traces, rescore_late=a.rescore_late,
                                 metrics=self.metrics, log_wait=a.log_wait,
                                 max_trace_age=a.max_trace_age)
        self.ingest = Ingest(self.spanlog, self.assembly, self.metrics, capacity=self._capacity)
        # Pass-through (collector.forward._forwarder): the receivers hand each request to the scoring
        # path, then to the forwarder's bounded queue (never waiting on it).
        self.forwarder = (Forwarder.from_config(config.forward, self.metrics)
                          if config.forward.endpoint else None)
        self.sink: SpanSink = (ForwardingSink(self.ingest, self.forwarder)
                               if self.forwarder is not None else self.ingest)
        j = config.judge
        self.budget = TokenBudget(j.daily_token_budget)
        self.provider = _limited(j, self.metrics, self.budget)
        # Each named judge is another service: its own limits, budget and credentials.
        self.judges: dict[str, tuple[LimitedProvider, TokenBudget]] = {}
        for name, named in config.judges.items():
            budget = TokenBudget(named.daily_token_budget)
            self.judges[name] = (_limited(named, self.metrics, budget), budget)
        live = LiveCache()
        slots = j.max_concurrency + sum(n.max_concurrency for n in config.judges.values())
        self.workers = WorkerPool(specs, self.queue, self.sinks, self.metrics,
                                  provider=self.provider, budget=self.budget,
                                  concurrency=max(32, 2 * slots), live=live,
                                  judges=self.judges)
        self.scheduler = Scheduler(specs, self.queue, self.metrics, on_jobs=self.workers.notify,
                                   live=live)
        processes = config.assembly.build_processes
        self.builder = BuildPool(self.scheduler.selections,
                                 processes=default_processes() if processes is None
                                 else processes)
        self.handover = Handover(self.assembly, self.builder, self.scheduler, self.ingest,
                                 self.metrics, remember=a.max_traces)
        self.grpc: GrpcReceiver | None = None
        self.http: HttpReceiver | None = None
        r = config.receivers
        if "grpc" in receive:
            self.grpc = GrpcReceiver(self.sink, self.metrics, endpoint=r.grpc.endpoint,
                                     max_recv_msg_size_mib=r.grpc.max_recv_msg_size_mib,
                                     tls=r.grpc.tls, bearer_token=r.grpc.auth.require_token(),
                                     max_requests_per_second=r.grpc.max_requests_per_second,
                                     max_concurrent_streams=r.grpc.max_concurrent_streams,
                                     max_inflight_requests=r.grpc.max_inflight_requests,
                                     max_inflight_mib=r.grpc.max_inflight_mib)
        if "http" in receive:
            self.http = HttpReceiver(self.sink, self.metrics, endpoint=r.http.endpoint,
                                     max_recv_msg_size_mib=r.http.max_recv_msg_size_mib,
                                     tls=r.http.tls, bearer_token=r.http.auth.require_token(),
                                     max_requests_per_second=r.http.max_requests_per_second,
                                     max_inflight_requests=r.http.max_inflight_requests,
                                     max_inflight_mib=r.http.max_inflight_mib)
        self.admin = AdminServer(self.metrics, self._not_ready,
                                 endpoint=config.exporters.prometheus.endpoint)
        self._decode_task: asyncio.Task[None] | None = None
        self._started = False
        self._stopped = False
        self.ports = Ports(None, None, None)

    # ------------------------------------------------------------------ health

    def _capacity(self) -> Overloaded | None:
        if self.queue.depth() >= self.config.storage.max_jobs:
            return Overloaded("queue_full", retry_after=5.0)
        # The job queue's storage refused a write (disk full, read-only): what is accepted now
        # could not be queued, so refuse retryably (re-probed at most once a second).
        if getattr(self.queue, "storage_error", None):
            return Overloaded("storage", retry_after=5.0)
        limit = self.config.limits.memory_mib
        if limit is not None and _rss_mib() >= limit:
            return Overloaded("memory", retry_after=5.0)
        return None

    def _not_ready(self) -> list[str]:
        problems: list[str] = []
        if not self._started or self._stopped:
            problems.append("not started" if not self._started else "shutting down")
        if self._receive and self.ports.grpc is None and self.ports.http is None:
            problems.append("receivers not listening")
        if not self.queue.writable():
            problems.append("queue not writable")
        storage_error = getattr(self.spanlog, "storage_error", None)
        # The span log notices space coming back only at its next write; a not-ready sidecar
        # may get none, so look at the disk itself before saying so.
        if storage_error and not _dir_writable(Path(self.config.storage.path)):
            problems.append(f"span log: {storage_error}")
        return problems

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> Ports:
        """Start every component (downstream first); returns the bound ports."""
        self.queue.recover()
        self.metrics.queue_depth.set(self.queue.depth())
        self.builder.start()
        # The judge's SDK (~70 MiB, ~1 s) is imported when the first judge job is picked up,
        # in a worker thread (collector.scoring SdkWarmup): an idle sidecar never pays for it.
        await self.workers.start()
        if self.forwarder is not None:
            await self.forwarder.start()
        self.handover.start()
        self._decode_task = asyncio.create_task(self.ingest.run(), name="scorecar-decode")
        metrics_port = await self.admin.start() if self._admin_enabled else None
        replayed = self.ingest.replay()
        if replayed:
            log.info("replayed the span log", extra={"requests": replayed})
            self.handover.wake()
        grpc_port = await self.grpc.start() if self.grpc else None
        http_port = await self.http.start() if self.http else None
        self.ports = Ports(grpc_port, http_port, metrics_port)
        self._started = True
        # CPython's GC makes large trace buffers super-linear: what exists now is permanent,
        # and collections run less often (young: every 50,000 allocations, not 700; full:
        # rarely). Measured with bench/ingest.py: Export p99 at half load 40 -> 8 ms, and
        # ~15% more spans/s; peak RSS unchanged (buffers hold few reference cycles).
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 20, 1_000)
        return self.ports

    async def stop(self, grace: float = 10.0) -> None:
        """Stop receiving, schedule nothing new, let in-flight jobs finish within `grace`, then
        flush the sinks. Idempotent; safe without `start()`. Traces still buffered stay in the
        span log and are replayed by the next start."""
        if self._stopped:
            return
        self._stopped = True
        if self.grpc is not None:
            await self.grpc.stop(grace=min(grace, 5.0))
        if self.http is not None:
            await self.http.stop()
        if self._decode_task is not None:
            self._decode_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._decode_task
        await self.handover.stop()
        if self.forwarder is not None:  # flushed within the same grace as in-flight jobs
            await asyncio.gather(self.workers.stop(grace), self.forwarder.stop(grace))
        else:
            await self.workers.stop(grace)
        for sink in self.sinks:
            try:
                await sink.shutdown()
            except Exception:  # noqa: BLE001 - one sink never stops the others from closing
                log.exception("score sink %s failed to shut down", sink.name)
        await self.admin.stop()
        self.builder.close()
        self.queue.close()
        self.spanlog.close()

    async def __aenter__(self) -> Sidecar:
        await self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    # ------------------------------------------------------------------ the handover

    async def schedule_ready(self, ready: list[ReadyTrace] | None = None) -> int:
        """Turn every ready trace into jobs now; returns the number of runs scheduled (see
        `Handover.schedule_ready`)."""
        return await self.handover.schedule_ready(ready)

    async def drain(self, timeout: float = 60.0) -> bool:
        """Wait until nothing is buffered and the queue is empty (for `demo`, `score` and
        tests). Buffered traces are handed over at once, without waiting for readiness."""
        return await self.handover.drain(timeout)


def _dir_writable(path: Path) -> bool:
    """Whether a small file can be written (and removed) in `path` now."""
    probe = path / ".scorecar-probe"
    try:
        with open(probe, "wb") as f:
            f.write(b"\0" * 4096)
            f.flush()
        probe.unlink()
    except OSError:
        with contextlib.suppress(OSError):
            probe.unlink()
        return False
    return True


def _limited(judge: JudgeConfig, metrics: Metrics, budget: TokenBudget) -> LimitedProvider:
    """The provider a judge's calls go through: its limits around the real providers."""
    return LimitedProvider(
        default_provider(), max_concurrency=judge.max_concurrency,
        requests_per_minute=judge.requests_per_minute,
        tokens_per_minute=judge.tokens_per_minute, metrics=metrics, budget=budget,
        api_key=judge.api_key.get_secret_value() if judge.api_key is not None else None,
        base_url=judge.base_url, provider=judge.provider)


def _rss_mib() -> float:
    """Resident set size of this process in MiB (Linux /proc; 0 where unavailable)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)

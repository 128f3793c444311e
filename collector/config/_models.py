"""The configuration's models (DESIGN §8), one per section, each beside its field types
(`_fields`). Key names are fixed by DESIGN §8 (durations are seconds as numbers); every model
is frozen and forbids unknown keys.

Secrets are not fields: `load_config` reads the judge's API key and the receivers' bearer
tokens (`_secrets`) into private attributes (`config.judge.api_key`, `auth.token`), so they
never appear in a dump, a repr or an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from collector.config._fields import (
    ENV_NAME,
    Count,
    HostPort,
    HttpUrl,
    MaxMessageMib,
    Model,
    NonEmpty,
    OtlpEndpoint,
    Protocol,
    ReadableFile,
    Seconds,
    no_bool,
)
from collector.config._problems import ConfigProblems
from collector.config._secrets import read_bearer_token
from collector.scoring import ScorerSpec
from scorers._provider import split_model
from scorers.sampling import NoSampling, Sampling

__all__ = [
    "AssemblyConfig",
    "Config",
    "ExportersConfig",
    "FilterConfig",
    "ForwardConfig",
    "JsonlExporterConfig",
    "JudgeConfig",
    "LimitsConfig",
    "OtlpExporterConfig",
    "PrometheusExporterConfig",
    "ReceiverAuthConfig",
    "ReceiverConfig",
    "ReceiversConfig",
    "ScorerConfig",
    "StorageConfig",
    "TlsConfig",
]


class TlsConfig(Model):
    """TLS on one receiver (off unless `cert_file` is set).

    Attributes:
        cert_file: the server's PEM certificate (chain); None: plaintext.
        key_file: its PEM private key (required with `cert_file`).
        client_ca_file: PEM CA bundle; when set, every client must present a certificate
            signed by it (mTLS), and connections without one are refused.
    """

    cert_file: ReadableFile | None = None
    key_file: ReadableFile | None = None
    client_ca_file: ReadableFile | None = None

    @property
    def enabled(self) -> bool:
        """Whether the receiver serves TLS."""
        return self.cert_file is not None

    @model_validator(mode="after")
    def _complete_and_loadable(self) -> TlsConfig:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together: set both or neither")
        if self.client_ca_file is not None and self.cert_file is None:
            raise ValueError("client_ca_file (mTLS) needs cert_file and key_file")
        if self.cert_file is not None:
            import ssl  # the files are loaded once here so a bad pair fails before any socket

            try:
                ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
                ctx.load_cert_chain(self.cert_file, self.key_file)
                if self.client_ca_file is not None:
                    ctx.load_verify_locations(cafile=self.client_ca_file)
            except (ssl.SSLError, OSError, ValueError) as exc:
                raise ValueError(f"cannot load the certificate, key or client CA: "
                                 f"{getattr(exc, 'reason', None) or exc}") from None
        return self


class ReceiverAuthConfig(Model):
    """Bearer-token auth on one receiver (off unless one source is set).

    The token is not a field: `load_config` reads it from the variable `bearer_token_env` or
    the file `bearer_token_file` into `token` (a `SecretStr`: never in a dump, repr or error).
    Clients send `Authorization: Bearer <token>` (gRPC metadata `authorization`).

    Attributes:
        bearer_token_env: name of the environment variable holding the token.
        bearer_token_file: a file holding the token (e.g. a mounted Kubernetes secret).
    """

    bearer_token_env: str | None = None
    bearer_token_file: Path | None = None

    _token: SecretStr | None = PrivateAttr(default=None)

    @field_validator("bearer_token_env")
    @classmethod
    def _is_a_variable_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.match(value):
            # never echo the value: people paste the token itself here
            raise ValueError("must be the NAME of an environment variable (letters, digits, _), "
                             "not the token itself")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> ReceiverAuthConfig:
        if self.bearer_token_env is not None and self.bearer_token_file is not None:
            raise ValueError("set bearer_token_env or bearer_token_file, not both")
        return self

    @property
    def enabled(self) -> bool:
        """Whether a token source is configured."""
        return self.bearer_token_env is not None or self.bearer_token_file is not None

    @property
    def token(self) -> SecretStr | None:
        """The token read by `load_config` (None: auth off, or a config built in code)."""
        return self._token

    def require_token(self, env: Mapping[str, str] | None = None) -> SecretStr | None:
        """The token a receiver checks: None when auth is off.

        A config built in code (not by `load_config`) reads its source now, so auth that is
        configured is never silently off.

        Raises:
            ConfigError: a source is set but holds no token.
        """
        if not self.enabled or self._token is not None:
            return self._token
        token, problem = read_bearer_token(self, os.environ if env is None else env, "auth")
        if problem is not None:
            raise ConfigProblems([str(problem)])
        return token


class ReceiverConfig(Model):
    """One OTLP receiver.

    Attributes:
        endpoint: `host:port` to listen on (port 0: a free port).
        max_recv_msg_size_mib: largest request accepted, in MiB; larger ones are refused
            (`RESOURCE_EXHAUSTED` / 413).
        tls: optional TLS / mTLS.
        max_requests_per_second: export requests per second per client address (token bucket,
            bursts up to the same number); past it `RESOURCE_EXHAUSTED` + `RetryInfo` / 429 +
            `Retry-After`, counted `rate_limited`. None: no limit.
        max_concurrent_streams: gRPC only: concurrent calls per client connection (HTTP/2
            `SETTINGS_MAX_CONCURRENT_STREAMS`; a further call waits on the client or is
            refused, retryably, as `UNAVAILABLE`). None: gRPC's default.
        max_inflight_requests: requests handled at once; past it a request is refused at
            once, retryably (`UNAVAILABLE` + `RetryInfo` / 503 + `Retry-After`), counted
            `overloaded`, so the agent backs off instead of waiting.
        max_inflight_mib: the bytes of those requests, in MiB (the same refusal past it).
        auth: optional bearer-token auth.
    """

    endpoint: HostPort
    max_recv_msg_size_mib: MaxMessageMib = 64
    tls: TlsConfig = TlsConfig()
    max_requests_per_second: Annotated[float, BeforeValidator(no_bool),
                                       Field(gt=0, allow_inf_nan=False)] | None = None
    max_concurrent_streams: Count | None = Field(default=None, ge=1)
    max_inflight_requests: Count = Field(default=64, ge=1)
    max_inflight_mib: MaxMessageMib = 64
    auth: ReceiverAuthConfig = ReceiverAuthConfig()

    @property
    def max_recv_msg_size_bytes(self) -> int:
        """`max_recv_msg_size_mib` in bytes."""
        return int(self.max_recv_msg_size_mib * 1024 * 1024)


class ReceiversConfig(Model):
    """The OTLP receivers (DESIGN §6).

    Attributes:
        grpc: OTLP/gRPC (default `0.0.0.0:4317`).
        http: OTLP/HTTP (default `0.0.0.0:4318`).
    """

    grpc: ReceiverConfig = ReceiverConfig(endpoint="0.0.0.0:4317")
    http: ReceiverConfig = ReceiverConfig(endpoint="0.0.0.0:4318")

    @model_validator(mode="before")
    @classmethod
    def _default_endpoints(cls, data: Any) -> Any:
        # `receivers: {grpc: {tls: …}}` (or SCORECAR_RECEIVERS__GRPC__TLS__…) keeps the port.
        if isinstance(data, dict):
            data = dict(data)
            for name, endpoint in (("grpc", "0.0.0.0:4317"), ("http", "0.0.0.0:4318")):
                part = data.get(name)
                if isinstance(part, dict) and "endpoint" not in part:
                    data[name] = {"endpoint": endpoint, **part}
        return data


class AssemblyConfig(Model):
    """Per-trace buffering before runs are built (DESIGN §5).

    Attributes:
        quiet_period: seconds without a new span before a trace is ready.
        max_wait: seconds after a trace's last arrival after which it is handed over as it is
            (a run waiting for a parent its span flags call local waits up to max_trace_age).
        max_trace_age: seconds after a trace's first arrival after which it is handed over
            whatever it waits for (the hard cap; at least max_wait).
        max_pending_spans: spans buffered in all pending traces; past it the oldest are evicted.
        max_traces: traces buffered; past it the oldest are evicted.
        rescore_late: pieces (spans, log records) arriving for a run already handed over
            rebuild it; when the rebuilt run differs, it is scored again (same score ids,
            counted `rescored`). Off: late pieces are counted `late` and dropped.
        build_processes: worker processes that turn ready traces into runs (null: the cores
            beyond two, at most four; 0: a thread of the main process).
        log_wait: seconds past the quiet period that a run whose model calls carry no content
            of their own waits for its log records (OTel GenAI's event mode), so that it is
            scored once, whole; runs with content never wait for it.
    """

    quiet_period: Seconds = Field(default=1.0, ge=0)
    max_wait: Seconds = Field(default=30.0, gt=0)
    max_trace_age: Seconds = Field(default=600.0, gt=0)
    max_pending_spans: Count = Field(default=200_000, ge=1)
    max_traces: Count = Field(default=20_000, ge=1)
    rescore_late: bool = True
    build_processes: int | None = Field(default=None, ge=0, le=64)
    log_wait: Seconds = Field(default=5.0, ge=0)

    @field_validator("max_wait")
    @classmethod
    def _wait_covers_quiet(cls, value: float, info: ValidationInfo) -> float:
        return _at_least(value, info, "quiet_period")

    @field_validator("max_trace_age")
    @classmethod
    def _age_covers_wait(cls, value: float, info: ValidationInfo) -> float:
        return _at_least(value, info, "max_wait")


def _at_least(value: float, info: ValidationInfo, other: str) -> float:
    """`value`, unless it is below the assembly field `other` (validated before it)."""
    bound = info.data.get(other)
    if bound is not None and value < bound:
        raise ValueError(f"must be at least assembly.{other} ({bound:g})")
    return value


class StorageConfig(Model):
    """The durable queue and the write-ahead span log (DESIGN §5).

    Attributes:
        kind: `sqlite` (durable, under `path`) or `memory` (tests; keeps nothing).
        path: directory for the queue database and the span log.
        max_jobs: queued jobs past which new ones are refused and counted.
    """

    kind: Literal["sqlite", "memory"] = "sqlite"
    path: Path = Path("./scorecar-data")
    max_jobs: Count = Field(default=100_000, ge=1)


class LimitsConfig(Model):
    """Process limits.

    Attributes:
        memory_mib: resident memory past which receivers refuse (retryable); None: no limit.
    """

    memory_mib: Count | None = Field(default=None, ge=1)


DEFAULT_JUDGE = "default"
"""The name of the `judge:` block among the named judges."""


class JudgeConfig(Model):
    """One judge: the model and endpoint scorers default to (DESIGN §4: every `Judge` field a
    scorer leaves unset comes from here), and its own limits. `judge:` is the judge named
    `default`; `judges:` holds more, by name.

    The API key is not a field: `load_config` reads it from the environment variable
    `api_key_env` (default: the provider's own), or from the file `api_key_file` when that is
    set, into `api_key`.

    Attributes:
        model: `provider/model` (`anthropic/claude-haiku-4-5`, `openai/gpt-4.1-mini`); a bare
            name is Anthropic's; None: Anthropic's default current inexpensive model.
        api_key_env: name of the environment variable holding the API key; None: the
            provider's own (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, Azure:
            `AZURE_OPENAI_API_KEY`).
        api_key_file: a file holding the API key (e.g. a mounted Kubernetes secret); when set
            it is used instead of `api_key_env`.
        base_url: the API's base URL; None: the SDK's default. Any OpenAI-compatible server
            (vLLM, Ollama, LiteLLM proxy); Azure OpenAI: the resource endpoint.
        api_version: Azure OpenAI's `api-version` (the model is then the deployment name).
        headers: extra HTTP headers sent with every judge call (masked in `check-config`).
        max_concurrency: judge calls in flight at once, over all workers.
        requests_per_minute: judge requests per minute (token bucket); None: no limit.
        tokens_per_minute: judge tokens per minute (token bucket); None: no limit.
        daily_token_budget: tokens per day; over it, judge jobs are skipped and counted.
        timeout: seconds per judge HTTP call.
        max_retries: retries of a failed judge call (exponential delay from 1 s); 0: none.
        max_retry_after: cap, in seconds, on the provider's Retry-After.
        redact_pii: pass every judge call's input through the `PiiRedactor`.
    """

    model: NonEmpty | None = None
    api_key_env: str | None = None
    api_key_file: Path | None = None
    base_url: HttpUrl | None = None
    api_version: NonEmpty | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    max_concurrency: Count = Field(default=8, ge=1)
    requests_per_minute: Count | None = Field(default=600, ge=1)
    tokens_per_minute: Count | None = Field(default=None, ge=1)
    daily_token_budget: Count | None = Field(default=None, ge=1)
    timeout: Seconds = Field(default=60.0, gt=0)
    max_retries: Count = Field(default=3, ge=0, le=100)
    max_retry_after: Seconds = Field(default=30.0, ge=0)
    redact_pii: bool = False

    _api_key: SecretStr | None = PrivateAttr(default=None)

    @field_validator("model")
    @classmethod
    def _router_form(cls, value: str | None) -> str | None:
        if value is not None:
            split_model(value)
        return value

    @field_validator("api_key_env")
    @classmethod
    def _is_a_variable_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.match(value):
            # never echo the value: people paste the key itself here
            raise ValueError("must be the NAME of an environment variable (letters, digits, _), "
                             "e.g. ANTHROPIC_API_KEY, not the key itself")
        return value

    @property
    def api_key(self) -> SecretStr | None:
        """The key read by `load_config` (None: not found, or a config built in code)."""
        return self._api_key

    @property
    def provider(self) -> str:
        """`anthropic` or `openai` (from `model`)."""
        return split_model(self.model)[0] if self.model is not None else "anthropic"

    @property
    def key_variable(self) -> str:
        """The environment variable the key is read from (`api_key_env`, else the
        provider's own)."""
        if self.api_key_env is not None:
            return self.api_key_env
        if self.provider == "openai":
            return "AZURE_OPENAI_API_KEY" if self.api_version is not None else "OPENAI_API_KEY"
        return "ANTHROPIC_API_KEY"

    @property
    def key_required(self) -> bool:
        """False for an OpenAI-compatible server at a `base_url` (vLLM, Ollama: usually no
        key); True otherwise."""
        return not (self.provider == "openai" and self.base_url is not None
                    and self.api_version is None)


class FilterConfig(Model):
    """Which runs a scorer sees; empty fields match everything.

    Attributes:
        agents: agent names or ids.
        conventions: instrumentation conventions (`genai`, `mastra`, `openinference`, …).
        attributes: key → value that must equal the run's resource attribute or request
            context entry of that key.
    """

    agents: list[NonEmpty] = Field(default_factory=list)
    conventions: list[NonEmpty] = Field(default_factory=list)
    attributes: dict[str, Any] = Field(default_factory=dict)

    @field_validator("attributes")
    @classmethod
    def _scalar_values(cls, value: dict[str, Any]) -> dict[str, Any]:
        bad = [k for k, v in value.items() if v is None or isinstance(v, dict)]
        if bad:
            raise ValueError(f"values must be strings, numbers, booleans or lists "
                             f"(not for {', '.join(map(repr, bad))})")
        return value


class ScorerConfig(Model):
    """One entry of `scorers:`.

    Attributes:
        scorer: `builtin:<id>` or an import path `module:attribute` naming a `Scorer` or a
            factory returning one.
        judge: a name from `judges:` (or `default`); None: the `judge:` block.
        sampling: `{type: none}` (default) or `{type: ratio, rate: r}`.
        filter: which runs it sees.
        options: keyword arguments of the built-in's or the factory's call.
        timeout: seconds one run may take, judge calls included.
    """

    scorer: NonEmpty
    judge: NonEmpty | None = None
    sampling: Sampling = NoSampling()
    filter: FilterConfig = FilterConfig()
    options: dict[str, Any] = Field(default_factory=dict)
    timeout: Seconds = Field(default=30.0, gt=0)


class OtlpExporterConfig(Model):
    """Scores out over OTLP (DESIGN §7). The standard `OTEL_EXPORTER_OTLP_*` variables apply.

    Attributes:
        endpoint: `host:port` or URL of the OTLP backend; None: this exporter is off.
        protocol: `grpc` or `http/protobuf` (`http` is read as `http/protobuf`).
        headers: sent with every export (secret: masked in `check-config`).
        insecure: gRPC without TLS.
        judge_content: also export the judge's prompts and replies on the judge-call spans.
        timeout: seconds per export call.
    """

    endpoint: OtlpEndpoint | None = None
    protocol: Protocol = "grpc"
    headers: dict[str, str] = Field(default_factory=dict)
    insecure: bool = True
    judge_content: bool = False
    timeout: Seconds = Field(default=10.0, gt=0)


class PrometheusExporterConfig(Model):
    """`/metrics`, `/healthz` and `/readyz`.

    Attributes:
        endpoint: `host:port` to listen on.
    """

    endpoint: HostPort = "0.0.0.0:9464"


class JsonlExporterConfig(Model):
    """One ScoreRecord per line.

    Attributes:
        path: the file; None: this exporter is off.
    """

    path: Path | None = None


class ExportersConfig(Model):
    """Where scores go.

    Attributes:
        otlp: OTLP spans, span events and log records.
        prometheus: metrics.
        jsonl: JSON lines.
    """

    otlp: OtlpExporterConfig = OtlpExporterConfig()
    prometheus: PrometheusExporterConfig = PrometheusExporterConfig()
    jsonl: JsonlExporterConfig = JsonlExporterConfig()


class ForwardConfig(Model):
    """Pass-through of every received span and log record (DESIGN §6; `collector.forward._forwarder`).

    The standard `OTEL_EXPORTER_OTLP_*` variables do not apply here: they configure where
    scores go (`exporters.otlp`). The forward target is only ever `endpoint`.

    Attributes:
        endpoint: `host:port` or URL of the next collector; None: no forwarding. Over HTTP the
            base URL: `/v1/traces` and `/v1/logs` are appended.
        protocol: `grpc` or `http/protobuf`.
        headers: sent with every forwarded request (secret: masked in `check-config`).
        insecure: plaintext when `endpoint` has no scheme (`https://` always means TLS).
        timeout: seconds per attempt.
        ca_file: PEM CA bundle that verifies the next collector (None: the system's).
        cert_file: client certificate for mTLS (with `key_file`).
        key_file: its private key.
        queue_size: requests held at most (queued and in flight); past it new requests are
            dropped and counted (`dropped_full`).
        queue_max_mib: MiB of request bodies held at most (same drop).
        consumers: requests in flight at once.
        initial_backoff: first retry wait in seconds (doubling, jittered).
        max_backoff: longest retry wait in seconds.
    """

    endpoint: OtlpEndpoint | None = None
    protocol: Protocol = "grpc"
    headers: dict[str, str] = Field(default_factory=dict)
    insecure: bool = True
    timeout: Seconds = Field(default=10.0, gt=0)
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = Field(default=None, validate_default=True)
    queue_size: Count = Field(default=1000, ge=1)
    queue_max_mib: Annotated[float, BeforeValidator(no_bool),
                             Field(gt=0, allow_inf_nan=False)] = 64.0
    consumers: Count = Field(default=4, ge=1, le=256)
    initial_backoff: Seconds = Field(default=1.0, gt=0)
    max_backoff: Seconds = Field(default=30.0, gt=0)

    @field_validator("ca_file", "cert_file", "key_file")
    @classmethod
    def _file_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"file not found: {value}")
        return value

    @field_validator("key_file")
    @classmethod
    def _pair(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if (value is None) != (info.data.get("cert_file") is None) and \
                "cert_file" in info.data:
            raise ValueError("cert_file and key_file go together: set both or neither")
        return value

    @field_validator("max_backoff")
    @classmethod
    def _not_below_initial(cls, value: float, info: ValidationInfo) -> float:
        initial = info.data.get("initial_backoff")
        if isinstance(initial, float) and value < initial:
            raise ValueError(f"must be at least initial_backoff ({initial:g})")
        return value


class Config(Model):
    """The whole configuration (DESIGN §8). Every field has a default.

    Attributes:
        receivers: OTLP receivers.
        assembly: trace buffering.
        storage: queue and span log.
        limits: process limits.
        judge: the judge and its limits (the judge named `default`).
        judges: more judges by name, each with every key of `judge`.
        scorers: the configured scorers (none by default).
        exporters: where scores go.
        forward: optional pass-through of received telemetry.
    """

    receivers: ReceiversConfig = ReceiversConfig()
    assembly: AssemblyConfig = AssemblyConfig()
    storage: StorageConfig = StorageConfig()
    limits: LimitsConfig = LimitsConfig()
    judge: JudgeConfig = JudgeConfig()
    judges: dict[str, JudgeConfig] = Field(default_factory=dict)
    scorers: list[ScorerConfig] = Field(default_factory=list)

    def judge_named(self, name: str | None) -> JudgeConfig | None:
        """The judge `name` (None or `default`: the `judge:` block), or None when unknown."""
        if name is None or name == DEFAULT_JUDGE:
            return self.judge
        return self.judges.get(name)
    exporters: ExportersConfig = ExportersConfig()
    forward: ForwardConfig = ForwardConfig()

    # (scorers list, judge config, specs) resolved by load_config; reused while both are the same
    _resolved: tuple[object, object, tuple[ScorerSpec, ...]] | None = PrivateAttr(default=None)

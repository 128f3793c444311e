"""The sidecar's configuration (DESIGN §8): one YAML file, `SCORECAR_*` env overrides, every
problem reported at once before any socket opens.

```python
config = load_config(Path("scorecar.yaml"))      # raises ConfigError listing every problem
specs = build_scorer_specs(config)               # the scorers, ready for the scheduler
```

Key names are fixed by DESIGN §8 (durations are seconds as numbers). Every model forbids
unknown keys. Env overrides: `SCORECAR_JUDGE__MODEL=x` sets `judge.model`; segments are joined
with `__`, lower-cased, and a number selects a list entry (`SCORECAR_SCORERS__0__TIMEOUT=5`).
A variable whose name has no `__` is an override only when it names a top-level section
(`SCORECAR_SCORERS='[{scorer: "builtin:tone"}]'`); other `SCORECAR_*` names are left alone.
Values are read as YAML scalars (`0.2`, `true`, `null`); a value starting with `[` or `{` is
read as a YAML flow collection.

The judge's API key never comes from the configuration: it is read from the environment
variable named by `judge.api_key_env` (default `ANTHROPIC_API_KEY`) or, when set, from the file
`judge.api_key_file`, and is held as a `SecretStr` on `config.judge.api_key` (not a field: it
never appears in a dump, a repr or an error).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin
from urllib.parse import urlsplit, urlunsplit

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from collector.scoring import ScorerSpec
from scorers.errors import ConfigError
from scorers.sampling import NoSampling, Sampling

__all__ = [
    "API_KEY_REFUSED",
    "AssemblyConfig",
    "Config",
    "ConfigProblems",
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
    "build_judge",
    "build_scorer_specs",
    "config_to_masked_dict",
    "load_config",
    "render_effective_config",
]

_M = TypeVar("_M", bound=BaseModel)
ENV_PREFIX = "SCORECAR_"
MASK = "***"
API_KEY_REFUSED = ("the judge's API key is never read from the configuration: put it in the "
                   "environment variable named by judge.api_key_env (default ANTHROPIC_API_KEY) "
                   "or in a file named by judge.api_key_file")


# --------------------------------------------------------------------------- field types


def _no_bool(value: Any) -> Any:
    # YAML `true` is a mistake for a number, not 1.
    if isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")
    return value


def _host_port(value: str) -> str:
    host, sep, port = value.rpartition(":")
    if not sep or not host:
        raise ValueError("must be host:port, e.g. 0.0.0.0:4317 (port 0: any free port)")
    if host.startswith("[") != host.endswith("]"):
        raise ValueError("an IPv6 host must be in brackets, e.g. [::1]:4317")
    if not port.isdigit() or int(port) > 65535:
        raise ValueError("the port must be a number from 0 to 65535")
    return value


def _otlp_endpoint(value: str) -> str:
    if "://" not in value:
        return _host_port(value)
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be host:port or an http:// or https:// URL")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError("the port must be a number from 0 to 65535") from None
    return value


def _http_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// URL")
    return value


def _protocol(value: Any) -> Any:
    return "http/protobuf" if value == "http" else value


Seconds = Annotated[float, BeforeValidator(_no_bool), Field(allow_inf_nan=False)]
Count = Annotated[int, BeforeValidator(_no_bool)]
HostPort = Annotated[str, AfterValidator(_host_port)]
OtlpEndpoint = Annotated[str, AfterValidator(_otlp_endpoint)]
HttpUrl = Annotated[str, AfterValidator(_http_url)]
Protocol = Annotated[Literal["grpc", "http/protobuf"], BeforeValidator(_protocol)]
NonEmpty = Annotated[str, Field(min_length=1)]
MaxMessageMib = Annotated[float, BeforeValidator(_no_bool),
                          Field(gt=0, le=1023, allow_inf_nan=False)]
# ≤ 1023 MiB: gRPC's message limit is a signed 32-bit byte count, and the transport limit is
# set to twice the application's (DESIGN §6).


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --------------------------------------------------------------------------- models


def _readable_file(value: Path) -> Path:
    if not value.is_file():
        raise ValueError(f"file not found: {value}")
    try:
        with value.open("rb"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot read {value}: {exc.strerror or exc}") from None
    return value


ReadableFile = Annotated[Path, AfterValidator(_readable_file)]


class TlsConfig(_Model):
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


class ReceiverAuthConfig(_Model):
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
        if value is not None and not _ENV_NAME.match(value):
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
        token, problem = _read_bearer_token(self, os.environ if env is None else env, "auth")
        if problem is not None:
            raise ConfigProblems([str(problem)])
        return token


class ReceiverConfig(_Model):
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
        auth: optional bearer-token auth.
    """

    endpoint: HostPort
    max_recv_msg_size_mib: MaxMessageMib = 64
    tls: TlsConfig = TlsConfig()
    max_requests_per_second: Annotated[float, BeforeValidator(_no_bool),
                                       Field(gt=0, allow_inf_nan=False)] | None = None
    max_concurrent_streams: Count | None = Field(default=None, ge=1)
    auth: ReceiverAuthConfig = ReceiverAuthConfig()

    @property
    def max_recv_msg_size_bytes(self) -> int:
        """`max_recv_msg_size_mib` in bytes."""
        return int(self.max_recv_msg_size_mib * 1024 * 1024)


class ReceiversConfig(_Model):
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


class AssemblyConfig(_Model):
    """Per-trace buffering before runs are built (DESIGN §5).

    Attributes:
        quiet_period: seconds without a new span before a trace is ready.
        max_wait: seconds after a trace's first span after which it is ready regardless.
        max_pending_spans: spans buffered in all pending traces; past it the oldest are evicted.
        max_traces: traces buffered; past it the oldest are evicted.
        rescore_late: a span arriving after its trace was scored re-scores it (same score ids).
        build_processes: worker processes that turn ready traces into runs (null: the cores
            beyond two, at most four; 0: a thread of the main process).
        log_wait: seconds past the quiet period that a run whose model calls carry no content
            of their own waits for its log records (OTel GenAI's event mode), so that it is
            scored once, whole; runs with content never wait for it.
    """

    quiet_period: Seconds = Field(default=1.0, ge=0)
    max_wait: Seconds = Field(default=30.0, gt=0)
    max_pending_spans: Count = Field(default=200_000, ge=1)
    max_traces: Count = Field(default=20_000, ge=1)
    rescore_late: bool = False
    build_processes: int | None = Field(default=None, ge=0, le=64)
    log_wait: Seconds = Field(default=5.0, ge=0)

    @field_validator("max_wait")
    @classmethod
    def _wait_covers_quiet(cls, value: float, info: ValidationInfo) -> float:
        quiet = info.data.get("quiet_period")
        if quiet is not None and value < quiet:
            raise ValueError(f"must be at least assembly.quiet_period ({quiet:g})")
        return value


class StorageConfig(_Model):
    """The durable queue and the write-ahead span log (DESIGN §5).

    Attributes:
        kind: `sqlite` (durable, under `path`) or `memory` (tests; keeps nothing).
        path: directory for the queue database and the span log.
        max_jobs: queued jobs past which new ones are refused and counted.
    """

    kind: Literal["sqlite", "memory"] = "sqlite"
    path: Path = Path("./scorecar-data")
    max_jobs: Count = Field(default=100_000, ge=1)


class LimitsConfig(_Model):
    """Process limits.

    Attributes:
        memory_mib: resident memory past which receivers refuse (retryable); None: no limit.
    """

    memory_mib: Count | None = Field(default=None, ge=1)



class JudgeConfig(_Model):
    """The LLM judge the built-in judge scorers use, and the sidecar's judge limits.

    The API key is not a field: `load_config` reads it from the environment variable
    `api_key_env`, or from the file `api_key_file` when that is set, into `api_key`.

    Attributes:
        model: Anthropic model id; None: the default current inexpensive model.
        api_key_env: name of the environment variable holding the API key.
        api_key_file: a file holding the API key (e.g. a mounted Kubernetes secret); when set
            it is used instead of `api_key_env`.
        base_url: the API's base URL; None: the SDK's default (`ANTHROPIC_BASE_URL`).
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
    api_key_env: str = "ANTHROPIC_API_KEY"
    api_key_file: Path | None = None
    base_url: HttpUrl | None = None
    max_concurrency: Count = Field(default=8, ge=1)
    requests_per_minute: Count | None = Field(default=600, ge=1)
    tokens_per_minute: Count | None = Field(default=None, ge=1)
    daily_token_budget: Count | None = Field(default=None, ge=1)
    timeout: Seconds = Field(default=60.0, gt=0)
    max_retries: Count = Field(default=3, ge=0, le=100)
    max_retry_after: Seconds = Field(default=30.0, ge=0)
    redact_pii: bool = False

    _api_key: SecretStr | None = PrivateAttr(default=None)

    @field_validator("api_key_env")
    @classmethod
    def _is_a_variable_name(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            # never echo the value: people paste the key itself here
            raise ValueError("must be the NAME of an environment variable (letters, digits, _), "
                             "e.g. ANTHROPIC_API_KEY, not the key itself")
        return value

    @property
    def api_key(self) -> SecretStr | None:
        """The key read by `load_config` (None: not found, or a config built in code)."""
        return self._api_key


class FilterConfig(_Model):
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


class ScorerConfig(_Model):
    """One entry of `scorers:`.

    Attributes:
        scorer: `builtin:<id>` or an import path `module:attribute` naming a `Scorer` or a
            factory returning one.
        sampling: `{type: none}` (default) or `{type: ratio, rate: r}`.
        filter: which runs it sees.
        options: keyword arguments of the built-in's or the factory's call.
        timeout: seconds one run may take, judge calls included.
    """

    scorer: NonEmpty
    sampling: Sampling = NoSampling()
    filter: FilterConfig = FilterConfig()
    options: dict[str, Any] = Field(default_factory=dict)
    timeout: Seconds = Field(default=30.0, gt=0)


class OtlpExporterConfig(_Model):
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


class PrometheusExporterConfig(_Model):
    """`/metrics`, `/healthz` and `/readyz`.

    Attributes:
        endpoint: `host:port` to listen on.
    """

    endpoint: HostPort = "0.0.0.0:9464"


class JsonlExporterConfig(_Model):
    """One ScoreRecord per line.

    Attributes:
        path: the file; None: this exporter is off.
    """

    path: Path | None = None


class ExportersConfig(_Model):
    """Where scores go.

    Attributes:
        otlp: OTLP spans, span events and log records.
        prometheus: metrics.
        jsonl: JSON lines.
    """

    otlp: OtlpExporterConfig = OtlpExporterConfig()
    prometheus: PrometheusExporterConfig = PrometheusExporterConfig()
    jsonl: JsonlExporterConfig = JsonlExporterConfig()


class ForwardConfig(_Model):
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
    queue_max_mib: Annotated[float, BeforeValidator(_no_bool),
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


class Config(_Model):
    """The whole configuration (DESIGN §8). Every field has a default.

    Attributes:
        receivers: OTLP receivers.
        assembly: trace buffering.
        storage: queue and span log.
        limits: process limits.
        judge: the judge and its limits.
        scorers: the configured scorers (none by default).
        exporters: where scores go.
        forward: optional pass-through of received telemetry.
    """

    receivers: ReceiversConfig = ReceiversConfig()
    assembly: AssemblyConfig = AssemblyConfig()
    storage: StorageConfig = StorageConfig()
    limits: LimitsConfig = LimitsConfig()
    judge: JudgeConfig = JudgeConfig()
    scorers: list[ScorerConfig] = Field(default_factory=list)
    exporters: ExportersConfig = ExportersConfig()
    forward: ForwardConfig = ForwardConfig()

    # (scorers list, judge config, specs) resolved by load_config; reused while both are the same
    _resolved: tuple[object, object, tuple[ScorerSpec, ...]] | None = PrivateAttr(default=None)


_SECTIONS = frozenset(Config.model_fields)


# --------------------------------------------------------------------------- problems


@dataclass(frozen=True)
class Problem:
    """One configuration problem: the dotted key path (`scorers[1].scorer`) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ConfigProblems(ConfigError):
    """A `ConfigError` carrying its problems one by one.

    Attributes:
        problems: each problem as `"path: message"`, in the order of the message.
    """

    def __init__(self, problems: Sequence[str], source: str | None = None) -> None:
        where = f" ({source})" if source else ""
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        super().__init__(f"invalid configuration{where}: {count}\n"
                         + "\n".join(f"  {p}" for p in problems))
        self.problems = list(problems)


def _path(loc: Iterable[str | int]) -> str:
    out = ""
    for seg in loc:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out


def _clean_loc(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    # A discriminated union (sampling) puts its tag in the location: drop it.
    out: list[str | int] = []
    for seg in loc:
        if out and out[-1] == "sampling" and seg in ("none", "ratio"):
            continue
        out.append(seg)
    return tuple(out)


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The model class at `loc` inside `Config`, when it is one model (for key suggestions)."""
    annotation: Any = Config
    for seg in loc:
        annotation = _unwrap(annotation)
        if isinstance(seg, int):
            if get_origin(annotation) is not list:
                return None
            annotation = get_args(annotation)[0]
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            field = annotation.model_fields.get(seg)
            if field is None:
                return None
            annotation = field.annotation
        else:
            return None
    annotation = _unwrap(annotation)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) \
        else None


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin is Union or type(annotation).__name__ == "UnionType":
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _validation_problems(exc: ValidationError, base: tuple[str | int, ...] = ()) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = _clean_loc(base + tuple(err["loc"]))
        kind = err["type"]
        message = err["msg"]
        if kind == "extra_forbidden":
            model = _model_at(loc[:-1])
            message = "unknown key" + (f" (valid keys: {', '.join(model.model_fields)})"
                                       if model is not None else "")
        elif kind == "missing":
            message = "required key is missing"
        elif kind in ("value_error", "assertion_error"):
            message = re.sub(r"^(Value|Assertion) error, ", "", message)
        problems.append(Problem(_path(loc), message))
    return problems


# --------------------------------------------------------------------------- YAML


def _read_yaml(path: Path) -> tuple[Any, dict[str, int], list[Problem]]:
    """The parsed document, its key paths → line numbers, and the problems found reading it."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        return None, {}, [Problem("", f"cannot read {path}: {exc.strerror or exc}")]
    except UnicodeDecodeError as exc:
        return None, {}, [Problem("", f"{path} is not UTF-8 text (byte {exc.start})")]
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, {}, [Problem("", _yaml_error(exc))]
    lines: dict[str, int] = {}
    problems: list[Problem] = []
    if node is not None:
        _walk_nodes(node, (), lines, problems)
    if data is not None and not isinstance(data, dict):
        problems.append(Problem("", f"the file must hold a mapping of sections "
                                    f"({', '.join(_SECTIONS)}), not a {type(data).__name__}"))
        data = None
    return data, lines, problems


def _yaml_error(exc: yaml.YAMLError) -> str:
    # Only the problem and its position: YAML's own message quotes the line, which may hold
    # a secret.
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(exc, "problem", None) or type(exc).__name__
    context = getattr(exc, "context", None)
    return f"YAML syntax error at {where}{problem}" + (f" ({context})" if context else "")


def _walk_nodes(node: Any, loc: tuple[str | int, ...], lines: dict[str, int],
                problems: list[Problem]) -> None:
    lines.setdefault(_path(loc), node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                problems.append(Problem(_path(loc + (key,)),
                                        f"duplicate key (line {line}; first at line {seen[key]})"))
                continue
            seen[key] = line
            lines[_path(loc + (key,))] = line
            _walk_nodes(value_node, loc + (key,), lines, problems)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk_nodes(item, loc + (i,), lines, problems)


# --------------------------------------------------------------------------- env overrides


def _env_value(raw: str) -> Any:
    """An env value read as a YAML scalar (`0.2`, `true`, `null`) or a flow collection."""
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    if isinstance(value, (dict, list)) and raw.lstrip()[:1] not in ("[", "{"):
        return raw  # `a: b` is a string here, not a mapping
    return value


def _apply_env(data: dict[str, Any], env: Mapping[str, str],
               origins: dict[str, str]) -> list[Problem]:
    """Merge `SCORECAR_*` overrides into `data` (in place); record each path's variable."""
    problems: list[Problem] = []
    overrides = []
    for name, raw in env.items():
        if not name.upper().startswith(ENV_PREFIX):
            continue
        parts = name[len(ENV_PREFIX):].split("__")
        if len(parts) == 1 and parts[0].lower() not in _SECTIONS:
            continue  # not a config override (another SCORECAR_* setting)
        overrides.append((len(parts), name, parts, raw))
    for _, name, parts, raw in sorted(overrides):  # whole sections first, then their keys
        if any(not p for p in parts):
            problems.append(Problem("", f"{name}: empty key segment in the variable name"))
            continue
        loc: list[str | int] = []
        target: Any = data
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if isinstance(target, list):
                if not part.isdigit() or int(part) >= len(target):
                    problems.append(Problem(
                        _path(loc), f"{name}: no entry {part!r} in this list "
                                    f"({len(target)} entr{'y' if len(target) == 1 else 'ies'})"))
                    break
                key: Any = int(part)
            else:
                key = part.lower()
            loc.append(key)
            if last:
                target[key] = _env_value(raw)
                origins[_path(loc)] = name
                break
            child = target[key] if isinstance(key, int) else target.get(key)
            if not isinstance(child, (dict, list)):
                child = [] if parts[i + 1].isdigit() else {}  # a list index: no such entry yet
                target[key] = child
            target = child
    return problems


# --------------------------------------------------------------------------- the API key


def _read_api_key(judge: JudgeConfig, env: Mapping[str, str]) -> tuple[SecretStr | None,
                                                                        Problem | None]:
    if judge.api_key_file is not None:
        try:
            key = judge.api_key_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable"
            return None, Problem("judge.api_key_file",
                                 f"cannot read the API key file {judge.api_key_file}: {reason}")
        if not key:
            return None, Problem("judge.api_key_file",
                                 f"the API key file {judge.api_key_file} is empty")
        return SecretStr(key), None
    key = env.get(judge.api_key_env, "").strip()
    return (SecretStr(key) if key else None), None


def _read_bearer_token(auth: ReceiverAuthConfig, env: Mapping[str, str], where: str
                       ) -> tuple[SecretStr | None, Problem | None]:
    """The receivers' bearer token from its file or variable (never echoed in a problem)."""
    if auth.bearer_token_file is not None:
        try:
            token = auth.bearer_token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not readable"
            return None, Problem(f"{where}.bearer_token_file",
                                 f"cannot read the token file {auth.bearer_token_file}: {reason}")
        if not token:
            return None, Problem(f"{where}.bearer_token_file",
                                 f"the token file {auth.bearer_token_file} is empty")
        return SecretStr(token), None
    if auth.bearer_token_env is not None:
        token = env.get(auth.bearer_token_env, "").strip()
        if not token:
            return None, Problem(f"{where}.bearer_token_env",
                                 f"the environment variable {auth.bearer_token_env} is not set "
                                 f"or empty")
        return SecretStr(token), None
    return None, None


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, MASK)
    return text


# --------------------------------------------------------------------------- loading


def load_config(path: Path | None, env: Mapping[str, str] | None = None) -> Config:
    """Read, override, validate and resolve the configuration. Opens no socket.

    Args:
        path: the YAML file; None (or an empty file): every default.
        env: the environment to read `SCORECAR_*` overrides and the judge's API key from
            (default `os.environ`).

    Returns:
        The validated config, its scorers resolved (see `build_scorer_specs`) and
        `config.judge.api_key` set when a key was found.

    Raises:
        ConfigError: a `ConfigProblems` listing every problem at once, each with its key path
            (and line, for keys from the file), e.g. `assembly.quiet_period: …`,
            `scorers[1].scorer: cannot import 'my_mod:x': …`.
    """
    from collector.config import _scorers as loading

    environ: Mapping[str, str] = os.environ if env is None else env
    problems: list[Problem] = []
    lines: dict[str, int] = {}
    data: Any = None
    if path is not None:
        data, lines, problems = _read_yaml(path)
    if data is None:
        data = {}
    origins: dict[str, str] = {}
    problems += _apply_env(data, environ, origins)

    judge_data = data.get("judge")
    if isinstance(judge_data, dict) and "api_key" in judge_data:
        del judge_data["api_key"]
        problems.append(Problem("judge.api_key", API_KEY_REFUSED))

    config: Config | None = None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        problems += _validation_problems(exc)

    # Resolve what validated, even when other parts did not: every problem at once.
    judge = config.judge if config is not None else _validate_part(JudgeConfig, judge_data)
    entries: list[tuple[int, ScorerConfig]] = []
    if config is not None:
        entries = list(enumerate(config.scorers))
    elif isinstance(data.get("scorers"), list):
        for i, item in enumerate(data["scorers"]):
            entry = _validate_part(ScorerConfig, item)
            if entry is not None:
                entries.append((i, entry))

    api_key: SecretStr | None = None
    if judge is not None:
        api_key, key_problem = _read_api_key(judge, environ)
        if key_problem is not None:
            problems.append(key_problem)
    bearers: dict[str, SecretStr] = {}
    receivers = config.receivers if config is not None \
        else _validate_part(ReceiversConfig, data.get("receivers"))
    for name in ("grpc", "http"):
        auth = getattr(receivers, name).auth if receivers is not None else ReceiverAuthConfig()
        bearer, bearer_problem = _read_bearer_token(auth, environ, f"receivers.{name}.auth")
        if bearer_problem is not None:
            problems.append(bearer_problem)
        if bearer is not None:
            bearers[name] = bearer
    resolved = loading.resolve_scorers(entries, judge or JudgeConfig(), api_key,
                                       judge_ok=judge is not None)
    problems += [Problem(p.path, p.message) for p in resolved.problems]
    if resolved.needs_key and api_key is None and judge is not None \
            and judge.api_key_file is None:
        problems.append(Problem("judge", (
            f"no API key for the judge scorers {', '.join(resolved.needs_key)}: set the "
            f"environment variable {judge.api_key_env} (named by judge.api_key_env) or "
            f"judge.api_key_file")))

    if problems:
        secrets = [k.get_secret_value() for k in (api_key, *bearers.values()) if k is not None]
        # In file order (problems without a line keep their place after those with one).
        annotated = sorted((_annotate(p, lines, origins) for p in problems),
                           key=lambda a: a[1] if a[1] is not None else 1 << 30)
        text = [_scrub(a[0], secrets) for a in annotated]
        raise ConfigProblems(text, str(path) if path is not None else None)
    assert config is not None  # no problems: it validated
    config.judge._api_key = api_key
    for name, bearer in bearers.items():
        getattr(config.receivers, name).auth._token = bearer
    config._resolved = (config.scorers, config.judge, tuple(resolved.specs))
    return config


def _validate_part(model: type[_M], value: Any) -> _M | None:
    try:
        return model.model_validate(value if value is not None else {})
    except ValidationError:
        return None  # already reported by the whole-config validation


def _annotate(problem: Problem, lines: Mapping[str, int],
              origins: Mapping[str, str]) -> tuple[str, int | None]:
    """The problem's text with where it came from (env variable or line), and its line."""
    path = problem.path
    while path:
        if path in origins:
            return f"{problem} (from {origins[path]})", None
        if path in lines:
            return f"{problem} (line {lines[path]})", lines[path]
        parent = re.sub(r"(\.[^.\[\]]*|\[\d+\])$", "", path)
        path = parent if parent != path else ""
    return str(problem), None


def build_judge(judge: JudgeConfig, api_key: SecretStr | None = None) -> Any:
    """The `scorers.Judge` the `judge:` block describes (what built-in judge scorers get).

    Args:
        judge: the judge block.
        api_key: the key; default `judge.api_key` (set by `load_config`).

    Returns:
        `Judge(model, base_url, timeout, api_key, error_processors=[StreamErrorRetryProcessor(
        max_retries, exponential delay from 1 s, max_retry_after)] (none when max_retries is
        0), max_processor_retries, input_processors=[PiiRedactor()] when redact_pii)`.
    """
    from collector.config import _scorers as loading

    return loading.build_judge(judge, api_key if api_key is not None else judge.api_key)


def build_scorer_specs(config: Config, *, require_key: bool = True) -> list[ScorerSpec]:
    """The configured scorers as `ScorerSpec`s, in config order.

    A config from `load_config` returns the scorers resolved while loading (factories are
    called once). A config built in code is resolved here.

    Args:
        config: the configuration.
        require_key: refuse judge scorers when `config.judge.api_key` is None (turn off when a
            judge provider is injected, e.g. with `scorers.use_judge_provider` in tests).

    Returns:
        One spec per `scorers[]` entry.

    Raises:
        ConfigError: every problem at once, with paths (`scorers[1].scorer: …`).
    """
    from collector.config import _scorers as loading

    cached = config._resolved
    if cached is not None and cached[0] is config.scorers and cached[1] is config.judge:
        return list(cached[2])
    resolved = loading.resolve_scorers(list(enumerate(config.scorers)), config.judge,
                                       config.judge.api_key)
    problems = [str(p) for p in resolved.problems]
    if require_key and resolved.needs_key and config.judge.api_key is None:
        problems.append(f"judge: no API key for the judge scorers "
                        f"{', '.join(resolved.needs_key)}: set the environment variable "
                        f"{config.judge.api_key_env} or judge.api_key_file")
    if problems:
        raise ConfigProblems(problems)
    return resolved.specs


# --------------------------------------------------------------------------- display


_SECRET_OPTION = re.compile(r"key|token|secret|passw|auth|credential", re.IGNORECASE)


def _mask_url(value: Any) -> Any:
    if not isinstance(value, str) or "://" not in value or "@" not in value:
        return value
    parts = urlsplit(value)
    if parts.username is None and parts.password is None:
        return value
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{MASK}@{host}"))


def config_to_masked_dict(config: Config) -> dict[str, Any]:
    """The config as plain data (JSON types), secrets replaced by `***`.

    Masked: the judge's API key (shown as `api_key: "***"` when one was found, else null),
    every header value, user info in URLs, and scorer options whose name looks like a secret
    (`*key*`, `*token*`, `*secret*`, `*password*`, `*auth*`, `*credential*`).
    """
    data = config.model_dump(mode="json")
    judge: dict[str, Any] = {}
    for name, value in data["judge"].items():
        judge[name] = _mask_url(value)
        if name == "api_key_file":
            judge["api_key"] = MASK if config.judge.api_key is not None else None
    data["judge"] = judge
    for section in (data["exporters"]["otlp"], data["forward"]):
        section["headers"] = {k: MASK for k in section["headers"]}
        section["endpoint"] = _mask_url(section["endpoint"])
    for scorer in data["scorers"]:
        scorer["options"] = {k: MASK if _SECRET_OPTION.search(k) else v
                             for k, v in scorer["options"].items()}
    return data



def render_effective_config(config: Config) -> str:
    """What `scorecar check-config` prints: the effective config as YAML, secrets masked,
    then the resolved scorers as YAML comments (the output stays valid YAML).

    Raises:
        ConfigError: the scorers do not resolve (a config built in code).
    """
    specs = build_scorer_specs(config, require_key=False)
    text = yaml.safe_dump(config_to_masked_dict(config), sort_keys=False,
                          default_flow_style=False, allow_unicode=True)
    lines = [f"# resolved scorers: {len(specs)}"]
    for entry, spec in zip(config.scorers, specs):
        kind = "judge" if spec.scorer.has_judge else "code"
        shown = spec.id if spec.id.isprintable() else repr(spec.id)
        lines.append(f"#   - {shown}  ({entry.scorer}, {kind}, timeout {spec.timeout:g}s)")
    secrets = [config.judge.api_key.get_secret_value()] if config.judge.api_key else []
    return _scrub(text + "\n".join(lines) + "\n", secrets)

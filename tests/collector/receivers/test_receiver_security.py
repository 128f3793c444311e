"""Receiver security: TLS / mTLS, bearer-token auth, per-client rate limit, stream limit.

Real certificates (trustme: a throwaway CA issuing a server and a client certificate), real
gRPC and aiohttp servers on 127.0.0.1 port 0, the official OTel exporters as clients.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import grpc
import pytest
import trustme
from google.rpc import error_details_pb2
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk.trace.export import SpanExportResult

from collector._telemetry import Metrics
from collector.config import (
    ReceiverAuthConfig,
    TlsConfig,
    load_config,
    render_effective_config,
)
from collector.intake import BodyKind
from collector.otlp import Decoded
from collector.receivers import GrpcReceiver, HttpReceiver
from scorers.errors import ConfigError
from tests.fakes.metrics import sample
from tests.fakes.sdk_telemetry import make_spans
from tests.fakes.sinks import RecordingSink

TRACES = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
TOKEN = "scorecar-TEST-token-7f3a9c1e55d2"  # recognisable: grepped for in logs and errors
BODY = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[
    Span(trace_id=bytes(range(1, 17)), span_id=bytes(range(1, 9)), name="chat")])])]
).SerializeToString()


@dataclass(frozen=True)
class Certs:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    @property
    def tls(self) -> TlsConfig:
        return TlsConfig(cert_file=self.server_cert, key_file=self.server_key)

    @property
    def mtls(self) -> TlsConfig:
        return TlsConfig(cert_file=self.server_cert, key_file=self.server_key,
                         client_ca_file=self.ca)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    d = tmp_path_factory.mktemp("certs")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("agent@example.com")
    paths = Certs(d / "ca.pem", d / "server.pem", d / "server.key", d / "client.pem",
                  d / "client.key")
    ca.cert_pem.write_to_path(str(paths.ca))
    server.private_key_pem.write_to_path(str(paths.server_key))
    client.private_key_pem.write_to_path(str(paths.client_key))
    for blob in server.cert_chain_pems:
        blob.write_to_path(str(paths.server_cert), append=True)
    for blob in client.cert_chain_pems:
        blob.write_to_path(str(paths.client_cert), append=True)
    return paths


def refused(metrics: Metrics, reason: str) -> float:
    return sample(metrics, "scorecar_spans_refused_total", reason=reason)


@pytest.fixture
def no_token_in_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Every log line of the test, at every level, is free of the token."""
    with caplog.at_level(logging.DEBUG):
        yield
    lines = [r.getMessage() for when in ("setup", "call") for r in caplog.get_records(when)]
    assert lines, "nothing was logged: the check would prove nothing"
    assert not [line for line in lines if TOKEN in line or "wrong-token" in line]


# --------------------------------------------------------------------------- gRPC


@dataclass
class GrpcRx:
    receiver: GrpcReceiver
    sink: RecordingSink
    metrics: Metrics
    port: int

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"


@pytest.fixture
async def grpc_rx(request: pytest.FixtureRequest) -> AsyncIterator[GrpcRx]:
    kwargs = getattr(request, "param", {})
    sink = kwargs.pop("sink", None) or RecordingSink()
    metrics = Metrics()
    receiver = GrpcReceiver(sink, metrics, endpoint="127.0.0.1:0", **kwargs)
    port = await receiver.start()
    try:
        yield GrpcRx(receiver, sink, metrics, port)
    finally:
        await receiver.stop(grace=0)


def grpc_with(**kwargs: object) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("grpc_rx", [kwargs], indirect=True)


async def raw_call(channel: grpc.aio.Channel, metadata: tuple[tuple[str, str], ...] = ()
                   ) -> bytes:
    rpc = channel.unary_unary(TRACES, request_serializer=None, response_deserializer=None)
    return await rpc(BODY, timeout=5, metadata=metadata)  # type: ignore[no-any-return]


async def export_grpc(target: str, **kwargs: object) -> SpanExportResult:
    exporter = GrpcSpanExporter(endpoint=target, timeout=5, **kwargs)  # type: ignore[arg-type]
    try:
        return await asyncio.to_thread(exporter.export, make_spans(2))
    finally:
        exporter.shutdown()


async def test_grpc_tls_official_exporter_with_the_ca_succeeds(certs: Certs) -> None:
    sink, metrics = RecordingSink(), Metrics()
    receiver = GrpcReceiver(sink, metrics, endpoint="127.0.0.1:0", tls=certs.tls)
    port = await receiver.start()
    try:
        creds = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
        result = await export_grpc(f"127.0.0.1:{port}", credentials=creds, insecure=False)
        assert result is SpanExportResult.SUCCESS
        assert len(sink.spans) == 2
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await raw_call(channel)
        assert err.value.code() is grpc.StatusCode.UNAVAILABLE
        assert len(sink.spans) == 2  # the plaintext request never reached the sink
    finally:
        await receiver.stop(grace=0)


async def test_grpc_mtls_refuses_a_client_without_a_certificate(certs: Certs) -> None:
    sink, metrics = RecordingSink(), Metrics()
    receiver = GrpcReceiver(sink, metrics, endpoint="127.0.0.1:0", tls=certs.mtls)
    port = await receiver.start()
    target = f"127.0.0.1:{port}"
    try:
        ca = certs.ca.read_bytes()
        async with grpc.aio.secure_channel(
                target, grpc.ssl_channel_credentials(root_certificates=ca)) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await raw_call(channel)
        assert err.value.code() is grpc.StatusCode.UNAVAILABLE
        assert sink.calls == []
        creds = grpc.ssl_channel_credentials(
            root_certificates=ca, private_key=certs.client_key.read_bytes(),
            certificate_chain=certs.client_cert.read_bytes())
        assert await export_grpc(target, credentials=creds, insecure=False) \
            is SpanExportResult.SUCCESS
        assert len(sink.spans) == 2
    finally:
        await receiver.stop(grace=0)


@grpc_with(bearer_token=TOKEN)
async def test_grpc_bearer_token(grpc_rx: GrpcRx, no_token_in_logs: None) -> None:
    ok = await export_grpc(grpc_rx.target, insecure=True,
                           headers={"authorization": f"Bearer {TOKEN}"})
    assert ok is SpanExportResult.SUCCESS
    assert len(grpc_rx.sink.spans) == 2
    # The official exporter does not retry UNAUTHENTICATED: one failure, at once.
    bad = await export_grpc(grpc_rx.target, insecure=True,
                            headers={"authorization": "Bearer wrong-token"})
    assert bad is SpanExportResult.FAILURE
    async with grpc.aio.insecure_channel(grpc_rx.target) as channel:
        for metadata in ((), (("authorization", "Bearer wrong-token"),),
                         (("authorization", TOKEN),), (("authorization", f"Basic {TOKEN}"),)):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await raw_call(channel, metadata)
            assert err.value.code() is grpc.StatusCode.UNAUTHENTICATED
            assert err.value.details() == "unauthenticated"  # no detail about why
            assert TOKEN not in str(err.value) and "wrong-token" not in str(err.value)
    assert len(grpc_rx.sink.spans) == 2
    assert refused(grpc_rx.metrics, "unauthenticated") == 5
    assert TOKEN not in grpc_rx.metrics.render().decode()


@grpc_with(max_requests_per_second=0.5)
async def test_grpc_rate_limit_answers_retryable_resource_exhausted(grpc_rx: GrpcRx) -> None:
    async with grpc.aio.insecure_channel(grpc_rx.target) as channel:
        await raw_call(channel)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await raw_call(channel)
    assert err.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    trailers = dict(err.value.trailing_metadata() or ())
    info = error_details_pb2.RetryInfo.FromString(trailers["google.rpc.retryinfo-bin"])
    assert info.retry_delay.ToTimedelta().total_seconds() == pytest.approx(2.0)
    assert len(grpc_rx.sink.calls) == 1
    assert refused(grpc_rx.metrics, "rate_limited") == 1


@grpc_with(max_requests_per_second=1)
async def test_grpc_rate_limited_official_exporter_waits_and_gets_through(grpc_rx: GrpcRx
                                                                          ) -> None:
    results = [await export_grpc(grpc_rx.target, insecure=True) for _ in range(2)]
    assert results == [SpanExportResult.SUCCESS] * 2  # the 2nd waited the RetryInfo delay
    assert len(grpc_rx.sink.spans) == 4
    assert refused(grpc_rx.metrics, "rate_limited") == 1


class GatedSink(RecordingSink):
    """Holds every `accept` until `gate` is set; records how many were inside at once."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.inside = 0
        self.most_inside = 0
        self.arrived = asyncio.Event()

    async def accept(self, decoded: Decoded, transport: str, body: bytes,
                     kind: BodyKind) -> None:
        self.inside += 1
        self.most_inside = max(self.most_inside, self.inside)
        self.arrived.set()
        try:
            await self.gate.wait()
            await super().accept(decoded, transport, body, kind)
        finally:
            self.inside -= 1


async def test_grpc_max_concurrent_streams_caps_the_calls_of_a_connection() -> None:
    sink, metrics = GatedSink(), Metrics()
    receiver = GrpcReceiver(sink, metrics, endpoint="127.0.0.1:0", max_concurrent_streams=2)
    port = await receiver.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            calls = [asyncio.create_task(raw_call(channel)) for _ in range(5)]
            async with asyncio.timeout(5):
                while sink.inside < 2:
                    await asyncio.sleep(0.01)
            await asyncio.sleep(0.3)  # room for a third call to get in, were it allowed
            assert sink.inside == 2
            sink.gate.set()
            async with asyncio.timeout(5):
                outcomes = await asyncio.gather(*calls, return_exceptions=True)
        assert sink.most_inside == 2
        # Past the limit a call waits on the client or ends REFUSED_STREAM, which gRPC reports
        # as UNAVAILABLE: retryable, never processed, so nothing is lost.
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                assert isinstance(outcome, grpc.aio.AioRpcError)
                assert outcome.code() is grpc.StatusCode.UNAVAILABLE
        assert len(sink.calls) == sum(isinstance(o, bytes) for o in outcomes) >= 2
    finally:
        await receiver.stop(grace=0)


# --------------------------------------------------------------------------- HTTP


@dataclass
class HttpRx:
    receiver: HttpReceiver
    sink: RecordingSink
    metrics: Metrics
    port: int


async def start_http(**kwargs: object) -> HttpRx:
    sink, metrics = RecordingSink(), Metrics()
    receiver = HttpReceiver(sink, metrics, endpoint="127.0.0.1:0", **kwargs)  # type: ignore[arg-type]
    return HttpRx(receiver, sink, metrics, await receiver.start())


@pytest.fixture(autouse=True)
def _no_ca_bundle_override(monkeypatch: pytest.MonkeyPatch) -> None:
    # requests (under the OTLP/HTTP exporter) prefers these variables over the exporter's own
    # certificate_file (psf/requests#3829): the test CA must be the one used.
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)


async def export_http(url: str, **kwargs: object) -> SpanExportResult:
    exporter = HttpSpanExporter(endpoint=url, timeout=5, **kwargs)  # type: ignore[arg-type]
    try:
        return await asyncio.to_thread(exporter.export, make_spans(2))
    finally:
        exporter.shutdown()


async def post(url: str, headers: dict[str, str] | None = None,
               ssl_context: ssl.SSLContext | bool = True) -> aiohttp.ClientResponse:
    async with aiohttp.ClientSession() as session, session.post(
            url, data=BODY, ssl=ssl_context,
            headers={"Content-Type": "application/x-protobuf", **(headers or {})}) as resp:
        await resp.read()
        return resp


async def test_http_tls_official_exporter_with_the_ca_succeeds(certs: Certs) -> None:
    rx = await start_http(tls=certs.tls)
    try:
        result = await export_http(f"https://127.0.0.1:{rx.port}/v1/traces",
                                   certificate_file=str(certs.ca))
        assert result is SpanExportResult.SUCCESS
        assert len(rx.sink.spans) == 2
        with pytest.raises(aiohttp.ClientError):
            await post(f"http://127.0.0.1:{rx.port}/v1/traces")  # plaintext to the TLS port
        assert len(rx.sink.spans) == 2
    finally:
        await rx.receiver.stop()


async def test_http_mtls_refuses_a_client_without_a_certificate(certs: Certs) -> None:
    rx = await start_http(tls=certs.mtls)
    url = f"https://127.0.0.1:{rx.port}/v1/traces"
    try:
        ctx = ssl.create_default_context(cafile=certs.ca)
        with pytest.raises(aiohttp.ClientError):
            await post(url, ssl_context=ctx)
        assert rx.sink.calls == []
        result = await export_http(url, certificate_file=str(certs.ca),
                                   client_certificate_file=str(certs.client_cert),
                                   client_key_file=str(certs.client_key))
        assert result is SpanExportResult.SUCCESS
        assert len(rx.sink.spans) == 2
    finally:
        await rx.receiver.stop()


async def test_http_bearer_token(no_token_in_logs: None) -> None:
    rx = await start_http(bearer_token=TOKEN)
    url = f"http://127.0.0.1:{rx.port}/v1/traces"
    try:
        ok = await export_http(url, headers={"Authorization": f"Bearer {TOKEN}"})
        assert ok is SpanExportResult.SUCCESS
        assert len(rx.sink.spans) == 2
        bad = await export_http(url, headers={"Authorization": "Bearer wrong-token"})
        assert bad is SpanExportResult.FAILURE  # 401 is not retried
        for headers in ({}, {"Authorization": "Bearer wrong-token"},
                        {"Authorization": f"bearer {TOKEN}x"}):
            async with aiohttp.ClientSession() as session, session.post(
                    url, data=BODY, headers={"Content-Type": "application/json", **headers}
            ) as resp:
                text = await resp.text()
                assert resp.status == 401
                assert resp.headers["WWW-Authenticate"] == "Bearer"
            assert "unauthenticated" in text
            assert TOKEN not in text and "wrong-token" not in text
        assert len(rx.sink.spans) == 2
        assert refused(rx.metrics, "unauthenticated") == 4
        assert TOKEN not in rx.metrics.render().decode()
    finally:
        await rx.receiver.stop()


async def test_http_rate_limit_answers_429_with_retry_after() -> None:
    rx = await start_http(max_requests_per_second=0.5)
    url = f"http://127.0.0.1:{rx.port}/v1/traces"
    try:
        assert (await post(url)).status == 200
        resp = await post(url)
        assert resp.status == 429
        assert resp.headers["Retry-After"] == "2"
        assert len(rx.sink.calls) == 1
        assert refused(rx.metrics, "rate_limited") == 1
    finally:
        await rx.receiver.stop()


# --------------------------------------------------------------------------- configuration


def test_missing_and_mismatched_tls_files_are_config_errors(certs: Certs, tmp_path: Path
                                                            ) -> None:
    config = tmp_path / "scorecar.yaml"
    config.write_text(f"""
receivers:
  grpc:
    tls: {{cert_file: {tmp_path / "nope.pem"}, key_file: {certs.server_key}}}
  http:
    tls: {{cert_file: {certs.client_cert}, key_file: {certs.server_key},
           client_ca_file: {tmp_path / "ca-missing.pem"}}}
""")
    with pytest.raises(ConfigError) as err:
        load_config(config, env={})
    text = str(err.value)
    assert f"receivers.grpc.tls.cert_file: file not found: {tmp_path / 'nope.pem'}" in text
    assert f"receivers.http.tls.client_ca_file: file not found: " \
           f"{tmp_path / 'ca-missing.pem'}" in text
    config.write_text(f"""
receivers:
  http: {{tls: {{cert_file: {certs.client_cert}, key_file: {certs.server_key}}}}}
""")
    with pytest.raises(ConfigError, match=r"receivers\.http\.tls: cannot load the certificate"):
        load_config(config, env={})
    config.write_text(f"receivers: {{grpc: {{tls: {{cert_file: {certs.server_cert}}}}}}}\n")
    with pytest.raises(ConfigError, match="cert_file and key_file go together"):
        load_config(config, env={})


def test_bearer_token_comes_from_env_or_file_and_is_never_shown(certs: Certs, tmp_path: Path
                                                                ) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    config = tmp_path / "scorecar.yaml"
    config.write_text(f"""
receivers:
  grpc:
    auth: {{bearer_token_env: OTLP_TOKEN}}
    tls: {{cert_file: {certs.server_cert}, key_file: {certs.server_key}}}
  http:
    auth: {{bearer_token_file: {token_file}}}
""")
    loaded = load_config(config, env={"OTLP_TOKEN": TOKEN})
    assert loaded.receivers.grpc.endpoint == "0.0.0.0:4317"  # default kept beside tls/auth
    assert loaded.receivers.grpc.auth.token is not None
    assert loaded.receivers.grpc.auth.token.get_secret_value() == TOKEN
    assert loaded.receivers.http.auth.require_token() == loaded.receivers.http.auth.token
    assert TOKEN not in render_effective_config(loaded)
    assert TOKEN not in repr(loaded)
    with pytest.raises(ConfigError) as err:
        load_config(config, env={})
    assert "receivers.grpc.auth.bearer_token_env: the environment variable OTLP_TOKEN is " \
           "not set" in str(err.value)
    with pytest.raises(ConfigError, match="NAME of an environment variable") as err:
        load_config(None, env={"SCORECAR_RECEIVERS__HTTP__AUTH__BEARER_TOKEN_ENV": TOKEN + "!"})
    assert TOKEN not in str(err.value)
    # A config built in code reads its token when the receiver is built, never runs open.
    with pytest.raises(ConfigError, match="OTLP_TOKEN"):
        ReceiverAuthConfig(bearer_token_env="OTLP_TOKEN").require_token(env={})
    assert ReceiverAuthConfig().require_token() is None


async def test_serve_config_turns_on_tls_and_auth(certs: Certs, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from collector.service import Sidecar

    config = tmp_path / "scorecar.yaml"
    config.write_text(f"""
receivers:
  grpc:
    endpoint: "127.0.0.1:0"
    tls: {{cert_file: {certs.server_cert}, key_file: {certs.server_key}}}
    auth: {{bearer_token_env: OTLP_TOKEN}}
  http:
    endpoint: "127.0.0.1:0"
    auth: {{bearer_token_env: OTLP_TOKEN}}
storage: {{kind: memory}}
assembly: {{build_processes: 0}}
""")
    monkeypatch.setenv("OTLP_TOKEN", TOKEN)
    loaded = load_config(config)
    sidecar = Sidecar(loaded, [], admin=False)
    ports = await sidecar.start()
    try:
        creds = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
        target = f"127.0.0.1:{ports.grpc}"
        assert await export_grpc(target, credentials=creds, insecure=False,
                                 headers={"authorization": f"Bearer {TOKEN}"}) \
            is SpanExportResult.SUCCESS
        assert await export_grpc(target, credentials=creds, insecure=False) \
            is SpanExportResult.FAILURE
        resp = await post(f"http://127.0.0.1:{ports.http}/v1/traces")
        assert resp.status == 401
        assert refused(sidecar.metrics, "unauthenticated") == 2
    finally:
        await sidecar.stop(grace=1)

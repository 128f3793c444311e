"""Fuzzing the OTLP decoders and the real gRPC/HTTP receivers with structure-aware malformed
requests (hypothesis; the strategies and the oracle live in bench/_faults_fuzz.py, whose
`python bench/faults.py fuzz` runs the same at 100,000+ cases).

A case fails on a crash (an exception out of a decoder or `ingest`, a request answered 503
"internal", gRPC UNKNOWN/INTERNAL, HTTP 5xx other than 503), a hang (past the per-case limit),
a status outside OTLP's documented set, or a refusal the answers report but
`scorecar_spans_refused_total` did not count. Deterministic (`derandomize=True`).
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from bench import _faults_fuzz as fz
from collector.intake import BodyKind
from collector.otlp import decode_json_bytes

CI = settings(deadline=None, database=None, derandomize=True, phases=[Phase.generate, Phase.shrink],
              suppress_health_check=list(HealthCheck))


def _clean(fig: fz.Figure) -> None:
    assert (fig.crashes, fig.hangs, fig.unexpected) == (0, 0, 0), "\n".join(fig.examples)
    assert fig.refusals == fig.counted, f"{fig.refusals} refusals, {fig.counted} counted"


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


@pytest.fixture(scope="module")
def receivers() -> Iterator[fz.Receivers]:
    """Both receivers on free loopback ports (1 MiB limit), stopped after the module."""
    with fz.Receivers() as rx:
        yield rx


@pytest.mark.slow
@settings(CI, max_examples=250)
@given(case=fz.any_case, mutation_seed=st.integers(0, 1 << 32))
def test_malformed_bodies_are_answered_and_counted_in_process(
        loop: asyncio.AbstractEventLoop, case: tuple[BodyKind, bytes], mutation_seed: int) -> None:
    # Each structured body and 7 byte-level mutants of it (2,000 cases): the receivers' request path
    # (`ingest`) with a sink that decodes, builds runs and serializes them as the app does.
    kind, body = case
    fig = fz.Figure()
    for mutant in fz.mutants(body, mutation_seed, 7):
        fz.decoder_case(fig, loop, kind, mutant)
    _clean(fig)


@pytest.mark.slow
@settings(CI, max_examples=200)
@given(case=fz.receiver_case())
def test_the_real_receivers_answer_malformed_requests_with_documented_statuses(
        receivers: fz.Receivers, case: tuple[str, BodyKind, bytes, str, str]) -> None:
    fig = fz.Figure()
    fz.receiver_case_run(fig, receivers, case)
    assert fig.cases == 1
    _clean(fig)


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@pytest.mark.parametrize("size", fz.BOMB_SIZES)
def test_http_compression_bombs_are_refused_past_the_limit_and_counted(
        receivers: fz.Receivers, encoding: str, size: int) -> None:
    before = receivers.refused()
    code, _, _ = receivers.http_post("traces_protobuf", fz.bomb(encoding, size),
                                     "application/x-protobuf", encoding)
    # Zeros inflate to a protobuf that does not parse (field 0): 400 within the limit.
    assert code == (413 if size > fz.LIMIT else 400)
    assert receivers.refused() - before == 1


@pytest.mark.parametrize("size", fz.BOMB_SIZES)
def test_grpc_gzip_bombs_are_refused(receivers: fz.Receivers, size: int) -> None:
    import grpc  # type: ignore[import-untyped,unused-ignore]
    before = receivers.refused()
    # The channel gzips the zeros: a few KB on the wire.
    status, _ = receivers.grpc_call("traces_protobuf", bytes(size), grpc.Compression.Gzip)
    if size <= fz.LIMIT:
        assert (status, receivers.refused() - before) == ("INVALID_ARGUMENT", 1)
    elif size <= fz.GRPC_TRANSPORT_LIMIT:
        assert (status, receivers.refused() - before) == ("RESOURCE_EXHAUSTED", 1)
    else:  # past twice the limit gRPC itself refuses (documented: not counted by scorecar)
        assert status == "RESOURCE_EXHAUSTED"


# ------------------------------------------------------------------ regression: lone surrogates

SPAN = ('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10",'
        '"spanId":"0102030405060708","name":"%s","attributes":[{"key":"gen_ai.input.messages",'
        '"value":{"stringValue":"%s"}}]}]}]}]}')


@pytest.mark.parametrize(("escaped", "name"), [
    (r"a\ud800b", "a\ufffdb"),            # a lone high surrogate
    (r"\udc00\ud800", "\ufffd\ufffd"),    # a low then a high: no pair
    (r"\ud83d\ude00", "\U0001f600"),      # a pair (an emoji) is kept
    (r"\\ud800", "\\ud800"),              # an escaped backslash, no escape
    (r"\\\ud800", "\\\ufffd"),            # an escaped backslash, then a lone surrogate
])
def test_json_escaped_lone_surrogates_become_replacement_characters(escaped: str,
                                                                    name: str) -> None:
    # Found by fuzzing: `"\ud800"` decoded into a str no UTF-8 encoder takes, so the run could
    # not be stored in the queue and the scheduling pass failed for every trace in it.
    decoded = decode_json_bytes((SPAN % (escaped, escaped)).encode())
    [span] = decoded.spans
    assert span.name == name
    span.name.encode("utf-8")  # storable
    assert decoded.refused.get("invalid_utf8", 0) == (1 if "\ufffd" in name else 0)


def test_a_lone_surrogate_in_content_still_gives_a_storable_run(
        loop: asyncio.AbstractEventLoop) -> None:
    text = r'[{\"role\": \"user\", \"parts\": [{\"type\": \"text\", \"content\": \"hi \\ud800\"}]}]'
    body = (SPAN % ("chat", text)).encode()
    fig = fz.Figure()
    fz.decoder_case(fig, loop, "traces_json", body)
    fz.decoder_case(fig, loop, "traces_json", gzip.decompress(gzip.compress(body)))
    _clean(fig)

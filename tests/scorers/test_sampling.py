"""Deterministic ratio sampling, checked against vectors computed with Node's crypto.

The expected points were computed independently of our code with (node 20):

    node -e 'const c=require("crypto"); for (const id of [...ids]) {
      const b=c.createHash("sha256").update(id,"utf8").digest();
      console.log(JSON.stringify([id, b.subarray(0,6).toString("hex"), b.readUIntBE(0,6)/2**48])); }'
"""

from __future__ import annotations

import pydantic
import pytest

from scorers.sampling import NoSampling, RatioSampling, is_sampled, parse_sampling, sample_point

# (trace id, first 6 bytes of sha256 as hex, point = those bytes big-endian / 2^48), from Node.
NODE_VECTORS = [
    ("0af7651916cd43dd8448eb211c80319c", "15f774f039ec", 0.08580714096926556),
    ("4bf92f3577b34da6a3ce929d0e0e4736", "398acaee65c4", 0.22477405853511812),
    ("00000000000000000000000000000001", "e0cca2965509", 0.8781224839231392),
    ("ffffffffffffffffffffffffffffffff", "352302489bc2", 0.2075654437319443),
    ("5b8efff798038103d269b633813fc60c", "684f81486108", 0.4074631501871693),
    ("a3ce929d0e0e47364bf92f3577b34da6", "fbea6680158b", 0.9840454161363077),
]

# (trace id, rate, decision): decision is point < rate, boundaries included.
DECISIONS = [
    ("0af7651916cd43dd8448eb211c80319c", 0.1, True),
    ("0af7651916cd43dd8448eb211c80319c", 0.08580714096926556, False),  # rate == point: out
    ("0af7651916cd43dd8448eb211c80319c", 0.0858071409692656, True),    # just above
    ("4bf92f3577b34da6a3ce929d0e0e4736", 0.2, False),
    ("4bf92f3577b34da6a3ce929d0e0e4736", 0.25, True),
    ("00000000000000000000000000000001", 0.5, False),
    ("00000000000000000000000000000001", 0.9, True),
    ("ffffffffffffffffffffffffffffffff", 0.2075654437319443, False),
    ("5b8efff798038103d269b633813fc60c", 0.5, True),
    ("a3ce929d0e0e47364bf92f3577b34da6", 0.98, False),
    ("a3ce929d0e0e47364bf92f3577b34da6", 1.0, True),
    ("a3ce929d0e0e47364bf92f3577b34da6", 0.0, False),
    ("00000000000000000000000000000001", 0.0, False),
    ("0af7651916cd43dd8448eb211c80319c", 1.0, True),
]


@pytest.mark.parametrize(("trace_id", "prefix", "point"), NODE_VECTORS)
def test_sample_point_matches_node(trace_id: str, prefix: str, point: float) -> None:
    assert sample_point(trace_id) == point
    assert int(prefix, 16) / 2**48 == point


@pytest.mark.parametrize(("trace_id", "rate", "decision"), DECISIONS)
def test_ratio_decisions(trace_id: str, rate: float, decision: bool) -> None:
    assert is_sampled({"type": "ratio", "rate": rate}, trace_id) is decision


def test_trace_ids_are_lower_cased_first() -> None:
    upper = "0AF7651916CD43DD8448EB211C80319C"
    assert is_sampled({"type": "ratio", "rate": 0.0858071409692656}, upper) is True
    assert is_sampled({"type": "ratio", "rate": 0.08580714096926556}, upper) is False


def test_run_id_is_used_without_a_trace_id() -> None:
    # node: sha256("9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f") → 0.9649274544584472
    run_id = "9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f"
    assert is_sampled({"type": "ratio", "rate": 0.96}, None, run_id) is False
    assert is_sampled({"type": "ratio", "rate": 0.97}, None, run_id) is True
    with pytest.raises(ValueError):
        is_sampled({"type": "ratio", "rate": 0.5}, None, None)


def test_none_is_the_default_and_samples_everything() -> None:
    assert parse_sampling(None) == NoSampling()
    for trace_id, _, _ in NODE_VECTORS:
        assert is_sampled(None, trace_id) is True
        assert is_sampled({"type": "none"}, trace_id) is True


def test_the_fraction_sampled_is_close_to_the_rate() -> None:
    ids = [f"{i:032x}" for i in range(4000)]
    kept = sum(is_sampled(RatioSampling(rate=0.25), t) for t in ids)
    assert 850 <= kept <= 1150


@pytest.mark.parametrize("bad", [
    {"type": "ratio", "rate": 1.5},
    {"type": "ratio", "rate": -0.1},
    {"type": "ratio", "rate": float("nan")},
    {"type": "ratio", "rate": True},
    {"type": "ratio"},
    {"type": "random", "rate": 0.5},
    {"type": "none", "rate": 0.5},
])
def test_bad_configs_are_refused(bad: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        parse_sampling(bad)

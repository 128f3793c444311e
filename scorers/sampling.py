"""Deterministic trace sampling for scorers (DESIGN §4, Mastra's `ScoringSamplingConfig`).

`{"type": "none"}` (the default) scores every run; `{"type": "ratio", "rate": r}` scores a run when
the first 6 bytes of sha256 of its lowercase 32-hex trace id (UTF-8; the run id when there is no
trace id), read big-endian and divided by 2^48, are below `r`. Every replica makes the same choice,
and it is the choice Mastra makes for the same trace.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

__all__ = [
    "NoSampling",
    "RatioSampling",
    "Sampling",
    "is_sampled",
    "parse_sampling",
    "sample_point",
]

_TWO_48 = float(2**48)


class NoSampling(BaseModel):
    """Score every run."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["none"] = "none"


class RatioSampling(BaseModel):
    """Score the fraction `rate` (0 ≤ rate ≤ 1) of traces, chosen by trace id."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["ratio"] = "ratio"
    rate: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)

    @field_validator("rate", mode="before")
    @classmethod
    def _not_bool(cls, value: Any) -> Any:
        if isinstance(value, bool):  # `rate: true` in YAML is a mistake, not 1.0
            raise ValueError("rate must be a number between 0 and 1, not a boolean")
        return value


Sampling = Annotated[NoSampling | RatioSampling, Field(discriminator="type")]
"""The sampling config: a pydantic discriminated union on `type` (reuse it in config models)."""

_ADAPTER: TypeAdapter[NoSampling | RatioSampling] = TypeAdapter(Sampling)


def parse_sampling(value: Any) -> NoSampling | RatioSampling:
    """Validate a sampling config (`None` means `{"type": "none"}`).

    Raises:
        pydantic.ValidationError: an unknown `type`, or a rate outside [0, 1].
    """
    if value is None:
        return NoSampling()
    if isinstance(value, (NoSampling, RatioSampling)):
        return value
    return _ADAPTER.validate_python(value)


def sample_point(key: str) -> float:
    """Where `key` falls in [0, 1): sha256(key as UTF-8), first 6 bytes big-endian / 2^48."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:6], "big") / _TWO_48


def is_sampled(sampling: NoSampling | RatioSampling | dict[str, Any] | None,
               trace_id: str | None, run_id: str | None = None) -> bool:
    """Whether a run is scored under `sampling`.

    Args:
        sampling: the config (a model, a dict, or None for "none").
        trace_id: the run's 32-hex trace id (any case; it is lower-cased).
        run_id: used instead when there is no trace id.

    Returns:
        True when the run is sampled in.
    """
    config = parse_sampling(sampling)
    if isinstance(config, NoSampling):
        return True
    key = trace_id.lower() if trace_id else run_id
    if key is None:
        raise ValueError("ratio sampling needs a trace id or a run id")
    return sample_point(key) < config.rate

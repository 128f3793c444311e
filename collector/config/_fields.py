"""The field types the config models share: durations in seconds, counts (YAML `true` is not
1), `host:port`, OTLP endpoints and URLs, readable files, and the frozen, closed base model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

__all__ = ["ENV_NAME", "Count", "HostPort", "HttpUrl", "MaxMessageMib", "Model", "NonEmpty",
           "OtlpEndpoint", "Protocol", "ReadableFile", "Seconds", "no_bool"]


def no_bool(value: Any) -> Any:
    """Refuse a boolean where a number belongs: YAML `true` is a mistake for a number, not 1."""
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


Seconds = Annotated[float, BeforeValidator(no_bool), Field(allow_inf_nan=False)]
Count = Annotated[int, BeforeValidator(no_bool)]
HostPort = Annotated[str, AfterValidator(_host_port)]
OtlpEndpoint = Annotated[str, AfterValidator(_otlp_endpoint)]
HttpUrl = Annotated[str, AfterValidator(_http_url)]
Protocol = Annotated[Literal["grpc", "http/protobuf"], BeforeValidator(_protocol)]
NonEmpty = Annotated[str, Field(min_length=1)]
MaxMessageMib = Annotated[float, BeforeValidator(no_bool),
                          Field(gt=0, le=1023, allow_inf_nan=False)]
# ≤ 1023 MiB: gRPC's message limit is a signed 32-bit byte count, and the transport limit is
# set to twice the application's (DESIGN §6).


ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # what `*_env` keys must look like


class Model(BaseModel):
    """The base of every config model: frozen, and unknown keys are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


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

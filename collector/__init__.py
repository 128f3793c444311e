"""The process: OTLP decoding, `inspect`, the CLI (receivers, assembly, scheduling and config to
come). Only collector/ wires the other packages together; nothing imports it."""

from collector.inspect import InspectResult, UnreadableInputError, inspect_files, read_otlp_file
from collector.otlp import (
    Decoded,
    decode_json,
    decode_json_bytes,
    decode_logs_protobuf,
    decode_traces_protobuf,
)

__all__ = [
    "Decoded",
    "InspectResult",
    "UnreadableInputError",
    "decode_json",
    "decode_json_bytes",
    "decode_logs_protobuf",
    "decode_traces_protobuf",
    "inspect_files",
    "read_otlp_file",
]

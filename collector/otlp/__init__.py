"""The OTLP codec, pure (the Collector's `pdata`): decoded values, protobuf and strict
proto3-JSON decoding, JSON -> protobuf. Below every other room; imports none of them."""

from collector.otlp._json import (
    Decoded,
    decode_json,
    decode_json_bytes,
    decode_logs_protobuf,
    decode_traces_protobuf,
    scan_traces_protobuf,
    utf8_text,
)

__all__ = ["Decoded", "decode_json", "decode_json_bytes", "decode_logs_protobuf", "decode_traces_protobuf", "scan_traces_protobuf", "utf8_text"]

"""The OTLP codec, pure (the Collector's `pdata`): decoded values, protobuf and strict
proto3-JSON decoding, JSON -> protobuf, OTLP files. Below every other room; imports none of them.

```
_decoded.py      Decoded, the value-depth limit, kind/status names, UTF-8 and lone surrogates
_protobuf.py     protobuf requests -> Decoded (decode, or only scan, traces; logs)
_json.py         strict proto3 JSON requests -> Decoded (its field readers: _json_fields.py)
_to_protobuf.py  an OTLP/JSON body -> the same request in protobuf
_files.py        an OTLP JSON (lines) file -> Decoded
```
"""

from collector.otlp._decoded import Decoded, utf8_text
from collector.otlp._files import UnreadableInputError, read_otlp_file
from collector.otlp._json import decode_json, decode_json_bytes
from collector.otlp._protobuf import (
    decode_logs_protobuf,
    decode_traces_protobuf,
    scan_traces_protobuf,
)
from collector.otlp._to_protobuf import Signal, json_to_protobuf

__all__ = ["Decoded", "Signal", "UnreadableInputError", "decode_json", "decode_json_bytes",
           "decode_logs_protobuf", "decode_traces_protobuf", "json_to_protobuf",
           "read_otlp_file", "scan_traces_protobuf", "utf8_text"]

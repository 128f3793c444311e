"""The closed set of reason codes: why a request, span, log record or run was not (fully) used.

OTLP decoding (`collector.otlp`), the run builder and the extractors count what they cannot
use under one of these codes instead of raising; the counts reach `scorecar inspect`'s stderr
summary and, in the sidecar, a Prometheus label. `Reason` is a `StrEnum`: a member is equal to
(and hashes like) its string value, so `Counter` keys and comparisons with plain strings keep
working, and `str(Reason.ORPHAN) == "orphan"`.
"""

from __future__ import annotations

from enum import StrEnum, unique

__all__ = ["Reason"]


@unique
class Reason(StrEnum):
    """Every reason code scorecar counts (decoding, building, extracting, inspecting)."""

    # ---- decoding an OTLP request (collector.otlp): one per refused request, span or record
    MALFORMED_PROTOBUF = "malformed_protobuf"
    """A protobuf body that does not parse (invalid UTF-8 in a string field included)."""
    MALFORMED_JSON = "malformed_json"
    """An OTLP/JSON body that is not JSON."""
    INVALID_UTF8 = "invalid_utf8"
    """An OTLP/JSON body with invalid UTF-8 (the bad bytes are replaced; the rest is used)."""
    NOT_OTLP = "not_otlp"
    """JSON that is not an OTLP export request (or an item in it that is not an object)."""
    BAD_TRACE_ID = "bad_trace_id"
    """A span whose trace id is missing, the wrong length or all zeros."""
    BAD_SPAN_ID = "bad_span_id"
    """A span whose span id is missing, the wrong length or all zeros."""
    BAD_PARENT_ID = "bad_parent_id"
    """A span whose parent id is the wrong length or all zeros."""
    LOG_WITHOUT_TRACE = "log_without_trace"
    """A log record without a valid trace id: it cannot be joined to a run."""
    TOO_DEEP = "too_deep"
    """A value nested deeper than the limit: an OTLP attribute value or request (decoding), or
    a JSON attribute (extracting; kept as text)."""

    # ---- cleaning a trace's input (run builder)
    DUPLICATE = "duplicate"
    """A span or log record delivered again (OTLP allows it): used once."""
    OWN_SPAN = "own_span"
    """A span or log record of scorecar's own instrumentation scope (loop guard)."""
    EVALUATION_EVENT = "evaluation_event"
    """A `gen_ai.evaluation.result` log record: a score, not content."""
    NOT_GENAI = "not_genai"
    """A log record that is no GenAI message event, or a trace no convention reads."""
    ORPHAN_LOG = "orphan_log"
    """A GenAI log record pointing at a span the trace does not hold."""

    # ---- the span tree
    ORPHAN = "orphan"
    """A span whose parent is not in the trace: it becomes a local root."""
    NO_ROOT = "no_root"
    """A trace without a span that has no parent."""
    PARENT_CYCLE = "parent_cycle"
    """Spans whose parent ids form a cycle: the cycle is cut."""

    # ---- what the extractors found in a span
    EXTRACT_ERROR = "extract_error"
    """A span its extractor failed on: it is left out, the rest of the trace is used."""
    TRUNCATED_JSON = "truncated_json"
    """A JSON attribute cut by a length limit: kept as text, the run marked truncated."""
    TRUNCATED_CONTENT = "truncated_content"
    """Content the library itself shortened (valid JSON, parts left out)."""

    # ---- model calls recorded more than once, threads
    NESTED_CALL = "nested_call"
    """One model call recorded by two spans or libraries: counted once."""
    THREAD_HISTORY_MISSING = "thread_history_missing"
    """A call continuing a server-held thread whose earlier calls are not in the trace."""

    # ---- runs
    AGENT_WRAPPER = "agent_wrapper"
    """An agent span that only wraps other agent spans: not a run of its own."""
    NO_RUN = "no_run"
    """A trace with GenAI spans but no agent span and no model call."""
    NO_INPUT = "no_input"
    """A run without input messages."""
    NO_OUTPUT = "no_output"
    """A run without output."""
    REDACTED = "redacted"
    """A run with content replaced by a redaction placeholder."""
    CAPTURE_OFF = "capture_off"
    """A run whose content the library did not record (capture settings off)."""
    BUILD_ERROR = "build_error"
    """A run the builder failed on: left out, the other runs of the trace still come out."""

    # ---- scorecar inspect
    SERIALIZE_ERROR = "serialize_error"
    """A run that could not be written as JSON."""

"""Which convention a span uses (conventions.md §0), and the extractor that reads it."""

from __future__ import annotations

from transforms import genai, mastra, openinference, openllmetry
from transforms.common import SpanFacts
from transforms.types import Span

__all__ = ["detect", "extract_span"]


_LANGFUSE = ("langfuse.observation.", "langfuse.trace.")
_OPENLLMETRY = ("traceloop.span.kind", "traceloop.entity.", "gen_ai.prompt.",
                "gen_ai.completion.", "llm.request.type")
_ANY_PREFIX = _LANGFUSE + _OPENLLMETRY


def detect(span: Span) -> list[str]:
    """Every convention a span shows, in the precedence order of conventions.md §0.

    One span can carry several (OpenLLMetry copies `gen_ai.agent.name` onto descendants;
    Mastra emits `gen_ai.*` too); the first is the one that reads it.
    """
    a = span.attributes
    found: list[str] = []
    langfuse = openllmetry_keys = False
    for k in a:  # one pass over the keys for every prefix test
        if not k.startswith(_ANY_PREFIX):
            continue
        if k.startswith(_LANGFUSE):
            langfuse = True
        else:
            openllmetry_keys = True
    if langfuse:
        found.append("langfuse")
    if "openinference.span.kind" in a:
        found.append("openinference")
    if openllmetry_keys:
        found.append("openllmetry")
    if span.scope_name == "ai" or "ai.operationId" in a:
        found.append("vercel")
    if mastra.is_mastra(span):
        found.append("mastra")
    if span.scope_name == "pydantic-ai" or "pydantic_ai.all_messages" in a or \
            "final_result" in a or "all_messages_events" in a or "logfire.msg" in a:
        found.append("pydantic_ai")
    if "gen_ai.operation.name" in a or "gen_ai.input.messages" in a or any(
            e.name.startswith("gen_ai.") for e in span.events):
        found.append("genai")
    return found


def extract_span(span: Span) -> SpanFacts | None:
    """The facts of one span, read by the first convention it shows that scorecar reads;
    None for a span no convention claims (HTTP server spans and the like)."""
    found = detect(span)
    for conv in found:
        if conv == "openinference":
            return openinference.extract(span)
        if conv == "openllmetry":
            return openllmetry.extract(span)
        if conv == "mastra":
            return mastra.extract(span)
        if conv == "genai":
            facts = genai.extract(span)
            # Conventions read through their gen_ai.* attributes keep their own label.
            facts.convention = found[0] if found[0] in ("pydantic_ai", "vercel") else "genai"
            return facts
    if found:
        facts = SpanFacts(found[0])
        facts.reasons.append("unsupported_convention")
        return facts
    return None

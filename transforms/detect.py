"""Which convention a span uses (conventions.md §0), and the extractor that reads it."""

from __future__ import annotations

from transforms import (
    anthropic,
    genai,
    langfuse,
    mastra,
    openinference,
    openllmetry,
    pydantic_ai,
    vercel,
)
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
    Mastra and the Anthropic SDK emit `gen_ai.*` too); the first is the one that reads it.
    """
    a = span.attributes
    found: list[str] = []
    langfuse_keys = openllmetry_keys = False
    for k in a:  # one pass over the keys for every prefix test
        if not k.startswith(_ANY_PREFIX):
            continue
        if k.startswith(_LANGFUSE):
            langfuse_keys = True
        else:
            openllmetry_keys = True
    if langfuse_keys:
        found.append("langfuse")
    if "openinference.span.kind" in a:
        found.append("openinference")
    if openllmetry_keys:
        found.append("openllmetry")
    scope = span.scope_name
    if scope == "ai" or "ai.operationId" in a:  # vercel.is_vercel, inlined: every span
        found.append("vercel")
    if mastra.is_mastra(span):
        found.append("mastra")
    if scope == "pydantic-ai" or ("final_result" in a or "logfire.msg" in a or
                                   "pydantic_ai.all_messages" in a or
                                   "all_messages_events" in a):
        found.append("pydantic_ai")  # pydantic_ai.is_pydantic_ai, inlined
    if scope.startswith(anthropic.SCOPE_PREFIX):
        found.append("anthropic")
    if "gen_ai.operation.name" in a or "gen_ai.input.messages" in a or any(
            e.name.startswith("gen_ai.") for e in span.events):
        found.append("genai")
    return found


def extract_span(span: Span) -> SpanFacts | None:
    """The facts of one span, read by the first convention it shows; None for a span no
    convention claims (HTTP server spans and the like)."""
    found = detect(span)
    if "vercel" in found and "ai.operationId" in span.attributes:
        # The AI SDK's own ai.* attributes beat a translation of them added to the same span
        # (openinference-vercel marks the root a CHAIN and copies messages into llm.*).
        return vercel.extract(span)
    for conv in found:
        if conv == "langfuse":
            facts = langfuse.extract(span)
            if facts is not None:
                return facts
            continue  # only propagated Langfuse attributes: another library's span
        if conv == "openinference":
            return openinference.extract(span)
        if conv == "openllmetry":
            return openllmetry.extract(span)
        if conv == "vercel":
            return vercel.extract(span)
        if conv == "mastra":
            return mastra.extract(span)
        if conv == "pydantic_ai":
            return pydantic_ai.extract(span)
        if conv == "anthropic":
            return anthropic.extract(span)
        return genai.extract(span)
    return None

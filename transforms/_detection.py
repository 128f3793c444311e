"""Which conventions a span shows (conventions.md §0), and the extractor that reads it.

The conventions are one registry, `CONVENTIONS`, in the precedence order of §0: each entry
says how to recognise a span of the convention (attribute key prefixes and/or a `matches`
test) and which extractor reads it. A new convention is one module and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from transforms import (
    _anthropic,
    _genai,
    _langfuse,
    _mastra,
    _openinference,
    _openllmetry,
    _pydantic_ai,
    _vercel,
)
from transforms._toolkit import SpanFacts
from transforms.types import Span

__all__ = ["CONVENTIONS", "Convention", "detect_conventions", "extract_span"]


@dataclass(frozen=True, slots=True)
class Convention:
    """One convention: how to recognise its spans and how to read them.

    Attributes:
        name: the `target.convention` value of runs it reads (DESIGN §3).
        extract: the span's facts; None when the span only carries attributes the
            convention propagates onto other libraries' spans (the next convention reads it).
        prefixes: attribute key prefixes that mark the convention (tested in one pass over
            the keys for all conventions).
        matches: any other test that marks it (scope name, exact keys, span events).
        reads_first: the convention reads the span even when an earlier one also shows.
    """

    name: str
    extract: Callable[[Span], SpanFacts | None]
    prefixes: tuple[str, ...] = ()
    matches: Callable[[Span], bool] | None = None
    reads_first: Callable[[Span], bool] | None = None


CONVENTIONS: tuple[Convention, ...] = (
    Convention("langfuse", _langfuse.extract, prefixes=_langfuse.PREFIXES),
    Convention("openinference", _openinference.extract, matches=_openinference.matches),
    Convention("openllmetry", _openllmetry.extract, prefixes=_openllmetry.PREFIXES),
    Convention("vercel", _vercel.extract, matches=_vercel.matches,
               reads_first=_vercel.reads_first),
    Convention("mastra", _mastra.extract, matches=_mastra.matches),
    Convention("pydantic_ai", _pydantic_ai.extract, matches=_pydantic_ai.matches),
    Convention("anthropic", _anthropic.extract, matches=_anthropic.matches),
    Convention("genai", _genai.extract, matches=_genai.matches),
)
_ANY_PREFIX = tuple(p for c in CONVENTIONS for p in c.prefixes)


def _shown(span: Span) -> list[Convention]:
    hits: set[str] = set()
    for k in span.attributes:  # one pass over the keys for every prefix test
        if k.startswith(_ANY_PREFIX):  # one C call for the common miss
            hits.update(c.name for c in CONVENTIONS if c.prefixes and k.startswith(c.prefixes))
    return [c for c in CONVENTIONS
            if c.name in hits or (c.matches is not None and c.matches(span))]


def detect_conventions(span: Span) -> list[str]:
    """Every convention a span shows, in the precedence order of conventions.md §0.

    One span can carry several (OpenLLMetry copies `gen_ai.agent.name` onto descendants;
    Mastra and the Anthropic SDK emit `gen_ai.*` too); the first is the one that reads it.
    """
    return [c.name for c in _shown(span)]


def extract_span(span: Span) -> SpanFacts | None:
    """The facts of one span, read by the first convention it shows (or one that reads it
    first); None for a span no convention claims (HTTP server spans and the like)."""
    shown = _shown(span)
    for c in shown:
        if c.reads_first is not None and c.reads_first(span):
            return c.extract(span)
    for c in shown:
        facts = c.extract(span)
        if facts is not None:
            return facts
    return None

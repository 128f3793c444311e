"""Which conventions a span shows (conventions.md §0), and the extractor that reads it.

The conventions are one registry, `CONVENTIONS`, in the precedence order of §0: each entry
says how to recognise a span of the convention (attribute key prefixes and/or a `matches`
test) and which extractor reads it. A new convention is one module and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from transforms import (
    _adk,
    _anthropic,
    _genai,
    _langfuse,
    _mastra,
    _openinference,
    _openllmetry,
    _pydantic_ai,
    _vercel,
)
from transforms._attrs import ContextKeys
from transforms._facts import Mark, SpanFacts
from transforms._json import parse_json_attr
from transforms.types import Span

__all__ = [
    "CONVENTIONS",
    "Convention",
    "conversation_id",
    "detect_conventions",
    "extract_span",
    "mark_span",
    "request_context",
    "resource_id",
]


@dataclass(frozen=True, slots=True)
class Convention:
    """One convention: how to recognise its spans and how to read them.

    Attributes:
        name: the `target.convention` value of runs it reads (DESIGN §3).
        extract: the span's facts; None when the span only carries attributes the
            convention propagates onto other libraries' spans (the next convention reads it).
        mark: the span's role and agent identity without its content (the same as the
            facts' role and identity; None exactly when `extract` is None)
        prefixes: attribute key prefixes that mark the convention (tested in one pass over
            the keys for all conventions).
        matches: any other test that marks it (scope name, exact keys, span events).
        reads_first: the convention reads the span even when an earlier one also shows.
        context: where the convention records the invocation's context (conversation and
            resource ids, metadata); read on every span, whatever convention reads it.
    """

    name: str
    extract: Callable[[Span], SpanFacts | None]
    mark: Callable[[Span], Mark | None]
    prefixes: tuple[str, ...] = ()
    matches: Callable[[Span], bool] | None = None
    reads_first: Callable[[Span], bool] | None = None
    context: ContextKeys = field(default_factory=ContextKeys)


CONVENTIONS: tuple[Convention, ...] = (
    Convention("langfuse", _langfuse.extract, _langfuse.mark, prefixes=_langfuse.PREFIXES,
               context=_langfuse.CONTEXT),
    Convention("openinference", _openinference.extract, _openinference.mark, matches=_openinference.matches,
               context=_openinference.CONTEXT),
    Convention("openllmetry", _openllmetry.extract, _openllmetry.mark, prefixes=_openllmetry.PREFIXES,
               context=_openllmetry.CONTEXT),
    Convention("vercel", _vercel.extract, _vercel.mark, matches=_vercel.matches,
               reads_first=_vercel.reads_first, context=_vercel.CONTEXT),
    Convention("mastra", _mastra.extract, _mastra.mark, matches=_mastra.matches, context=_mastra.CONTEXT),
    Convention("pydantic_ai", _pydantic_ai.extract, _pydantic_ai.mark, matches=_pydantic_ai.matches),
    Convention("anthropic", _anthropic.extract, _genai.mark, matches=_anthropic.matches),
    Convention("genai", _adk.extract, _adk.mark, matches=_adk.matches, reads_first=_adk.matches),
    Convention("genai", _genai.extract, _genai.mark, matches=_genai.matches, context=_genai.CONTEXT),
)
_ANY_PREFIX = tuple(p for c in CONVENTIONS for p in c.prefixes)
# Context keys: OTel's own (the genai entry) first, then each library's in registry order.
_CONTEXTS = [CONVENTIONS[-1].context, *(c.context for c in CONVENTIONS[:-1])]
_CONVERSATION_KEYS = tuple(k for c in _CONTEXTS for k in c.conversation)
_RESOURCE_KEYS = tuple(k for c in _CONTEXTS for k in c.resource)
_CONTEXT_PREFIXES = tuple(p for c in _CONTEXTS for p in c.prefixes)
_CONTEXT_MAPS = tuple(k for c in _CONTEXTS for k in c.maps)


_NO_HITS: frozenset[str] = frozenset()
# The conventions whose prefixes each attribute key seen so far starts with: one dict lookup
# per key (its hash is cached on the key since the decoder put it in the span's attributes)
# instead of a prefix scan. Keys are few (a library writes the same ones on every span);
# the memo starts over past `_KEY_MEMO_MAX` all the same.
_KEY_HITS: dict[str, frozenset[str]] = {}
_KEY_MEMO_MAX = 8192


def _key_hits(k: str) -> frozenset[str]:
    hits = frozenset(c.name for c in CONVENTIONS if c.prefixes and k.startswith(c.prefixes)) \
        if k.startswith(_ANY_PREFIX) else _NO_HITS
    if len(_KEY_HITS) >= _KEY_MEMO_MAX:
        _KEY_HITS.clear()
    _KEY_HITS[k] = hits
    return hits


def _prefix_hits(span: Span) -> frozenset[str]:
    hits = _NO_HITS
    memo = _KEY_HITS
    for k in span.attributes:  # one pass over the keys for every prefix test
        found = memo.get(k)
        if found is None:
            found = _key_hits(k)
        if found:
            hits = hits | found
    return hits


def detect_conventions(span: Span) -> list[str]:
    """Every convention a span shows, in the precedence order of conventions.md §0.

    One span can carry several (OpenLLMetry copies `gen_ai.agent.name` onto descendants;
    Mastra and the Anthropic SDK emit `gen_ai.*` too); the first is the one that reads it.
    """
    hits = _prefix_hits(span)
    return [c.name for c in CONVENTIONS
            if c.name in hits or (c.matches is not None and c.matches(span))]


_READS_FIRST = tuple((c, c.reads_first) for c in CONVENTIONS if c.reads_first is not None)
# Each convention with its `matches` test, left out where it is the convention's `reads_first`
# test (asked already, and false, by the time `_first_read` goes through the list).
_SHOWN_BY = tuple((c, None if c.matches is c.reads_first else c.matches) for c in CONVENTIONS)


@overload
def _first_read(span: Span, marks: Literal[False]) -> SpanFacts | None: ...
@overload
def _first_read(span: Span, marks: Literal[True]) -> Mark | None: ...
def _first_read(span: Span, marks: bool) -> SpanFacts | Mark | None:
    """What the first convention that reads `span` says: its mark, or its facts. Asked in
    order: a convention that reads the span first, then every convention the span shows."""
    for c, reads_first in _READS_FIRST:
        if reads_first(span):
            return c.mark(span) if marks else c.extract(span)
    hits = _prefix_hits(span)
    for c, matches in _SHOWN_BY:
        if c.name in hits or (matches is not None and matches(span)):
            out = c.mark(span) if marks else c.extract(span)
            if out is not None:
                return out
    return None


def extract_span(span: Span) -> SpanFacts | None:
    """The facts of one span, read by the first convention it shows (or one that reads it
    first); None for a span no convention claims (HTTP server spans and the like)."""
    return _first_read(span, False)


def mark_span(span: Span) -> Mark | None:
    """What `extract_span(span)` would say the span is (role, agent identity), without
    reading its content; None when no convention claims it."""
    return _first_read(span, True)


def conversation_id(spans: Iterable[Span]) -> str | None:
    """The conversation (thread, session) id the first of `spans` that records one records,
    by any convention's keys."""
    return _first_of(spans, _CONVERSATION_KEYS)


def resource_id(spans: Iterable[Span]) -> str | None:
    """The resource (user) id the first of `spans` that records one records, by any
    convention's keys."""
    return _first_of(spans, _RESOURCE_KEYS)


def _first_of(spans: Iterable[Span], keys: tuple[str, ...]) -> str | None:
    for s in spans:  # `first_attr` of each span, inlined: most spans have none of the keys
        a = s.attributes
        for k in keys:
            v = a.get(k)
            if v is not None and v != "":
                return str(v)
    return None


# The length of the first context prefix each attribute key seen so far starts with (0: none),
# memoized per key like `_KEY_HITS`.
_CONTEXT_PREFIX_LEN: dict[str, int] = {}


def _context_prefix_len(k: str) -> int:
    n = 0
    if k.startswith(_CONTEXT_PREFIXES):  # one C call for the common miss
        n = next(len(p) for p in _CONTEXT_PREFIXES if k.startswith(p))
    if len(_CONTEXT_PREFIX_LEN) >= _KEY_MEMO_MAX:
        _CONTEXT_PREFIX_LEN.clear()
    _CONTEXT_PREFIX_LEN[k] = n
    return n


def request_context(span: Span) -> dict[str, Any]:
    """The metadata a span records, flattened: every convention's prefixed keys without their
    prefix, then the entries of its JSON metadata maps. Values as decoded (bytes stay bytes)."""
    ctx: dict[str, Any] = {}
    memo = _CONTEXT_PREFIX_LEN
    for k, v in span.attributes.items():
        n = memo.get(k)
        if n is None:
            n = _context_prefix_len(k)
        if n:
            ctx[k[n:]] = v
    for key in _CONTEXT_MAPS:
        meta = span.attributes.get(key)
        if isinstance(meta, str):
            parsed = parse_json_attr(meta)
            if parsed.ok and isinstance(parsed.value, dict):
                ctx.update(parsed.value)
        elif isinstance(meta, dict):
            ctx.update(meta)
    return ctx

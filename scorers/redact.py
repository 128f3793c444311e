"""PII redaction for judge prompts: an input processor usable on any `Judge`.

Span content is sent to a third-party model when a judge scores it. `PiiRedactor` replaces
personal data and secrets in the judge's messages with stable placeholders before the model
sees them:

| kind      | placeholder   | what is found                                                    |
|-----------|---------------|------------------------------------------------------------------|
| `email`   | `[EMAIL_n]`   | e-mail addresses                                                 |
| `phone`   | `[PHONE_n]`   | E.164 (`+14155552671`), `+44 20 7946 0958`, `(415) 555-2671`,    |
|           |               | `415-555-2671`, `415.555.2671`, `01 23 45 67 89`, `020 7946 0958`|
| `card`    | `[CARD_n]`    | 13–19 digit card numbers (spaces/dashes allowed) passing Luhn    |
| `iban`    | `[IBAN_n]`    | IBANs passing the ISO 13616 mod-97 check                         |
| `api_key` | `[API_KEY_n]` | `sk-ant-…`, `sk-…`, `sk_live_…`, `AKIA…`/`ASIA…`, `ghp_…` (and  |
|           |               | `gho_/ghu_/ghs_/ghr_/github_pat_`), Slack `xox?-…`               |
| `token`   | `[TOKEN_n]`   | JWTs, and the credential after `Bearer`                          |

Every candidate is checked before it is replaced (Luhn, mod-97, digit counts, NANP area
codes, word boundaries), so order ids (`ORD-4111-1111-1111-1111`, `#4111111111111111`),
version numbers, timestamps, prices and ordinary numbers are left alone.

Placeholders are stable per scorer run: the same value always gets the same placeholder, and
different values of a kind are numbered in order of appearance. The numbering lives in a
`RedactionVault`, scoped (in this order) by `PiiRedactor.scope()`, else by the running asyncio
task (a scorer run's steps run in one task, so every judge call of the run shares one vault),
else per call. A host that scores many runs one after another in a single task should wrap each
run in `with PiiRedactor.scope():` so numbering restarts per run. The vault keeps only SHA-256
digests of the values, never the values, and lives only as long as its scope.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import re
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

__all__ = ["KINDS", "PiiRedactor", "RedactionVault", "iban_is_valid", "luhn_is_valid"]

KINDS: tuple[str, ...] = ("api_key", "token", "email", "iban", "card", "phone")
"""Every kind the redactor knows, in the order overlapping candidates are preferred."""

_LABELS: dict[str, str] = {
    "email": "EMAIL", "phone": "PHONE", "card": "CARD", "iban": "IBAN",
    "api_key": "API_KEY", "token": "TOKEN",
}

# Keys whose values are message structure, not content: never rewritten.
_STRUCTURAL_KEYS = frozenset({
    "role", "type", "id", "tool_use_id", "tool_call_id", "name", "cache_control", "media_type",
    "model", "format", "state",
})


# --------------------------------------------------------------------------- checks


def luhn_is_valid(digits: str) -> bool:
    """True when the digit string passes the Luhn (mod 10) check used by payment cards."""
    if not digits.isdigit():
        return False
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


# ISO 13616 lengths of the IBAN registry; unknown countries only need 15–34 characters.
_IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20,
    "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18,
    "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27,
    "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27,
    "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19,
    "SK": 24, "SM": 27, "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}


def iban_is_valid(iban: str) -> bool:
    """True when `iban` (spaces allowed) has a plausible length and passes mod-97."""
    compact = iban.replace(" ", "").upper()
    if not (15 <= len(compact) <= 34) or not compact.isalnum():
        return False
    expected = _IBAN_LENGTHS.get(compact[:2])
    if expected is not None and len(compact) != expected:
        return False
    rearranged = compact[4:] + compact[:4]
    number = "".join(str(int(ch, 36)) for ch in rearranged)
    return int(number) % 97 == 1


def _digits(text: str) -> str:
    return "".join(ch for ch in text if ch.isdigit())


# --------------------------------------------------------------------------- patterns

# Not glued to a word, an id prefix (`ORD-`, `v1.`), a `#`, a path or a `+`.
_START = r"(?<![\w#/+@])(?<![A-Za-z0-9][-.])"
# Not followed by a word character or by a separator and more digits (`…-99`, `….5`).
_END = r"(?![\w]|[-.]\d)"


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    check: Callable[[str], bool] = lambda _value: True
    key: Callable[[str], str] = lambda value: value
    group: str | None = None
    """Only this named group is replaced (e.g. the credential after `Bearer`)."""
    hints: tuple[str, ...] = ()
    """Literals one of which every match contains: a text without any skips the rule."""


def _phone_check(value: str) -> bool:
    digits = _digits(value)
    if value.lstrip().startswith("+"):
        if digits.startswith("1"):  # every +1 number is NANP: 1 + 10 digits
            return len(digits) == 11 and digits[1] in "23456789" and digits[4] in "23456789"
        return 8 <= len(digits) <= 15
    return 10 <= len(digits) <= 11


def _phone_key(value: str) -> str:
    digits = _digits(value)
    if value.lstrip().startswith("+"):
        return "+" + digits
    if len(digits) == 10 and value.lstrip()[:1] in "(23456789":
        return "+1" + digits  # a NANP national number is the same line as its +1 form
    if len(digits) == 11 and digits.startswith("1") and not value.lstrip().startswith("0"):
        return "+" + digits  # 1-800-555-0199
    return digits


def _card_check(value: str) -> bool:
    digits = _digits(value)
    if not 13 <= len(digits) <= 19:
        return False
    seps = {ch for ch in value if not ch.isdigit()}
    return len(seps) <= 1 and luhn_is_valid(digits)


_RULES: tuple[_Rule, ...] = (
    _Rule("api_key", re.compile(
        r"(?<![A-Za-z0-9_-])(?:"
        r"sk-ant-[A-Za-z0-9_-]{16,}"
        r"|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"
        r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"
        r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
        r"|gh[pousr]_[A-Za-z0-9]{36,255}"
        r"|github_pat_[A-Za-z0-9_]{22,255}"
        r"|xox[abposre]-[A-Za-z0-9-]{10,}"
        r")(?![A-Za-z0-9_-])"),
        hints=("sk-", "sk_", "rk_", "AKIA", "ASIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
               "github_pat_", "xox")),
    _Rule("token", re.compile(
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"
        r"(?![A-Za-z0-9_-])"), hints=("eyJ",)),
    # The credential after `Bearer`, only when it looks like one (has a digit, 8+ chars),
    # so prose like "Bearer authentication" is left alone.
    _Rule("token", re.compile(
        r"\b[Bb]earer\s+(?P<secret>(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,})"
        r"(?![A-Za-z0-9._~+/=-])"), group="secret", hints=("earer",)),
    _Rule("email", re.compile(
        r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@"
        r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}(?![\w-])"),
        key=str.lower, hints=("@",)),
    _Rule("iban", re.compile(
        r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])"),
        check=iban_is_valid, key=lambda v: v.replace(" ", "").upper()),
    _Rule("card", re.compile(_START + r"[2-6]\d{3}(?:[ -]?\d){9,15}" + _END),
          check=_card_check, key=_digits),
    _Rule("phone", re.compile(
        r"(?<![\w+#/])\+\d{1,3}(?:[ .-]?(?:\(\d{1,4}\)|\d{1,5})){1,6}" + _END),
        check=_phone_check, key=_phone_key, hints=("+",)),
    # NANP national: (415) 555-2671, 415-555-2671, 415.555.2671, 415 555 2671, 1-800-555-0199.
    _Rule("phone", re.compile(
        _START + r"(?:1[-. ])?"
        r"(?:\([2-9]\d{2}\) ?|[2-9]\d{2}(?P<s>[-. ]))[2-9]\d{2}(?(s)(?P=s)|[-. ])\d{4}"
        + _END), check=_phone_check, key=_phone_key),
    # European national forms with a trunk 0: 01 23 45 67 89, 020 7946 0958, (020) 7946 0958,
    # 0151-2345-6789.
    _Rule("phone", re.compile(
        _START + r"(?:0[1-9](?:[ .-]\d{2}){4}|0\d{2,4}[ -]\d{3,4}[ -]?\d{3,4}"
        r"|\(0\d{2,4}\) ?\d{3,4}[ -]?\d{3,4})" + _END),
        check=_phone_check, key=_phone_key),
)


# --------------------------------------------------------------------------- vault


@dataclass
class RedactionVault:
    """Placeholder numbering for one scope (one scorer run).

    Attributes:
        counts: how many values of each kind were replaced (occurrences, not distinct values).
    """

    _by_key: dict[tuple[str, str], str] = field(default_factory=dict)
    _next: Counter[str] = field(default_factory=Counter)
    counts: Counter[str] = field(default_factory=Counter)

    def placeholder(self, kind: str, key: str) -> str:
        """The placeholder for `key` of `kind`, allocating the next number on first sight."""
        self.counts[kind] += 1
        # Only a digest of the value is kept: the vault never holds the personal data itself.
        digest = hashlib.sha256(f"{kind}\0{key}".encode()).hexdigest()
        found = self._by_key.get((kind, digest))
        if found is None:
            self._next[kind] += 1
            found = f"[{_LABELS[kind]}_{self._next[kind]}]"
            self._by_key[(kind, digest)] = found
        return found

    def __len__(self) -> int:
        return len(self._by_key)


_MAX_TASK_VAULT = 4096
"""Distinct values a task's vault holds before it is replaced by a fresh one."""

_SCOPE: contextvars.ContextVar[RedactionVault | None] = contextvars.ContextVar(
    "scorecar_redaction_scope", default=None)


# --------------------------------------------------------------------------- redactor


class PiiRedactor:
    """A judge input processor that replaces personal data and secrets with placeholders.

    Example:
        >>> r = PiiRedactor()
        >>> r.redact("mail bob@example.com or bob@example.com, card 4111 1111 1111 1111")
        'mail [EMAIL_1] or [EMAIL_1], card [CARD_1]'

    Use it on any judge: `Judge(..., input_processors=[PiiRedactor()])`.

    Args:
        kinds: the kinds to redact (default: all of `KINDS`).
    """

    def __init__(self, *, kinds: Iterable[str] | None = None) -> None:
        chosen = tuple(KINDS if kinds is None else kinds)
        unknown = sorted(set(chosen) - set(KINDS))
        if unknown:
            raise ValueError(f"unknown PII kinds {unknown}; known: {list(KINDS)}")
        self.kinds: tuple[str, ...] = chosen
        self._rules = tuple(r for r in _RULES if r.kind in chosen)
        self._rank = {kind: i for i, kind in enumerate(KINDS)}
        # Vaults of running tasks; an entry goes away with its task.
        self._task_vaults: weakref.WeakKeyDictionary[asyncio.Task[Any], RedactionVault] = (
            weakref.WeakKeyDictionary())

    # -- scoping -------------------------------------------------------------------------

    @staticmethod
    @contextlib.contextmanager
    def scope(vault: RedactionVault | None = None) -> Iterator[RedactionVault]:
        """Share one placeholder numbering across every redaction inside the `with` block."""
        active = vault if vault is not None else RedactionVault()
        token = _SCOPE.set(active)
        try:
            yield active
        finally:
            _SCOPE.reset(token)

    def _current_vault(self) -> RedactionVault:
        scoped = _SCOPE.get()
        if scoped is not None:
            return scoped
        try:
            task = asyncio.current_task()
        except RuntimeError:
            task = None
        if task is None:
            return RedactionVault()
        vault = self._task_vaults.get(task)
        # A long-lived task that scores many runs starts over now and then, so the vault stays
        # small; wrap each run in `scope()` for exact per-run numbering there.
        if vault is None or len(vault) >= _MAX_TASK_VAULT:
            vault = self._task_vaults[task] = RedactionVault()
        return vault

    # -- text ----------------------------------------------------------------------------

    def find(self, text: str) -> list[tuple[int, int, str, str]]:
        """Every value to replace in `text`: `(start, end, kind, key)`, sorted, not overlapping."""
        found: list[tuple[int, int, str, str]] = []
        for rule in self._rules:
            if rule.hints and not any(h in text for h in rule.hints):
                continue
            for match in rule.pattern.finditer(text):
                span = _validated_span(text, rule, match)
                if span is not None:
                    start, end = span
                    found.append((start, end, rule.kind, rule.key(text[start:end])))
        # Earliest first; at one start, the preferred kind, then the longest.
        found.sort(key=lambda f: (f[0], self._rank[f[2]], -(f[1] - f[0])))
        kept: list[tuple[int, int, str, str]] = []
        for item in found:
            if kept and item[0] < kept[-1][1]:
                continue
            kept.append(item)
        return kept

    def redact(self, text: str, vault: RedactionVault | None = None) -> str:
        """Return `text` with every value found replaced by its placeholder.

        Args:
            text: the text to redact.
            vault: the numbering to use; default: the current scope's (see the module doc).
        """
        spans = self.find(text)
        if not spans:
            return text
        active = vault if vault is not None else self._current_vault()
        pieces: list[str] = []
        last = 0
        for start, end, kind, key in spans:
            pieces.append(text[last:start])
            pieces.append(active.placeholder(kind, key))
            last = end
        pieces.append(text[last:])
        return "".join(pieces)

    # -- messages ------------------------------------------------------------------------

    def process_input(self, messages: Sequence[Any]) -> list[Any]:
        """Redact the judge's messages (the input-processor hook).

        Accepts strings, Anthropic-style dicts (`{"role", "content": str | [blocks]}`),
        nested lists and dicts, and pydantic models; returns new values and never changes
        the caller's. Structural fields (`role`, `type`, ids, names) are kept as they are.
        """
        vault = self._current_vault()
        return [self._walk(m, vault) for m in messages]

    def _walk(self, value: Any, vault: RedactionVault) -> Any:
        if isinstance(value, str):
            return self.redact(value, vault)
        if isinstance(value, BaseModel):
            updates = {name: self._walk(getattr(value, name), vault)
                       for name in type(value).model_fields if name not in _STRUCTURAL_KEYS}
            extra = value.model_extra or {}
            copy = value.model_copy(update=updates)
            for name, item in extra.items():
                if name not in _STRUCTURAL_KEYS:
                    setattr(copy, name, self._walk(item, vault))
            return copy
        if isinstance(value, Mapping):
            return {k: (v if k in _STRUCTURAL_KEYS else self._walk(v, vault))
                    for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._walk(v, vault) for v in value)
        return value

    def __repr__(self) -> str:
        return f"PiiRedactor(kinds={list(self.kinds)!r})"


def _validated_span(text: str, rule: _Rule, match: re.Match[str]) -> tuple[int, int] | None:
    """The span to replace for one regex match, or None when no prefix of it checks out.

    A greedy match may swallow a following word or number ("… 32 THEN", "… 2671 42"), so
    a candidate that fails its check is shortened at whitespace until one passes.
    """
    if rule.group is not None:
        start, end = match.span(rule.group)
        return (start, end) if rule.check(text[start:end]) else None
    start, end = match.span()
    while end > start:
        if rule.check(text[start:end]):
            return start, end
        cut = max(text.rfind(" ", start, end), text.rfind("\t", start, end))
        if cut <= start:
            return None
        end = cut
        while end > start and not (text[end - 1].isalnum() or text[end - 1] == ")"):
            end -= 1
        # The shortened candidate must still be a full match of the rule by itself.
        if rule.pattern.fullmatch(text, start, end) is None:
            return None
    return None

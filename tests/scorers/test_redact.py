"""The PII redactor against a hand-written table of what must and must not be replaced."""

from __future__ import annotations

import asyncio
import copy

import pytest

from scorers.redact import PiiRedactor, RedactionVault, iban_is_valid, luhn_is_valid
from scorers.types import Message

# (text, expected text after redaction): each expected value is written by hand.
POSITIVE: list[tuple[str, str]] = [
    # e-mail
    ("Contact alice@example.com today", "Contact [EMAIL_1] today"),
    ("mail: Bob.Smith+news@sub.example.co.uk.", "mail: [EMAIL_1]."),
    ("<jane_doe99@mail-server.io>", "<[EMAIL_1]>"),
    ("a@b.de and c@d.fr", "[EMAIL_1] and [EMAIL_2]"),
    ("x@example.com, X@Example.com, x@example.com", "[EMAIL_1], [EMAIL_1], [EMAIL_1]"),
    # phone numbers
    ("call +14155552671 now", "call [PHONE_1] now"),
    ("Tel: +1 415 555 2671", "Tel: [PHONE_1]"),
    ("Tel: +1-415-555-2671.", "Tel: [PHONE_1]."),
    ("UK office +44 20 7946 0958", "UK office [PHONE_1]"),
    ("Paris +33 1 23 45 67 89", "Paris [PHONE_1]"),
    ("Berlin +49 30 12345678", "Berlin [PHONE_1]"),
    ("(415) 555-2671", "[PHONE_1]"),
    ("ring 415-555-2671 or 415.555.2671", "ring [PHONE_1] or [PHONE_1]"),
    ("my cell is 212 555 0187", "my cell is [PHONE_1]"),
    ("appelez le 01 23 45 67 89", "appelez le [PHONE_1]"),
    ("London 020 7946 0958", "London [PHONE_1]"),
    ("+1 415 555 2671 and (415) 555-2671", "[PHONE_1] and [PHONE_1]"),
    ("toll free 1-800-555-0199 or +1 (800) 555-0199", "toll free [PHONE_1] or [PHONE_1]"),
    ("office (020) 7946 0958, mobile +44 (0)7700 900123", "office [PHONE_1], mobile [PHONE_2]"),
    ("India +91 98765 43210", "India [PHONE_1]"),
    # payment cards (Luhn-valid)
    ("card 4111 1111 1111 1111 exp 12/27", "card [CARD_1] exp 12/27"),
    ("4111-1111-1111-1111", "[CARD_1]"),
    ("paid with 5555555555554444.", "paid with [CARD_1]."),
    ("amex 3782 822463 10005", "amex [CARD_1]"),
    ("discover 6011111111111117", "discover [CARD_1]"),
    ("cards 4012888888881881 and 4012 8888 8888 1881", "cards [CARD_1] and [CARD_1]"),
    # API keys and tokens
    ("key=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv-1234", "key=[API_KEY_1]"),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx", "OPENAI_API_KEY=[API_KEY_1]"),
    ("aws AKIAIOSFODNN7EXAMPLE", "aws [API_KEY_1]"),
    ("token ghp_" + "A1b2C3d4E5" * 3 + "abcdef", "token [API_KEY_1]"),
    ("slack xoxb-123456789012-1234567890123-AbCdEfGh", "slack [API_KEY_1]"),
    ("Authorization: Bearer abc123def456ghi789", "Authorization: Bearer [TOKEN_1]"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r",
     "jwt [TOKEN_1]"),
    ("stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe [API_KEY_1]"),
    # IBANs (mod-97 valid)
    ("IBAN GB82 WEST 1234 5698 7654 32 THEN", "IBAN [IBAN_1] THEN"),
    ("pay to DE89370400440532013000", "pay to [IBAN_1]"),
    ("FR14 2004 1010 0505 0001 3M02 606", "[IBAN_1]"),
    # several kinds at once, numbered per kind
    ("a@x.io, b@x.io, 4111111111111111, a@x.io",
     "[EMAIL_1], [EMAIL_2], [CARD_1], [EMAIL_1]"),
]

NEGATIVE: list[str] = [
    # card-like numbers that fail Luhn, or are glued to an id
    "card 4111 1111 1111 1112",
    "4111-1111-1111-1113",
    "5555555555554445",
    "order ORD-4111-1111-1111-1111 shipped",
    "order #4111111111111111",
    "tracking 1Z999AA10123456784",
    "SKU-5555555555554444",
    # order ids and references
    "ORD-2024-000123",
    "INV-415-555-2671",
    "ticket #4155552671",
    "ref A12-334-5567",
    # version numbers
    "v1.2.3",
    "upgrade to 10.0.19041.1",
    "release 2.31.0-rc.1+build.20241129",
    "node 20.20.2",
    # timestamps and dates
    "2026-11-29T10:00:00Z",
    "at 2026-11-29 10:00:00.123456",
    "epoch 1732875600 or 1732875600000 ms",
    "29/11/2026 10:00",
    # prices and ordinary numbers
    "total $1,234.56",
    "€ 4 111,11",
    "1234567890123",
    "we sold 4155552671 units",
    "pi is 3.14159265358979",
    "room 212, floor 5, seat 0187",
    # lookalikes of secrets and e-mail
    "ask-me-anything-about-it-please",
    "Bearer authentication is recommended",
    "the task-sk-runner module",
    "user@localhost",
    "@alice mentioned it",
    "GB82 WEST 1234 5698 7654 33",
    "a version 123.456.7890 string",
    "ISBN 978-3-16-148410-0",
    "call ext. 555-0100",
    "IP 10.0.0.1 port 4155",
    "192.168.100.200",
    "uuid 550e8400-e29b-41d4-a716-446655440000",
]


@pytest.mark.parametrize(("text", "expected"), POSITIVE)
def test_positive_cases_are_replaced(text: str, expected: str) -> None:
    assert PiiRedactor().redact(text, RedactionVault()) == expected


@pytest.mark.parametrize("text", NEGATIVE)
def test_negative_cases_are_left_alone(text: str) -> None:
    assert PiiRedactor().redact(text, RedactionVault()) == text


def test_table_sizes() -> None:
    assert len(POSITIVE) >= 30 and len(NEGATIVE) >= 30


def test_checksums() -> None:
    assert luhn_is_valid("4111111111111111") and not luhn_is_valid("4111111111111112")
    assert luhn_is_valid("378282246310005") and not luhn_is_valid("37828224631000x")
    assert iban_is_valid("GB82 WEST 1234 5698 7654 32")
    assert not iban_is_valid("GB82 WEST 1234 5698 7654 33")
    assert not iban_is_valid("GB82 WEST 1234 5698 7654")  # right checksum shape, wrong length


def test_kinds_can_be_chosen_and_unknown_kinds_are_refused() -> None:
    only_mail = PiiRedactor(kinds=["email"])
    assert (only_mail.redact("a@b.io +14155552671", RedactionVault())
            == "[EMAIL_1] +14155552671")
    with pytest.raises(ValueError, match="unknown PII kinds"):
        PiiRedactor(kinds=["email", "ssn"])


def test_process_input_rewrites_content_and_keeps_structure() -> None:
    messages = [
        {"role": "user", "content": "I am alice@example.com"},
        {"role": "user", "content": [{"type": "text", "text": "again alice@example.com, "
                                      "card 4111111111111111"}]},
        "bare string bob@example.com",
    ]
    before = copy.deepcopy(messages)
    with PiiRedactor.scope() as vault:
        out = PiiRedactor().process_input(messages)
    assert out == [
        {"role": "user", "content": "I am [EMAIL_1]"},
        {"role": "user", "content": [{"type": "text",
                                      "text": "again [EMAIL_1], card [CARD_1]"}]},
        "bare string [EMAIL_2]",
    ]
    assert messages == before  # the caller's messages are not changed
    assert vault.counts == {"email": 3, "card": 1}


def test_process_input_on_pydantic_messages() -> None:
    msg = Message.from_text("user", "reach me at +1 415 555 2671")
    (out,) = PiiRedactor().process_input([msg])
    assert isinstance(out, Message)
    assert out.text == "reach me at [PHONE_1]"
    assert out.content.parts[0].text == "reach me at [PHONE_1]"  # type: ignore[union-attr]
    assert msg.text == "reach me at +1 415 555 2671"


def test_placeholders_are_stable_within_a_task_and_fresh_in_another() -> None:
    redactor = PiiRedactor()

    async def one_run(first: str, second: str) -> list[str]:
        a = redactor.process_input([{"role": "user", "content": first}])
        b = redactor.process_input([{"role": "user", "content": second}])
        return [a[0]["content"], b[0]["content"]]

    async def main() -> tuple[list[str], list[str]]:
        r1 = await asyncio.create_task(one_run("x@a.io then y@a.io", "y@a.io and x@a.io"))
        r2 = await asyncio.create_task(one_run("y@a.io", "x@a.io"))
        return r1, r2

    r1, r2 = asyncio.run(main())
    # Same run (task): the same value keeps its number across judge calls.
    assert r1 == ["[EMAIL_1] then [EMAIL_2]", "[EMAIL_2] and [EMAIL_1]"]
    # Another run starts its own numbering.
    assert r2 == ["[EMAIL_1]", "[EMAIL_2]"]


def test_placeholder_text_is_not_redacted_again() -> None:
    redactor = PiiRedactor()
    vault = RedactionVault()
    once = redactor.redact("a@b.io 4111111111111111 +14155552671", vault)
    assert redactor.redact(once, vault) == once


def test_scope_restarts_numbering_and_the_vault_keeps_no_values() -> None:
    redactor = PiiRedactor()

    async def two_runs_in_one_task() -> list[str]:
        out = []
        for text in ("x@a.io y@a.io", "y@a.io"):
            with PiiRedactor.scope() as vault:
                out.append(redactor.process_input([{"role": "user", "content": text}])[0]
                           ["content"])
                assert "y@a.io" not in repr(vault.__dict__)  # digests only
        return out

    assert asyncio.run(two_runs_in_one_task()) == ["[EMAIL_1] [EMAIL_2]", "[EMAIL_1]"]

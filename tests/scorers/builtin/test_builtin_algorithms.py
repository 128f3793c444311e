"""Hand-worked values of the built-in scorers' algorithms and JavaScript string semantics."""

from __future__ import annotations

import random

from scorers.builtin import analyze_sentiment, compare_two_strings, extract_keywords
from scorers.builtin._js import collapse_ws, js_len, js_truthy, trim
from scorers.builtin.completeness import calculate_coverage
from scorers.builtin.textual_difference import count_changes, lcs_length, lcs_ratio
from scorers.builtin.tool_call_accuracy import check_tool_order


def _lcs_table(a: str, b: str) -> int:
    # The textbook dynamic programme, written independently of the bit-parallel one.
    rows = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            rows[i][j] = (rows[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1]
                          else max(rows[i - 1][j], rows[i][j - 1]))
    return rows[len(a)][len(b)]


def test_dice_night_nacht_is_a_quarter() -> None:
    # bigrams ni ig gh ht / na ac ch ht: one shared of 4 + 4 -> 2·1 / 8
    assert compare_two_strings("night", "nacht") == 0.25


def test_dice_edges() -> None:
    assert compare_two_strings("", "") == 1.0
    assert compare_two_strings("a", "a") == 1.0
    assert compare_two_strings("a", "b") == 0.0
    assert compare_two_strings("ab", "ab c") == 2 * 1 / (2 + 3 - 2)  # whitespace removed
    # NBSP is whitespace (removed); case is kept: 6 of 9 + 9 bigrams shared.
    assert compare_two_strings("Hello World", "hello\u00a0world") == 2 * 6 / 18
    # An emoji is two UTF-16 units: one bigram of its own, shared here.
    assert compare_two_strings("😀", "😀x") == 2 * 1 / (2 + 3 - 2)


def test_lcs_hand_worked() -> None:
    # ABCBDAB / BDCABA: LCS "BCBA" (length 4), ratio 2·4 / 13.
    assert lcs_length("ABCBDAB", "BDCABA") == 4
    assert lcs_ratio("ABCBDAB", "BDCABA") == 8 / 13
    assert lcs_ratio("same", "same") == 1.0
    assert lcs_ratio("", "x") == 0.0
    # Astral characters count as two units each: "😀a" vs "😀b" -> LCS 2 of 3 + 3.
    assert lcs_ratio("😀a", "😀b") == 4 / 6


def test_lcs_bit_parallel_equals_the_table() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = "".join(rng.choice("abcde") for _ in range(rng.randint(0, 70)))
        b = "".join(rng.choice("abcdef") for _ in range(rng.randint(0, 70)))
        assert lcs_length(a, b) == _lcs_table(a, b), (a, b)


def test_count_changes() -> None:
    assert count_changes("the cat sat", "the cat sat") == 0
    assert count_changes("the cat sat", "the  cat sat") == 1  # whitespace only
    assert count_changes("the cat sat", "the dog sat down") == 2


def test_javascript_whitespace_set() -> None:
    assert trim("\ufeff a \u00a0") == "a"  # BOM and NBSP are JavaScript whitespace
    assert trim("\x85a\x1c") == "\x85a\x1c"  # NEL and FS are not (unlike str.strip)
    assert collapse_ws("a \t\n b\u2028c") == "a b c"
    assert js_len("😀") == 2 and js_len("é") == 1


def test_javascript_truthiness() -> None:
    assert [js_truthy(v) for v in ([], {}, "x", 1, True)] == [True] * 5
    assert [js_truthy(v) for v in (None, "", 0, 0.0, float("nan"), False)] == [False] * 6


def test_sentiment_comparative_and_negation() -> None:
    # "not good": good (+3) negated by "not" -> -3 over 2 tokens.
    result = analyze_sentiment("not good")
    assert (result.score, result.comparative) == (-3, -1.5)
    # An empty text is one empty token, so comparative 0.
    assert analyze_sentiment("").comparative == 0.0
    # JavaScript quirk kept: `negators["constructor"]` is truthy in the `sentiment` package.
    assert analyze_sentiment("constructor good").score == -3


def test_keywords_drop_stop_words_digits_and_html() -> None:
    assert extract_keywords("<b>What</b> is the capital of France? 123") == ["capital", "france"]
    assert extract_keywords("See https://Example.com/X now") == ["https://Example.com/X"]


def test_coverage_rules() -> None:
    assert calculate_coverage([], []) == 1.0
    assert calculate_coverage([], ["x"]) == 0.0
    assert calculate_coverage(["cat"], ["cats"]) == 0.0  # short words need equality
    assert calculate_coverage(["walk"], ["walked"]) == 1.0  # 4/6 > 0.6
    assert calculate_coverage(["run"], ["running"]) == 0.0
    # The ratio must be MORE than 0.6: exactly 3/5 does not cover (Mastra's `> 0.6`).
    assert calculate_coverage(["paris"], ["par"]) == 0.0
    assert calculate_coverage(["pari"], ["parisian"]) == 0.0  # 4/8
    assert calculate_coverage(["parisi"], ["pari"]) == 1.0  # 4/6


def test_tool_order() -> None:
    assert check_tool_order(["a", "x", "b"], ["a", "b"])
    assert not check_tool_order(["b", "a"], ["a", "b"])
    assert not check_tool_order(["a", "x", "b"], ["a", "b"], strict_mode=True)
    # First positions decide: a repeated tool does not rescue a wrong order.
    assert not check_tool_order(["b", "a", "b"], ["a", "b"])


def test_completeness_elements_rewrite_verb_phrases() -> None:
    from scorers.builtin._elements import extract_elements

    # As compromise's toInfinitive: auxiliaries and modals go, verbs take their base form,
    # a lone copula becomes `be`; accents are stripped, `I'm` also leaves `m`.
    words = extract_elements("Your order was delayed and will ship on Monday.")
    assert {"delay", "ship", "order", "monday"} <= set(words)
    assert not {"was", "will", "delayed"} & set(words)
    assert "be" in extract_elements("What is the capital of France?")
    assert set(extract_elements("I'm sorry, café")) == {"i", "m", "be", "sorry", "cafe"}
    assert extract_elements("   ") == []

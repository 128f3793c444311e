"""Completeness's word rules, one hand-checked sentence per rule (found by bench/mutation.py).

The parity corpus checks the rules only in aggregate (mean difference to Mastra within 0.01),
so a rule can break without moving the mean. The elements are what a user reads in the
step results (`inputElements`, `missingElements`): each sentence here has its verbs in their
base form, as compromise's `infinitive()` gives them.
"""

from __future__ import annotations

import pytest

from scorers import AgentRunInput, Message, ScorerRun
from scorers.builtin._elements import extract_elements
from scorers.builtin.completeness import create_completeness_scorer

CASES = [
    # -ied / -ies -> -y (also five-letter words)
    ("She studied maths.", ["she", "study", "maths"]),
    ("She cried.", ["she", "cry"]),
    ("It studies the data.", ["it", "study", "the", "data"]),
    ("She cries.", ["she", "cry"]),
    # -eed keeps its stem; four-letter -ed words
    ("They agreed.", ["they", "agree"]),
    ("We used it.", ["we", "use", "it"]),
    ("We needed it.", ["we", "need", "it"]),
    # doubled consonants: undone, except s/f/z and a one-syllable -ll
    ("It stopped the car.", ["it", "stop", "the", "car"]),
    ("They planned it.", ["they", "plan", "it"]),
    ("She cancelled the trip.", ["she", "cancel", "the", "trip"]),
    ("He called me.", ["he", "call", "me"]),
    ("It filled the cup.", ["it", "fill", "the", "cup"]),
    ("He yelled.", ["he", "yell"]),
    ("They added it.", ["they", "add", "it"]),
    ("She passed the test.", ["she", "pass", "the", "test"]),
    ("It buzzed.", ["it", "buzz"]),
    # a silent e restored
    ("We approved it.", ["we", "approve", "it"]),
    ("They reduced the price.", ["they", "reduce", "the", "price"]),
    ("She charged the phone.", ["she", "charge", "the", "phone"]),
    ("They changed it.", ["they", "change", "it"]),
    ("She handled it.", ["she", "handle", "it"]),
    ("We combined them.", ["we", "combine", "them"]),
    ("They computed it.", ["they", "compute", "it"]),
    ("They captured it.", ["they", "capture", "it"]),
    ("We desired it.", ["we", "desire", "it"]),
    ("She decided.", ["she", "decide"]),
    ("We included it.", ["we", "include", "it"]),
    ("We engaged them.", ["we", "engage", "them"]),
    ("They hoped.", ["they", "hope"]),
    ("They debated it.", ["they", "debate", "it"]),
    ("They declared it.", ["they", "declare", "it"]),
    # ... and not where the stem is complete
    ("It rained.", ["it", "rain"]),
    ("They aimed it.", ["they", "aim", "it"]),
    ("He sailed home.", ["he", "sail", "home"]),
    ("It clouded.", ["it", "cloud"]),
    ("It snowed.", ["it", "snow"]),
    ("He curled it.", ["he", "curl", "it"]),
    ("She opened it.", ["she", "open", "it"]),  # two syllables: no silent e
    # -ing after a copula or before an object
    ("She is making dinner.", ["she", "make", "dinner"]),
    ("He is studying law.", ["he", "study", "law"]),
    ("They are seeing it.", ["they", "see", "it"]),
    ("We are running it.", ["we", "run", "it"]),
    ("They bring it.", ["they", "bring", "it"]),  # not an -ing form
    ("The running dog", ["the", "running", "dog"]),  # an adjective stays
    # third person -s
    ("He watches the game.", ["he", "watch", "the", "game"]),
    ("She fixes the bug.", ["she", "fix", "the", "bug"]),
    ("It passes the test.", ["it", "pass", "the", "test"]),
    ("He pushes the cart.", ["he", "push", "the", "cart"]),
    ("She buzzes the door.", ["she", "buzz", "the", "door"]),
    ("He carries the box.", ["he", "carry", "the", "box"]),
    ("He goes home.", ["he", "go", "home"]),
    ("Which campus is it?", ["which", "campus", "be", "it"]),  # -us is no verb ending
    ("Which costs more?", ["which", "cost", "more"]),
    ("Anna owns 3 cars.", ["anna", "own", "3", "cars"]),
    ("Anna owns 3", ["anna", "own", "3"]),
    ("Anna visits Paris", ["anna", "visit", "paris"]),
    ("Costs the earth.", ["costs", "the", "earth"]),  # no subject: a noun
    # auxiliaries and modals vanish before a verb, copulas become "be"
    ("She will never own it.", ["she", "never", "own", "it"]),
    ("Can you help?", ["can", "you", "help"]),
    ("It starts at 10 am.", ["it", "start", "at", "10", "am"]),
    ("It has been sent.", ["it", "send"]),
    ("They have apples.", ["they", "have", "apples"]),
    ("They have running water.", ["they", "have", "running", "water"]),
    ("There is a cat.", ["there", "be", "a", "cat"]),
    ("I don't know.", ["i", "do", "not", "know"]),
    ("It's cold.", ["it", "s", "be", "cold"]),  # compromise keeps the "s" among the terms
    ("Anna's car is red.", ["anna", "s", "car", "be", "red"]),  # a possessive, no verb
]


@pytest.mark.parametrize(("text", "elements"), CASES, ids=[c[0] for c in CASES])
def test_verbs_come_out_in_their_base_form(text: str, elements: list[str]) -> None:
    assert extract_elements(text) == elements


async def test_missing_elements_compare_base_forms() -> None:
    run = ScorerRun(
        input=AgentRunInput(input_messages=[Message.from_text("user", "Who cancelled it?")]),
        output=[Message.from_text("assistant", "Anna cancelled it.")])
    result = await create_completeness_scorer().run(run)
    assert result.preprocess_step_result["missingElements"] == ["who"]
    assert result.score == pytest.approx(2 / 3)


def test_wont_is_will_not() -> None:
    from scorers.builtin._elements import _tokens

    assert [w for w, _ in _tokens("I won't go")] == ["i", "will", "not", "go"]

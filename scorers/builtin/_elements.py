"""The words completeness compares: a small rule-based stand-in for `compromise`.

Mastra's completeness scorer asks `compromise` for the nouns, the verbs turned into their
infinitive (which rewrites the document: auxiliaries vanish, `was delayed` becomes `delay`),
the topics and the terms, then splits each into lower-case ASCII words. What matters for the
score is the resulting *set* of words, and that set is the text's words with verb phrases
rewritten. These rules do that rewrite (contractions, auxiliaries and modals, copulas to
`be`, regular and irregular verb forms to their base) without a statistical tagger, so nothing
has to be downloaded or installed. They track Mastra's scores within the documented mean
absolute difference (see tests/scorers/builtin/test_completeness.py), not exactly.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["extract_elements", "normalize_string"]

_MARKS = re.compile("[\u0300-\u036f]")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def normalize_string(text: str) -> str:
    """NFD, combining marks U+0300–U+036F removed, lower-cased (Mastra's `normalizeString`)."""
    return _MARKS.sub("", unicodedata.normalize("NFD", text)).lower()


def _split_words(text: str) -> list[str]:
    return [w for w in _NON_ALNUM.sub(" ", normalize_string(text)).split(" ") if w]


_BE = frozenset({"am", "is", "are", "was", "were", "be", "been", "being"})
_HAVE = frozenset({"has", "have", "had", "having"})
_DO = frozenset({"do", "does", "did"})
_MODAL = frozenset({"will", "would", "shall", "should", "can", "could", "may", "might", "must"})
_ADVERBS = frozenset({
    "not", "never", "also", "still", "just", "already", "really", "usually", "always",
    "often", "only", "even", "now", "then", "quickly", "slightly", "probably", "currently",
    "actually", "definitely", "finally", "recently", "generally", "typically", "simply",
})
_PRONOUNS = frozenset({
    "i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us", "them", "this",
    "that", "there", "who", "what", "which", "someone", "anyone", "everyone", "something",
})
_DETERMINERS = frozenset({
    "the", "a", "an", "my", "your", "his", "her", "its", "our", "their", "this", "that",
    "these", "those", "some", "any", "each", "every", "no", "all", "both",
})
_PREPOSITIONS = frozenset({
    "to", "in", "on", "at", "for", "from", "with", "into", "onto", "by", "of", "about",
    "over", "under", "after", "before", "during", "through", "up", "out", "off", "via",
})
_OBJECT_STARTERS = _DETERMINERS | _PREPOSITIONS | frozenset(
    {"it", "them", "him", "me", "us", "you", "next", "last", "this", "that"})

# Irregular verb forms (past tense and participles) and their base forms.
_IRREGULAR = {
    "ate": "eat", "eaten": "eat", "became": "become", "began": "begin", "begun": "begin",
    "bent": "bend", "bit": "bite", "bitten": "bite", "blew": "blow", "blown": "blow",
    "broke": "break", "broken": "break", "brought": "bring", "built": "build",
    "bought": "buy", "caught": "catch", "chose": "choose", "chosen": "choose", "came": "come",
    "cost": "cost", "dealt": "deal", "dug": "dig", "done": "do", "drew": "draw",
    "drawn": "draw", "drank": "drink", "drunk": "drink", "drove": "drive", "driven": "drive",
    "fell": "fall", "fallen": "fall", "fed": "feed", "felt": "feel", "fought": "fight",
    "found": "find", "fled": "flee", "flew": "fly", "flown": "fly", "forgot": "forget",
    "forgotten": "forget", "froze": "freeze", "frozen": "freeze", "got": "get",
    "gotten": "get", "gave": "give", "given": "give", "went": "go", "gone": "go",
    "goes": "go", "grew": "grow", "grown": "grow", "hung": "hang", "heard": "hear",
    "hid": "hide", "hidden": "hide", "held": "hold", "kept": "keep", "knew": "know",
    "known": "know", "laid": "lay", "led": "lead", "left": "leave", "lent": "lend",
    "lay": "lie", "lain": "lie", "lost": "lose", "made": "make", "meant": "mean", "met": "meet",
    "paid": "pay", "proved": "prove", "proven": "prove", "ran": "run", "rang": "ring",
    "rung": "ring", "rode": "ride", "ridden": "ride", "rose": "rise", "risen": "rise",
    "said": "say", "saw": "see", "seen": "see", "sought": "seek", "sold": "sell", "sent": "send",
    "shook": "shake", "shaken": "shake", "shone": "shine", "shot": "shoot", "showed": "show",
    "shown": "show", "sang": "sing", "sung": "sing", "sank": "sink", "sunk": "sink",
    "sat": "sit", "slept": "sleep", "slid": "slide", "spoke": "speak", "spoken": "speak",
    "spent": "spend", "spun": "spin", "stood": "stand", "stole": "steal", "stolen": "steal",
    "stuck": "stick", "struck": "strike", "swore": "swear", "sworn": "swear", "swam": "swim",
    "swum": "swim", "took": "take", "taken": "take", "taught": "teach", "tore": "tear",
    "torn": "tear", "told": "tell", "thought": "think", "threw": "throw", "thrown": "throw",
    "understood": "understand", "woke": "wake", "woken": "wake", "wore": "wear",
    "worn": "wear", "won": "win", "wrote": "write", "written": "write", "did": "do",
    "does": "do", "has": "have", "had": "have", "withdrew": "withdraw", "overtook": "overtake",
    "undertook": "undertake", "mistook": "mistake", "rebuilt": "rebuild", "forgave": "forgive",
}
_NOT_PAST = frozenset({
    "need", "feed", "seed", "speed", "bleed", "breed", "exceed", "proceed", "succeed",
    "bed", "red", "shed", "wed", "bred", "fled", "sled", "led", "fed", "hundred", "sacred",
    "naked", "wicked", "indeed", "weed", "steed", "creed", "greed", "deed", "reed", "embed",
    "seabed", "hatred", "kindred", "sped", "shred", "ted", "fred",
})
_VOWELS = frozenset("aeiou")
_CONTRACTIONS = {
    "n't": "not", "'m": "am", "'re": "are", "'ve": "have", "'ll": "will", "'d": "would",
}
_NT_BASES = {"wo": "will", "won": "will", "can": "can", "ca": "can", "sha": "shall"}
_PRONOUN_S = frozenset({
    "it", "he", "she", "that", "there", "here", "what", "who", "where", "how", "let",
    "everything", "nothing", "something", "this",
})


def _is_consonant(ch: str) -> bool:
    return ch.isalpha() and ch not in _VOWELS


def _syllable_groups(stem: str) -> int:
    groups, prev = 0, False
    for ch in stem:
        vowel = ch in _VOWELS or ch == "y"
        if vowel and not prev:
            groups += 1
        prev = vowel
    return groups


def _restore(stem: str) -> str:
    """The base form of a verb whose `-ed`/`-ing` was cut off (`approv` -> `approve`)."""
    # A doubled consonant after a stem of two letters or more (`stopp`); `add`, `ebb`, `err`
    # are whole.
    if len(stem) > 3 and stem[-1] == stem[-2] and _is_consonant(stem[-1]):
        if stem[-1] == "l":
            # British doubling (`cancelled`) undoes; `called`, `filled`, `yelled` (one
            # syllable) keep their `ll`.
            return stem[:-1] if _syllable_groups(stem) > 1 and stem[-3] == "e" else stem
        if stem[-1] in "sfz":
            return stem
        return stem[:-1]
    last = stem[-1]
    prev = stem[-2] if len(stem) > 1 else ""
    needs_e = (
        last in "vcz"
        or (last == "s" and prev != "s" and not stem.endswith("ous"))
        or (last == "g" and (prev in "rd" or stem.endswith("ang") or stem.endswith("ag")))
        or (last == "l" and _is_consonant(prev) and prev not in "lrw")
        or (stem[-2:] in ("in", "at", "ut", "ur", "ar", "ir", "id") and len(stem) > 2
            and _is_consonant(stem[-3]))
        or stem.endswith("ud") and not stem.endswith("oud")
        or (
            _syllable_groups(stem) == 1 and len(stem) >= 2 and _is_consonant(last)
            and last not in "wxy" and prev in _VOWELS
            and (len(stem) == 2 or stem[-3] not in _VOWELS)
        )
    )
    return stem + "e" if needs_e else stem


def _base_of_past(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("eed"):
        return word[:-1]
    if word.endswith("ed") and len(word) > 3:
        stem = word[:-2]
        if stem.endswith("e"):
            return stem
        return _restore(stem)
    return word


def _base_of_ing(word: str) -> str:
    stem = word[:-3]
    if stem.endswith(("y", "e")):
        return stem
    return _restore(stem)


def _base_of_s(word: str) -> str:
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    return word[:-1]


def _is_past(word: str) -> bool:
    if word in _IRREGULAR:
        return word not in ("goes", "does", "has")
    return (word.endswith("ed") and len(word) > 3 and word not in _NOT_PAST
            and any(c in _VOWELS for c in word[:-2]))


def _is_ing(word: str) -> bool:
    return word.endswith("ing") and len(word) > 4 and any(c in _VOWELS for c in word[:-3])


def _is_verb_s(word: str) -> bool:
    return (word.endswith("s") and not word.endswith(("ss", "us", "is", "ous")) and len(word) > 3)


def _tokens(text: str) -> list[tuple[str, bool]]:
    """(word, capitalised) pairs; contractions expanded; a `,` `.` etc. ends a token run."""
    out: list[tuple[str, bool]] = []
    for raw in text.replace("\u2019", "'").split():
        core = raw.strip("\"()[]{}<>.,;:!?*")
        lower = core.lower()
        expanded: list[str] | None = None
        if lower.endswith("n't"):
            base = lower[:-3]
            expanded = [_NT_BASES.get(base, base), "not"]
        else:
            for suffix, full in _CONTRACTIONS.items():
                if suffix != "n't" and lower.endswith(suffix) and len(lower) > len(suffix):
                    # compromise keeps `I'm` whole among the nouns, so `m` is a word too.
                    expanded = [lower[: -len(suffix)], suffix[1:], full]
                    break
            else:
                if lower.endswith("'s") and lower[:-2] in _PRONOUN_S:
                    expanded = [lower[:-2], "s", "is"]
        if expanded is not None:
            out.extend((w, False) for w in expanded if w)
            continue
        capital = bool(core) and core[0].isupper()
        for i, word in enumerate(_split_words(core)):
            out.append((word, capital and i == 0))
        if raw and raw[-1] in ".,;:!?":
            out.append(("", False))  # clause boundary
    return out


def _next_content(words: list[str], i: int) -> str:
    j = i + 1
    while j < len(words) and words[j] in _ADVERBS:
        j += 1
    return words[j] if j < len(words) else ""


def _rewrite(tokens: list[tuple[str, bool]]) -> list[str]:
    words = [w for w, _ in tokens]
    caps = [c for _, c in tokens]
    out: list[str] = []
    for i, word in enumerate(words):
        if not word:
            continue
        prev = words[i - 1] if i > 0 else ""
        nxt = words[i + 1] if i + 1 < len(words) else ""
        after = _next_content(words, i)
        verbish_after = bool(after) and (
            after in _BE or after in _HAVE or _is_past(after) or _is_ing(after))
        if word in _MODAL:
            # `will own` -> `own`; `can you ...` keeps `can`.
            if after and after not in _PRONOUNS and after not in _DETERMINERS:
                continue
            out.append(word)
        elif word == "am" and prev.isdigit():
            out.append(word)  # `10 am` is a time, not a verb
        elif word in _BE:
            if verbish_after:
                continue
            out.append("be")
        elif word in _HAVE:
            if verbish_after and after not in _HAVE and (after in _BE or _is_past(after)):
                continue
            out.append("have")
        elif word in _DO:
            out.append("do")
        elif _is_past(word) and prev not in _DETERMINERS:
            out.append(_base_of_past(word))
        elif _is_ing(word) and (
            prev in _BE or (prev not in _DETERMINERS and (nxt in _OBJECT_STARTERS))
        ):
            out.append(_base_of_ing(word))
        elif _is_verb_s(word) and (
            prev in _PRONOUN_S or prev in ("which", "who")
            or (prev and prev not in _DETERMINERS and prev not in _PREPOSITIONS
                and not prev.endswith("s")
                and (nxt in _DETERMINERS or nxt.isdigit()
                     or (i + 1 < len(caps) and caps[i + 1])))
        ):
            out.append(_base_of_s(word))
        else:
            out.append(word)
    return out


def extract_elements(text: str) -> list[str]:
    """The de-duplicated words Mastra's completeness scorer would extract from `text`."""
    stripped = text.strip()
    if not stripped:
        return []
    words = _rewrite(_tokens(stripped))
    return list(dict.fromkeys(w2 for w in words for w2 in _split_words(w)))

"""The frame key: the original's rule, total, and blind to the value."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.frame import (
    LINKING_TOKENS,
    MAX_VALUE_TOKENS,
    MIN_FRAME_TOKENS,
    frame_key,
    normalize_claim,
    split_frame,
)


def test_the_original_examples() -> None:
    assert frame_key("The pool ceiling is 64") == "the pool ceiling is"
    assert frame_key("The capital of France is Paris.") == "the capital of france is"
    assert frame_key("Hines Ward plays the position of cornerback.") == (
        "hines ward plays the position of"
    )
    # greedy: the frame runs to the LAST linking token
    assert frame_key("Alice moved to Paris in 2020.") == "alice moved to paris in"
    assert split_frame("The pool ceiling is 64.") == ("the pool ceiling is", "64")


def test_what_has_no_key() -> None:
    assert frame_key("") is None
    assert frame_key("Drain the VIP before the deploy.") is None  # no linking token
    assert frame_key("Pool is 64.") is None  # a frame of two tokens
    assert frame_key("The plan is to do one two three four five six seven") is None  # > 6
    assert frame_key("THE POOL CEILING IS 64") is None  # linking tokens count in lowercase only
    assert frame_key("The pool ceiling is") is None  # no value
    assert frame_key("The basis for this") is None  # `is` inside a word is not a token


def test_a_preposition_inside_a_name_is_part_of_the_value() -> None:
    usa = "Robert A. Heinlein is a citizen of United States of America."
    assert split_frame(usa) == ("robert a. heinlein is a citizen of", "United States of America")
    assert frame_key(usa) == frame_key("Robert A. Heinlein is a citizen of Canada.")
    assert frame_key("Beatrix is a citizen of Kingdom of the Netherlands.") == (
        "beatrix is a citizen of"
    )
    # `is` always links, even between names; a lowercase word before `of` is no name
    assert frame_key("The capital of France is Paris.") == "the capital of france is"
    assert frame_key("The headquarters of Nokia is located in the city of Espoo.") == (
        "the headquarters of nokia is located in the city of"
    )


def test_whitespace_and_the_trailing_period_do_not_matter() -> None:
    assert frame_key("  The pool\n ceiling\tis   64 .") == "the pool ceiling is"
    assert frame_key("The pool ceiling is 64.") == frame_key("The pool ceiling is 64")
    assert normalize_claim(" a \n b ") == "a b"


# Words with no linking token inside (a value made of them never moves the frame).
_WORD = st.text(alphabet="abcdefghjkmnpqrtuvwxyzABCDEFGHJKLMNPQRTUVWXYZ0123456789-", min_size=1)
_PLAIN = _WORD.filter(lambda w: w.lower() not in LINKING_TOKENS)
_LOWER = st.text(alphabet="abcdefghjkmnpqrtuvwxyz0123456789", min_size=1).filter(
    lambda w: w not in LINKING_TOKENS
)
# A subject ending in a lowercase word: the link after it is never inside a name.
_SUBJECT = st.tuples(st.lists(_PLAIN, min_size=MIN_FRAME_TOKENS - 2, max_size=4), _LOWER).map(
    lambda t: [*t[0], t[1]]
)
_VALUE = st.lists(_PLAIN, min_size=1, max_size=MAX_VALUE_TOKENS)


@given(st.text())
def test_total_and_lowercase(text: str) -> None:
    key = frame_key(text)
    assert key is None or (
        key == key.lower()
        and len(key.split(" ")) >= MIN_FRAME_TOKENS
        and key.split(" ")[-1] in LINKING_TOKENS
        and normalize_claim(text).lower().startswith(key)
    )


@given(_SUBJECT, st.sampled_from(LINKING_TOKENS), _VALUE, _VALUE, st.booleans())
def test_the_key_is_blind_to_the_value(
    subject: list[str], link: str, a: list[str], b: list[str], period: bool
) -> None:
    end = "." if period else ""
    claim_a = " ".join([*subject, link, *a]) + end
    claim_b = " ".join([*subject, link, *b])
    key = " ".join([*subject, link]).lower()
    assert frame_key(claim_a) == frame_key(claim_b) == key
    parts = split_frame(claim_a)
    assert parts is not None and parts[1] == " ".join(a)


@given(_SUBJECT, st.sampled_from(LINKING_TOKENS), _VALUE)
def test_the_subject_is_part_of_the_key(subject: list[str], link: str, value: list[str]) -> None:
    other = [*subject[:-1], subject[-1] + "x"]
    assert frame_key(" ".join([*subject, link, *value])) != frame_key(
        " ".join([*other, link, *value])
    )


@given(_SUBJECT, st.sampled_from(LINKING_TOKENS), st.lists(_PLAIN, min_size=7, max_size=12))
def test_a_long_value_has_no_key(subject: list[str], link: str, value: list[str]) -> None:
    assert frame_key(" ".join([*subject, link, *value])) is None


@given(st.text())
def test_whitespace_normalisation_is_invisible(text: str) -> None:
    assert frame_key(text) == frame_key(" ".join(text.split()))

"""The secret detector: every kind found and named, the hard negatives left alone, redaction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.domain.secrets import RULES, find_secrets, first_in_fields, redact, rule_ids
from memhtml.eval.secret_samples import negatives, positives, tokens

POSITIVES = [(kind, text) for kind, texts in positives().items() for text in texts]


def test_every_rule_has_samples_and_every_sample_kind_is_a_rule() -> None:
    assert set(positives()) == set(rule_ids())
    assert len({r.id for r in RULES}) == len(RULES)


@pytest.mark.parametrize(("kind", "text"), POSITIVES)
def test_each_kind_is_found_and_named(kind: str, text: str) -> None:
    assert [h.rule for h in find_secrets(text)] == [kind]


@pytest.mark.parametrize(("kind", "text"), POSITIVES)
def test_redaction_leaves_no_byte_of_the_secret(kind: str, text: str) -> None:
    secret = tokens()[kind]
    out = redact(text)
    assert f"[redacted:{kind}]" in out
    core = secret.splitlines()[1] if kind == "private-key" else secret
    assert core not in out


@pytest.mark.parametrize("text", negatives())
def test_hard_negatives_hold_no_secret(text: str) -> None:
    assert find_secrets(text) == []


def test_a_secret_cut_by_nothing_is_found_among_prose_and_fields_are_named() -> None:
    tok = tokens()["github-pat"]
    fields = [("title", "Deploy notes"), ("claim", "Push with the bot token."), ("tag", tok)]
    assert first_in_fields(fields) == ("tag", "github-pat")
    assert first_in_fields(fields[:2]) is None


def test_an_identifier_or_reference_is_not_a_password_but_a_literal_is() -> None:
    assert find_secrets("password=hashed_password") == []
    assert find_secrets("token = request.form['token']") == []
    assert find_secrets("password = db.Column(db.String(120))") == []
    assert [h.rule for h in find_secrets("password=Tr0ub4dor&3x")] == ["generic-password"]


@given(st.text(max_size=400))
def test_redact_is_idempotent_and_never_raises(text: str) -> None:
    once = redact(text)
    assert redact(once) == once
    assert find_secrets(once) == []


@given(st.sampled_from(sorted(tokens().items())), st.text(max_size=60), st.text(max_size=60))
def test_a_token_between_any_words_is_redacted(
    item: tuple[str, str], before: str, after: str
) -> None:
    kind, tok = item
    text = f"{before} {tok} {after}"
    assert tok not in redact(text) or kind.startswith("generic")

"""Control derivation rules: each kind, round trips, refusals, and the vocabulary's safety."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memhtml.eval.fixture_world import (
    BUCKETS,
    DATABASES,
    PEOPLE,
    QUEUES,
    SERVICES,
    TEAMS,
    TOOLS,
    WORKSPACES,
    World,
    fill,
)
from memhtml.eval.flips import (
    change_identifier,
    change_number,
    controls_for,
    flip,
    flip_like,
    is_negated,
    negate,
    revert,
    swap_qualifier,
)
from memhtml.eval.probes import catalogue

# --- negation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "flipped", "rule"),
    [
        ("Drain the VIP before reverting.", "Do not drain the VIP before reverting.", "imperative"),
        ("Do not drain the VIP before reverting.", "Drain the VIP before reverting.", "imperative"),
        ("drain the VIP before reverting", "do not drain the VIP before reverting", "imperative"),
        ("Always page the DBA.", "Never page the DBA.", "always/never"),
        (
            "Never run migrations from a laptop.",
            "Always run migrations from a laptop.",
            "always/never",
        ),
        ("The replica must be fenced.", "The replica must not be fenced.", "must/must not"),
        ("The replica must not be fenced.", "The replica must be fenced.", "must/must not"),
        ("Flags should be removed.", "Flags should not be removed.", "should/should not"),
        ("Tokens can be reused.", "Tokens cannot be reused.", "can/cannot"),
        ("Tokens cannot be reused.", "Tokens can be reused.", "can/cannot"),
        ("The bucket is versioned.", "The bucket is not versioned.", "is/is not"),
        ("Writes are replicated.", "Writes are not replicated.", "are/are not"),
        ("Outages were announced.", "Outages were not announced.", "were/were not"),
        ("The retry will succeed.", "The retry will not succeed.", "will/will not"),
    ],
)
def test_negation_rules(text: str, flipped: str, rule: str) -> None:
    f = negate(text)
    assert f is not None
    assert (f.flipped, f.rule, f.kind) == (flipped, rule, "negation")
    assert negate(f.flipped) is not None and negate(f.flipped).flipped == text  # type: ignore[union-attr]
    assert revert(f) == text


def test_negation_tokens_and_polarity() -> None:
    f = negate("Drain the VIP.")
    assert f is not None and f.tokens == ("", "Do not")
    assert is_negated("Do not drain the VIP.") and not is_negated("Drain the VIP.")
    assert is_negated("Never restart it.") and not is_negated("Always restart it.")
    assert is_negated("It cannot fail.") and not is_negated("It can fail.")
    assert not is_negated("The sky over the datacenter.")


def test_leftmost_construction_wins() -> None:
    # The imperative at position 0 beats a later modal, and the flip round-trips.
    f = negate("Drain the VIP; it must be idle.")
    assert f is not None and f.flipped == "Do not drain the VIP; it must be idle."
    g = negate("The VIP must be drained when it is idle.")
    assert g is not None and g.rule == "must/must not"
    assert g.flipped == "The VIP must not be drained when it is idle."


def test_a_modal_before_always_or_never_flips_the_adverb() -> None:
    f = negate("Migrations should never be run from a laptop.")
    assert f is not None and f.rule == "always/never"
    assert f.flipped == "Migrations should always be run from a laptop."
    assert is_negated("Migrations should never be run.")


def test_contractions_flip_to_the_positive() -> None:
    f = negate("The bucket isn't versioned.")
    assert f is not None and f.flipped == "The bucket is versioned."
    g = negate("Don't drain the VIP.")
    assert g is not None and g.flipped == "Drain the VIP."


def test_a_non_imperative_start_is_not_prefixed() -> None:
    assert negate("The VIP drains slowly.") is None
    assert negate("Retries happen twice.") is None


# --- number ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "first", "second", "rule"),
    [
        ("pgbouncer listens on port 6432.", "port 7432.", "port 8432.", "port"),
        (
            "The pooler is at db.internal:5432 today.",
            "db.internal:6432",
            "db.internal:7432",
            "port",
        ),
        ("Upgrade to version 1.4.2 first.", "1.4.3", "1.4.4", "version"),
        ("It runs Postgres 15.6.", "15.7", "15.8", "number"),
        ("Keep 14 snapshots.", "Keep 24 snapshots.", "Keep 34 snapshots.", "number"),
        ("Timeout is 30s.", "40s", "50s", "number"),
        ("Concurrency 8 per pod.", "9 per pod", "1 per pod", "number"),
        ("Tokens live 900 seconds.", "100 seconds", "200 seconds", "number"),
    ],
)
def test_number_rules(text: str, first: str, second: str, rule: str) -> None:
    one, two = change_number(text, 1), change_number(text, 2)
    assert one is not None and two is not None
    assert first in one.flipped and second in two.flipped
    assert one.rule == rule and one.kind == "number"
    assert revert(one) == text and revert(two) == text
    assert one.flipped != two.flipped


def test_number_skips_dates_times_and_identifiers() -> None:
    f = change_number("On 2025-10-03 at 01:00 db-03 in us-east-1 kept 3 copies.")
    assert f is not None and f.removed == "3" and f.added == "4"
    assert f.flipped == "On 2025-10-03 at 01:00 db-03 in us-east-1 kept 4 copies."
    assert change_number("On 2025-10-03 at 01:00 on db-03.") is None


def test_number_changes_every_occurrence_and_refuses_a_collision() -> None:
    f = change_number("Port 6432 here, port 6432 there.")
    assert f is not None and f.flipped == "Port 7432 here, port 7432 there."
    # Variant 1 would produce a value already in the text: the next number is used instead.
    g = change_number("Use 5 then 6 workers.")
    assert g is not None and g.removed == "6" and g.added == "7"


def test_number_variant_bounds() -> None:
    with pytest.raises(ValueError, match="variant"):
        change_number("port 1", 0)
    with pytest.raises(ValueError, match="variant"):
        change_identifier("db-01", 9)


# --- qualifier ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "flipped"),
    [
        ("Drain it before reverting.", "Drain it after reverting."),
        ("Reports go to the replica.", "Reports go to the primary."),
        ("Apply it on staging.", "Apply it on production."),
        ("Enable the flag.", "Disable the flag."),
        ("Set the minimum level.", "Set the maximum level."),
        ("The log is write-only.", "The log is read-only."),
        ("PUBLIC bucket", "PRIVATE bucket"),
    ],
)
def test_qualifier_rules(text: str, flipped: str) -> None:
    f = swap_qualifier(text)
    assert f is not None and f.flipped == flipped and f.kind == "qualifier"
    again = swap_qualifier(f.flipped)
    assert again is not None and again.flipped == text
    assert revert(f) == text


def test_qualifier_swaps_both_words_of_the_pair() -> None:
    f = swap_qualifier("Run it on the replica before the primary.")
    assert f is not None
    assert f.flipped == "Run it on the primary before the replica."
    assert f.rule == "primary/replica"


# --- identifier -----------------------------------------------------------------------------


def test_identifier_rule() -> None:
    f = change_identifier("Run the backfill on db-03 first.")
    assert f is not None and f.flipped == "Run the backfill on db-04 first."
    g = change_identifier("INC-4821 was caused by a push.", 2)
    assert g is not None and g.flipped.startswith("INC-4823")
    h = change_identifier("The consumers run in us-east-1 only.")
    assert h is not None and "us-east-2" in h.flipped
    assert revert(f) == "Run the backfill on db-03 first."


# --- refusals, dispatch, flip_like ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["negation", "number", "qualifier", "identifier"])
def test_nothing_to_flip_is_refused(kind: str) -> None:
    assert flip("Grafana dashboards live in the shared folder.", kind) is None
    assert flip("", kind) is None


def test_unknown_kind() -> None:
    with pytest.raises(ValueError, match="unknown flip kind"):
        flip("Drain it.", "tense")


def test_controls_for_collects_each_kind() -> None:
    text = "Drain the VIP before port 6432 reverts."
    kinds = [f.kind for f in controls_for(text, per_kind=2)]
    assert kinds == ["negation", "number", "number", "qualifier"]
    assert controls_for("Nothing here at all.") == []


def test_flip_like_applies_the_same_change_in_the_same_direction() -> None:
    f = negate("Drain the VIP before reverting.")
    assert f is not None
    assert flip_like(f, "drain VIP before revert") == "do not drain VIP before revert"
    assert flip_like(f, "do not drain VIP") is None  # opposite polarity: not the same change
    assert flip_like(f, "VIP drains before revert") is None
    q = swap_qualifier("Reports go to the replica.")
    assert q is not None
    assert flip_like(q, "reports on the replica") == "reports on the primary"
    assert flip_like(q, "reports on the primary") is None
    n = change_number("port 6432")
    assert n is not None
    assert flip_like(n, "pooler 6432?") == "pooler 7432?"
    assert flip_like(n, "pooler 5432?") is None


# --- properties -----------------------------------------------------------------------------

_SLOT_VALUES = {
    "svc": SERVICES,
    "db": DATABASES,
    "queue": QUEUES,
    "bucket": BUCKETS,
    "team": TEAMS,
    "tool": TOOLS,
    "ws": WORKSPACES,
    "person": PEOPLE,
}


@st.composite
def filled_claims(draw: st.DrawFn) -> str:
    template = draw(st.sampled_from(catalogue()))
    slots = {k: draw(st.sampled_from(v)) for k, v in _SLOT_VALUES.items()}
    slots["region"] = "us-east-1"
    return fill(template.claim, slots)


@given(filled_claims())
def test_every_catalogue_claim_round_trips(claim: str) -> None:
    for f in controls_for(claim, kinds=("negation", "number", "qualifier", "identifier")):
        assert f.flipped != claim
        assert revert(f) == claim


def test_slot_values_carry_nothing_to_flip() -> None:
    """A vocabulary word must never be the token a flip changes."""
    for values in _SLOT_VALUES.values():
        for value in values:
            for kind in ("negation", "number", "qualifier"):
                assert flip(value, kind) is None, (kind, value)


def test_every_template_claim_has_its_kind_to_flip() -> None:
    world = World(random.Random(1), "2026-01-01T00:00:00Z")
    for template in catalogue():
        claim = fill(template.claim, world.slots())
        assert flip(claim, template.kind) is not None, template.key

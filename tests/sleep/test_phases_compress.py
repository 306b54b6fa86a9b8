"""compress with a scripted model: a canonical that carries every fact, twins never offered."""

from __future__ import annotations

from typing import Any

from tests.sleep.model_script import blocks, caller
from tests.sleep.phase_harness import doc_of, links_of, run_phase

CLAIMS = {
    "ticket": "Deploys to checkout-api need a change ticket.",
    "friday": "Checkout-api deploys freeze on Fridays.",
    "rollback": "Checkout-api rollbacks take 12 minutes.",
    "canary": "The checkout-api canary runs for 30 minutes.",
}
LATER = "2026-03-20"  # past the write date, the memories score in the compress band


def community(fixed: Any, extra: dict[str, str] | None = None) -> dict[str, str]:
    claims = {**CLAIMS, **(extra or {})}
    p = {name: fixed.write(title=name, claim=claim)["path"] for name, claim in claims.items()}
    names = list(claims)
    for a, b in zip(names, names[1:] + names[:1], strict=True):
        fixed.link(p[a], "relates_to", p[b])
    return p


def folding(title: str, claim: str, words: tuple[str, ...], paragraphs: tuple[str, ...] = ()):
    """Absorb the members whose text holds one of `words`."""

    def respond(call: Any) -> dict[str, Any]:
        keys = [
            k for k, text in blocks(call.prompt, "member").items() if any(w in text for w in words)
        ]
        return {
            "title": title,
            "claim": claim,
            "paragraphs": list(paragraphs),
            "absorbed_keys": keys,
        }

    return respond


def test_a_canonical_that_carries_every_fact_supersedes_its_members(fixed: Any) -> None:
    p = community(fixed)
    model = caller(
        folding(
            "Checkout-api deploy rules",
            "Checkout-api deploys need a change ticket and freeze on Fridays.",
            ("ticket", "Fridays"),
        )
    )
    ran = run_phase(fixed, "compress", date=LATER, llm=model)
    counts = ran.outcome.counts
    assert (counts["candidates"], counts["canonicals"], counts["archived"]) == (4, 1, 2)
    canonical = "areas/inbox/checkout-api-deploy-rules.html"
    doc = doc_of(fixed, canonical)
    assert doc.ok and doc.memory_type == "semantic" and doc.author == "agent:sleep"
    for name in ("ticket", "friday"):
        archived = doc_of(fixed, f"archive/2026/{p[name]}")
        assert archived.status == "archived" and archived.superseded_by == canonical
        assert ("supersedes", f"archive/2026/{p[name]}") in links_of(fixed, canonical)
        assert not (fixed.root / p[name]).exists()
    # links to a folded member now name the canonical; the others stay
    assert ("relates_to", canonical) in links_of(fixed, p["canary"])
    assert doc_of(fixed, p["rollback"]).status == "active"
    (call,) = model.model.calls
    assert not any(path in call.prompt for path in p.values())


def test_a_canonical_that_drops_a_fact_is_refused(fixed: Any) -> None:
    community(fixed)
    lossy = caller(
        folding(
            "Checkout-api timings",
            "Checkout-api rollbacks and canaries take a while.",
            ("minutes",),
        )
    )
    ran = run_phase(fixed, "compress", date=LATER, llm=lossy)
    counts = ran.outcome.counts
    assert (counts["refused"], counts["dropped_members"], counts["canonicals"]) == (1, 2, 0)
    assert ran.commit_sha is None


def test_a_claim_of_two_sentences_is_refused(fixed: Any) -> None:
    community(fixed)
    model = caller(
        folding(
            "Checkout-api deploy rules",
            "Checkout-api deploys need a change ticket. They freeze on Fridays.",
            ("ticket", "Fridays"),
        )
    )
    ran = run_phase(fixed, "compress", date=LATER, llm=model)
    assert ran.outcome.counts["refused"] == 1 and ran.commit_sha is None


def test_a_must_not_merge_twin_is_never_offered_whatever_the_model_answers(fixed: Any) -> None:
    twin = "Checkout-api deploys never freeze on Fridays."
    p = community(fixed, {"twin": twin})
    # the model absorbs everything it is shown, and writes both claims into the canonical
    greedy = caller(
        folding(
            "Checkout-api deploy rules",
            "Checkout-api deploys need a change ticket, take 12 minutes to roll back and run a"
            " 30 minutes canary.",
            ("",),
            ("Deploys freeze on Fridays; or never freeze on Fridays.",),
        )
    )
    ran = run_phase(fixed, "compress", date=LATER, llm=greedy)
    assert ran.outcome.counts["contested"] == 2
    for call in greedy.model.calls:
        offered = " ".join(blocks(call.prompt, "member").values())
        assert "freeze on Fridays" not in offered
    assert doc_of(fixed, p["friday"]).status == doc_of(fixed, p["twin"]).status == "active"


def test_deep_compress_runs_again_over_what_the_last_pass_left(fixed: Any) -> None:
    community(fixed)

    def first_two(call: Any) -> dict[str, Any]:
        members = blocks(call.prompt, "member")
        keys = sorted(members, key=lambda k: int(k[1:]))[:2]
        texts = [members[k].splitlines()[-1] for k in keys]
        return {
            "title": f"Fold of {texts[0][:20]}",
            "claim": "These belong together.",
            "paragraphs": texts,
            "absorbed_keys": keys,
        }

    shallow = run_phase(fixed, "compress", date=LATER, llm=caller(first_two), dry_run=True)
    assert shallow.outcome.counts["batches"] == 1
    ran = run_phase(fixed, "compress", date=LATER, deep=True, llm=caller(first_two))
    counts = ran.outcome.counts
    assert (counts["passes"], counts["canonicals"], counts["archived"]) == (2, 2, 4)

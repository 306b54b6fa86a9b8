"""Hostile text goes in escaped and comes back verbatim; oversized input is refused (§6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memhtml.contracts.errors import InvalidMemoryError
from memhtml.contracts.vocab import MAX_MEMORY_BYTES

from .conftest import run_cli

HOSTILE = [
    "<script>alert(1)</script>",
    "\"quoted\" and 'single'",
    "Fish & chips &amp; more",
    "right\u200fto\u200eleft \u202b embedded",
    "</mark></p><img src=x onerror=alert(1)>",
    "]]> <!-- not a comment --> <![CDATA[x]]>",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_title_and_claim_round_trip_through_the_cli(
    repo: Path, text: str, tmp_path: Path
) -> None:
    claim = f"The claim says {text} and ends."
    code, env = run_cli(repo, "write", "--type", "semantic", "--title", text, "--claim", claim)
    assert code == 0, env
    path = env["data"]["path"]
    raw = (repo / path).read_text()
    assert "<script>" not in raw and "<img" not in raw  # escaped in the file
    code, env = run_cli(repo, "read", path)
    assert code == 0
    assert env["data"]["title"] == " ".join(text.split())
    assert env["data"]["gist"] == claim


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    text=st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x00"),
        min_size=1,
        max_size=80,
    ).filter(lambda s: s.strip())
)
def test_any_printable_claim_round_trips(corpus: Any, text: str) -> None:
    claim = " ".join(f"Fact: {text}".split())
    out = corpus.write(title=f"t {text}", claim=claim)
    detail = corpus.read(out.get("existing_path") or out["path"], bump=False)
    assert detail["gist"] == claim


def test_a_large_body_round_trips_and_an_oversized_one_is_refused(corpus: Any) -> None:
    paragraph = "Tab\tseparated & <escaped> words that fill the body. " * 40
    big = [paragraph] * (800_000 // len(paragraph))
    out = corpus.write(title="big", claim="A big memory.", body=big)
    detail = corpus.read(out["path"], bump=False)
    assert detail["body_text"].count("fill the body") == 40 * len(big)
    with pytest.raises(InvalidMemoryError) as err:
        corpus.write(
            title="huge", claim="Too big.", body=[paragraph] * (1_100_000 // len(paragraph))
        )
    assert str(MAX_MEMORY_BYTES) in err.value.message

"""Shared, session-scoped fixture plans for the eval tests (generation is pure, so sharing
one plan across tests cannot leak state)."""

from __future__ import annotations

import pytest

from memhtml.eval.fixture import FixturePlan, generate_fixture


@pytest.fixture(scope="session")
def seed7_plan() -> FixturePlan:
    """The default fixture: seed 7, 300 memories, the default clock."""
    return generate_fixture(7, 300)


@pytest.fixture(scope="session")
def small_plan() -> FixturePlan:
    """A small fixture for tests that write and commit it."""
    return generate_fixture(11, 90)

"""Shared fixtures. Fakes enter only through the seams (embedder, LLM)."""

from __future__ import annotations

import os

# Tests never reach a network model: the deterministic fake is the default
# embedder under test unless a test asks for another one explicitly.
os.environ.setdefault("MEMHTML_EMBED", "fake")
os.environ.setdefault("MEMHTML_LLM", "off")
os.environ.setdefault("GIT_AUTHOR_NAME", "memhtml tests")
os.environ.setdefault("GIT_AUTHOR_EMAIL", "tests@memhtml.invalid")
os.environ.setdefault("GIT_COMMITTER_NAME", "memhtml tests")
os.environ.setdefault("GIT_COMMITTER_EMAIL", "tests@memhtml.invalid")

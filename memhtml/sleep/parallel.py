"""Parsing a large change set on every core, for sleep: a phase that touches the whole
corpus (confidence decay rewrites every memory's head) would otherwise parse 10k files
on one core before they are validated and reprojected.

The parser is the index layer's (memhtml.index.parallel); this name stays for callers.
"""

from __future__ import annotations

from memhtml.index.parallel import CHUNK, PARALLEL_MIN, parse_many

__all__ = ["CHUNK", "PARALLEL_MIN", "parse_many"]

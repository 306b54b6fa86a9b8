"""Schemas, closed vocabularies, typed errors and the path algebra.

This package does no I/O: it imports no database driver, git library, SDK or
filesystem module (``tests/test_layering.py`` enforces it).
"""

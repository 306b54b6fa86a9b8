"""Command handlers: each parses nothing, calls one operation, returns envelope data."""

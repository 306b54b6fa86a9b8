-- From this migration on, every text the plane stores is redacted: credentials
-- (API keys, tokens, private-key blocks, passwords assigned a value) are
-- replaced by `[redacted:<rule>]` before a row is written (memhtml.domain.secrets).
-- A plane built before it held transcript text verbatim, so opening one
-- discards the whole file (its freed pages would keep the old bytes) and the
-- next `trace index` rebuilds it from the transcripts (memhtml.trace.store).

INSERT OR REPLACE INTO trace_meta (key, value) VALUES ('redaction', 'memhtml.domain.secrets');

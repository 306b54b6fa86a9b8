-- Reads by agent sessions: `read --session-id` (MCP `memory_read` with
-- `session_id`) records which session read which memory, for `trace links`.
-- Usage git cannot reproduce, like `access`; path-keyed with no foreign key.
CREATE TABLE state.session_reads (
  path       TEXT NOT NULL,
  session_id TEXT NOT NULL,
  prompt_id  TEXT,
  turn_uuid  TEXT,
  at         TEXT NOT NULL,
  PRIMARY KEY (path, session_id, at)
);
CREATE INDEX state.session_reads_session ON session_reads(session_id);

-- The trace plane: a projection of the agent's session transcripts (the JSONL
-- files under MEMHTML_TRACE_ROOT). Every row is computed from those files;
-- delete traces.db, run `memhtml trace index`, and the same rows come back
-- (the surrogate `turns.id` and the scan clocks aside). Nothing here is a
-- record of its own: the links between sessions and memories live with the
-- memories (head metas, in the index) and in the state plane (reads).

CREATE TABLE trace_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

-- One row per transcript file: its watermark, and what its records said about the session.
CREATE TABLE traces (
  file_path    TEXT PRIMARY KEY,                 -- absolute
  session_id   TEXT NOT NULL,
  kind         TEXT NOT NULL CHECK (kind IN ('session','subagent')),
  agent_id     TEXT,                             -- a subagent sidecar's agent id
  slug         TEXT NOT NULL,
  size         INTEGER NOT NULL CHECK (size >= 0),          -- watermark: size at the stat before reading
  mtime_ns     INTEGER NOT NULL,                            -- watermark: mtime at that stat
  byte_off     INTEGER NOT NULL CHECK (byte_off >= 0),      -- watermark: end of the last complete line
  tail_fp      TEXT NOT NULL,                               -- hash of the bytes just before byte_off
  lines        INTEGER NOT NULL DEFAULT 0 CHECK (lines >= 0),  -- complete lines consumed
  records      INTEGER NOT NULL DEFAULT 0,       -- lines that held a typed JSON object
  dropped      INTEGER NOT NULL DEFAULT 0,       -- lines refused (trace_problems has each)
  skipped_type INTEGER NOT NULL DEFAULT 0,       -- bookkeeping records, counted and not read
  unknown_type INTEGER NOT NULL DEFAULT 0,       -- kinds this build does not know (kept raw)
  cwd          TEXT,                             -- first value seen
  git_branch   TEXT,                             -- last value seen
  entrypoint   TEXT,                             -- first value seen
  version      TEXT,                             -- last value seen
  ai_title     TEXT,                             -- last value seen
  scanned_at   TEXT NOT NULL
);
CREATE INDEX traces_session ON traces(session_id);

-- One row per turn, summary, or record of an unknown kind (role 'raw'), in file order.
CREATE TABLE turns (
  id          INTEGER PRIMARY KEY,               -- rowid of the external-content FTS table
  file_path   TEXT NOT NULL REFERENCES traces(file_path) ON DELETE CASCADE,
  line_no     INTEGER NOT NULL CHECK (line_no >= 0),
  byte_at     INTEGER NOT NULL CHECK (byte_at >= 0),  -- where the line starts: re-read it whole
  session_id  TEXT NOT NULL,
  kind        TEXT NOT NULL,                     -- the record's type
  role        TEXT NOT NULL CHECK (role IN ('user','assistant','tool_use','tool_result',
                                            'thinking','system','summary','attachment','raw')),
  uuid        TEXT,
  parent_uuid TEXT,
  prompt_id   TEXT,
  agent_id    TEXT,
  sidechain   INTEGER NOT NULL DEFAULT 0 CHECK (sidechain IN (0, 1)),
  timestamp   TEXT,                              -- YYYY-MM-DDThh:mm:ssZ
  model       TEXT,
  tool_names  TEXT,                              -- tools a tool_use turn called, comma-separated
  tool_ids    TEXT,                              -- tool_use ids: a call and its result share one
  text        TEXT NOT NULL DEFAULT '',          -- capped; text_chars is the full length
  text_chars  INTEGER NOT NULL DEFAULT 0,
  raw         TEXT,                              -- an unknown kind's JSON, capped
  UNIQUE (file_path, line_no)
);
CREATE INDEX turns_session ON turns(session_id, timestamp);
CREATE INDEX turns_uuid ON turns(uuid) WHERE uuid IS NOT NULL;

CREATE VIRTUAL TABLE turns_fts USING fts5(
  text,
  content = 'turns',
  content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
-- Inserts reach the FTS table from the store, one INSERT ... SELECT per file read (a
-- row trigger costs 3x as much on a bulk load); deletes go through this trigger.
CREATE TRIGGER turns_fts_ad AFTER DELETE ON turns WHEN old.text <> '' BEGIN
  INSERT INTO turns_fts(turns_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;

-- Lines that could not be read, with the reason (a projection too: a re-read finds them again).
CREATE TABLE trace_problems (
  file_path TEXT NOT NULL REFERENCES traces(file_path) ON DELETE CASCADE,
  line_no   INTEGER NOT NULL,
  byte_at   INTEGER NOT NULL,
  reason    TEXT NOT NULL CHECK (reason IN ('invalid_json','invalid_utf8','not_an_object',
                                            'line_too_long')),
  detail    TEXT NOT NULL,
  PRIMARY KEY (file_path, line_no)
);

-- One row per session: its files (the main transcript and its subagents') folded together.
CREATE TABLE sessions (
  session_id      TEXT PRIMARY KEY,
  slug            TEXT NOT NULL,
  cwd             TEXT,
  git_branch      TEXT,
  entrypoint      TEXT,
  model           TEXT,                          -- the most frequent assistant model
  version         TEXT,
  started_at      TEXT,
  ended_at        TEXT,
  prompt_count    INTEGER NOT NULL DEFAULT 0,
  turn_count      INTEGER NOT NULL DEFAULT 0,    -- records with a uuid, as the original counts
  agent_count     INTEGER NOT NULL DEFAULT 0,
  sidechain_turns INTEGER NOT NULL DEFAULT 0,
  first_prompt    TEXT NOT NULL DEFAULT '',      -- at most 500 characters
  ai_title        TEXT,
  summary         TEXT,                          -- the main transcript's last summary record
  file_path       TEXT NOT NULL,                 -- the main transcript (else the first sidecar)
  file_size       INTEGER NOT NULL,
  file_mtime      TEXT NOT NULL,                 -- YYYY-MM-DDThh:mm:ssZ
  files           INTEGER NOT NULL,
  bytes           INTEGER NOT NULL               -- all its files
);
CREATE INDEX sessions_started ON sessions(started_at);
CREATE INDEX sessions_mtime ON sessions(file_mtime);
CREATE INDEX sessions_cwd ON sessions(cwd);

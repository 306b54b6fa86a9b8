-- Vector spaces beside the live one. `embeddings` keeps exactly the active space
-- (index_state's model and dim), so search and the write doors read it as before;
-- a model migration builds its new space here, keyed by (model, dim, chunk id), so a
-- chunk is embedded once per space whatever the migration's interruptions, and
-- `--keep-old` parks the previous space here for a rollback that embeds nothing twice.
CREATE TABLE space_vectors (
  id           INTEGER PRIMARY KEY,
  model        TEXT NOT NULL,
  dim          INTEGER NOT NULL CHECK (dim > 0),
  chunk_id     TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  vector       BLOB NOT NULL CHECK (length(vector) = 4 * dim),
  created_at   TEXT NOT NULL,
  UNIQUE (model, dim, chunk_id)
);

-- One row per migration, open or finished: what it moves to, how far it got, why it
-- stopped. At most one is open (building or gate_failed); the write path never reads
-- this table, and a refused write under the old model names the switch it finds here.
CREATE TABLE space_migrations (
  id          INTEGER PRIMARY KEY,
  embedder    TEXT NOT NULL,             -- the registry name that builds it (openai, local...)
  from_embedder TEXT,                    -- the name that served the old space, when known
  from_model  TEXT,                      -- the active space when it started
  from_dim    INTEGER,
  to_model    TEXT NOT NULL,
  to_dim      INTEGER NOT NULL CHECK (to_dim > 0),
  state       TEXT NOT NULL CHECK (state IN ('building','gate_failed','switched','aborted')),
  keep_old    INTEGER NOT NULL DEFAULT 0 CHECK (keep_old IN (0, 1)),
  embedded    INTEGER NOT NULL DEFAULT 0, -- chunks this migration embedded, every run counted
  runs        INTEGER NOT NULL DEFAULT 0,
  last_error  TEXT,                      -- why the last run stopped (NULL: it did not fail)
  gate        TEXT,                      -- the gate's verdict as JSON (NULL: not run yet)
  started_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  switched_at TEXT
);
CREATE INDEX space_migrations_open ON space_migrations(state)
  WHERE state IN ('building','gate_failed');

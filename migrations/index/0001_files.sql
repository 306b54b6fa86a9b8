-- The index plane: a projection of the git tree. Every row here is computed
-- from a file; nothing is recorded here first. Delete index.db and rebuild.

CREATE TABLE files (
  id              INTEGER PRIMARY KEY,          -- stable rowid for the external-content FTS table
  path            TEXT NOT NULL UNIQUE,         -- root-relative; moves on archive (an UPDATE)
  blob_sha        TEXT,                         -- git blob id of the bytes projected
  content_hash    TEXT NOT NULL,                -- sha256:<hex> of the normalized article text
  memory_type     TEXT NOT NULL CHECK (memory_type IN (
                    'episodic','semantic','procedural','agent_insight','user_preference',
                    'error_pattern','verdict','precedent','arc','task')),
  status          TEXT NOT NULL CHECK (status IN ('active','archived')),
  title           TEXT NOT NULL,
  gist            TEXT NOT NULL,
  body_text       TEXT NOT NULL,
  fts_text        TEXT NOT NULL,                -- title \n gist \n body: the one full-text column
  disclosure_text TEXT NOT NULL,                -- what recall may quote
  para            TEXT NOT NULL CHECK (para IN ('projects','areas','resources','archive')),
  workspace       TEXT,
  confidence      REAL CHECK (confidence IS NULL OR (confidence >= 0 AND confidence <= 1)),
  importance      INTEGER CHECK (importance IS NULL OR importance BETWEEN 1 AND 10),
  archived        INTEGER NOT NULL CHECK (archived IN (0, 1)),   -- from the path's bucket
  origin_path     TEXT NOT NULL,                -- the live path an archived file came from
  word_count      INTEGER NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL,
  event_at        TEXT,
  archived_at     TEXT,
  valid_from      TEXT,
  valid_until     TEXT,
  reprieves       INTEGER,
  needs_revision  INTEGER NOT NULL DEFAULT 0 CHECK (needs_revision IN (0, 1)),
  author          TEXT,
  session_id      TEXT,
  prompt_id       TEXT,
  turn_uuid       TEXT,
  superseded_by   TEXT,
  task_status     TEXT CHECK (task_status IS NULL OR task_status IN ('todo','doing','blocked','done')),
  due_at          TEXT,
  fold_count      INTEGER NOT NULL DEFAULT 0,   -- <details> folds recall must disclose
  indexed_at      TEXT NOT NULL
);

-- The structural dedup: two active non-task memories cannot share content.
CREATE UNIQUE INDEX files_content_hash_active ON files(content_hash)
  WHERE archived = 0 AND memory_type <> 'task';
CREATE INDEX files_content_hash ON files(content_hash);
CREATE INDEX files_type ON files(memory_type, archived);
CREATE INDEX files_workspace ON files(workspace) WHERE workspace IS NOT NULL;
CREATE INDEX files_recency ON files(coalesce(event_at, updated_at));
CREATE INDEX files_task_status ON files(task_status) WHERE memory_type = 'task' AND archived = 0;

-- Children: a rename is an UPDATE of files.path, carried by ON UPDATE CASCADE.
CREATE TABLE file_tags (
  path TEXT NOT NULL REFERENCES files(path) ON UPDATE CASCADE ON DELETE CASCADE,
  tag  TEXT NOT NULL,
  PRIMARY KEY (path, tag)
);
CREATE INDEX file_tags_tag ON file_tags(tag);

CREATE TABLE file_entities (
  path        TEXT NOT NULL REFERENCES files(path) ON UPDATE CASCADE ON DELETE CASCADE,
  entity_type TEXT NOT NULL,
  entity_name TEXT NOT NULL,
  source      TEXT NOT NULL CHECK (source IN ('meta','dfn','code')),
  PRIMARY KEY (path, entity_type, entity_name)
);
CREATE INDEX file_entities_name ON file_entities(entity_type, entity_name);
CREATE INDEX file_entities_folded ON file_entities(lower(entity_name));

CREATE TABLE file_aliases (
  path  TEXT NOT NULL REFERENCES files(path) ON UPDATE CASCADE ON DELETE CASCADE,
  alias TEXT NOT NULL,
  PRIMARY KEY (path, alias)
);

CREATE TABLE file_facets (
  path          TEXT NOT NULL REFERENCES files(path) ON UPDATE CASCADE ON DELETE CASCADE,
  ordinal       INTEGER NOT NULL,
  name          TEXT NOT NULL,
  value         TEXT NOT NULL,
  numeric_value REAL,
  PRIMARY KEY (path, ordinal)
);
CREATE INDEX file_facets_name ON file_facets(name, value);

CREATE TABLE file_citations (
  path    TEXT NOT NULL REFERENCES files(path) ON UPDATE CASCADE ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  text    TEXT NOT NULL,
  url     TEXT,
  PRIMARY KEY (path, ordinal)
);

-- Chunks carry the content hash: an identical body anywhere shares chunk ids
-- (and so vectors), and a git mv costs no embedding call.
CREATE TABLE chunks (
  path         TEXT NOT NULL REFERENCES files(path) ON UPDATE CASCADE ON DELETE CASCADE,
  ordinal      INTEGER NOT NULL,
  content_hash TEXT NOT NULL,
  chunk_id     TEXT NOT NULL,                  -- sha256(content_hash || ':' || ordinal)
  text         TEXT NOT NULL,
  PRIMARY KEY (path, ordinal)
);
CREATE INDEX chunks_chunk_id ON chunks(chunk_id);
CREATE INDEX chunks_content_hash ON chunks(content_hash);

-- Vectors, keyed by chunk id; seq orders appends for the memory-mapped matrix.
CREATE TABLE embeddings (
  seq          INTEGER PRIMARY KEY AUTOINCREMENT,
  chunk_id     TEXT NOT NULL UNIQUE,
  content_hash TEXT NOT NULL,
  model        TEXT NOT NULL,
  dim          INTEGER NOT NULL CHECK (dim > 0),
  vector       BLOB NOT NULL CHECK (length(vector) = 4 * dim),
  created_at   TEXT NOT NULL
);
CREATE INDEX embeddings_content_hash ON embeddings(content_hash);

-- Relationships. Authored edges come from <link>s; derived ones (sleep) live
-- only here. No foreign key: an inbound edge is another file's assertion and
-- a dangling target is reported by doctor, not refused.
CREATE TABLE edges (
  src_path   TEXT NOT NULL,
  dst_path   TEXT NOT NULL,
  rel        TEXT NOT NULL,
  edge_class TEXT NOT NULL CHECK (edge_class IN ('memory','person','provenance','task')),
  derived    INTEGER NOT NULL DEFAULT 0 CHECK (derived IN (0, 1)),
  strength   REAL,
  provenance TEXT NOT NULL DEFAULT 'authored' CHECK (provenance IN ('authored','sleep')),
  created_at TEXT,
  PRIMARY KEY (src_path, rel, dst_path, derived),
  CHECK (src_path <> dst_path),
  CHECK (derived = 0 OR provenance = 'sleep'),
  CHECK (
    (edge_class = 'memory' AND rel IN ('supersedes','contradicts','caused_by','leads_to','part_of',
                                       'relates_to','example_of','supports','laterally_related'))
    OR (edge_class = 'person' AND rel IN ('about_person','authored_by'))
    OR (edge_class = 'provenance' AND rel IN ('from_session'))
    OR (edge_class = 'task' AND rel IN ('blocks','subtask_of'))
  )
);
CREATE INDEX edges_dst ON edges(dst_path, rel);

-- One denormalized column, external content, kept in step by triggers.
CREATE VIRTUAL TABLE files_fts USING fts5(
  fts_text,
  content = 'files',
  content_rowid = 'id',
  tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER files_fts_ai AFTER INSERT ON files BEGIN
  INSERT INTO files_fts(rowid, fts_text) VALUES (new.id, new.fts_text);
END;
CREATE TRIGGER files_fts_ad AFTER DELETE ON files BEGIN
  INSERT INTO files_fts(files_fts, rowid, fts_text) VALUES ('delete', old.id, old.fts_text);
END;
CREATE TRIGGER files_fts_au AFTER UPDATE OF fts_text ON files BEGIN
  INSERT INTO files_fts(files_fts, rowid, fts_text) VALUES ('delete', old.id, old.fts_text);
  INSERT INTO files_fts(rowid, fts_text) VALUES (new.id, new.fts_text);
END;

-- Paths indexed from the working tree rather than from HEAD: the next update
-- re-reads them even when they are clean again.
CREATE TABLE worktree_overlay (
  path TEXT PRIMARY KEY
);

-- Files the projection could not parse: reported by doctor, never a stop.
CREATE TABLE skipped_files (
  path     TEXT PRIMARY KEY,
  blob_sha TEXT,
  reason   TEXT NOT NULL
);

-- One row: the watermark and the identity of the vector space.
CREATE TABLE index_state (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  head_sha     TEXT,          -- the commit the index has caught up to (NULL: never built)
  embed_model  TEXT,          -- model id of every vector in embeddings (NULL: none yet)
  embed_dim    INTEGER,
  vector_epoch TEXT,          -- names the memory-mapped matrix generation
  rebuilt_at   TEXT,
  updated_at   TEXT,
  rebuilding   INTEGER NOT NULL DEFAULT 0   -- 1 while a rebuild is half-done
);
INSERT INTO index_state (id) VALUES (1);

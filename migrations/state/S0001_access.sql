-- The state plane: what git cannot reproduce. Survives `rm index.db`.
-- Path-keyed with no foreign key: its lifetime differs from the index's.
CREATE TABLE state.access (
  path                TEXT PRIMARY KEY,
  access_count        INTEGER NOT NULL DEFAULT 0,
  reinforcement_count INTEGER NOT NULL DEFAULT 0,
  outcome_score       REAL NOT NULL DEFAULT 0 CHECK (outcome_score BETWEEN -1 AND 1),
  last_accessed_at    TEXT,
  last_reinforced_at  TEXT,
  updated_at          TEXT NOT NULL
);

CREATE TABLE state.edge_corroboration (
  src_path   TEXT NOT NULL,
  dst_path   TEXT NOT NULL,
  rel        TEXT NOT NULL,
  count      INTEGER NOT NULL DEFAULT 1,
  first_seen TEXT NOT NULL,
  last_seen  TEXT NOT NULL,
  PRIMARY KEY (src_path, rel, dst_path)
);
CREATE INDEX state.edge_corroboration_dst ON edge_corroboration(dst_path);

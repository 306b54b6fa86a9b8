-- Sleep's effects that git cannot carry: applied from a run's pending ledger
-- (.memhtml/sleep/<run-id>.pending.jsonl) only when `sleep merge` succeeds.

-- A fuzzy entity merge needs corroboration across runs: each merged run that
-- proposed alias -> canonical counts once per run date.
CREATE TABLE state.entity_corroboration (
  entity_type TEXT NOT NULL,
  alias       TEXT NOT NULL,
  canonical   TEXT NOT NULL,
  count       INTEGER NOT NULL DEFAULT 1 CHECK (count >= 1),
  first_seen  TEXT NOT NULL,
  last_seen   TEXT NOT NULL,
  promoted    INTEGER NOT NULL DEFAULT 0 CHECK (promoted IN (0, 1)),
  PRIMARY KEY (entity_type, alias, canonical)
);

-- Where an incremental consolidation got to (e.g. the last transcript consumed).
CREATE TABLE state.sleep_watermarks (
  name       TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  run_id     TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- Which ledger lines a merge applied, so a retried merge never applies one twice.
CREATE TABLE state.sleep_marks_applied (
  run_id     TEXT NOT NULL,
  seq        INTEGER NOT NULL,
  kind       TEXT NOT NULL,
  applied_at TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);

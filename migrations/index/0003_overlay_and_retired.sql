-- The overlay remembers what it indexed: the blob id of the working-tree bytes
-- each dirty path held when it was read (NULL: the path was absent). A read
-- compares this with the working tree now, so a hand edit that is reverted or
-- repaired is noticed even though nothing was committed.
ALTER TABLE worktree_overlay ADD COLUMN blob_sha TEXT;

-- Paths a memory once held and no longer does (deleted, archived, moved away),
-- from HEAD's history. A path is an identity: the write doors never hand one of
-- these to a new memory, so a citation of the old path never resolves to an
-- unrelated fact.
CREATE TABLE retired_paths (
  path TEXT PRIMARY KEY
) WITHOUT ROWID;

CREATE INDEX files_origin_path ON files(origin_path) WHERE archived = 1;
CREATE INDEX files_superseded_by ON files(superseded_by) WHERE superseded_by IS NOT NULL;

-- Chunks still waiting for a vector, kept by triggers, so the vector arm's
-- coverage check and the embed pipeline never scan every chunk.
CREATE TABLE pending_vectors (
  chunk_id TEXT PRIMARY KEY
) WITHOUT ROWID;

INSERT INTO pending_vectors (chunk_id)
  SELECT DISTINCT c.chunk_id FROM chunks c
  WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.chunk_id = c.chunk_id);

CREATE TRIGGER chunks_pending_ai AFTER INSERT ON chunks BEGIN
  INSERT OR IGNORE INTO pending_vectors (chunk_id)
    SELECT new.chunk_id WHERE NOT EXISTS (SELECT 1 FROM embeddings e WHERE e.chunk_id = new.chunk_id);
END;
CREATE TRIGGER chunks_pending_ad AFTER DELETE ON chunks BEGIN
  DELETE FROM pending_vectors WHERE chunk_id = old.chunk_id
    AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = old.chunk_id);
END;
CREATE TRIGGER embeddings_pending_ai AFTER INSERT ON embeddings BEGIN
  DELETE FROM pending_vectors WHERE chunk_id = new.chunk_id;
END;
CREATE TRIGGER embeddings_pending_ad AFTER DELETE ON embeddings BEGIN
  INSERT OR IGNORE INTO pending_vectors (chunk_id)
    SELECT old.chunk_id WHERE EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = old.chunk_id);
END;

-- A chunk row is its text, its tsvector and, with pgvector, its embedding: about 2 kB for 256 dimensions,
-- just over the 2 kB past which PostgreSQL moves values out of line. pgvector stores vectors `external`,
-- so the embedding went to the TOAST table, and every exact scan (a small collection, a filtered search)
-- looked each one up there. Rows now stay whole up to a page. Measured on PGlite with 5,000 chunks of the
-- local embedder's 256 dimensions: an exact scan 30 → 6 ms, a keyword search 7 → 3 ms, inserts 1.3 times
-- faster. Rows stored before keep their layout until the table is rewritten (VACUUM FULL knowledge_chunks,
-- which npm run reindex-knowledge -- --rewrite runs).
ALTER TABLE knowledge_chunks SET (toast_tuple_target = 8160);

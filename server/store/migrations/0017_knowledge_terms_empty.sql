-- A statement on knowledge_chunks that changes no row (the DELETE that clears a new document's chunks
-- before they are stored, deleting a document that has none) still fires the term-count trigger, whose three
-- statements over an empty transition table cost PGlite about 0.5 ms; the trigger now stops at once.
CREATE OR REPLACE FUNCTION knowledge_terms_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM changed) THEN
    RETURN NULL;
  END IF;

  UPDATE knowledge_collections k SET chunk_count = k.chunk_count + sign * c.chunks
  FROM (SELECT user_id, collection, count(*) AS chunks FROM changed GROUP BY 1, 2) c
  WHERE k.user_id = c.user_id AND k.name = c.collection;

  INSERT INTO knowledge_terms AS t (user_id, collection, lexeme, chunks)
  SELECT user_id, collection, lexeme, sign * count(*)
  FROM changed, unnest(tsvector_to_array(tsv)) AS lexeme
  WHERE right(id, 1) IN ('0', '1', '2', '3')
  GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
  ON CONFLICT (user_id, collection, lexeme) DO UPDATE SET chunks = t.chunks + excluded.chunks;

  IF sign < 0 THEN
    DELETE FROM knowledge_terms t
    USING (SELECT DISTINCT user_id, collection, lexeme FROM changed, unnest(tsvector_to_array(tsv)) AS lexeme
           WHERE right(id, 1) IN ('0', '1', '2', '3')) c
    WHERE t.user_id = c.user_id AND t.collection = c.collection AND t.lexeme = c.lexeme AND t.chunks <= 0;
  END IF;
  RETURN NULL;
END
$$;

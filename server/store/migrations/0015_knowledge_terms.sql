-- How many chunks of each collection hold each lexeme, and how many chunks each collection has: keyword
-- search leaves out of a question the words a large share of a collection holds (as an inverse document
-- frequency would weigh them near zero), because ranking every chunk that holds such a word is most of a
-- slow search's time. Triggers on knowledge_chunks keep both counts in step with every insert and delete,
-- whatever path deletes (a document, its collection, its user, a worker taking a document over).
--
-- knowledge_terms counts one chunk in eight: those whose id ends in 0, 1, 2 or 3 (an id ends in a random
-- base32 character, so a chunk's membership never changes and deletes subtract what inserts added).
-- Counting every lexeme of every chunk cost PGlite 0.7 ms per chunk inserted, about a seventh of an
-- ingestion; the sample costs 0.1 ms. The common words are what the counts must find, and the sample sees
-- them well: a word in 1,000 chunks is counted about 125 times, an estimate good to about a tenth.
ALTER TABLE knowledge_collections ADD COLUMN chunk_count bigint NOT NULL DEFAULT 0;

CREATE TABLE knowledge_terms (
  user_id text NOT NULL,
  collection text NOT NULL,
  lexeme text NOT NULL,
  chunks integer NOT NULL,
  PRIMARY KEY (user_id, collection, lexeme)
);

-- One trigger function for both: its transition table is named `changed` on insert (the new rows) and on
-- delete (the old ones). Rows are written in key order (the collection, then its lexemes in order), so
-- that concurrent inserts and deletes wait for each other rather than deadlock. A lexeme no chunk holds
-- any more leaves no row behind: the words of deleted text go with it.
CREATE FUNCTION knowledge_terms_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
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

CREATE TRIGGER knowledge_terms_added AFTER INSERT ON knowledge_chunks
  REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_terms_count();
CREATE TRIGGER knowledge_terms_removed AFTER DELETE ON knowledge_chunks
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION knowledge_terms_count();

-- The counts of the chunks stored before this migration.
UPDATE knowledge_collections k SET chunk_count = c.chunks
FROM (SELECT user_id, collection, count(*) AS chunks FROM knowledge_chunks GROUP BY 1, 2) c
WHERE k.user_id = c.user_id AND k.name = c.collection;
INSERT INTO knowledge_terms (user_id, collection, lexeme, chunks)
SELECT user_id, collection, lexeme, count(*) FROM knowledge_chunks, unnest(tsvector_to_array(tsv)) AS lexeme
WHERE right(id, 1) IN ('0', '1', '2', '3') GROUP BY 1, 2, 3;

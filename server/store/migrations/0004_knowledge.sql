-- Knowledge: collections (each recording the embedding model and dimension its vectors were made with),
-- documents, and their chunks with a full-text vector and, where pgvector exists, an embedding.
CREATE TABLE knowledge_collections (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  embedding_model text NOT NULL,
  dimensions integer NOT NULL CHECK (dimensions > 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (user_id, name)
);

CREATE TABLE knowledge_documents (
  id text PRIMARY KEY,
  user_id text NOT NULL,
  collection text NOT NULL,
  title text,
  source text,
  content_type text NOT NULL,
  -- The extracted text, kept so that processing can resume after a restart.
  content text NOT NULL,
  bytes integer NOT NULL,
  content_sha256 text NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  status text NOT NULL CHECK (status IN ('processing', 'ready', 'failed')),
  error text,
  chunk_count integer NOT NULL DEFAULT 0,
  embedding_model text NOT NULL,
  -- The API key that added it, so background embedding is metered to it.
  api_key_id text,
  -- While processing: until when the instance working on it holds it; a lapsed lease is picked up again.
  lease_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (user_id, collection) REFERENCES knowledge_collections (user_id, name) ON DELETE CASCADE
);
-- One document per content in a collection; also serves the per-collection listing.
CREATE UNIQUE INDEX knowledge_documents_content_idx ON knowledge_documents (user_id, collection, content_sha256);
-- Newest first per user; INCLUDE lets quota checks count documents and bytes from the index alone.
CREATE INDEX knowledge_documents_user_idx ON knowledge_documents (user_id, id DESC) INCLUDE (bytes);
CREATE INDEX knowledge_documents_collection_idx ON knowledge_documents (user_id, collection, id DESC);
CREATE INDEX knowledge_documents_processing_idx ON knowledge_documents (lease_until) WHERE status = 'processing';

CREATE TABLE knowledge_chunks (
  id text PRIMARY KEY,
  document_id text NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
  user_id text NOT NULL,
  collection text NOT NULL,
  position integer NOT NULL,
  text text NOT NULL,
  dimensions integer NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED
);
CREATE INDEX knowledge_chunks_document_idx ON knowledge_chunks (document_id, position);
CREATE INDEX knowledge_chunks_owner_idx ON knowledge_chunks (user_id, collection);
CREATE INDEX knowledge_chunks_tsv_idx ON knowledge_chunks USING gin (tsv);

-- Vectors only where pgvector is installed (always on PGlite). The column is unsized because collections
-- differ in dimension; the server adds one partial HNSW index per dimension as collections appear, on
-- `embedding::vector(n)` for rows with `dimensions = n`, and queries cast the same way to use it.
DO $$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
    CREATE EXTENSION IF NOT EXISTS vector;
    ALTER TABLE knowledge_chunks ADD COLUMN embedding vector;
  END IF;
END
$$;

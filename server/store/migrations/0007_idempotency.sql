-- Idempotency keys: per user and operation, the request a key was first used with and, once it has been
-- handled, the response to replay. A row without a response is a claim: that request is still running.
CREATE TABLE idempotency_keys (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  operation_id text NOT NULL,
  idempotency_key text NOT NULL,
  -- A hash of the method, path, query and body: the same key with another request is refused.
  fingerprint text NOT NULL,
  -- The request that holds the claim; only it may complete or release it.
  request_id text NOT NULL,
  -- The status and the response as JSON text (not jsonb, which would reorder the body's keys on replay).
  status integer,
  response text,
  created_at timestamptz NOT NULL,
  -- A claim older than this was left by a server that died mid-request; another request may take it over.
  locked_until timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (user_id, operation_id, idempotency_key)
);
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

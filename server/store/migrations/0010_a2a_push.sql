-- A2A push notification configs: where to POST a task's updates. A task is a run; a config belongs to the
-- run's owner and goes with the run. Deliveries are pg-boss jobs (server/a2a/push.ts), not rows here.
CREATE TABLE a2a_push_configs (
  task_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  id text NOT NULL,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  url text NOT NULL,
  token text,
  auth_scheme text,
  -- Sealed (server/mcp/secrets.ts), like MCP servers' credentials.
  auth_credentials text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (task_id, id)
);

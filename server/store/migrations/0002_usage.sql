-- Metered usage: one row per model call, and rollups that quota checks read without scanning.
CREATE TABLE usage_records (
  id bigserial PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  api_key_id text,
  model text NOT NULL,
  kind text NOT NULL,
  prompt_tokens integer NOT NULL,
  completion_tokens integer NOT NULL,
  total_tokens integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_records_user_time_idx ON usage_records (user_id, created_at);

-- Per user and calendar month (UTC): tokens and model requests.
CREATE TABLE usage_monthly (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  period date NOT NULL,
  requests integer NOT NULL DEFAULT 0,
  tokens bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id, period)
);

-- Per user and day (UTC): agent and team runs started.
CREATE TABLE usage_daily (
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  day date NOT NULL,
  runs integer NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id, day)
);

-- Agents, the sessions that keep their conversations, and runs with their stored events.
CREATE TABLE agents (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  instructions text,
  model text NOT NULL,
  model_settings jsonb NOT NULL DEFAULT '{}',
  tools jsonb NOT NULL DEFAULT '[]',
  server_tools jsonb NOT NULL DEFAULT '[]',
  knowledge_collections jsonb NOT NULL DEFAULT '[]',
  max_steps integer NOT NULL,
  run_timeout_seconds integer NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agents_user_idx ON agents (user_id, id DESC);

-- A conversation with one agent (or, later, one team). `status` guards against two runs at once.
CREATE TABLE sessions (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  agent_id text REFERENCES agents (id) ON DELETE CASCADE,
  team_id text,
  title text,
  -- A client's own name for the conversation (the AgentScope protocol's session_id), unique per agent or team.
  external_id text,
  status text NOT NULL DEFAULT 'idle',
  message_count integer NOT NULL DEFAULT 0,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sessions_user_idx ON sessions (user_id, id DESC);
CREATE INDEX sessions_agent_idx ON sessions (agent_id);
CREATE UNIQUE INDEX sessions_external_idx ON sessions (user_id, (coalesce(agent_id, team_id)), external_id) WHERE external_id IS NOT NULL;

CREATE TABLE session_messages (
  session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  position integer NOT NULL,
  run_id text,
  message jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, position)
);

CREATE TABLE runs (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  agent_id text,
  team_id text,
  parent_run_id text REFERENCES runs (id) ON DELETE CASCADE,
  status text NOT NULL,
  model text NOT NULL,
  usage jsonb NOT NULL DEFAULT '{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}',
  error jsonb,
  required_action jsonb,
  -- What a halted run needs to go on: for a team run, the leader's pending calls; for a member run, its
  -- own conversation.
  state jsonb,
  last_sequence_number integer NOT NULL DEFAULT 0,
  -- The server process executing the run, and its liveness: a sweeper fails the runs of dead servers.
  owner text NOT NULL,
  heartbeat_at timestamptz NOT NULL DEFAULT now(),
  -- Set by a cancel that arrived at another server than the owner; the owner notices at its heartbeat.
  cancel_requested boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz
);
CREATE INDEX runs_session_idx ON runs (session_id);
CREATE INDEX runs_parent_idx ON runs (parent_run_id);
CREATE INDEX runs_active_idx ON runs (owner) WHERE status IN ('queued', 'in_progress');

CREATE TABLE run_events (
  run_id text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  sequence_number integer NOT NULL,
  type text NOT NULL,
  payload jsonb NOT NULL,
  PRIMARY KEY (run_id, sequence_number)
);

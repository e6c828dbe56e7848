-- Teams of agents under a leader: a member flagged is_leader, or an orchestrator built from the team.
CREATE TABLE teams (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  instructions text,
  mode text NOT NULL,
  leader_model text,
  max_steps integer NOT NULL,
  metadata jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX teams_user_idx ON teams (user_id, id DESC);

-- An agent in a team cannot be deleted until the team lets it go.
CREATE TABLE team_members (
  team_id text NOT NULL REFERENCES teams (id) ON DELETE CASCADE,
  agent_id text NOT NULL REFERENCES agents (id) ON DELETE RESTRICT,
  position integer NOT NULL,
  role text,
  is_leader boolean NOT NULL DEFAULT false,
  PRIMARY KEY (team_id, agent_id)
);
CREATE INDEX team_members_agent_idx ON team_members (agent_id);

ALTER TABLE sessions ADD CONSTRAINT sessions_team_fk FOREIGN KEY (team_id) REFERENCES teams (id) ON DELETE CASCADE;
CREATE INDEX sessions_team_idx ON sessions (team_id);

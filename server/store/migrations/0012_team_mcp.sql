-- Remote MCP servers of teams, used by the leader (headers sealed, as agents' are).
ALTER TABLE teams ADD COLUMN mcp_servers jsonb NOT NULL DEFAULT '[]';

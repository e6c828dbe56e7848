-- Remote MCP servers of agents (headers sealed, see server/mcp/secrets.ts) and approval policies of
-- built-in tools.
ALTER TABLE agents ADD COLUMN mcp_servers jsonb NOT NULL DEFAULT '[]';
ALTER TABLE agents ADD COLUMN server_tool_approvals jsonb NOT NULL DEFAULT '{}';

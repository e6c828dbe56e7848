-- OpenAI's Responses and Conversations. A response is a run: its status, output and usage are the
-- projection of the run's events; this row keeps what the run does not (the request as OpenAI echoes it,
-- the input items with their ids, the chain it continues) and, once it ends, its output items, so that
-- later requests can replay and reference them without folding events.
CREATE TABLE conversations (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  metadata jsonb NOT NULL DEFAULT '{}',
  -- The next item's position; items are numbered in the order they were added.
  next_position integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX conversations_user_idx ON conversations (user_id, id DESC);

CREATE TABLE conversation_items (
  conversation_id text NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  position integer NOT NULL,
  id text NOT NULL,
  item jsonb NOT NULL,
  PRIMARY KEY (conversation_id, position)
);
CREATE UNIQUE INDEX conversation_items_id_idx ON conversation_items (conversation_id, id);

CREATE TABLE responses (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  run_id text NOT NULL,
  previous_response_id text,
  conversation_id text,
  -- Whether the response can be retrieved and chained (OpenAI's `store`).
  stored boolean NOT NULL,
  background boolean NOT NULL,
  -- The request's fields a response echoes (model, instructions, tools, text, …).
  request jsonb NOT NULL,
  input_items jsonb NOT NULL,
  -- Set when the run has ended: the output items, as the projection of its events made them.
  output jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX responses_user_idx ON responses (user_id, id DESC);
CREATE INDEX responses_run_idx ON responses (run_id);

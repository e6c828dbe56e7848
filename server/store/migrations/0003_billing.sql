-- Stripe billing: each user's Stripe customer, the subscriptions Stripe told us about, and the webhook
-- deliveries already handled (so that a duplicate or a replay changes nothing).
ALTER TABLE users ADD COLUMN stripe_customer_id text UNIQUE;

-- One row per Stripe subscription, holding its latest known state. `state_at` is the Stripe event time
-- (seconds) that set `status`, so that an older event arriving late cannot undo a newer one.
CREATE TABLE subscriptions (
  id text PRIMARY KEY,
  -- Null until a checkout completion, the customer or the metadata links it to a user.
  user_id text REFERENCES users (id) ON DELETE CASCADE,
  customer_id text,
  status text NOT NULL,
  price_id text,
  current_period_start timestamptz,
  current_period_end timestamptz,
  cancel_at_period_end boolean NOT NULL DEFAULT false,
  state_at bigint NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX subscriptions_user_idx ON subscriptions (user_id);
CREATE INDEX subscriptions_customer_idx ON subscriptions (customer_id);

-- Every event id handled once.
CREATE TABLE stripe_events (
  id text PRIMARY KEY,
  type text NOT NULL,
  created bigint NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now()
);

-- Signed deliveries (signature time and body) seen while their signature is still within the tolerance:
-- the same signed request twice is a replay. Rows older than the tolerance are pruned as new ones arrive.
CREATE TABLE stripe_deliveries (
  digest text PRIMARY KEY,
  expires_at timestamptz NOT NULL
);
CREATE INDEX stripe_deliveries_expires_idx ON stripe_deliveries (expires_at);

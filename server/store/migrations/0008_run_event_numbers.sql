-- A run's last event number is the largest stored one (an index-only look-up on run_events' key), not a
-- column every batch of events has to update: that update rewrote one runs row per run per batch, about a
-- third of the cost of storing a token stream's events.
ALTER TABLE runs DROP COLUMN last_sequence_number;

-- A usage row is no longer one model call but the calls of one user, API key, model and kind that the
-- meter stored in one write (within its batch window, about 100 ms): `requests` counts them, the token
-- columns are their sums and `created_at` is the first call's time. Under load this is one row where
-- there were hundreds; a call made alone still gets a row of its own. Rows written before hold one call.
ALTER TABLE usage_records ADD COLUMN requests integer NOT NULL DEFAULT 1;

-- Storing a run's events is the hottest write there is (one row per streamed text delta). Its foreign key
-- to runs cost a lookup and a row lock on the run for every event stored, a third of the cost of the insert
-- (measured on PGlite). A run's events are only ever stored by the server executing the run, after the run
-- row exists, so the key checked nothing; what it also did, deleting a run's events with the run, is done
-- by this trigger, once per statement that deletes runs (a session's deletion cascades here too).
ALTER TABLE run_events DROP CONSTRAINT run_events_run_id_fkey;

CREATE FUNCTION delete_events_of_deleted_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM run_events e USING deleted_runs d WHERE e.run_id = d.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER runs_delete_events AFTER DELETE ON runs
  REFERENCING OLD TABLE AS deleted_runs
  FOR EACH STATEMENT EXECUTE FUNCTION delete_events_of_deleted_runs();

-- The seed's table, with the mark of a completion split into two statements: the first checks
-- the token and marks the row with its session (finisher, finisher_app), answering 1; the
-- second sets state 'done'. The contract holds one statement per file, so the second
-- statement is the session's next queue statement, which finishes the mark (see
-- complete.sql). Until then the row reads as done. A marked row whose session is gone while a
-- session of the same name is back (the worker reconnected without having sent the second
-- statement) is half done: still running under its lease, and claimable once it lapses.
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running','done')),
  generation bigint NOT NULL DEFAULT 0,
  lease_until timestamptz,
  payload jsonb NOT NULL,
  finisher int,
  finisher_app text
);
CREATE INDEX jobs_ready ON jobs (id) WHERE state='ready';
CREATE INDEX jobs_expired ON jobs (lease_until, id) WHERE state='running';
-- The state a row reads as: a completion's first statement makes it done, unless its second
-- statement was lost (its session gone, its worker back in this database: a session of that
-- name judging another queue is another worker).
CREATE FUNCTION state_of(state text, finisher int, finisher_app text) RETURNS text LANGUAGE sql STABLE AS $$
  SELECT CASE
    WHEN finisher IS NULL THEN state
    WHEN finisher <> pg_backend_pid()
     AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = finisher)
     AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = finisher_app
                 AND a.datname = current_database()) THEN state
    ELSE 'done' END
$$;

-- The seed's table, with the mark of a claim split into two transactions: the first takes the
-- row (running, generation + 1) and marks it with its session (taker, taker_app); the second
-- sets the lease. The contract holds one statement per file, so the second transaction is the
-- session's next queue statement, which clears the mark (see claim.sql). A marked row whose
-- session is gone while a session of the same name is back (the worker reconnected without
-- having sent the second transaction) has no lease: no claim takes it again, ever.
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running','done')),
  generation bigint NOT NULL DEFAULT 0,
  lease_until timestamptz,
  payload jsonb NOT NULL,
  taker int,
  taker_app text
);
CREATE INDEX jobs_ready ON jobs (id) WHERE state='ready';
CREATE INDEX jobs_expired ON jobs (lease_until, id) WHERE state='running';
-- A row whose claim lost its second transaction: its taker is gone and its worker is back (in
-- this database: a session of that name judging another queue is another worker).
CREATE FUNCTION lease_lost(taker int, taker_app text) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT taker IS NOT NULL AND taker <> pg_backend_pid()
     AND NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = taker)
     AND EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.application_name = taker_app AND a.datname = current_database())
$$;

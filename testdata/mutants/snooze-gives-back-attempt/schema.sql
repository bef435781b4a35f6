-- The lifecycle's job table (attempts counted as they fail, a run-at time, a terminal dead state
-- and the last error kept), with jobs that can be cancelled from outside (cancelled is an end of
-- a job's life, as done and dead are), snoozed by their owner, and enqueued by a key that at most
-- one job not at an end holds.
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running','done','dead','cancelled')),
  generation bigint NOT NULL DEFAULT 0,
  attempts int NOT NULL DEFAULT 0,
  run_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  lease_until timestamptz,
  last_error text,
  unique_key text,
  payload jsonb NOT NULL
);
CREATE INDEX jobs_ready ON jobs (run_at, id) WHERE state='ready';
CREATE INDEX jobs_expired ON jobs (lease_until, id) WHERE state='running';
CREATE UNIQUE INDEX jobs_live_key ON jobs (unique_key) WHERE state IN ('ready','running');

-- The retry policy fail.sql reads: three attempts, 100 ms after the first failure, doubling.
-- reset.sql puts the row back after the suite's reset empties the table.
CREATE TABLE retry_policy (
  max_attempts int NOT NULL CHECK (max_attempts > 0),
  backoff interval NOT NULL,
  factor int NOT NULL CHECK (factor >= 1)
);
INSERT INTO retry_policy VALUES (3, interval '100 milliseconds', 2);

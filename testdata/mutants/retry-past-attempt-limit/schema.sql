-- The seed's job table with the rest of a job's life: attempts counted as they fail, a run-at
-- time (a scheduled job's, then the end of a failed job's backoff), a terminal dead state and
-- the last error kept.
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running','done','dead')),
  generation bigint NOT NULL DEFAULT 0,
  attempts int NOT NULL DEFAULT 0,
  run_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  lease_until timestamptz,
  last_error text,
  payload jsonb NOT NULL
);
CREATE INDEX jobs_ready ON jobs (run_at, id) WHERE state='ready';
CREATE INDEX jobs_expired ON jobs (lease_until, id) WHERE state='running';

-- The retry policy fail.sql reads: three attempts, 100 ms after the first failure, doubling.
-- reset.sql puts the row back after the suite's reset empties the table.
CREATE TABLE retry_policy (
  max_attempts int NOT NULL CHECK (max_attempts > 0),
  backoff interval NOT NULL,
  factor int NOT NULL CHECK (factor >= 1)
);
INSERT INTO retry_policy VALUES (3, interval '100 milliseconds', 2);

-- The business table: the orders completed jobs fulfilled. effect.sql writes a row in the
-- transaction of the job's completion, so a refused completion rolls it back.
CREATE TABLE fulfilled (
  job_id bigint NOT NULL,
  fulfilled_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

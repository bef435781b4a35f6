-- River-shaped, with River's retries: every claim is an attempt, a failure waits its backoff as
-- 'retryable' (or is 'discarded' once its attempts ran out, or when final), a job may be
-- scheduled for later, and the rescuer makes a stuck job retryable after its backoff, or
-- discards it when that stuck attempt was its last. Errors are kept, one per failure.
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'available'
    CHECK (state IN ('available','running','retryable','completed','discarded')),
  attempt bigint NOT NULL DEFAULT 0,
  max_attempts int NOT NULL DEFAULT 2,
  attempted_at timestamptz,
  attempted_by text[] NOT NULL DEFAULT '{}',
  scheduled_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  errors text[] NOT NULL DEFAULT '{}',
  payload jsonb NOT NULL
);
CREATE INDEX jobs_due ON jobs (scheduled_at, id) WHERE state IN ('available','retryable');
CREATE INDEX jobs_running ON jobs (attempted_at) WHERE state = 'running';

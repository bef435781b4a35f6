-- The seed's job table, and the business a job's completion does: each job moves one unit
-- between two of three accounts and records the transfer, in the transaction of its
-- completion (effect.sql).
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running','done')),
  generation bigint NOT NULL DEFAULT 0,
  lease_until timestamptz,
  payload jsonb NOT NULL
);
CREATE INDEX jobs_ready ON jobs (id) WHERE state='ready';
CREATE INDEX jobs_expired ON jobs (lease_until, id) WHERE state='running';

CREATE TABLE accounts (
  id int PRIMARY KEY,
  balance bigint NOT NULL
);
INSERT INTO accounts VALUES (1, 0), (2, 0), (3, 0);

-- One row per transfer a completed job made.
CREATE TABLE transfers (
  job_id bigint NOT NULL,
  made_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

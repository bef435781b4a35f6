-- graphile-worker-shaped leases: a job is locked by the worker that claimed it, its lease runs in
-- whole seconds, and the worker's heartbeat renews every live lease it holds at once, so its jobs
-- lapse together when it stops beating. Completion is fenced by the generation, as the seed's.
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','running','done')),
  generation bigint NOT NULL DEFAULT 0,
  locked_by text,
  lease_until timestamptz,
  payload jsonb NOT NULL
);
CREATE INDEX jobs_ready ON jobs (id) WHERE state='ready';
CREATE INDEX jobs_locked ON jobs (locked_by) WHERE state='running';

-- River-shaped: the queue fixes the lease itself (a job is stuck once its attempt is older than
-- a fixed horizon, 1 s here in place of River's hour), claims take only available jobs, and a
-- rescuer makes stuck jobs available again. The attempt fences completion.
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'available' CHECK (state IN ('available','running','completed')),
  attempt bigint NOT NULL DEFAULT 0,
  attempted_at timestamptz,
  attempted_by text[] NOT NULL DEFAULT '{}',
  payload jsonb NOT NULL
);
CREATE INDEX jobs_available ON jobs (id) WHERE state = 'available';
CREATE INDEX jobs_running ON jobs (attempted_at) WHERE state = 'running';

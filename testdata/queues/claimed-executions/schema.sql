-- Token-fenced, in the style of a claimed-executions table: no generation counter. Each claim
-- inserts a row of its own, whose id is the claim's token; the job row names its current one,
-- and a completion must present it.
CREATE TABLE jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  state text NOT NULL DEFAULT 'ready' CHECK (state IN ('ready','claimed','done')),
  lease_until timestamptz,
  execution bigint,
  payload jsonb NOT NULL
);
CREATE TABLE claimed_executions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id bigint NOT NULL REFERENCES jobs(id),
  worker text NOT NULL
);
